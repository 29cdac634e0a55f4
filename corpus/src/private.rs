//! Files derived from memory (captures, their sidecars, dictionaries trained
//! on them): created mode 0600 from the start and renamed over the target
//! only when completely written, so a failed write loses nothing.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use anyhow::{Context, Result};

/// Write `bytes` to `path` as a private file (mode 0600), replacing it only
/// once everything is written: for data derived from memory, such as a
/// dictionary trained on a capture (its content is raw sample bytes). The
/// caller decides whether an existing `path` may be replaced.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    replace_private(path, |w| {
        w.write_all(bytes)
            .with_context(|| format!("writing {}", path.display()))
    })
}

/// Run `f` on a new 0600 file beside `path`, then rename it over `path`; on
/// any error the temporary file is removed and `path` is left as it was.
pub(crate) fn replace_private<T>(
    path: &Path,
    f: impl FnOnce(&mut dyn Write) -> Result<T>,
) -> Result<T> {
    let tmp = temp_beside(path);
    let file = private_file(&tmp)?;
    let mut w = io::BufWriter::new(file);
    let res = f(&mut w).and_then(|v| {
        w.flush()
            .with_context(|| format!("writing {}", tmp.display()))?;
        Ok(v)
    });
    drop(w);
    let v = match res {
        Ok(v) => v,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()));
    }
    Ok(v)
}

fn temp_beside(path: &Path) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "capture".into());
    path.with_file_name(format!(".{name}.zmem-tmp-{}", std::process::id()))
}

/// Creates `path` new, mode 0600 from the start (no window under the umask).
pub fn private_file(path: &Path) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))
}
