//! The errno an attribute write or an I/O fails with, by its kernel name.
//!
//! One type for the engine (what its attribute stores return), the kernel
//! (what a write to `/sys/block/zramN/ATTR` fails with) and the control
//! socket (`err EBUSY …`), so callers compare `e.errno == Errno::EBUSY`
//! whichever device answered.

use std::fmt;
use std::io;

macro_rules! errnos {
    ($($name:ident = $code:expr),* $(,)?) => {
        /// A Linux errno that zram, zswap or the control socket can answer.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[allow(clippy::upper_case_acronyms)]
        pub enum Errno {
            $($name,)*
        }

        const ALL: &[Errno] = &[$(Errno::$name,)*];

        impl Errno {
            /// The positive errno number on Linux.
            pub fn code(self) -> i32 {
                match self {
                    $(Errno::$name => $code,)*
                }
            }

            /// The name, e.g. "EINVAL".
            pub fn name(self) -> &'static str {
                match self {
                    $(Errno::$name => stringify!($name),)*
                }
            }
        }
    };
}

errnos! {
    EPERM = libc::EPERM,
    ENOENT = libc::ENOENT,
    EIO = libc::EIO,
    ENXIO = libc::ENXIO,
    E2BIG = libc::E2BIG,
    EAGAIN = libc::EAGAIN,
    ENOMEM = libc::ENOMEM,
    EACCES = libc::EACCES,
    ENOTBLK = libc::ENOTBLK,
    EBUSY = libc::EBUSY,
    EEXIST = libc::EEXIST,
    ENODEV = libc::ENODEV,
    EINVAL = libc::EINVAL,
    ENOSPC = libc::ENOSPC,
    ERANGE = libc::ERANGE,
    EPROTO = libc::EPROTO,
    EOPNOTSUPP = libc::EOPNOTSUPP,
    ETIMEDOUT = libc::ETIMEDOUT,
}

impl Errno {
    /// Map a positive errno number back.
    pub fn from_code(code: i32) -> Option<Errno> {
        ALL.iter().copied().find(|e| e.code() == code)
    }

    /// Map a name (`EBUSY`) back; `ENOTSUP` is `EOPNOTSUPP`, as on Linux.
    pub fn from_name(name: &str) -> Option<Errno> {
        if name == "ENOTSUP" {
            return Some(Errno::EOPNOTSUPP);
        }
        ALL.iter().copied().find(|e| e.name() == name)
    }

    /// The errno of an I/O error (a failed sysfs write carries the kernel's);
    /// errors without one map by kind, and anything else is `EIO`.
    pub fn from_io(e: &io::Error) -> Errno {
        if let Some(errno) = e.raw_os_error().and_then(Errno::from_code) {
            return errno;
        }
        match e.kind() {
            io::ErrorKind::NotFound => Errno::ENOENT,
            io::ErrorKind::PermissionDenied => Errno::EACCES,
            io::ErrorKind::InvalidInput => Errno::EINVAL,
            io::ErrorKind::ResourceBusy => Errno::EBUSY,
            _ => Errno::EIO,
        }
    }

    /// The same errno as an `io::Error` (for code that speaks `io::Result`).
    pub fn to_io(self) -> io::Error {
        io::Error::from_raw_os_error(self.code())
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_codes_and_io_errors_round_trip() {
        for &e in ALL {
            assert_eq!(Errno::from_code(e.code()), Some(e));
            assert_eq!(Errno::from_name(e.name()), Some(e));
            assert_eq!(Errno::from_io(&e.to_io()), e);
        }
        assert_eq!(Errno::EINVAL.code(), 22);
        assert_eq!(Errno::EOPNOTSUPP.code(), 95);
        assert_eq!(Errno::from_name("ENOTSUP"), Some(Errno::EOPNOTSUPP));
        assert_eq!(Errno::from_name("EWHAT"), None);
        assert_eq!(Errno::from_io(&io::Error::other("x")), Errno::EIO);
        let nf = io::Error::new(io::ErrorKind::NotFound, "gone");
        assert_eq!(Errno::from_io(&nf), Errno::ENOENT);
    }
}
