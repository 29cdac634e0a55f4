//! Files a user hands zmem (corpora, configs, dictionaries, backing files),
//! checked before a byte is read.
//!
//! Only regular files and block devices are inputs. A FIFO would block
//! `open(2)` until a writer appears, a character device such as `/dev/zero`
//! never ends, a directory or socket is not data: each is refused with a
//! sentence that names the path and what it is. The open itself uses
//! `O_NONBLOCK` and the descriptor is checked again with `fstat`, so a path
//! swapped for a FIFO between the check and the open cannot hang zmem
//! either. Reading is bounded: [`read_input`] refuses a file larger than the
//! caller's cap instead of reading until memory runs out.
//!
//! State zmem keeps for itself (`zmem policy`'s `policy.state`) is stricter:
//! [`read_state`] takes a regular file only, never through a symbolic link
//! (`O_NOFOLLOW|O_NONBLOCK`, then `fstat`), so a FIFO, a device or a link
//! planted there is refused with an error naming it.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// What an accepted input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    Regular,
    BlockDevice,
}

/// An open, checked input: a regular file or a block device, and its size.
#[derive(Debug)]
pub struct Input {
    pub file: File,
    pub kind: InputKind,
    /// Bytes in the file or on the device.
    pub len: u64,
}

fn refused(what: &str, path: &Path, is: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{what} {}: is {is}; zmem reads only regular files and block devices",
            path.display()
        ),
    )
}

fn describe(ft: &std::fs::FileType) -> Option<&'static str> {
    if ft.is_file() || ft.is_block_device() {
        None
    } else if ft.is_fifo() {
        Some("a FIFO (reading it could wait forever)")
    } else if ft.is_char_device() {
        Some("a character device (it has no end, e.g. /dev/zero)")
    } else if ft.is_dir() {
        Some("a directory")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

/// Checks `path` without opening it: a regular file or a block device.
/// `what` names the input in the error ("corpus", "config", …).
pub fn check_input(what: &str, path: &Path) -> io::Result<InputKind> {
    let md = std::fs::metadata(path).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("{what} {}: cannot read: {e}", path.display()),
        )
    })?;
    let ft = md.file_type();
    match describe(&ft) {
        Some(is) => Err(refused(what, path, is)),
        None if ft.is_file() => Ok(InputKind::Regular),
        None => Ok(InputKind::BlockDevice),
    }
}

/// Opens `path` read-only after [`check_input`], without blocking on a FIFO
/// swapped in meanwhile, and reports its size.
pub fn open_input(what: &str, path: &Path) -> io::Result<Input> {
    check_input(what, path)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("{what} {}: cannot read: {e}", path.display()),
            )
        })?;
    let md = file.metadata()?;
    if let Some(is) = describe(&md.file_type()) {
        return Err(refused(what, path, is));
    }
    clear_nonblock(&file)?;
    let (kind, len) = if md.file_type().is_file() {
        (InputKind::Regular, md.len())
    } else {
        (InputKind::BlockDevice, block_device_len(&file)?)
    };
    Ok(Input { file, kind, len })
}

fn clear_nonblock(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor this function's caller owns and keeps open;
    // F_GETFL/F_SETFL only read and change its status flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn block_device_len(file: &File) -> io::Result<u64> {
    use std::io::{Seek, SeekFrom};
    let mut f = file;
    let len = f.seek(SeekFrom::End(0))?;
    f.seek(SeekFrom::Start(0))?;
    Ok(len)
}

/// Reads a whole input into memory, refusing one larger than `cap` bytes
/// (the error names the size and the cap) instead of reading until memory
/// runs out.
pub fn read_input(what: &str, path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let mut input = open_input(what, path)?;
    if input.len > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{what} {}: {} bytes is more than the {} bytes zmem reads for a {what}",
                path.display(),
                input.len,
                cap
            ),
        ));
    }
    let mut buf = Vec::with_capacity(input.len as usize);
    // The file may grow between fstat and read: never read more than the cap.
    (&mut input.file).take(cap + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{what} {}: grew beyond {cap} bytes while being read",
                path.display()
            ),
        ));
    }
    Ok(buf)
}

/// Reads the state file `path` (`what` names it in errors): `None` when
/// there is none, its bytes when it is a regular file of at most `cap`
/// bytes. A symbolic link (even to a regular file), a FIFO (never waited
/// on), a device, a directory or a larger file is an error naming `path`.
pub fn read_state(what: &str, path: &Path, cap: u64) -> io::Result<Option<Vec<u8>>> {
    let flags = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    let mut file = match OpenOptions::new().read(true).custom_flags(flags).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(refused(
                what,
                path,
                "a symbolic link (zmem follows none to its state)",
            ))
        }
        Err(e) => {
            return Err(io::Error::new(
                e.kind(),
                format!("{what} {}: cannot read: {e}", path.display()),
            ))
        }
    };
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()));
    let md = file.metadata().map_err(named)?;
    if !md.file_type().is_file() {
        let is = describe(&md.file_type()).unwrap_or("a block device");
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{what} {}: is {is}; zmem keeps its state only in a regular file",
                path.display()
            ),
        ));
    }
    let mut buf = Vec::new();
    (&mut file)
        .take(cap + 1)
        .read_to_end(&mut buf)
        .map_err(named)?;
    if buf.len() as u64 > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{what} {}: larger than the {cap} bytes zmem reads for it",
                path.display()
            ),
        ));
    }
    Ok(Some(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("zmem-input-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn regular_file_is_read() {
        let d = tmpdir("reg");
        let p = d.join("f");
        std::fs::write(&p, b"hello").unwrap();
        assert_eq!(read_input("corpus", &p, 100).unwrap(), b"hello");
        assert_eq!(check_input("corpus", &p).unwrap(), InputKind::Regular);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn fifo_is_refused_without_blocking() {
        let d = tmpdir("fifo");
        let p = d.join("pipe");
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = open_input("corpus", &p).unwrap_err().to_string();
        assert!(e.contains("is a FIFO"), "{e}");
        assert!(e.contains("pipe"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn char_device_and_directory_are_refused() {
        let e = read_input("corpus", Path::new("/dev/zero"), 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(e.contains("character device"), "{e}");
        let e = check_input("config", Path::new("/"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is a directory"), "{e}");
    }

    #[test]
    fn too_large_is_refused_and_missing_named() {
        let d = tmpdir("cap");
        let p = d.join("big");
        std::fs::write(&p, vec![1u8; 1000]).unwrap();
        let e = read_input("config", &p, 999).unwrap_err().to_string();
        assert!(e.contains("1000 bytes") && e.contains("999"), "{e}");
        let e = read_input("config", &d.join("nope"), 9)
            .unwrap_err()
            .to_string();
        assert!(e.contains("nope"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn state_is_a_regular_file_never_a_link_fifo_or_device() {
        let d = tmpdir("state");
        let p = d.join("policy.state");
        assert_eq!(read_state("policy state", &p, 100).unwrap(), None);
        std::fs::write(&p, b"# zmem policy state\n").unwrap();
        assert_eq!(
            read_state("policy state", &p, 100).unwrap().unwrap(),
            b"# zmem policy state\n"
        );
        let e = read_state("policy state", &p, 5).unwrap_err().to_string();
        assert!(e.contains("larger than the 5 bytes"), "{e}");
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &p).unwrap();
        let e = read_state("policy state", &p, 100).unwrap_err().to_string();
        assert!(
            e.contains("symbolic link") && e.contains("policy.state"),
            "{e}"
        );
        std::fs::remove_file(&p).unwrap();
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_state("policy state", &p, 100).unwrap_err().to_string();
        assert!(e.contains("is a FIFO") && e.contains("regular file"), "{e}");
        let e = read_state("policy state", Path::new("/dev/zero"), 100)
            .unwrap_err()
            .to_string();
        assert!(e.contains("character device"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
