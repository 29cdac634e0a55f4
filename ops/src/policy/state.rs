//! What the policy engine remembers between rounds, per device: when it last
//! wrote back and recompressed (for the backoffs), when it marked everything
//! idle (kernels without idle ages), and what it wrote back in the last 24 h
//! (the daily limit). `zmem policy` keeps it in `/run/zmem/policy.state`; the
//! maintenance worker of `zmem serve` keeps it in memory.

use std::collections::BTreeMap;

use zmem_sysfs::Sys;

/// Per-device memory of the daemon (kept in /run/zmem/policy.state).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceState {
    pub last_writeback: Option<u64>,
    pub last_recompress: Option<u64>,
    /// When all pages were marked idle (kernels without idle ages).
    pub marked_all_at: Option<u64>,
    /// (time, bytes) written back in the last 24 h.
    pub written: Vec<(u64, u64)>,
}

/// The state file inside the state directory (`/run/zmem`).
pub const STATE_NAME: &str = "policy.state";

pub fn state_file(sys: &Sys) -> String {
    format!("{}/{STATE_NAME}", sys.state_dir())
}

/// All devices' state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct State {
    pub devices: BTreeMap<String, DeviceState>,
}

impl State {
    pub fn load(sys: &Sys) -> State {
        let mut st = State::default();
        let text = sys
            .read_opt(&state_file(sys))
            .ok()
            .flatten()
            .unwrap_or_default();
        for l in text.lines() {
            let f: Vec<&str> = l.split('\t').collect();
            if f.len() < 3 {
                continue;
            }
            let d = st.devices.entry(f[0].to_string()).or_default();
            let n = |s: &str| s.parse::<u64>().ok();
            match f[1] {
                "last_writeback" => d.last_writeback = n(f[2]),
                "last_recompress" => d.last_recompress = n(f[2]),
                "marked_all_at" => d.marked_all_at = n(f[2]),
                "written" if f.len() >= 4 => {
                    if let (Some(t), Some(b)) = (n(f[2]), n(f[3])) {
                        d.written.push((t, b));
                    }
                }
                _ => {}
            }
        }
        st
    }
    pub fn save(&self, sys: &Sys) -> std::io::Result<()> {
        let mut s = String::from("# zmem policy state\n");
        for (k, d) in &self.devices {
            if let Some(t) = d.last_writeback {
                s.push_str(&format!("{k}\tlast_writeback\t{t}\n"));
            }
            if let Some(t) = d.last_recompress {
                s.push_str(&format!("{k}\tlast_recompress\t{t}\n"));
            }
            if let Some(t) = d.marked_all_at {
                s.push_str(&format!("{k}\tmarked_all_at\t{t}\n"));
            }
            for (t, b) in &d.written {
                s.push_str(&format!("{k}\twritten\t{t}\t{b}\n"));
            }
        }
        let p = sys.path(&state_file(sys));
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d)?;
        }
        std::fs::write(p, s)
    }
}
