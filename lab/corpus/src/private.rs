//! Files derived from memory: captures and generated corpora with their
//! sidecars, and dictionaries trained on them. They go through zmem's one
//! output writer (`zmem_files::Staging`): private (0600) from the start,
//! never through a symbolic link, never over another user's file, a corpus
//! and its sidecar put in place together or not at all, and an existing
//! file replaced only when it is zmem's (a corpus with its sidecar, a
//! sidecar, a zstd dictionary) or with `--force`.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use zmem_files::{Readers, Replace, Staging};

use crate::sidecar::{self, Sidecar};

/// Whether `corpus` is a zmem corpus: its sidecar is beside it.
fn has_sidecar(corpus: &Path) -> bool {
    std::fs::symlink_metadata(sidecar::path_for(corpus)).is_ok_and(|m| m.is_file())
}

/// `e`, with what to do about a file zmem did not write.
fn with_hint(e: io::Error, what: &str) -> anyhow::Error {
    match e.kind() {
        io::ErrorKind::AlreadyExists => {
            anyhow::anyhow!("{e}: it is not {what}; pass --force to overwrite it")
        }
        _ => e.into(),
    }
}

/// Writes the corpus `path` (its pages from `f`) and its sidecar (what `f`
/// returns) together: both checked before `f` runs, both renamed into
/// place only when `f` succeeded, so a failed capture changes nothing.
pub(crate) fn write_corpus_files(
    path: &Path,
    force: bool,
    f: impl FnOnce(&mut dyn Write) -> Result<Sidecar>,
) -> Result<Sidecar> {
    let side = sidecar::path_for(path);
    let corpus_ours = {
        let zmem_s = has_sidecar(path);
        move |_: &[u8]| zmem_s
    };
    let sidecar_ours = |old: &[u8]| serde_json::from_slice::<Sidecar>(old).is_ok();
    let (rc, rs) = match force {
        true => (Replace::Always, Replace::Always),
        false => (
            Replace::IfOurs(&corpus_ours),
            Replace::IfOurs(&sidecar_ours),
        ),
    };
    let corpus_what = format!("a zmem corpus (no {} beside it)", side.display());
    zmem_files::check_output(path, rc).map_err(|e| with_hint(e, &corpus_what))?;
    zmem_files::check_output(&side, rs).map_err(|e| with_hint(e, "a zmem sidecar"))?;
    let mut staging = Staging::new();
    let mut w = BufWriter::new(
        staging
            .add(path, rc, Readers::Owner)
            .map_err(|e| with_hint(e, &corpus_what))?,
    );
    let sc = f(&mut w)?;
    w.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    drop(w);
    staging
        .add(&side, rs, Readers::Owner)
        .map_err(|e| with_hint(e, "a zmem sidecar"))?
        .write_all((sc.to_json() + "\n").as_bytes())
        .with_context(|| format!("writing {}", side.display()))?;
    staging.commit()?;
    Ok(sc)
}

fn dict_replace(force: bool) -> Replace<'static> {
    match force {
        true => Replace::Always,
        false => Replace::IfOurs(&crate::dict::is_zstd_dict),
    }
}

/// Checks, before training, that a dictionary may be written to `path`:
/// nothing there, a zstd dictionary (zmem's or zstd's own), or anything of
/// yours with `force`; never a link, a device or another user's file.
pub fn check_dict_output(path: &Path, force: bool) -> Result<()> {
    zmem_files::check_output(path, dict_replace(force))
        .map_err(|e| with_hint(e, "a zstd dictionary"))
}

/// Writes a dictionary (its content section is raw sample bytes: private,
/// like the capture it was trained on), replacing only what
/// [`check_dict_output`] accepts.
pub fn write_dict(path: &Path, bytes: &[u8], force: bool) -> Result<()> {
    zmem_files::write_output(path, bytes, dict_replace(force))
        .map_err(|e| with_hint(e, "a zstd dictionary"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn sidecar() -> Sidecar {
        serde_json::from_str(
            r#"{"source":"test","pages":1,"same_filled_pages":0,"created_unix":0}"#,
        )
        .unwrap()
    }

    #[test]
    fn a_corpus_and_its_sidecar_are_written_together_or_not_at_all() {
        let d = zmem_files::testutil::ScratchDir::new("corpus-private");
        let c = d.join("c.pages");
        // A failed capture leaves nothing, not even a temporary file.
        let e = write_corpus_files(&c, false, |_| anyhow::bail!("capture failed")).unwrap_err();
        assert_eq!(e.to_string(), "capture failed");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
        write_corpus_files(&c, false, |w| {
            w.write_all(&[1; 4096])?;
            Ok(sidecar())
        })
        .unwrap();
        for p in [&c, &sidecar::path_for(&c)] {
            let m = std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(m, 0o600, "{}", p.display());
        }
        // Someone's notes where the sidecar goes: refused before capturing, the corpus kept.
        let n = d.join("n.pages");
        std::fs::write(sidecar::path_for(&n), "my notes\n").unwrap();
        let e = write_corpus_files(&n, false, |_| panic!("captured before the check"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("not a zmem sidecar") && e.contains("--force"),
            "{e}"
        );
        assert!(!n.exists());
        assert_eq!(
            std::fs::read_to_string(sidecar::path_for(&n)).unwrap(),
            "my notes\n"
        );
    }

    #[test]
    fn a_dictionary_replaces_only_a_dictionary() {
        let d = zmem_files::testutil::ScratchDir::new("corpus-dict-out");
        let p = d.join("d.dict");
        std::fs::write(&p, "notes\n").unwrap();
        let e = check_dict_output(&p, false).unwrap_err().to_string();
        assert!(
            e.contains("not a zstd dictionary") && e.contains("--force"),
            "{e}"
        );
        let dict = [0x37, 0xa4, 0x30, 0xec, 0, 0, 0, 0];
        write_dict(&p, &dict, true).unwrap();
        write_dict(&p, &dict, false).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), dict);
    }
}
