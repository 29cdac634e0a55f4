//! Recompression step by step, the engine against a real kernel, on any host.
//!
//! `fixtures/recompress/kernel-7.3.txt` is what `scripts/kernel-recompress.py`
//! recorded inside the VM lab on a 7.3 kernel built with every zram option
//! (`scripts/vm build 7.3-all`; its header has the command, kernel and date):
//! the steps (recomp_algorithm at several priorities, algorithm_params per
//! priority, the pages of `fixtures/recompress/pages.bin.gz` written,
//! recompress with every selector and its refusals, idle marking by age,
//! writeback after recompression, reads) and after each one the kernel's
//! result, mm_stat, bd_stat, miss_free, the flags of every allocated slot
//! (debugfs block_state) and the CRC-32 of every page read. This test replays
//! the same steps on an engine device that behaves as that kernel version
//! (its `KernelModel`), with a backing file for the backing device, and
//! compares every one of those figures.

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

use zmem_device::BlockDevice;
use zmem_files::testutil::ScratchDir;
use zmem_kernel::KernelModel;
use zmem_zram::{Zram, PAGE_SIZE};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/recompress");

fn pages() -> Vec<Vec<u8>> {
    let path = format!("{DIR}/pages.bin.gz");
    let mut data = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).expect(&path))
        .read_to_end(&mut data)
        .expect("gunzip the page fixture");
    assert_eq!(data.len() % PAGE_SIZE, 0);
    data.chunks(PAGE_SIZE).map(<[u8]>::to_vec).collect()
}

/// One recorded step: what was done and what the kernel showed after it.
struct Step {
    n: usize,
    op: String,
    arg: String,
    value: String,
    /// Record name (result, mm_stat, ...) to its value.
    kernel: BTreeMap<String, String>,
}

fn recorded(file: &str) -> (String, Vec<Step>) {
    let path = format!("{DIR}/{file}");
    let text = std::fs::read_to_string(&path).expect(&path);
    let mut release = String::new();
    let mut steps: Vec<Step> = Vec::new();
    for line in text.lines() {
        if let Some(r) = line.strip_prefix("# kernel ") {
            release = r.to_string();
        }
        if line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        if f[0] == "step" {
            steps.push(Step {
                n: f[1].parse().expect("step number"),
                op: f[2].into(),
                arg: f[3].into(),
                value: f.get(4).copied().unwrap_or("").into(),
                kernel: BTreeMap::new(),
            });
        } else {
            let s = steps.last_mut().expect("a record after a step line");
            s.kernel
                .insert(f[0].into(), f.get(1).copied().unwrap_or("").into());
        }
    }
    (release, steps)
}

fn crc(page: &[u8]) -> String {
    let mut c = flate2::Crc::new();
    c.update(page);
    format!("{:08x}", c.sum())
}

/// The engine's side: the device, the pages, the backing file's directory.
struct Engine {
    dev: Zram,
    pages: Vec<Vec<u8>>,
    backing: std::path::PathBuf,
    _dir: ScratchDir,
}

impl Engine {
    fn new(kernel: KernelModel, pages: Vec<Vec<u8>>) -> Engine {
        let dir = ScratchDir::new("kernel-recompress");
        let backing = dir.join("backing");
        let f = std::fs::File::create(&backing).unwrap();
        f.set_len(((pages.len() + 1) * PAGE_SIZE) as u64).unwrap();
        let dev = Zram::builder().kernel(kernel).build().unwrap();
        Engine {
            dev,
            pages,
            backing,
            _dir: dir,
        }
    }

    fn indexes(&self, spec: &str) -> Vec<usize> {
        match spec.strip_prefix("mod8=") {
            Some(r) => {
                let r: usize = r.parse().unwrap();
                (0..self.pages.len()).filter(|i| i % 8 == r).collect()
            }
            None => (0..self.pages.len()).collect(),
        }
    }

    /// One step: (result, the CRC-32 of the pages read).
    fn run(&self, s: &Step) -> (String, String) {
        let ok = |r: Result<(), String>| r.map_or_else(|e| e, |_| "ok".to_string());
        match s.op.as_str() {
            "store" => {
                let value = match s.value.as_str() {
                    "BACKING" => self.backing.display().to_string(),
                    "PAGES" => (self.pages.len() * PAGE_SIZE).to_string(),
                    v => v.to_string(),
                };
                let r = self.dev.attr_write(&s.arg, &value);
                (ok(r.map_err(|e| e.errno.name().to_string())), String::new())
            }
            "sleep" => {
                std::thread::sleep(Duration::from_secs(s.arg.parse().unwrap()));
                ("ok".into(), String::new())
            }
            "write" => {
                for i in self.indexes(&s.arg) {
                    if let Err(e) = self.dev.write_page(i, &self.pages[i]) {
                        return (format!("EIO ({e})"), String::new());
                    }
                }
                ("ok".into(), String::new())
            }
            "read" => {
                let mut buf = vec![0u8; PAGE_SIZE];
                let mut crcs = Vec::new();
                for i in self.indexes(&s.arg) {
                    if let Err(e) = self.dev.read_page(i, &mut buf) {
                        return (format!("EIO ({e})"), crcs.join(" "));
                    }
                    crcs.push(format!("{i}:{}", crc(&buf)));
                }
                ("ok".into(), crcs.join(" "))
            }
            op => panic!("step {}: unknown op {op}", s.n),
        }
    }

    /// The records the kernel side made, from the engine.
    fn record(&self) -> BTreeMap<String, String> {
        let show = |a: &str| self.dev.attr_read(a).unwrap_or_else(|e| panic!("{a}: {e}"));
        let words = |a: &str| show(a).split_whitespace().collect::<Vec<_>>().join(" ");
        let debug = show("debug_stat");
        let miss_free = debug
            .lines()
            .nth(1)
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or("?")
            .to_string();
        let block_state = if self.dev.is_initialized() {
            show("block_state")
                .lines()
                .map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    format!("{}:{}", f[0], f[2])
                })
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            "-".into()
        };
        BTreeMap::from([
            ("mm_stat".to_string(), words("mm_stat")),
            ("bd_stat".to_string(), words("bd_stat")),
            ("miss_free".to_string(), miss_free),
            ("block_state".to_string(), block_state),
        ])
    }
}

/// Replay `file` and return every difference, one line each.
fn replay(file: &str) -> Vec<String> {
    let (release, steps) = recorded(file);
    let kernel = KernelModel::parse(&release).expect("the fixture's kernel");
    let e = Engine::new(kernel, pages());
    let mut diffs = Vec::new();
    for s in &steps {
        let (result, reads) = e.run(s);
        let mut ours = e.record();
        ours.insert("result".into(), result);
        if s.op == "read" {
            ours.insert("read".into(), reads);
        }
        for (k, want) in &s.kernel {
            let got = ours.get(k).map(String::as_str).unwrap_or("(none)");
            if got != want {
                diffs.push(format!(
                    "step {} ({} {} {}): {k}: kernel [{want}], engine [{got}]",
                    s.n, s.op, s.arg, s.value
                ));
            }
        }
    }
    println!(
        "{release}: {} steps replayed, {} differences",
        steps.len(),
        diffs.len()
    );
    diffs
}

#[test]
fn kernel_7_3_recompression_step_by_step() {
    let diffs = replay("kernel-7.3.txt");
    assert!(
        diffs.is_empty(),
        "the engine differs from the kernel:\n{}",
        diffs.join("\n")
    );
}
