//! Helpers for unit tests of zmem crates (not part of the API).

/// Deterministic pseudo-random strings for "never panics" tests (kept with the parsers).
pub use zmem_kernel::testutil::random_strings;

/// Report a skipped test: print `line` (`SKIP <test>: <reason>`) and append it
/// to the file named by `ZMEM_SKIP_LOG`, so a run whose output `cargo test`
/// captures still lists every skip (`.ci/run` prints that file as its summary).
pub fn skip(line: &str) {
    use std::io::Write;
    debug_assert!(line.starts_with("SKIP "), "{line}");
    println!("{line}");
    if let Some(path) = std::env::var_os("ZMEM_SKIP_LOG") {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path);
        // One write per line: O_APPEND keeps lines of parallel tests whole.
        if let Ok(mut f) = f {
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }
}

/// Copy a fixture tree (`ops/admin/tests/fixtures/NN-name/root`) so a test can change the copy.
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), &t).unwrap();
        }
    }
}

/// A scratch directory for one test: private (mode 0700, as the memory
/// captures and corpora tests write into it are private data) and removed
/// with everything in it when dropped, also when the test panics.
#[derive(Debug)]
pub struct ScratchDir(std::path::PathBuf);

impl ScratchDir {
    /// `$TMPDIR/zmem-<name>-<pid>-<n>`, new and empty (`n` counts the scratch
    /// directories of this process, so parallel tests never share one).
    pub fn new(name: &str) -> ScratchDir {
        use std::os::unix::fs::DirBuilderExt;
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("zmem-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&d)
            .unwrap_or_else(|e| panic!("creating {}: {e}", d.display()));
        ScratchDir(d)
    }

    /// A scratch directory holding a copy of the tree `from` (a fixture's
    /// `root`) as `root/`, for a test that changes the copy: the directory,
    /// and the copy's path.
    pub fn with_copy(name: &str, from: &std::path::Path) -> (ScratchDir, std::path::PathBuf) {
        let d = ScratchDir::new(name);
        let root = d.join("root");
        copy_tree(from, &root);
        (d, root)
    }

    /// The directory.
    pub fn path(&self) -> &std::path::Path {
        &self.0
    }

    /// A path inside the directory.
    pub fn join(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::ScratchDir;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn scratch_dir_is_private_distinct_and_removed_on_drop() {
        let a = ScratchDir::new("testutil");
        let b = ScratchDir::new("testutil");
        assert_ne!(a.path(), b.path());
        let mode = std::fs::metadata(a.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::write(a.join("f"), b"x").unwrap();
        let p = a.path().to_path_buf();
        drop(a);
        assert!(!p.exists(), "{} left behind", p.display());
        // Also when the test panics.
        let q = std::panic::catch_unwind(|| {
            let c = ScratchDir::new("testutil");
            let q = c.path().to_path_buf();
            std::fs::write(c.join("g"), b"y").unwrap();
            std::panic::panic_any(q);
        })
        .unwrap_err();
        let q = q.downcast::<std::path::PathBuf>().unwrap();
        assert!(!q.exists(), "{} left behind", q.display());
    }
}
