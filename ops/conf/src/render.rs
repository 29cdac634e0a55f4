//! The model written back as text: each section the way the reader takes it, so what
//! `zmem recommend` and `zmem tune` write is what `zmem apply` and `zmem persist` read.
//! [`Writer`] puts sections and comment lines in the caller's order; [`Config::render`]
//! writes a whole model in the reader's order.

use std::fmt::Write as _;

use crate::{Algorithms, Config, DeviceConfig, DiskSwap, Entry};

/// A configuration file being written: comment lines and sections, in the order given.
#[derive(Debug, Clone, Default)]
pub struct Writer {
    text: String,
}

impl Writer {
    pub fn new() -> Writer {
        Writer::default()
    }

    /// `# line` for each line of `text`.
    pub fn comment(&mut self, text: &str) -> &mut Writer {
        for l in text.lines() {
            let _ = writeln!(self.text, "# {l}");
        }
        self
    }

    /// An empty line (between sections).
    pub fn blank(&mut self) -> &mut Writer {
        self.text.push('\n');
        self
    }

    /// `[zramN]`: `zram-size` and `swap-priority` always, every other key when it is set
    /// (`fs-type` when it is not `swap`), in zram-generator.conf(5)'s order.
    pub fn device(&mut self, d: &DeviceConfig) -> &mut Writer {
        let t = &mut self.text;
        let _ = writeln!(t, "[zram{}]", d.id);
        let _ = writeln!(t, "zram-size = {}", d.zram_size.source);
        if let Some(r) = &d.resident_limit {
            let _ = writeln!(t, "zram-resident-limit = {}", r.source);
        }
        if let Some(m) = d.host_memory_limit {
            let _ = writeln!(t, "host-memory-limit = {m}");
        }
        if let Some(a) = &d.algorithms {
            let _ = writeln!(t, "compression-algorithm = {}", a.to_config());
        }
        if let Some(w) = &d.writeback_device {
            let _ = writeln!(t, "writeback-device = {w}");
        }
        let _ = writeln!(t, "swap-priority = {}", d.swap_priority);
        if d.fs_type != "swap" {
            let _ = writeln!(t, "fs-type = {}", d.fs_type);
        }
        if let Some(m) = &d.mount_point {
            let _ = writeln!(t, "mount-point = {m}");
        }
        if let Some(o) = &d.options {
            let _ = writeln!(t, "options = {o}");
        }
        self
    }

    /// `[sysctl]` (nothing when `entries` is empty).
    pub fn sysctls(&mut self, entries: &[Entry]) -> &mut Writer {
        self.entries("sysctl", entries)
    }

    /// `[zswap]` (nothing when `entries` is empty).
    pub fn zswap(&mut self, entries: &[Entry]) -> &mut Writer {
        self.entries("zswap", entries)
    }

    /// `[policy]` (nothing when `entries` is empty).
    pub fn policy(&mut self, entries: &[Entry]) -> &mut Writer {
        self.entries("policy", entries)
    }

    /// `[disk-swap]`.
    pub fn disk_swap(&mut self, d: &DiskSwap) -> &mut Writer {
        let _ = writeln!(
            self.text,
            "[disk-swap]\ndevice = {}\npriority = {}",
            d.device, d.priority
        );
        self
    }

    fn entries(&mut self, section: &str, entries: &[Entry]) -> &mut Writer {
        if entries.is_empty() {
            return self;
        }
        let _ = writeln!(self.text, "[{section}]");
        for e in entries {
            let _ = writeln!(self.text, "{} = {}", e.key, e.value);
        }
        self
    }

    /// The text written.
    pub fn finish(self) -> String {
        self.text
    }
}

impl Algorithms {
    /// `compression-algorithm` as written: `lzo-rle zstd(level=3) (type=idle)`.
    pub fn to_config(&self) -> String {
        let mut s = self.primary.to_config();
        for a in &self.recompress {
            s.push(' ');
            s.push_str(&a.to_config());
        }
        if !self.recompress_params.is_empty() {
            let kv: Vec<String> = self
                .recompress_params
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let _ = write!(s, " ({})", kv.join(","));
        }
        s
    }
}

impl Config {
    /// The whole model as a file: devices by number, then `[sysctl]`, `[zswap]`,
    /// `[disk-swap]` and `[policy]`, an empty line between sections. Parsed again it gives
    /// the same values (lines, files and warnings aside: they say where a value was read).
    pub fn render(&self) -> String {
        let mut w = Writer::new();
        let mut first = true;
        let mut sep = |w: &mut Writer| {
            if !std::mem::take(&mut first) {
                w.blank();
            }
        };
        for d in &self.devices {
            sep(&mut w);
            w.device(d);
        }
        for (name, entries) in [("sysctl", &self.sysctls), ("zswap", &self.zswap)] {
            if !entries.is_empty() {
                sep(&mut w);
                w.entries(name, entries);
            }
        }
        if let Some(d) = &self.disk_swap {
            sep(&mut w);
            w.disk_swap(d);
        }
        if !self.policy.is_empty() {
            sep(&mut w);
            w.policy(&self.policy);
        }
        w.finish()
    }
}
