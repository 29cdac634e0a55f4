//! Whose memory a capture without root can read: the processes of this
//! process's effective user (the owner of /proc/PID is the process's
//! effective user; a process that made itself non-dumpable shows root there,
//! and its memory is closed to others anyway), and how to name that user.

use std::os::unix::fs::MetadataExt;

/// This process's effective uid, from /proc/self/status (`Uid: real effective …`).
pub fn euid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_effective_uid(&status)
}

fn parse_effective_uid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// `nobody (uid 65534)`: the user's name from /etc/passwd when it has one.
pub fn describe(uid: u32) -> String {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    match name_in_passwd(&passwd, uid) {
        Some(n) => format!("{n} (uid {uid})"),
        None => format!("uid {uid}"),
    }
}

fn name_in_passwd(passwd: &str, uid: u32) -> Option<String> {
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 2 && f[2].parse() == Ok(uid)).then(|| f[0].to_string())
    })
}

/// The PIDs whose /proc/PID belongs to `uid`, except `me`, in order.
pub fn pids_of(uid: u32, me: u32) -> std::io::Result<Vec<u32>> {
    let mut pids: Vec<u32> = std::fs::read_dir("/proc")?
        .filter_map(|e| {
            let e = e.ok()?;
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            (pid != me && e.metadata().ok()?.uid() == uid).then_some(pid)
        })
        .collect();
    pids.sort_unstable();
    Ok(pids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_uid_is_the_second_field() {
        let s = "Name:\tzmem\nUid:\t1000\t65534\t65534\t65534\nGid:\t0\t0\t0\t0\n";
        assert_eq!(parse_effective_uid(s), Some(65534));
        assert_eq!(parse_effective_uid("Name:\tx\n"), None);
        assert!(euid().is_some(), "this process's status has a Uid line");
    }

    #[test]
    fn names_from_passwd() {
        let p = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nbad\n";
        assert_eq!(name_in_passwd(p, 65534).as_deref(), Some("nobody"));
        assert_eq!(name_in_passwd(p, 0).as_deref(), Some("root"));
        assert_eq!(name_in_passwd(p, 7), None);
    }

    #[test]
    fn own_processes_exclude_this_one() {
        let me = std::process::id();
        let uid = euid().unwrap();
        let mine = pids_of(uid, me).unwrap();
        assert!(!mine.contains(&me));
        let with_me = pids_of(uid, 0).unwrap();
        assert!(with_me.contains(&me), "this process is its user's");
    }
}
