//! `zmem bench`'s modes as subcommands: each lists only its own flags (and the common
//! `--format`), refuses the others; the mode flags of before the subcommands are errors.

mod bench_common;

use std::collections::BTreeSet;

use bench_common::{text, write_corpus, zmem};
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
            "kernel",
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
        "weights",
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

/// The main job's own flags work without a subcommand (it fails here before measuring anything).
#[test]
fn the_main_job_has_no_note() {
    let o = zmem(&["bench", "--algo", "lz5", "--no-kernel"]);
    assert!(!o.status.success());
    let e = text(&o.stderr);
    assert!(e.contains("lz5") && !e.contains("note:"), "{e}");
}

/// The mode flags and the bare corpus of before the subcommands are errors (exit 2, the
/// flag named), never a mode run under another spelling.
#[test]
fn the_old_mode_flags_are_errors() {
    let dir = ScratchDir::new("bench-modes");
    let c = write_corpus(&dir, "pages.bin");
    let c = c.to_str().unwrap();
    for (args, named) in [
        (&["bench", "--codecs"][..], "--codecs"),
        (&["bench", "--zswap", "--no-kernel"], "--zswap"),
        (&["bench", "--writeback"], "--writeback"),
        (&["bench", "--recomp", "zstd"], "--recomp"),
        (&["bench", "--fastpath", "lz4m"], "--fastpath"),
        (&["bench", "--full"], "--full"),
        (&["bench", "--verdict"], "--verdict"),
        (&["bench", "--floor"], "--floor"),
        (&["bench", "--threads", "2"], "--threads"),
        (&["bench", c], c),
    ] {
        let o = zmem(args);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(named) && !e.contains("note:"), "{args:?}: {e}");
    }
}
