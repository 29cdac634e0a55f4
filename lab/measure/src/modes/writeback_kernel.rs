//! The kernel rows of `zmem bench writeback`: one page sequence, step by step,
//! through a hot-added kernel zram device whose `backing_dev` is the block
//! device the user named, and through an engine device (its backing file a
//! temporary file), in lockstep; after every step both devices are compacted
//! and their mm_stat, bd_stat and remaining `writeback_limit` compared
//! (docs/writeback.md, "Kernel rows").
//!
//! The steps (each kernel write first: an optional one the kernel refuses
//! is not made on the engine, and the row says what the kernel lacks; 6.1
//! answers EIO to a writeback mode it does not know):
//! 1. write the corpus; 2. `idle all`; 3. read the pages i with i % 8 = 0
//!    (accessed: no longer idle); 4. `writeback huge_idle`; 5. `writeback
//!    incompressible` (6.2+); 6. `writeback_limit_enable 1`, `writeback_limit
//!    L` (L = half the huge pages left), `writeback huge`: L pages, then EIO;
//!    7. `writeback_limit_enable 0`; 8. wait AGE+1 s, read the pages i % 8 =
//!    1, `idle AGE` (CONFIG_ZRAM_TRACK_ENTRY_ACTIME; marks the pages of step 3
//!    again but not those just read);
//!    9. `writeback idle`; 10. read every page back and compare with the corpus.
//!
//! Every step selects a set of pages that does not depend on the order a
//! kernel scans its slots in (6.1 by index, 6.12+ largest object first), so
//! the counts are the same on every kernel: where only a part is written back
//! (the limit), all candidates are huge pages of one size.

use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use zmem_codec::{Params, PAGE_SIZE};
use zmem_corpus::Corpus;
use zmem_device::BlockDevice;
use zmem_host::HotDevice;
use zmem_kernel::{BdStat, Errno, MmStat, ZRAM_ATTRS};
use zmem_zram::Zram;

use super::random_read::aligned_buffer;
use crate::engine::EngineKernel;

/// How the kernel rows run.
#[derive(Debug, Clone)]
pub struct KernelOptions {
    pub algo: String,
    pub compressed: bool,
    /// `writeback_batch_size` on both devices (where the kernel has it).
    pub batch_size: Option<u32>,
    /// The idle age of step 8, seconds.
    pub age_s: u64,
    /// The kernel whose zram the engine device behaves as (the running one's,
    /// unless `--kernel` named another).
    pub engine: EngineKernel,
}

/// One device's figures after a step (mm_stat after `compact`, bd_stat in
/// 4 KiB units, the remaining `writeback_limit`), and how the step ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct State {
    /// `ok`, or the errno of the first write the device refused.
    pub result: String,
    pub orig_data_size: u64,
    pub compr_data_size: u64,
    pub mem_used_total: u64,
    pub same_pages: u64,
    pub huge_pages: u64,
    pub huge_pages_since: u64,
    pub bd_count: u64,
    pub bd_reads: u64,
    pub bd_writes: u64,
    pub writeback_limit: u64,
    /// Pages read in this step that differed from the corpus.
    pub read_mismatches: u64,
}

/// One step: what was done, both devices' states, the verdict.
#[derive(Debug, Clone, Serialize)]
pub struct StepRow {
    pub step: String,
    /// PASS, FAIL, or SKIP (the kernel refused an optional write: `detail` says why).
    pub verdict: String,
    pub detail: String,
    pub kernel: Option<State>,
    pub engine: Option<State>,
}

/// The kernel rows of one run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KernelRows {
    /// PASS (every step agrees), FAIL, or SKIP (`reason`).
    pub verdict: String,
    pub reason: Option<String>,
    /// The running kernel's release.
    pub kernel: String,
    pub backing_dev: String,
    /// The writeback attributes the kernel's zram device has.
    pub attrs: Vec<String>,
    /// What the kernel lacks or was set to (one line each).
    pub notes: Vec<String>,
    pub steps: Vec<StepRow>,
}

/// The writeback attributes a kernel may have, oldest first: from the one
/// declaration of zram's attributes (released names only).
fn wb_attrs() -> impl Iterator<Item = &'static str> {
    ZRAM_ATTRS
        .iter()
        .filter(|a| a.renamed.is_none() && a.feature == zmem_kernel::Feature::Writeback)
        .map(|a| a.name)
}

/// Which mm_stat/bd_stat fields must be equal, and why the others may differ.
pub const COMPARED: &str = "equal: result, bd_count, bd_reads, bd_writes, orig_data_size, same_pages, \
huge_pages, huge_pages_since, writeback_limit, pages read back; compr_data_size within 0.1 % \
(a kernel's compressor may emit a few bytes more or less for some pages, docs/vm.md); \
mem_used_total shown, not compared (allocator history; the engine models the running kernel's zsmalloc, \
`zmem bench device` checks it)";

impl KernelRows {
    pub fn skip(reason: impl Into<String>) -> Self {
        KernelRows {
            verdict: "SKIP".into(),
            reason: Some(reason.into()),
            kernel: release(),
            ..Default::default()
        }
    }
    fn fail(mut self, reason: impl Into<String>) -> Self {
        self.verdict = "FAIL".into();
        self.reason = Some(reason.into());
        self
    }
}

fn release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// One device of the comparison, by attribute name.
trait Side {
    fn store(&self, attr: &str, value: &str) -> Result<(), Errno>;
    fn show(&self, attr: &str) -> Result<String, String>;
    fn read_page(&self, index: usize, buf: &mut [u8]) -> Result<(), String>;
}

struct Engine(Zram);

impl Side for Engine {
    fn store(&self, attr: &str, value: &str) -> Result<(), Errno> {
        self.0.attr_write(attr, value).map_err(|e| e.errno)
    }
    fn show(&self, attr: &str) -> Result<String, String> {
        self.0
            .attr_read(attr)
            .map(|s| s.trim_end().to_string())
            .map_err(|e| e.to_string())
    }
    fn read_page(&self, index: usize, buf: &mut [u8]) -> Result<(), String> {
        self.0.read_page(index, buf).map_err(|e| e.to_string())
    }
}

/// Fields drop in order: the device file is closed before the HotDevice
/// resets and removes the device (an open device answers EBUSY).
struct Kernel {
    file: File,
    dev: HotDevice,
}

impl Side for Kernel {
    fn store(&self, attr: &str, value: &str) -> Result<(), Errno> {
        self.dev
            .write_attr(attr, value)
            .map_err(|e| Errno::from_io(&e))
    }
    fn show(&self, attr: &str) -> Result<String, String> {
        self.dev.read_attr(attr).map_err(|e| format!("{attr}: {e}"))
    }
    fn read_page(&self, index: usize, buf: &mut [u8]) -> Result<(), String> {
        let (mut raw, off) = aligned_buffer(PAGE_SIZE);
        self.file
            .read_exact_at(&mut raw[off..off + PAGE_SIZE], (index * PAGE_SIZE) as u64)
            .map_err(|e| format!("reading page {index}: {e}"))?;
        buf.copy_from_slice(&raw[off..off + PAGE_SIZE]);
        Ok(())
    }
}

/// A step's operations.
enum Op {
    /// An attribute write; `Some(why)`: a kernel may lack it (refuse the
    /// write), and why; the engine then skips it too.
    Store(&'static str, String, Option<String>),
    /// Read the pages i with i % 8 == r (`Some(r)`), or every page (`None`),
    /// and compare them with the corpus.
    Read(Option<usize>),
    Sleep(u64),
}

fn state(s: &dyn Side, result: &str, mismatches: u64) -> Result<State, String> {
    s.store(zmem_kernel::attr::COMPACT, "1")
        .map_err(|e| format!("compact: {e}"))?;
    let mm = s.show(zmem_kernel::attr::MM_STAT)?;
    let mm = MmStat::parse(&mm).ok_or_else(|| format!("bad mm_stat {mm:?}"))?;
    let bd = s.show(zmem_kernel::attr::BD_STAT)?;
    let bd = BdStat::parse(&bd).ok_or_else(|| format!("bad bd_stat {bd:?}"))?;
    let limit = s.show(zmem_kernel::attr::WRITEBACK_LIMIT)?;
    Ok(State {
        result: result.into(),
        orig_data_size: mm.orig_data_size,
        compr_data_size: mm.compr_data_size,
        mem_used_total: mm.mem_used_total,
        same_pages: mm.same_pages,
        huge_pages: mm.huge_pages,
        huge_pages_since: mm.huge_pages_since,
        bd_count: bd.bd_count,
        bd_reads: bd.bd_reads,
        bd_writes: bd.bd_writes,
        writeback_limit: limit
            .trim()
            .parse()
            .map_err(|_| format!("bad writeback_limit {limit:?}"))?,
        read_mismatches: mismatches,
    })
}

fn read_pages(s: &dyn Side, corpus: &Corpus, r: Option<usize>) -> Result<u64, String> {
    let mut buf = vec![0u8; PAGE_SIZE];
    let mut bad = 0;
    for (i, page) in corpus.pages().enumerate() {
        if r.is_some_and(|r| i % 8 != r) {
            continue;
        }
        s.read_page(i, &mut buf)?;
        bad += u64::from(buf != page);
    }
    Ok(bad)
}

/// The verdict of two states: the differing fields, empty when they agree.
pub(crate) fn differences(k: &State, e: &State) -> Vec<String> {
    let mut d = Vec::new();
    let exact: [(&str, String, String); 11] = [
        ("result", k.result.clone(), e.result.clone()),
        ("bd_count", k.bd_count.to_string(), e.bd_count.to_string()),
        ("bd_reads", k.bd_reads.to_string(), e.bd_reads.to_string()),
        (
            "bd_writes",
            k.bd_writes.to_string(),
            e.bd_writes.to_string(),
        ),
        (
            "orig_data_size",
            k.orig_data_size.to_string(),
            e.orig_data_size.to_string(),
        ),
        (
            "same_pages",
            k.same_pages.to_string(),
            e.same_pages.to_string(),
        ),
        (
            "huge_pages",
            k.huge_pages.to_string(),
            e.huge_pages.to_string(),
        ),
        (
            "huge_pages_since",
            k.huge_pages_since.to_string(),
            e.huge_pages_since.to_string(),
        ),
        (
            zmem_kernel::attr::WRITEBACK_LIMIT,
            k.writeback_limit.to_string(),
            e.writeback_limit.to_string(),
        ),
        (
            "kernel read_mismatches",
            k.read_mismatches.to_string(),
            "0".into(),
        ),
        (
            "engine read_mismatches",
            e.read_mismatches.to_string(),
            "0".into(),
        ),
    ];
    for (name, a, b) in exact {
        if a != b {
            d.push(format!("{name} {a} vs {b}"));
        }
    }
    let rel = relative(e.compr_data_size, k.compr_data_size);
    if rel.abs() > 0.1 {
        d.push(format!(
            "compr_data_size {} vs {} ({rel:+.3} %)",
            k.compr_data_size, e.compr_data_size
        ));
    }
    d
}

/// (e − k) / k in percent; 0 when both are 0.
pub fn relative(e: u64, k: u64) -> f64 {
    match k {
        0 if e == 0 => 0.0,
        0 => f64::INFINITY,
        _ => (e as f64 - k as f64) / k as f64 * 100.0,
    }
}

/// Run one step on both devices (each write on the kernel first).
fn step(
    k: &dyn Side,
    e: &dyn Side,
    corpus: &Corpus,
    name: String,
    ops: &[Op],
) -> Result<StepRow, String> {
    let (mut kr, mut er) = (None::<Errno>, None::<Errno>);
    let (mut km, mut em) = (0, 0);
    for op in ops {
        match op {
            Op::Store(attr, value, optional) => {
                let r = k.store(attr, value);
                if let (Err(errno), Some(why)) = (&r, optional) {
                    return Ok(StepRow {
                        step: name,
                        verdict: "SKIP".into(),
                        detail: format!("the kernel refused `{attr} {value}` ({errno}): {why}"),
                        kernel: None,
                        engine: None,
                    });
                }
                kr = kr.or(r.err());
                er = er.or(e.store(attr, value).err());
            }
            Op::Read(r) => {
                km += read_pages(k, corpus, *r).map_err(|x| format!("kernel: {x}"))?;
                em += read_pages(e, corpus, *r).map_err(|x| format!("engine: {x}"))?;
            }
            Op::Sleep(s) => std::thread::sleep(Duration::from_secs(*s)),
        }
    }
    let name_of = |r: Option<Errno>| r.map_or("ok".to_string(), |e| e.name().to_string());
    let ks = state(k, &name_of(kr), km).map_err(|x| format!("kernel: {x}"))?;
    let es = state(e, &name_of(er), em).map_err(|x| format!("engine: {x}"))?;
    let diff = differences(&ks, &es);
    Ok(StepRow {
        step: name,
        verdict: if diff.is_empty() { "PASS" } else { "FAIL" }.into(),
        detail: diff.join("; "),
        kernel: Some(ks),
        engine: Some(es),
    })
}

fn store(attr: &'static str, value: impl Into<String>) -> Op {
    Op::Store(attr, value.into(), None)
}

/// Steps 2–10 (the module's list), run one by one: the limit of step 6
/// is half the huge pages the kernel has left by then.
fn run_steps(
    k: &dyn Side,
    e: &dyn Side,
    corpus: &Corpus,
    age: u64,
    rows: &mut Vec<StepRow>,
) -> Result<(), String> {
    let n = corpus.page_count();
    let mut go = |name: String, ops: Vec<Op>| -> Result<StepRow, String> {
        let r = step(k, e, corpus, name, &ops)?;
        rows.push(r.clone());
        Ok(r)
    };
    go(
        "idle all".into(),
        vec![store(zmem_kernel::attr::IDLE, "all")],
    )?;
    go("read pages i%8=0".into(), vec![Op::Read(Some(0))])?;
    go(
        "writeback huge_idle".into(),
        vec![store(zmem_kernel::attr::WRITEBACK, "huge_idle")],
    )?;
    let r = go(
        "writeback incompressible".into(),
        vec![Op::Store(
            zmem_kernel::attr::WRITEBACK,
            zmem_kernel::page_type::INCOMPRESSIBLE.into(),
            Some(format!(
                "no `{}` writeback mode in this kernel ({}+; older ones answer EIO)",
                zmem_kernel::page_type::INCOMPRESSIBLE,
                zmem_kernel::Syntax::IncompressibleWriteback.since()
            )),
        )],
    )?;
    let huge = r
        .kernel
        .map(|s| s.huge_pages)
        .unwrap_or_else(|| mm(k).huge_pages);
    let limit = (huge / 2).max(1);
    go(
        format!("writeback_limit {limit}, writeback huge"),
        vec![
            store(zmem_kernel::attr::WRITEBACK_LIMIT_ENABLE, "1"),
            store(zmem_kernel::attr::WRITEBACK_LIMIT, limit.to_string()),
            store(zmem_kernel::attr::WRITEBACK, "huge"),
        ],
    )?;
    go(
        "writeback_limit_enable 0".into(),
        vec![store(zmem_kernel::attr::WRITEBACK_LIMIT_ENABLE, "0")],
    )?;
    go(
        format!("wait {}s, read pages i%8=1, idle {age}", age + 1),
        vec![
            Op::Sleep(age + 1),
            Op::Read(Some(1)),
            Op::Store(
                zmem_kernel::attr::IDLE,
                age.to_string(),
                Some("no idle with an age: the kernel is built without CONFIG_ZRAM_TRACK_ENTRY_ACTIME (CONFIG_ZRAM_MEMORY_TRACKING before 6.9)".into()),
            ),
        ],
    )?;
    go(
        "writeback idle".into(),
        vec![store(
            zmem_kernel::attr::WRITEBACK,
            zmem_kernel::page_type::IDLE,
        )],
    )?;
    go(format!("read back all {n} pages"), vec![Op::Read(None)])?;
    Ok(())
}

fn mm(s: &dyn Side) -> MmStat {
    s.show(zmem_kernel::attr::MM_STAT)
        .ok()
        .and_then(|m| MmStat::parse(&m))
        .unwrap_or_default()
}

/// The kernel device, configured as the engine's: algorithm, backing_dev,
/// compressed_writeback and writeback_batch_size where asked for, disksize.
/// Err(SKIP rows) when the kernel cannot run this comparison.
fn kernel_device(
    backing: Option<&Path>,
    pages: usize,
    opts: &KernelOptions,
    rows: &mut KernelRows,
) -> Result<Kernel, Box<KernelRows>> {
    let dev =
        HotDevice::create_journaled().map_err(|e| Box::new(KernelRows::skip(e.to_string())))?;
    let has = |a: &str| dev.sys_path().join(a).exists();
    rows.attrs = wb_attrs().filter(|a| has(a)).map(str::to_string).collect();
    if !has(zmem_kernel::attr::BACKING_DEV) {
        return Err(Box::new(KernelRows::skip(format!(
            "the running kernel ({}) has no zram writeback: no backing_dev attribute (built without CONFIG_ZRAM_WRITEBACK)",
            rows.kernel
        ))));
    }
    let Some(backing) = backing else {
        return Err(Box::new(KernelRows::skip(format!(
            "the kernel's backing_dev takes a block device: name one with --backing-dev /dev/X (this kernel has {})",
            rows.attrs.join(" ")
        ))));
    };
    let failed = |rows: &KernelRows, a: &str, v: &str, e: std::io::Error| {
        Box::new(rows.clone().fail(format!("kernel: {a} {v}: {e}")))
    };
    let set = |rows: &KernelRows, a: &str, v: &str| {
        dev.write_attr(a, v).map_err(|e| failed(rows, a, v, e))
    };
    set(rows, zmem_kernel::attr::COMP_ALGORITHM, &opts.algo)?;
    if opts.compressed {
        if !has(zmem_kernel::attr::COMPRESSED_WRITEBACK) {
            return Err(Box::new(KernelRows::skip(format!(
                "--wb-compressed: the running kernel ({}) has no {}",
                rows.kernel,
                zmem_kernel::ZramAttr::of(zmem_kernel::attr::COMPRESSED_WRITEBACK).with_kernels()
            ))));
        }
        set(rows, zmem_kernel::attr::COMPRESSED_WRITEBACK, "1")?;
    }
    if let Some(b) = opts.batch_size {
        if has(zmem_kernel::attr::WRITEBACK_BATCH_SIZE) {
            set(
                rows,
                zmem_kernel::attr::WRITEBACK_BATCH_SIZE,
                &b.to_string(),
            )?;
        } else {
            rows.notes.push(format!(
                "--wb-batch-size {b}: the kernel has no {}",
                zmem_kernel::ZramAttr::of(zmem_kernel::attr::WRITEBACK_BATCH_SIZE).with_kernels()
            ));
        }
    }
    set(
        rows,
        zmem_kernel::attr::BACKING_DEV,
        &backing.display().to_string(),
    )?;
    set(
        rows,
        zmem_kernel::attr::DISKSIZE,
        &((pages * PAGE_SIZE) as u64).to_string(),
    )?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev.dev_path())
        .map_err(|e| {
            Box::new(
                rows.clone()
                    .fail(format!("open {}: {e}", dev.dev_path().display())),
            )
        })?;
    Ok(Kernel { dev, file })
}

/// Sets `writeback_batch_size` on an engine device where its kernel's zram has it; one
/// without it (before the batched pass) writes a page at a time, and the note says so.
pub(crate) fn engine_batch_size(dev: &Zram, b: Option<u32>) -> Result<Option<String>, String> {
    let Some(b) = b else { return Ok(None) };
    match dev.attr_write(zmem_kernel::attr::WRITEBACK_BATCH_SIZE, &b.to_string()) {
        Ok(_) => Ok(None),
        Err(e) if e.errno == Errno::ENOENT => {
            Ok(Some(format!("--wb-batch-size {b}: engine: {}", e.message)))
        }
        Err(e) => Err(format!("engine: writeback_batch_size {b}: {e}")),
    }
}

/// The engine device, its backing a new file of `pages + 1` pages, and a note when its
/// kernel has no `writeback_batch_size`.
fn engine_device(
    pages: usize,
    file: &Path,
    opts: &KernelOptions,
) -> Result<(Engine, Option<String>), String> {
    let dev = opts
        .engine
        .zram()
        .algorithm(opts.algo.as_str(), Params::default())
        .backing_dev(file)
        .compressed_writeback(opts.compressed)
        .disksize((pages * PAGE_SIZE) as u64)
        .build()
        .map_err(|e| format!("engine device: {e}"))?;
    let note = engine_batch_size(&dev, opts.batch_size)?;
    Ok((Engine(dev), note))
}

/// The comparison: SKIP rows with the reason when the kernel cannot run it
/// (no root or zram, no writeback, no block device, an attribute asked for
/// that this kernel lacks), else one row per step.
pub fn compare(
    corpus: &Corpus,
    backing: Option<&Path>,
    engine_file: &Path,
    opts: &KernelOptions,
) -> KernelRows {
    let mut rows = KernelRows {
        kernel: release(),
        backing_dev: backing.map(|p| p.display().to_string()).unwrap_or_default(),
        ..Default::default()
    };
    let n = corpus.page_count();
    let k = match kernel_device(backing, n, opts, &mut rows) {
        Ok(k) => k,
        Err(r) => {
            return KernelRows {
                attrs: rows.attrs,
                ..*r
            }
        }
    };
    let e = match engine_device(n, engine_file, opts) {
        Ok((e, note)) => {
            rows.notes.extend(note);
            e
        }
        Err(x) => return rows.fail(x),
    };
    for (a, side) in [
        (zmem_kernel::attr::WRITEBACK_BATCH_SIZE, "kernel"),
        (zmem_kernel::attr::WRITEBACK_BATCH_SIZE, "engine"),
    ] {
        let s: &dyn Side = if side == "kernel" { &k } else { &e };
        if let Ok(v) = s.show(a) {
            rows.notes.push(format!("{side} {a} {v}"));
        }
    }
    let write = super::kernel::write_corpus(&k.dev, corpus)
        .and_then(|_| super::recomp::write_corpus(&e.0, corpus).map_err(|x| format!("{x:#}")));
    if let Err(x) = write {
        return rows.fail(format!("writing the corpus: {x}"));
    }
    let first = state(&k, "ok", 0).and_then(|ks| Ok((ks, state(&e, "ok", 0)?)));
    match first {
        Ok((ks, es)) => {
            let diff = differences(&ks, &es);
            rows.steps.push(StepRow {
                step: format!("write {n} pages"),
                verdict: if diff.is_empty() { "PASS" } else { "FAIL" }.into(),
                detail: diff.join("; "),
                kernel: Some(ks),
                engine: Some(es),
            });
        }
        Err(x) => return rows.fail(x),
    }
    if let Err(x) = run_steps(&k, &e, corpus, opts.age_s, &mut rows.steps) {
        return rows.fail(x);
    }
    let failed: Vec<&str> = rows
        .steps
        .iter()
        .filter(|s| s.verdict == "FAIL")
        .map(|s| s.step.as_str())
        .collect();
    rows.verdict = if failed.is_empty() { "PASS" } else { "FAIL" }.into();
    if !failed.is_empty() {
        rows.reason = Some(format!("steps that differ: {}", failed.join(", ")));
    }
    rows
}

/// A temporary file for the engine's backing store, with room for `pages`
/// pages (block 0 is never used); removed on drop.
pub(crate) struct TempBacking(pub PathBuf);

impl TempBacking {
    pub fn new(pages: usize) -> std::io::Result<Self> {
        let p = std::env::temp_dir().join(format!("zmem-bench-wbk-{}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)?;
        f.set_len((pages as u64 + 1) * PAGE_SIZE as u64)?;
        Ok(TempBacking(p))
    }
}

impl Drop for TempBacking {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st() -> State {
        State {
            result: "ok".into(),
            compr_data_size: 100_000,
            bd_count: 5,
            ..Default::default()
        }
    }

    #[test]
    fn equal_states_agree_and_mem_used_is_not_compared() {
        let k = st();
        let e = State {
            mem_used_total: 12345,
            compr_data_size: 100_050,
            ..st()
        };
        assert!(differences(&k, &e).is_empty(), "{:?}", differences(&k, &e));
    }

    #[test]
    fn each_exact_field_and_compr_beyond_a_tenth_of_a_percent_differ() {
        let k = st();
        let cases: Vec<(State, &str)> = vec![
            (
                State {
                    result: "EIO".into(),
                    ..st()
                },
                "result ok vs EIO",
            ),
            (
                State {
                    bd_count: 6,
                    ..st()
                },
                "bd_count 5 vs 6",
            ),
            (
                State {
                    bd_reads: 1,
                    ..st()
                },
                "bd_reads 0 vs 1",
            ),
            (
                State {
                    bd_writes: 1,
                    ..st()
                },
                "bd_writes",
            ),
            (
                State {
                    huge_pages: 1,
                    ..st()
                },
                "huge_pages 0 vs 1",
            ),
            (
                State {
                    writeback_limit: 3,
                    ..st()
                },
                "writeback_limit 0 vs 3",
            ),
            (
                State {
                    read_mismatches: 2,
                    ..st()
                },
                "engine read_mismatches 2",
            ),
            (
                State {
                    compr_data_size: 100_200,
                    ..st()
                },
                "compr_data_size 100000 vs 100200 (+0.200 %)",
            ),
        ];
        for (e, want) in cases {
            let d = differences(&k, &e);
            assert_eq!(d.len(), 1, "{d:?}");
            assert!(d[0].contains(want), "{d:?} lacks {want}");
        }
    }

    #[test]
    fn relative_difference() {
        assert_eq!(relative(0, 0), 0.0);
        assert_eq!(relative(110, 100), 10.0);
        assert!(relative(1, 0).is_infinite());
    }

    /// Both sides the engine: every step agrees, the limit step ends in
    /// EIO with the budget used up, and every written-back page reads back.
    #[test]
    fn the_steps_on_two_engines_agree() {
        let c = zmem_corpus::default_corpus();
        let opts = KernelOptions {
            algo: "lz4".into(),
            compressed: false,
            batch_size: Some(4),
            age_s: 1,
            engine: EngineKernel::newest(),
        };
        let (fa, fb) = (TempBacking::new(c.page_count()).unwrap(), {
            let p = std::env::temp_dir().join(format!("zmem-bench-wbk2-{}", std::process::id()));
            let _ = std::fs::remove_file(&p);
            std::fs::write(&p, vec![0u8; (c.page_count() + 1) * PAGE_SIZE]).unwrap();
            TempBacking(p)
        });
        let a = engine_device(c.page_count(), &fa.0, &opts).unwrap().0;
        let b = engine_device(c.page_count(), &fb.0, &opts).unwrap().0;
        super::super::recomp::write_corpus(&a.0, &c).unwrap();
        super::super::recomp::write_corpus(&b.0, &c).unwrap();
        let mut rows = Vec::new();
        run_steps(&a, &b, &c, 1, &mut rows).unwrap();
        assert!(rows.iter().all(|r| r.verdict == "PASS"), "{rows:#?}");
        let limit = rows
            .iter()
            .find(|r| r.step.starts_with("writeback_limit "))
            .unwrap();
        let s = limit.kernel.as_ref().unwrap();
        assert_eq!(
            (s.result.as_str(), s.writeback_limit),
            ("EIO", 0),
            "{limit:?}"
        );
        let last = rows.last().unwrap().kernel.as_ref().unwrap();
        assert!(
            last.bd_count > 0 && last.bd_reads >= last.bd_count,
            "{last:?}"
        );
        assert_eq!(last.read_mismatches, 0);
    }

    /// Pages whose compressed size lies between two models' huge_class_size:
    /// random bytes up to the middle, then zeros.
    fn between_huge_classes(low: usize, high: usize, pages: usize) -> Corpus {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut data = vec![0u8; pages * PAGE_SIZE];
        for page in data.chunks_mut(PAGE_SIZE) {
            for b in &mut page[..(low + high) / 2] {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
        }
        Corpus::from_bytes("between", "test", data).unwrap()
    }

    /// The engine device beside the kernel's is the model's zram: under 6.1
    /// (zsmalloc's 4-page zspages, a lower huge_class_size) pages that 7.3
    /// stores compressed are huge, as on Debian's 6.1 (huge_pages 9 vs 1
    /// when the engine ignored the running kernel's model).
    #[test]
    fn the_engine_device_is_the_running_kernels_zram() {
        let model = |v: &str| zmem_kernel::KernelModel::parse(v).unwrap();
        let opts = |v: &str| KernelOptions {
            algo: "lz4".into(),
            compressed: false,
            batch_size: None,
            age_s: 1,
            engine: EngineKernel::pick(None, true, Ok(model(v).version())),
        };
        let file = TempBacking::new(8).unwrap();
        let (old, new) = (
            engine_device(8, &file.0, &opts("6.1")).unwrap().0,
            engine_device(8, &file.0, &opts("7.3")).unwrap().0,
        );
        assert_eq!(old.0.kernel(), model("6.1"));
        let (low, high) = (old.0.huge_class_size(), new.0.huge_class_size());
        assert!(low < high, "6.1's huge_class_size {low}, 7.3's {high}");
        let c = between_huge_classes(low, high, 8);
        for (dev, huge) in [(&old, 8), (&new, 0)] {
            super::super::recomp::write_corpus(&dev.0, &c).unwrap();
            assert_eq!(mm(dev).huge_pages, huge, "as {}", dev.0.kernel());
        }
    }
}
