//! The device checks of `zmem doctor`: a zram device as the hibernation resume target
//! (systemd #16708), and a backing_dev without a writeback limit (flash wear).

use std::io;

use super::{Finding, Machine, Severity};
use zmem_host::Sys;

/// Where the kernel keeps the resume device (`MAJ:MIN`; `0:0` when none).
const RESUME: &str = "/sys/power/resume";

/// The `MAJ:MIN` of a block device under /sys/class/block (`/dev/sda2` → `8:2`).
fn dev_number(sys: &Sys, dev: &str) -> Option<String> {
    let name = dev.strip_prefix("/dev/")?;
    Some(
        sys.read(&format!("/sys/class/block/{name}/dev"))
            .ok()?
            .trim()
            .to_string(),
    )
}

/// The `resume=` value on the kernel command line, if any.
fn cmdline_resume(sys: &Sys) -> io::Result<Option<String>> {
    let cmdline = sys.read_opt("/proc/cmdline")?.unwrap_or_default();
    Ok(cmdline
        .split_whitespace()
        .filter_map(|a| a.strip_prefix("resume="))
        .next_back()
        .map(str::to_string))
}

/// A zram device as the hibernation resume target: the image would go to (and be looked for
/// in) RAM, which is gone after power-off (systemd #16708).
pub fn resume_target(sys: &Sys, m: &Machine) -> io::Result<Vec<Finding>> {
    let sysfs = sys.read_opt(RESUME)?.map(|s| s.trim().to_string());
    let cmdline = cmdline_resume(sys)?;
    let mut out = Vec::new();
    for d in &m.devices {
        let number = sys
            .read_opt(&format!("{}/dev", d.dir()))?
            .map(|s| s.trim().to_string());
        let dev = d.dev_path();
        let mut read = Vec::new();
        if let (Some(s), Some(n)) = (&sysfs, &number) {
            if s == n {
                read.push(format!("{RESUME} = {s} ({dev})"));
            }
        }
        if let Some(c) = &cmdline {
            if *c == dev || number.as_deref() == Some(c.as_str()) {
                read.push(format!("resume={c} on /proc/cmdline"));
            }
        }
        if read.is_empty() {
            continue;
        }
        out.push(
            Finding::new(
                "resume-on-zram",
                Severity::Error,
                format!(
                    "{}: the hibernation image would be written to {dev}, which lives in RAM and is empty after power-off (systemd #16708)",
                    read.join(" and ")
                ),
            )
            .fix(resume_fix(sys, m))
            .permanent(format!(
                "drop resume={} from the kernel command line (GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub) \
                 and from /etc/initramfs-tools/conf.d/resume (then update-initramfs -u)",
                cmdline.clone().unwrap_or_else(|| dev.clone())
            )),
        );
    }
    Ok(out)
}

/// Point resume at the largest disk swap partition, or say that hibernation needs one.
fn resume_fix(sys: &Sys, m: &Machine) -> String {
    let disk = m
        .disk_swaps()
        .into_iter()
        .filter(|s| s.kind == "partition")
        .max_by_key(|s| s.size);
    match disk.and_then(|s| Some((s, dev_number(sys, &s.device)?))) {
        Some((s, n)) => format!("echo {n} > {RESUME}   # {}, a disk swap partition", s.device),
        None => format!(
            "echo 0:0 > {RESUME}   # no resume device: hibernation needs a disk swap partition at least as large as RAM"
        ),
    }
}

/// A backing_dev set while writeback_limit_enable is 0: writeback to flash is unbounded.
pub fn writeback_limit(sys: &Sys, m: &Machine) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in &m.devices {
        let Some(Some(backing)) = &d.backing_dev else {
            continue;
        };
        let path = format!("{}/writeback_limit_enable", d.dir());
        let Ok(enable) = sys.read(&path) else {
            continue;
        };
        if enable.trim() != "0" {
            continue;
        }
        let written = d.bd.map(|b| b.bd_writes * 4096).unwrap_or(0);
        out.push(
            Finding::new(
                "writeback-limit",
                Severity::Warning,
                format!(
                    "{}: backing_dev = {backing} but {path} = 0: writeback to it is unbounded \
                     ({} written so far, bd_stat): flash wears",
                    d.name,
                    zmem_conf::bytes(written)
                ),
            )
            .fix(format!(
                "echo 1 > {dir}/writeback_limit_enable && echo 262144 > {dir}/writeback_limit   # 1 GiB in 4 KiB blocks",
                dir = d.dir()
            ))
            .permanent(format!(
                "zram-generator has no key for it: add the two writes as ExecStartPost= of systemd-zram-setup@{}.service (a drop-in)",
                d.name
            )),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_files::testutil::ScratchDir;

    #[test]
    fn the_last_resume_on_the_command_line_counts() {
        let d = ScratchDir::new("doctor-cmdline");
        std::fs::create_dir_all(d.join("proc")).unwrap();
        let sys = Sys::new(d.path());
        assert_eq!(cmdline_resume(&sys).unwrap(), None);
        std::fs::write(
            d.join("proc/cmdline"),
            "ro resume=/dev/sda2 quiet resume=/dev/zram0\n",
        )
        .unwrap();
        assert_eq!(cmdline_resume(&sys).unwrap().as_deref(), Some("/dev/zram0"));
    }
}
