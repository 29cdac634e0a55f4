//! Parse and render agree: a model written out and read back is the same model, a file read
//! and written out says the same thing, and a section comes out byte for byte as written.

use std::path::Path;

use proptest::prelude::*;
use zmem_conf::{
    parse, Algo, Algorithms, Config, DeviceConfig, DiskSwap, Entry, SizeExpr, Writer,
    KNOWN_ALGORITHMS, LEVEL_RANGES,
};

/// The values of a model: where each was read from (lines, files, the keys as written) and
/// the reader's warnings aside.
fn values(mut c: Config) -> Config {
    c.file = "t.conf".into();
    c.warnings.clear();
    for d in &mut c.devices {
        d.line = 0;
        d.raw.clear();
        for e in std::iter::once(&mut d.zram_size).chain(d.resident_limit.as_mut()) {
            e.line = 0;
            e.file = None;
        }
    }
    for e in c
        .sysctls
        .iter_mut()
        .chain(&mut c.zswap)
        .chain(&mut c.policy)
    {
        e.line = 0;
    }
    if let Some(d) = &mut c.disk_swap {
        d.line = 0;
    }
    c
}

fn read(text: &str) -> Config {
    parse(text, Path::new("t.conf")).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn expr(s: &str) -> SizeExpr {
    SizeExpr::parse(s, 0).unwrap()
}

/// A file using every section and the obsolete keys: read, written and read again, it has
/// the same values (the obsolete keys come back as the zram-size they mean).
#[test]
fn a_file_read_and_written_reads_back_the_same() {
    let text =
        "# comment\n[zram1]\nzram-fraction = 0.25\nmax-zram-size = 1000\nmemory-limit = 300\n\
        [zram0]\nzram-size = min(ram / 2, 4096)\nzram-resident-limit = ram / 4\n\
        compression-algorithm = lzo-rle zstd(level=3) lz4hc (type=idle,threshold=1024)\n\
        writeback-device = /dev//sdb/\nswap-priority = 50\n\
        [zram2]\nmount-point = /var/tmp\noptions = discard\n\
        [sysctl]\nvm.swappiness = 180\n[zswap]\nenabled = no\ncompressor = lz4\n\
        [disk-swap]\ndevice = /swapfile\npriority = 5\n[policy]\nidle_after = 1h\n";
    let once = read(text);
    let rendered = once.render();
    assert_eq!(values(read(&rendered)), values(once), "{rendered}");
    for want in [
        "zram-size = min(int(ram * 0.25), 1000)\nhost-memory-limit = 300\n",
        "compression-algorithm = lzo-rle zstd(level=3) lz4hc (type=idle,threshold=1024)\n",
        "writeback-device = /dev/sdb\nswap-priority = 50\n",
        "[zram2]\nzram-size = min(ram / 2, 4096)\nswap-priority = 100\nfs-type = ext2\nmount-point = /var/tmp\noptions = discard\n",
        "[zswap]\nenabled = N\ncompressor = lz4\n",
    ] {
        assert!(rendered.contains(want), "{want:?} not in\n{rendered}");
    }
}

/// The Writer puts comments and sections in the caller's order, exactly as `zmem recommend`
/// has always written its `[zram0]`.
#[test]
fn writer_keeps_the_callers_order_byte_for_byte() {
    let mut d = DeviceConfig::new(0, 0);
    d.zram_size = expr("floor(min(ram * 0.5 * 2.20, ram * 2))");
    d.resident_limit = Some(expr("floor(ram * 0.5)"));
    let mut a = Algorithms::new(Algo::named("lz4"));
    a.recompress.push(Algo::named("zstd"));
    a.recompress_params.push(("type".into(), "idle".into()));
    d.algorithms = Some(a);
    let mut w = Writer::new();
    w.comment("from here\n  indented")
        .device(&d)
        .zswap(&[Entry::new("enabled", "N")])
        .sysctls(&[])
        .disk_swap(&DiskSwap::new("/dev/vdb", 10));
    assert_eq!(
        w.finish(),
        "# from here\n#   indented\n[zram0]\nzram-size = floor(min(ram * 0.5 * 2.20, ram * 2))\n\
         zram-resident-limit = floor(ram * 0.5)\ncompression-algorithm = lz4 zstd (type=idle)\n\
         swap-priority = 100\n[zswap]\nenabled = N\n[disk-swap]\ndevice = /dev/vdb\npriority = 10\n"
    );
    assert_eq!(Config::new("empty").render(), "");
}

fn algo() -> impl Strategy<Value = Algo> {
    (0..KNOWN_ALGORITHMS.len(), any::<Option<i32>>()).prop_map(|(i, level)| {
        let name = KNOWN_ALGORITHMS[i];
        let mut a = Algo::named(name);
        if let (Some(l), Some(r)) = (level, LEVEL_RANGES.iter().find(|r| r.0 == name)) {
            let span = (i64::from(r.2) - i64::from(r.1) + 1) as u64;
            let level = i64::from(r.1) + (u64::from(l.unsigned_abs()) % span) as i64;
            a.params.push(("level".into(), level.to_string()));
        }
        a
    })
}

fn algorithms() -> impl Strategy<Value = Algorithms> {
    let kinds = prop::sample::select(vec!["idle", "huge", "huge_idle"]);
    (
        algo(),
        prop::collection::vec(algo(), 0..=3),
        prop::option::of((kinds, prop::option::of(0..100_000u64))),
    )
        .prop_map(|(primary, recompress, params)| {
            let mut a = Algorithms::new(primary);
            if !recompress.is_empty() {
                if let Some((kind, threshold)) = params {
                    a.recompress_params.push(("type".into(), kind.into()));
                    if let Some(t) = threshold {
                        a.recompress_params
                            .push(("threshold".into(), t.to_string()));
                    }
                }
            }
            a.recompress = recompress;
            a
        })
}

const SIZES: [&str; 5] = [
    "ram",
    "min(ram / 2, 4096)",
    "floor(min(ram * 0.5 * 2.20, ram * 2))",
    "1024",
    "ram * 1.5 + 2^4",
];

fn device(id: u32) -> impl Strategy<Value = DeviceConfig> {
    let size = prop::sample::select(SIZES.to_vec());
    let fs = prop::sample::select(vec!["swap", "none", "ext4"]);
    let path = prop::option::of(prop::sample::select(vec!["/dev/sdb", "/var/tmp/z"]));
    (
        (size.clone(), prop::option::of(size)),
        (
            prop::option::of(0..1u64 << 20),
            prop::option::of(algorithms()),
        ),
        (path.clone(), -1..=32767i32, fs, path),
        prop::option::of(prop::sample::select(vec!["discard", "x-systemd.makefs"])),
    )
        .prop_map(
            move |((size, resident), (limit, algos), (wb, prio, fs, mount), options)| {
                let mut d = DeviceConfig::new(id, 0);
                d.zram_size = expr(size);
                d.resident_limit = resident.map(expr);
                d.host_memory_limit = limit;
                d.algorithms = algos;
                d.writeback_device = wb.map(String::from);
                d.swap_priority = prio;
                d.fs_type = fs.into();
                // One mount point per device (two devices on one are refused, as zram-generator
                // fails on them): each device mounts under its own directory.
                d.mount_point = mount
                    .filter(|_| fs != "swap")
                    .map(|m| format!("{m}/zram{id}"));
                d.options = options.map(String::from);
                d
            },
        )
}

fn entries(keys: &[&'static str], values: &[&'static str]) -> impl Strategy<Value = Vec<Entry>> {
    prop::collection::vec(
        (
            prop::sample::select(keys.to_vec()),
            prop::sample::select(values.to_vec()),
        ),
        0..4,
    )
    .prop_map(|kv| kv.into_iter().map(|(k, v)| Entry::new(k, v)).collect())
}

fn model() -> impl Strategy<Value = Config> {
    let ids = prop::collection::btree_set(0..16u32, 0..4);
    let devices = ids.prop_flat_map(|ids| ids.into_iter().map(device).collect::<Vec<_>>());
    let zswap = prop::sample::subsequence(
        vec![
            Entry::new("enabled", "Y"),
            Entry::new("compressor", "zstd"),
            Entry::new("max_pool_percent", "20"),
            Entry::new("accept_threshold_percent", "90"),
            Entry::new("shrinker_enabled", "N"),
        ],
        0..=5,
    );
    (
        devices,
        entries(&["vm.swappiness", "vm.page-cluster"], &["0", "180", "3"]),
        zswap,
        prop::option::of(-1..100i32),
        entries(&["idle_after", "recompress"], &["1h", "huge"]),
    )
        .prop_map(|(devices, sysctls, zswap, disk, policy)| {
            let mut c = Config::new("t.conf");
            // The disk tier sits below every zram swap (the reader refuses it otherwise).
            let lowest = devices
                .iter()
                .filter(|d| d.fs_type == "swap")
                .map(|d| d.swap_priority)
                .min();
            c.disk_swap = disk
                .filter(|p| lowest.is_none_or(|l| *p < l))
                .map(|p| DiskSwap::new("/swapfile", p));
            c.devices = devices;
            c.sysctls = sysctls;
            c.zswap = zswap;
            c.policy = policy;
            c
        })
}

proptest! {
    /// parse(render(model)) == model.
    #[test]
    fn a_model_rendered_parses_back_to_itself(m in model()) {
        let text = m.render();
        let back = parse(&text, Path::new("t.conf"))
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        // Only the announced differences from zram-generator (recompression parameters).
        let unexpected: Vec<_> = back
            .warnings
            .iter()
            .filter(|w| !w.reason.contains("at boot zram-generator"))
            .collect();
        prop_assert!(unexpected.is_empty(), "{:?}\n{}", back.warnings, text);
        prop_assert_eq!(values(back), m, "{}", text);
    }
}

/// Whatever the reader takes, it takes again once written, and writing that is the same text.
#[test]
fn what_parses_renders_to_a_fixed_point() {
    let alphabet =
        b"[]=()#;, \n\tzramsizecompressionalgorithmzstdlz4ram*/+-^0123456789.!/levfsytpmun:";
    let mut parsed = 0;
    for s in zmem_files::testutil::random_strings(0x2545F4914F6CDD1D, alphabet, 160, 5000)
        .chain(["[zram0]\nzram-fraction = 0.3\n[zram1]\nmount-point = /a\n[policy]\n= x\n".into()])
    {
        let Ok(c) = parse(&s, Path::new("t.conf")) else {
            continue;
        };
        parsed += 1;
        let text = c.render();
        let back = read(&text);
        assert_eq!(back.render(), text, "from {s:?}");
        assert_eq!(values(back), values(c), "from {s:?}");
    }
    assert!(parsed > 100, "only {parsed} inputs parsed");
}
