//! `zmem bench`'s modes as subcommands: each lists only its own flags, refuses the others,
//! and gives what the old flag spelling gives; the old spelling prints a one-line note naming
//! the subcommand.

mod bench_common;

use std::collections::BTreeSet;

use bench_common::{text, write_corpus, zmem};
use serde_json::Value;
use zmem_files::testutil::ScratchDir;

/// The `--long` flags a help text lists as options.
fn flags_in_help(help: &str) -> BTreeSet<String> {
    help.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("--") || l.starts_with("-h, --") || l.starts_with("-V, --"))
        .map(|l| {
            let l = l.trim_start_matches("-h, ").trim_start_matches("-V, ");
            l[2..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect()
        })
        .collect()
}

const COMMON: [&str; 2] = ["help", "version"];

/// Each subcommand's flags, and no other.
const MODES: [(&str, &[&str]); 10] = [
    (
        "verdict",
        &[
            "algo",
            "format",
            "budget",
            "rounds",
            "out-dir",
            "overwrite",
            "requests",
            "no-kernel",
            "weights",
            "ram",
            "fs-read",
        ],
    ),
    (
        "device",
        &[
            "algo",
            "format",
            "level",
            "threads",
            "requests",
            "no-kernel",
            "kernel",
            "page-size",
        ],
    ),
    (
        "floor",
        &[
            "algo",
            "format",
            "level",
            "threads",
            "requests",
            "no-kernel",
            "kernel",
            "page-size",
        ],
    ),
    (
        "codecs",
        &["algo", "format", "level", "dict", "min-time-ms"],
    ),
    (
        "full",
        &[
            "algo",
            "format",
            "report",
            "overwrite",
            "weights",
            "ram",
            "fs-read",
            "dict",
            "min-time-ms",
            "requests",
            "no-kernel",
            "budget",
            "rounds",
        ],
    ),
    ("recomp", &["primary", "format"]),
    ("fastpath", &["primary", "passes", "format"]),
    (
        "writeback",
        &[
            "algo",
            "wb-type",
            "wb-compressed",
            "backing-dev",
            "format",
            "force",
            "no-kernel",
            "wb-batch-size",
        ],
    ),
    (
        "zswap",
        &[
            "algo",
            "format",
            "hot",
            "hot-access",
            "budget",
            "accesses",
            "zpool",
            "force",
            "worker",
            "no-kernel",
            "swap-dir",
        ],
    ),
    (
        "transport",
        &[
            "target",
            "algo",
            "kernel",
            "rounds",
            "requests",
            "queue-depth",
            "force",
            "format",
        ],
    ),
];

#[test]
fn each_subcommand_help_lists_only_its_own_flags() {
    for (mode, own) in MODES {
        let o = zmem(&["bench", mode, "--help"]);
        assert!(o.status.success(), "{mode}: {}", text(&o.stderr));
        let got = flags_in_help(&text(&o.stdout));
        let want: BTreeSet<String> = own.iter().chain(&COMMON).map(|s| s.to_string()).collect();
        assert_eq!(got, want, "zmem bench {mode} --help");
    }
}

/// `zmem bench --help` names every subcommand and shows only the main job's flags, and
/// `zmem --help` says bench has subcommands.
#[test]
fn bench_help_describes_the_subcommands_and_the_main_job() {
    let o = zmem(&["bench", "--help"]);
    let help = text(&o.stdout);
    for (mode, _) in MODES {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(mode)),
            "{mode} not in\n{help}"
        );
    }
    let main_job: BTreeSet<String> = [
        "algo",
        "format",
        "budget",
        "rounds",
        "out-dir",
        "overwrite",
        "recover",
        "requests",
        "no-kernel",
        "ram",
        "fs-read",
    ]
    .iter()
    .chain(&COMMON)
    .map(|s| s.to_string())
    .collect();
    assert_eq!(flags_in_help(&help), main_job, "{help}");
    let top = text(&zmem(&["--help"]).stdout);
    let bench = top
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("bench"))
        .take_while(|l| !l.trim_start().starts_with("codecs "))
        .collect::<String>();
    assert!(
        bench.contains("subcommands") && bench.contains("zswap"),
        "{top}"
    );
}

/// A flag of another mode is an error in a subcommand, not ignored.
#[test]
fn a_subcommand_refuses_other_modes_flags() {
    for args in [
        &["bench", "codecs", "--threads", "2"][..],
        &["bench", "device", "--codecs"],
        &["bench", "recomp", "zstd", "--passes", "2"],
        &["bench", "zswap", "--floor"],
    ] {
        let o = zmem(args);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
    }
}

/// The JSON output without what differs from run to run: times, speeds, temporary paths.
fn steady(v: Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.into_iter().map(steady).collect()),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .filter(|(k, _)| {
                    !(k.ends_with("_ns")
                        || k.ends_with("_s")
                        || k.ends_with("mbps")
                        || k.ends_with("mibps")
                        || k == "iops"
                        || k == "latency_ratio"
                        || k == "backing_dev")
                })
                .map(|(k, v)| (k, steady(v)))
                .collect(),
        ),
        v => v,
    }
}

/// `zmem bench ARGS… --format json`: the steady part of its output, and its stderr.
fn json_of(args: &[&str]) -> (Value, String) {
    let args = [&["bench"][..], args, &["--format", "json"]].concat();
    let o = zmem(&args);
    assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    (steady(v), text(&o.stderr))
}

/// The old spelling and the new one give the same rows; only the old one prints the note,
/// one line naming the subcommand.
#[test]
fn old_spellings_note_the_subcommand_and_give_the_same_output() {
    let dir = ScratchDir::new("bench-modes");
    let c = write_corpus(&dir, "pages.bin");
    let c = c.to_str().unwrap();
    let pairs: [(&[&str], &[&str], &str); 8] = [
        (
            &["--codecs", "--algo", "lz4,zstd", "--min-time-ms", "0", c],
            &["codecs", "--algo", "lz4,zstd", "--min-time-ms", "0", c],
            "zmem bench codecs",
        ),
        (
            &[c, "--no-kernel", "--algo", "lz4", "--requests", "50"],
            &[
                "device",
                c,
                "--no-kernel",
                "--algo",
                "lz4",
                "--requests",
                "50",
            ],
            "zmem bench device CORPUS",
        ),
        (
            &[
                "--floor",
                c,
                "--no-kernel",
                "--algo",
                "lz4",
                "--requests",
                "50",
            ],
            &[
                "floor",
                c,
                "--no-kernel",
                "--algo",
                "lz4",
                "--requests",
                "50",
            ],
            "zmem bench floor CORPUS",
        ),
        (
            &["--recomp", "zstd", "--algo", "lz4", c],
            &["recomp", "zstd", "--primary", "lz4", c],
            "zmem bench recomp ALGO",
        ),
        (
            &["--fastpath", "lz4", "--algo", "zstd", "--passes", "1", c],
            &["fastpath", "lz4", "--primary", "zstd", "--passes", "1", c],
            "zmem bench fastpath ALGO",
        ),
        (
            &["--writeback", "--wb-type", "huge", c],
            &["writeback", "--wb-type", "huge", c],
            "zmem bench writeback",
        ),
        (
            &[
                "--zswap",
                "--no-kernel",
                "--algo",
                "lz4",
                "--accesses",
                "200",
                c,
            ],
            &[
                "zswap",
                "--no-kernel",
                "--algo",
                "lz4",
                "--accesses",
                "200",
                c,
            ],
            "zmem bench zswap",
        ),
        (
            &[
                "--codecs",
                "--algo",
                "lz4",
                "--level",
                "3",
                "--min-time-ms",
                "0",
                c,
            ],
            &[
                "codecs",
                "--algo",
                "lz4",
                "--level",
                "3",
                "--min-time-ms",
                "0",
                c,
            ],
            "zmem bench codecs",
        ),
    ];
    for (old, new, subcommand) in pairs {
        let (old_out, old_err) = json_of(old);
        let (new_out, new_err) = json_of(new);
        assert_eq!(old_out, new_out, "{old:?} vs {new:?}");
        let notes: Vec<&str> = old_err.lines().filter(|l| l.contains("note:")).collect();
        assert_eq!(notes.len(), 1, "{old:?}: {old_err}");
        assert!(
            notes[0].contains(&format!("is now `{subcommand}`")),
            "{old:?}: {}",
            notes[0]
        );
        assert!(!new_err.contains("note:"), "{new:?}: {new_err}");
    }
}

/// The main job's own flags carry no note (it fails here before measuring anything).
#[test]
fn the_main_job_has_no_note() {
    let o = zmem(&["bench", "--algo", "lz5", "--no-kernel"]);
    assert!(!o.status.success());
    let e = text(&o.stderr);
    assert!(e.contains("lz5") && !e.contains("note:"), "{e}");
}

/// The modes whose figures are all timings (the verdict, the full table): the old spelling
/// and the new one refuse a bad algorithm with the same error, and only the old one notes the
/// subcommand.
#[test]
fn timed_modes_old_and_new_refuse_alike() {
    for (old, new, subcommand) in [
        (
            &["bench", "--verdict", "--algo", "lz5", "--no-kernel"][..],
            &["bench", "verdict", "--algo", "lz5", "--no-kernel"][..],
            "zmem bench verdict",
        ),
        (
            &["bench", "--full", "--algo", "lz5"],
            &["bench", "full", "--algo", "lz5"],
            "zmem bench full",
        ),
        (
            &["bench", "--weights", "speed=1"],
            &["bench", "full", "--weights", "speed=1"],
            "zmem bench full",
        ),
    ] {
        let (o, n) = (zmem(old), zmem(new));
        assert!(
            !o.status.success() && !n.status.success(),
            "{old:?} / {new:?}"
        );
        let (oe, ne) = (text(&o.stderr), text(&n.stderr));
        let error = |e: &str| {
            e.lines()
                .filter(|l| !l.contains("note:"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(error(&oe), error(&ne), "{old:?} vs {new:?}");
        assert!(
            oe.lines()
                .next()
                .unwrap_or("")
                .contains(&format!("is now `{subcommand}`")),
            "{oe}"
        );
        assert!(!ne.contains("note:"), "{ne}");
    }
}
