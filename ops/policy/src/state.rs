//! What the policy engine remembers between rounds, per device: when it last
//! wrote back and recompressed (for the backoffs), when it marked everything
//! idle (kernels without idle ages), and what it wrote back in the last 24 h
//! (the daily limit). `zmem policy` keeps it in `/run/zmem/policy.state`; the
//! maintenance worker of `zmem serve` keeps it in memory.

use std::collections::BTreeMap;

use zmem_host::Sys;

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

/// The most [`State::load`] reads: far more than any number of devices needs.
const STATE_MAX_BYTES: u64 = 4 << 20;

/// The state file's first line, which marks it as zmem's.
const HEADER: &str = "# zmem policy state\n";

impl State {
    /// The state kept in the state directory; none yet is the empty state.
    /// It is read as a regular file only (`zmem_files::input::read_state`): a
    /// FIFO, a device, a symbolic link or a file over [`STATE_MAX_BYTES`]
    /// there is an error naming it, never a hang or an endless read.
    pub fn load(sys: &Sys) -> std::io::Result<State> {
        let p = sys.path(&state_file(sys));
        let bytes = zmem_files::input::read_state("policy state", &p, STATE_MAX_BYTES)?;
        Ok(State::parse(&String::from_utf8_lossy(
            &bytes.unwrap_or_default(),
        )))
    }

    /// The state from the file's text: one `device<TAB>key<TAB>value…` line
    /// per fact. A line that is not one (the header, an unknown key, a value
    /// that is not a number) is skipped, and so a device with none.
    pub fn parse(text: &str) -> State {
        let mut st = State::default();
        for l in text.lines() {
            let f: Vec<&str> = l.split('\t').collect();
            let n = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok());
            let (Some(&dev), Some(&key), Some(v)) = (f.first(), f.get(1), n(2)) else {
                continue;
            };
            let bytes = n(3);
            let set: fn(&mut DeviceState, u64, u64) = match (key, bytes) {
                ("last_writeback", _) => |d, v, _| d.last_writeback = Some(v),
                ("last_recompress", _) => |d, v, _| d.last_recompress = Some(v),
                ("marked_all_at", _) => |d, v, _| d.marked_all_at = Some(v),
                ("written", Some(_)) => |d, t, b| d.written.push((t, b)),
                _ => continue,
            };
            set(
                st.devices.entry(dev.to_string()).or_default(),
                v,
                bytes.unwrap_or(0),
            );
        }
        st
    }

    /// The file's text: what [`State::parse`] reads back as this state.
    pub fn render(&self) -> String {
        let mut s = String::from(HEADER);
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
        s
    }

    /// Replaces the state file through zmem's one output writer: whole (a
    /// new file renamed over it), mode 0600, never through a symbolic link
    /// and never over a file that is not zmem's state (its first line).
    pub fn save(&self, sys: &Sys) -> std::io::Result<()> {
        let ours = |old: &[u8]| old.starts_with(HEADER.as_bytes());
        zmem_files::write_output(
            &sys.path(&state_file(sys)),
            self.render().as_bytes(),
            zmem_files::Replace::IfOurs(&ours),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_reads_back_as_the_state_and_bad_lines_are_skipped() {
        let text = "# zmem policy state\n\
                    zram0\tlast_writeback\t100\n\
                    zram0\twritten\t90\t4096\n\
                    zram0\twritten\t95\t8192\n\
                    serve:vm1\tlast_recompress\t7\n\
                    zram1\tmarked_all_at\tsoon\n\
                    zram2\tcolour\t3\n\
                    zram3\twritten\t5\n";
        let st = State::parse(text);
        assert_eq!(
            st.devices.keys().collect::<Vec<_>>(),
            ["serve:vm1", "zram0"],
            "devices with no valid line are left out"
        );
        let z = &st.devices["zram0"];
        assert_eq!(z.last_writeback, Some(100));
        assert_eq!(z.written, [(90, 4096), (95, 8192)]);
        assert_eq!(st.devices["serve:vm1"].last_recompress, Some(7));
        assert_eq!(State::parse(&st.render()), st);
    }

    #[test]
    fn the_state_file_is_zmem_s_regular_file_or_an_error_naming_it() {
        let d = zmem_files::testutil::ScratchDir::new("policy-state");
        let sys = Sys::new(d.path());
        let p = sys.path(&state_file(&sys));
        assert_eq!(State::load(&sys).unwrap(), State::default());
        let mut st = State::default();
        st.devices.entry("zram0".into()).or_default().last_writeback = Some(5);
        st.save(&sys).unwrap();
        assert_eq!(State::load(&sys).unwrap(), st);
        // A link to another file: neither read nor written through.
        let other = d.join("other");
        std::fs::write(&other, "keep\n").unwrap();
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(&other, &p).unwrap();
        for e in [State::load(&sys).unwrap_err(), st.save(&sys).unwrap_err()] {
            let e = e.to_string();
            assert!(
                e.contains("symbolic link") && e.contains("policy.state"),
                "{e}"
            );
        }
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "keep\n");
        // Some other file there is not replaced.
        std::fs::remove_file(&p).unwrap();
        std::fs::write(&p, "not mine\n").unwrap();
        let e = st.save(&sys).unwrap_err().to_string();
        assert!(e.contains("not written by zmem"), "{e}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "not mine\n");
    }
}
