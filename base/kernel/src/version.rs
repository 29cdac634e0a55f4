//! Kernel versions (`major.minor`, as `uname -r` starts) and spans of them:
//! when a zram attribute or a compression backend appeared, and when it went.

use std::fmt;

/// A kernel version, `major.minor` (`6.18`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KernelVersion {
    pub major: u16,
    pub minor: u16,
}

impl KernelVersion {
    pub const fn new(major: u16, minor: u16) -> KernelVersion {
        KernelVersion { major, minor }
    }

    /// The version at the start of a release string (`uname -r`,
    /// /proc/sys/kernel/osrelease): `6.18.0-1-amd64` → 6.18. `None` when it
    /// does not start with `major.minor`.
    pub fn parse(release: &str) -> Option<KernelVersion> {
        let mut parts = release.trim().splitn(3, |c: char| !c.is_ascii_digit());
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some(KernelVersion { major, minor })
    }
}

impl fmt::Display for KernelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The kernel versions that have something: from `since` on, up to (not
/// including) `until` when it was removed or renamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSpan {
    pub since: KernelVersion,
    pub until: Option<KernelVersion>,
}

impl KernelSpan {
    /// Present from `major.minor` on.
    pub const fn since(major: u16, minor: u16) -> KernelSpan {
        KernelSpan {
            since: KernelVersion::new(major, minor),
            until: None,
        }
    }

    /// Present from `since` up to, not including, `until`.
    pub const fn between(since: (u16, u16), until: (u16, u16)) -> KernelSpan {
        KernelSpan {
            since: KernelVersion::new(since.0, since.1),
            until: Some(KernelVersion::new(until.0, until.1)),
        }
    }

    /// Whether kernel `v` has it.
    pub fn contains(&self, v: KernelVersion) -> bool {
        v >= self.since && self.until.is_none_or(|u| v < u)
    }
}

impl fmt::Display for KernelSpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.until {
            None => write!(f, "{}+", self.since),
            Some(u) => write!(f, "{}..{}", self.since, u),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_release_strings() {
        assert_eq!(
            KernelVersion::parse("6.18.0-1-amd64\n"),
            Some(KernelVersion::new(6, 18))
        );
        assert_eq!(
            KernelVersion::parse("7.0-rc1"),
            Some(KernelVersion::new(7, 0))
        );
        assert_eq!(KernelVersion::parse("6"), None);
        assert_eq!(KernelVersion::parse("x.1"), None);
        assert!(KernelVersion::new(6, 9) < KernelVersion::new(6, 12));
    }

    #[test]
    fn spans() {
        let s = KernelSpan::between((3, 15), (6, 15));
        assert!(s.contains(KernelVersion::new(3, 15)));
        assert!(s.contains(KernelVersion::new(6, 14)));
        assert!(!s.contains(KernelVersion::new(6, 15)));
        assert!(!s.contains(KernelVersion::new(3, 14)));
        assert_eq!(s.to_string(), "3.15..6.15");
        assert_eq!(KernelSpan::since(6, 2).to_string(), "6.2+");
    }
}
