//! The differential test against zram-generator itself: zram-generator 1.2.1, built from its
//! source (the crate, pinned by tests/zram_generator_probe/Cargo.lock, into
//! target/zram-generator/), and `zmem apply --zram-generator --dry-run` read the same fixture
//! roots, and the devices each would set up are compared, normalised to one outcome per
//! device: disksize in bytes, mem_limit, algorithm and parameters, recompression algorithms
//! and parameters, writeback device, and how the device is used (swap with priority and
//! options, or the filesystem, mount point and options).
//!
//! zram-generator's side comes from tests/zram_generator_probe, which runs the functions
//! zram-generator's `main` runs (its `--setup-device` writes to /sys/block directly, so the
//! values it would write are printed instead): `kernel_zram_option`, `read_all_devices`,
//! `run_generator` into a unit directory. A device is set up at boot only if a unit pulls in
//! systemd-zram-setup@zramN.service (a swap or mount unit): that is what is compared.
//!
//! Cases: zram-generator's own tests (ops/admin/tests/fixtures/zg-*) and ≥1,000 configurations from
//! a seeded generator. Every disagreement is classified; each class is printed with a
//! minimal reproducer. A disagreement is documented when zmem's dry run says what
//! zram-generator does at boot instead (`at boot zram-generator`); the test fails on any
//! other.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use zmem_files::testutil::{copy_tree, skip, ScratchDir};

/// Generated cases per run (`ZMEM_ZG_CASES` overrides).
const CASES: usize = 1000;
/// The seed of the generator (`ZMEM_ZG_SEED` overrides).
const SEED: u64 = 0x2a6e_5eed_0032;
/// The phrase of zmem's warning for a deliberate difference.
const DOCUMENTED: &str = "at boot zram-generator";

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Build the probe (a no-op when built): its path, or why it cannot be built.
fn probe() -> Result<PathBuf, String> {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_zmem"));
    let target = exe.parent().and_then(Path::parent).ok_or("no target dir")?;
    let dir = target.join("zram-generator");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--locked",
            "--quiet",
            "--manifest-path",
        ])
        .arg(manifest().join("tests/zram_generator_probe/Cargo.toml"))
        .arg("--target-dir")
        .arg(&dir)
        // zram-generator's setup.rs needs it at build time; the probe never runs systemd-makefs.
        .env("SYSTEMD_UTIL_DIR", "/usr/lib/systemd")
        .output()
        .map_err(|e| format!("cargo: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(format!(
            "building zram-generator 1.2.1 failed (offline?): {last}"
        ));
    }
    Ok(dir.join("release/zram-generator-probe"))
}

/// One device as set up at boot (zram-generator) or by apply (zmem).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Dev {
    disksize: u64,
    mem_limit: u64,
    /// Primary first, then recompression by priority: name and sorted `key=value`s.
    algos: Vec<(String, Vec<String>)>,
    writeback: String,
    /// `swap prio=P options=O` or `mount FS WHERE options=O`.
    usage: String,
}

/// The devices set up, or the error that stops everything.
type Outcome = Result<BTreeMap<String, Dev>, String>;

fn sorted_params(p: &str) -> Vec<String> {
    let mut v: Vec<String> = p
        .split_whitespace()
        .filter(|kv| !kv.starts_with("priority=") && !kv.starts_with("algo="))
        .map(String::from)
        .collect();
    v.sort();
    v
}

/// What the kernel is left with from zram-generator's algorithm writes (src/setup.rs): a
/// name it does not know is refused (`EINVAL`, a warning at boot), so are priorities past 3
/// (`ZRAM_MAX_COMPS`); algorithm_params skips words that are not a known `key=value` and
/// refuses the whole write when a level is no number; recompression parameters are written
/// to `recompress`, which sets no parameter.
fn kernel_algorithms(probe_field: &str) -> Vec<(String, Vec<String>)> {
    let mut algos = Vec::new();
    // The probe prints `name(params)` with zram-generator's params (commas made spaces).
    let mut rest = probe_field;
    while let Some(open) = rest.find('(') {
        let name = rest[..open].trim().to_string();
        let close = rest[open..]
            .find(")")
            .map(|c| open + c)
            .unwrap_or(rest.len());
        let params = &rest[open + 1..close];
        rest = rest.get(close + 1..).unwrap_or("");
        if algos.is_empty() || zmem_conf::KNOWN_ALGORITHMS.contains(&name.as_str()) {
            let p: Vec<String> = sorted_params(params)
                .into_iter()
                .filter(|kv| {
                    ["level", "dict", "deflate.winbits"]
                        .iter()
                        .any(|k| kv.starts_with(&format!("{k}=")))
                })
                .collect();
            let bad_level = p.iter().any(|kv| {
                kv.strip_prefix("level=")
                    .is_some_and(|v| v.parse::<i32>().is_err())
            });
            // A recompression algorithm's parameters go to `recompress` (setup.rs:58-64),
            // which sets none.
            let first = algos.is_empty();
            algos.push((name, if bad_level || !first { Vec::new() } else { p }));
        }
    }
    algos.truncate(4);
    algos
}

/// `Key=value` of a unit file.
fn unit_value(text: &str, key: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or("")
        .replace("%%", "%")
}

fn zg_outcome(probe: &Path, root: &Path) -> Outcome {
    let units = root.join("run-units");
    fs::create_dir_all(&units).unwrap();
    let out = Command::new(probe).arg(root).arg(&units).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut devs = BTreeMap::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split('\t').collect();
        match f[0] {
            "error" => return Err(f[1..].join(" ")),
            "device" => {
                if let Some(d) = zg_device(&f, &units) {
                    devs.insert(f[1].to_string(), d);
                }
            }
            _ => {}
        }
    }
    if !out.status.success() && devs.is_empty() {
        return Err(format!("probe failed: {text}"));
    }
    Ok(devs)
}

/// A device line of the probe, with its units; `None` when no unit sets it up at boot.
fn zg_device(f: &[&str], units: &Path) -> Option<Dev> {
    let name = f[1];
    let algos = kernel_algorithms(f[4]);
    let swap = fs::read_to_string(units.join(format!("dev-{name}.swap")));
    let bindings = fs::read_to_string(
        units.join(format!("systemd-zram-setup@{name}.service.d/bindings.conf")),
    )
    .ok()?;
    let usage = match swap {
        Ok(s) => format!(
            "swap prio={} options={}",
            unit_value(&s, "Priority"),
            unit_value(&s, "Options")
        ),
        Err(_) => {
            let unit = unit_value(&bindings, "BindsTo");
            let unit = unit.split_whitespace().next().unwrap_or("");
            let m = fs::read_to_string(units.join(unit)).ok()?;
            format!(
                "mount {} {} options={}",
                f[7],
                unit_value(&m, "Where"),
                unit_value(&m, "Options")
            )
        }
    };
    Some(Dev {
        disksize: f[2].parse().unwrap(),
        mem_limit: f[3].parse().unwrap(),
        algos,
        writeback: f[6].to_string(),
        usage,
    })
}

/// zmem's dry run: (outcome, everything it printed).
fn zmem_outcome(root: &Path) -> (Outcome, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(["apply", "--zram-generator", "--dry-run", "--root"])
        .arg(root)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let all = format!("{stdout}{stderr}");
    if !out.status.success() {
        return (Err(stderr.trim().to_string()), all);
    }
    (Ok(parse_dry_run(&stdout)), all)
}

fn parse_dry_run(text: &str) -> BTreeMap<String, Dev> {
    let mut devs: BTreeMap<String, Dev> = BTreeMap::new();
    let dev_of = |p: &str| p.trim_start_matches("/dev/").to_string();
    for l in text.lines() {
        let w: Vec<&str> = l.split(' ').collect();
        match w.as_slice() {
            ["write", path, rest @ ..] => {
                let mut parts = path.trim_start_matches("/sys/block/").split('/');
                let (Some(name), Some(attr)) = (parts.next(), parts.next()) else {
                    continue;
                };
                let d = devs.entry(name.to_string()).or_default();
                let value = rest.join(" ");
                dry_run_write(d, attr, &value);
            }
            ["run", "swapon", "-p", p, "-o", o, dev] => {
                let d = devs.entry(dev_of(dev)).or_default();
                d.usage = format!("swap prio={p} options={o}");
            }
            ["run", "swapon", "-p", p, dev] => {
                let d = devs.entry(dev_of(dev)).or_default();
                d.usage = format!("swap prio={p} options=");
            }
            ["run", "mount", "-t", fs, rest @ ..] => {
                let (opts, dev, mp) = match rest {
                    ["-o", o, dev, mp] => (*o, *dev, *mp),
                    [dev, mp] => ("", *dev, *mp),
                    _ => continue,
                };
                let d = devs.entry(dev_of(dev)).or_default();
                d.usage = format!("mount {fs} {mp} options={opts}");
            }
            _ => {}
        }
    }
    // A device is set up when its disksize is written.
    devs.retain(|_, d| d.disksize > 0);
    devs
}

fn dry_run_write(d: &mut Dev, attr: &str, value: &str) {
    let prio = |v: &str| -> usize {
        v.split_whitespace()
            .find_map(|kv| kv.strip_prefix("priority="))
            .and_then(|p| p.parse().ok())
            .unwrap_or(0)
    };
    let slot = |d: &mut Dev, p: usize| -> usize {
        while d.algos.len() <= p {
            d.algos.push(Default::default());
        }
        p
    };
    match attr {
        "disksize" => d.disksize = value.parse().unwrap_or(0),
        "mem_limit" => d.mem_limit = value.parse().unwrap_or(0),
        "backing_dev" => d.writeback = value.to_string(),
        "comp_algorithm" => {
            let i = slot(d, 0);
            d.algos[i].0 = value.to_string();
        }
        "recomp_algorithm" => {
            let i = slot(d, prio(value));
            let algo = value
                .split_whitespace()
                .find_map(|kv| kv.strip_prefix("algo="))
                .unwrap_or("");
            d.algos[i].0 = algo.to_string();
        }
        "algorithm_params" => {
            let i = slot(d, prio(value));
            d.algos[i].1 = sorted_params(value);
        }
        _ => {}
    }
}

/// What differs, as a class name; `None` when the two agree.
fn classify(zg: &Outcome, zm: &Outcome) -> Option<String> {
    let (zg, zm) = match (zg, zm) {
        (Err(_), Err(_)) => return None,
        (Ok(_), Err(e)) => {
            return Some(format!(
                "zmem refuses, zram-generator accepts: {}",
                error_kind(e)
            ))
        }
        (Err(e), Ok(_)) => {
            return Some(format!(
                "zram-generator fails, zmem applies: {}",
                error_kind(e)
            ))
        }
        (Ok(a), Ok(b)) => (a, b),
    };
    let names = |m: &BTreeMap<String, Dev>| m.keys().cloned().collect::<Vec<_>>();
    if names(zg) != names(zm) {
        return Some("the devices set up differ".into());
    }
    let mut fields = Vec::new();
    for (name, a) in zg {
        let b = &zm[name];
        for (f, same) in [
            ("disksize", a.disksize == b.disksize),
            ("mem_limit", a.mem_limit == b.mem_limit),
            ("algorithms", a.algos == b.algos),
            ("writeback", a.writeback == b.writeback),
            ("usage", a.usage == b.usage),
        ] {
            if !same && !fields.contains(&f) {
                fields.push(f);
            }
        }
    }
    (!fields.is_empty()).then(|| format!("{} differ", fields.join(", ")))
}

/// An error message without the parts that change from case to case (file, line, quoted
/// values, numbers).
fn error_kind(e: &str) -> String {
    let e = e.strip_prefix("zmem: error: ").unwrap_or(e);
    let e = match e.split_once(": ") {
        Some((place, rest)) if place.starts_with('/') => rest,
        _ => e,
    };
    let mut out = String::new();
    let mut quoted = false;
    for c in e.chars() {
        match c {
            '`' if quoted => quoted = false,
            '`' => {
                quoted = true;
                out.push_str("`…`");
            }
            _ if quoted => {}
            c if c.is_ascii_digit() || c == '.' && out.ends_with('#') => {
                if !out.ends_with('#') {
                    out.push('#');
                }
            }
            c => out.push(c),
        }
    }
    out.chars().take(90).collect()
}

/// A file of a case: text, or a symlink (to /dev/null, or to another file of the case).
#[derive(Debug, Clone)]
enum Content {
    Text(Vec<String>),
    Link(String),
}

/// One generated configuration tree.
#[derive(Debug, Clone)]
struct Case {
    /// Paths inside the root (`etc/systemd/zram-generator.conf`).
    files: Vec<(String, Content)>,
    bom: bool,
    mem_kb: u64,
    cmdline: String,
}

impl Case {
    fn write(&self, base: &Path, root: &Path) {
        copy_tree(base, root);
        fs::write(
            root.join("proc/meminfo"),
            format!(
                "MemTotal:       {} kB\nMemFree:          611992 kB\n",
                self.mem_kb
            ),
        )
        .unwrap();
        fs::write(root.join("proc/cmdline"), format!("{}\n", self.cmdline)).unwrap();
        for (i, (path, c)) in self.files.iter().enumerate() {
            let p = root.join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            match c {
                Content::Text(lines) => {
                    let mut text = lines.join("\n");
                    text.push('\n');
                    if self.bom && i == 0 {
                        text.insert(0, '\u{feff}');
                    }
                    fs::write(&p, text).unwrap();
                }
                Content::Link(to) => symlink(to, &p).unwrap(),
            }
        }
    }

    fn show(&self) -> String {
        let mut s = format!(
            "  MemTotal: {} kB; /proc/cmdline: `{}`{}\n",
            self.mem_kb,
            self.cmdline,
            if self.bom {
                "; first file starts with a BOM"
            } else {
                ""
            }
        );
        for (path, c) in &self.files {
            match c {
                Content::Text(lines) => {
                    s.push_str(&format!("  /{path}:\n"));
                    for l in lines {
                        s.push_str(&format!("    |{l}\n"));
                    }
                }
                Content::Link(to) => s.push_str(&format!("  /{path} -> {to}\n")),
            }
        }
        s
    }

    fn size(&self) -> usize {
        self.files
            .iter()
            .map(|(_, c)| match c {
                Content::Text(l) => l.iter().map(|l| l.len() + 1).sum(),
                Content::Link(_) => 10,
            })
            .sum()
    }
}

/// xorshift64*: the same cases on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[self.below(v.len())]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const SIZES: [&str; 26] = [
    "ram / 2",
    "ram",
    "min(ram / 2, 4096)",
    "512",
    "ram * 1.5",
    "max(ram / 4, 256)",
    "min(ram, 8192)",
    "ram / 3 + 100",
    "2^10",
    "ram - 2^9",
    "floor(ram / 3)",
    "ceil(ram / 7)",
    "round(ram / 3)",
    "round(ram / 3, 2)",
    "ram * 3 % 4096",
    "ram - -2^10",
    "-2^2 + ram",
    "abs(-512)",
    "0",
    "ram / 0",
    "log(ram)",
    "e() * 100",
    "pi() * 100",
    "ram > 4096",
    "e * 100",
    "sqrt(ram)",
];
const ALGOS: [&str; 19] = [
    "zstd",
    "lz4",
    "lzo-rle",
    "lzo",
    "zstd lz4",
    "lz4 zstd",
    "zstd(level=3)",
    "zstd(level=3,dict=/etc/d)",
    "zstd(level=3, dict=/etc/d)",
    "lz4hc zstd(level=9) (type=huge)",
    "zstd lz4 (type=idle)",
    "zstd(level=max)",
    "lz4(fast)",
    "lz4(level=4,fast)",
    "zstd lz4 lzo deflate",
    "zstd lz4 lzo deflate lz4hc",
    "",
    "lzo-rle zstd(level=22)",
    "deflate(level=6)",
];

/// A `[zramN]` section's lines.
fn gen_section(r: &mut Rng, out: &mut Vec<String>) {
    let n = *[0, 0, 0, 1, 1, 2, 3, 11].get(r.below(8)).unwrap();
    out.push(format!("[zram{n}]"));
    let keys = 1 + r.below(4);
    for _ in 0..keys {
        let line = match r.below(14) {
            0..=2 => format!("zram-size = {}", r.pick(&SIZES)),
            3..=4 => format!("compression-algorithm = {}", r.pick(&ALGOS)),
            5 => format!(
                "swap-priority = {}",
                r.pick(&["100", "5", "-1", "32767", "-2"])
            ),
            6 => format!(
                "host-memory-limit = {}",
                r.pick(&["none", "2048", "9000", "100000"])
            ),
            7 => format!("zram-resident-limit = {}", r.pick(&["ram / 4", "0", "100"])),
            8 => format!(
                "options = {}",
                r.pick(&["discard", "", "discard,pri=5", "defaults"])
            ),
            9 => {
                out.push(format!(
                    "fs-type = {}",
                    r.pick(&["ext4", "ext2", "xfs", "swap"])
                ));
                format!(
                    "mount-point = {}",
                    r.pick(&["/var/tmp", "/tmp/z", "/a/./b/"])
                )
            }
            10 => format!("fs-type = {}", r.pick(&["ext4", "swap", "none"])),
            11 => format!("zram-fraction = {}", r.pick(&["0.5", "1", "0.25", "1.0"])),
            12 => format!("max-zram-size = {}", r.pick(&["none", "2048", "4096"])),
            _ => format!(
                "writeback-device = {}",
                r.pick(&["/dev/vdb1", "/dev/disk/by-id/x"])
            ),
        };
        out.push(line);
    }
}

/// A file's lines: sections with quirks sprinkled in.
fn gen_text(r: &mut Rng) -> Vec<String> {
    let mut out = Vec::new();
    if r.chance(30) {
        out.push("# zram configuration".into());
    }
    for _ in 0..1 + r.below(3) {
        gen_section(r, &mut out);
    }
    // Quirks: each with a small chance, at a random line.
    let quirks: [(u64, &str); 8] = [
        (6, "  # an indented comment"),
        (6, "; a semicolon comment"),
        (4, "a line without an equals sign"),
        (3, ""),
        (3, "zram-size: 256"),
        (3, "\tzram-size = 300"),
        (2, "[zram0] # swap"),
        (2, "unknown-key = 1"),
    ];
    for (p, q) in quirks {
        if r.chance(p) {
            let at = r.below(out.len() + 1);
            out.insert(at, q.to_string());
        }
    }
    if r.chance(3) {
        // A value with a trailing comment.
        out.push("swap-priority = 10 # low".into());
    }
    out
}

const DIRS: [&str; 4] = ["usr/lib", "usr/local/lib", "etc", "run"];

fn gen_case(r: &mut Rng) -> Case {
    let mut files = Vec::new();
    for _ in 0..1 + r.below(2) {
        let dir = r.pick(&DIRS);
        let path = format!("{dir}/systemd/zram-generator.conf");
        if files.iter().any(|(p, _)| p == &path) {
            continue;
        }
        let c = if r.chance(8) {
            Content::Link("/dev/null".into())
        } else {
            Content::Text(gen_text(r))
        };
        files.push((path, c));
    }
    for _ in 0..r.below(3) {
        let dir = r.pick(&DIRS);
        let name = r.pick(&["10-a.conf", "20-b.conf", "50-c.conf", "99-z.conf"]);
        let path = format!("{dir}/systemd/zram-generator.conf.d/{name}");
        if files.iter().any(|(p, _)| p == &path) {
            continue;
        }
        let c = match r.below(12) {
            0 => Content::Link("/dev/null".into()),
            1 => Content::Link("../zram-generator.conf".into()),
            _ => Content::Text(gen_text(r)),
        };
        files.push((path, c));
    }
    let mem_kb = *[
        801_322u64, 2_047_999, 8_013_220, 16_384_000, 4_194_304, 65_536_000, 1_000,
    ]
    .get(r.below(7))
    .unwrap();
    let cmdline = r
        .pick(&[
            "quiet",
            "quiet",
            "quiet",
            "quiet",
            "systemd.zram=0",
            "systemd.zram",
            "systemd.zram=1 quiet",
            "systemd.zram=maybe",
        ])
        .to_string();
    Case {
        files,
        bom: r.chance(3),
        mem_kb,
        cmdline,
    }
}

/// The base of every generated root: a kernel with zram loaded and no device (zg-01-basic
/// without its configuration).
fn base_root(scratch: &ScratchDir) -> PathBuf {
    let from = manifest().join("../ops/admin/tests/fixtures/zg-01-basic/root");
    let base = scratch.join("base");
    for d in ["proc", "sys"] {
        copy_tree(&from.join(d), &base.join(d));
    }
    base
}

/// The result of one case.
struct Run {
    class: Option<String>,
    documented: bool,
    zg: Outcome,
    zmem: Outcome,
}

fn run_root(probe: &Path, root: &Path) -> Run {
    let zg = zg_outcome(probe, root);
    let (zmem, text) = zmem_outcome(root);
    let class = classify(&zg, &zmem);
    Run {
        documented: class.is_some() && text.contains(DOCUMENTED),
        class,
        zg,
        zmem,
    }
}

fn run_case(probe: &Path, base: &Path, case: &Case, scratch: &Path) -> Run {
    let root = scratch.join("root");
    let _ = fs::remove_dir_all(&root);
    case.write(base, &root);
    let r = run_root(probe, &root);
    let _ = fs::remove_dir_all(&root);
    r
}

/// Shrink a case line by line while it stays in `class`.
fn shrink(probe: &Path, base: &Path, case: &Case, class: &str, scratch: &Path) -> Case {
    let mut best = case.clone();
    let mut f = 0;
    while f < best.files.len() {
        let mut without = best.clone();
        without.files.remove(f);
        if run_case(probe, base, &without, scratch).class.as_deref() == Some(class) {
            best = without;
            continue;
        }
        let mut i = 0;
        while let Content::Text(lines) = &best.files[f].1 {
            if i >= lines.len() {
                break;
            }
            let mut cand = best.clone();
            if let Content::Text(l) = &mut cand.files[f].1 {
                l.remove(i);
            }
            if run_case(probe, base, &cand, scratch).class.as_deref() == Some(class) {
                best = cand;
            } else {
                i += 1;
            }
        }
        f += 1;
    }
    best
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One class of disagreements: how many, how many documented, the smallest case.
#[derive(Default)]
struct Class {
    count: usize,
    documented: usize,
    smallest: Option<(Case, String)>,
}

fn generated_cases(
    probe: &Path,
    base: &Path,
    scratch: &ScratchDir,
) -> (usize, BTreeMap<String, Class>) {
    let n = env_num("ZMEM_ZG_CASES", CASES as u64) as usize;
    let mut rng = Rng(env_num("ZMEM_ZG_SEED", SEED) | 1);
    let cases: Vec<Case> = (0..n).map(|_| gen_case(&mut rng)).collect();
    let results: Vec<(usize, Run)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|w| {
                let cases = &cases;
                let dir = scratch.join(&format!("w{w}"));
                s.spawn(move || {
                    fs::create_dir_all(&dir).unwrap();
                    (w..cases.len())
                        .step_by(2)
                        .map(|i| (i, run_case(probe, base, &cases[i], &dir)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let mut classes: BTreeMap<String, Class> = BTreeMap::new();
    for (i, r) in results {
        let Some(class) = r.class else { continue };
        let c = classes.entry(class).or_default();
        c.count += 1;
        c.documented += r.documented as usize;
        let detail = format!(
            "  zram-generator: {:?}\n  zmem:           {:?}\n",
            r.zg, r.zmem
        );
        if c.smallest
            .as_ref()
            .is_none_or(|(s, _)| cases[i].size() < s.size())
        {
            c.smallest = Some((cases[i].clone(), detail));
        }
    }
    (n, classes)
}

#[test]
fn zram_generator_and_zmem_set_up_the_same_devices() {
    let probe = match probe() {
        Ok(p) => p,
        Err(e) => {
            skip(&format!(
                "SKIP zram_generator_and_zmem_set_up_the_same_devices: {e}"
            ));
            return;
        }
    };
    let scratch = ScratchDir::new("zg-diff");
    let base = base_root(&scratch);
    let mut undocumented = 0;
    // zram-generator's own tests, as fixture trees.
    let mut own = 0;
    for e in fs::read_dir(manifest().join("../ops/admin/tests/fixtures")).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("zg-") {
            continue;
        }
        own += 1;
        let (_s, root) = ScratchDir::with_copy("zg-own", &e.path().join("root"));
        let r = run_root(&probe, &root);
        if let Some(class) = &r.class {
            println!(
                "zram-generator's {name}: {class}{}\n  zram-generator: {:?}\n  zmem:           {:?}",
                if r.documented { " (documented)" } else { "" },
                r.zg,
                r.zmem
            );
            undocumented += !r.documented as usize;
        }
    }
    let (n, classes) = generated_cases(&probe, &base, &scratch);
    let disagree: usize = classes.values().map(|c| c.count).sum();
    println!(
        "{own} of zram-generator's own cases; {n} generated: {} agree, {disagree} disagree in {} classes",
        n - disagree,
        classes.len()
    );
    let dir = scratch.join("shrink");
    fs::create_dir_all(&dir).unwrap();
    for (class, c) in &classes {
        println!(
            "\n{} case(s), {} documented: {class}",
            c.count, c.documented
        );
        undocumented += c.count - c.documented;
        if let Some((case, detail)) = &c.smallest {
            let small = shrink(&probe, &base, case, class, &dir);
            let r = run_case(&probe, &base, &small, &dir);
            print!("{}", small.show());
            println!(
                "  zram-generator: {:?}\n  zmem:           {:?}",
                r.zg, r.zmem
            );
            let _ = detail;
        }
    }
    println!("\n{undocumented} undocumented disagreement(s)");
    assert!(
        undocumented == 0,
        "{undocumented} disagreements with zram-generator that zmem does not warn about (see above)"
    );
}
