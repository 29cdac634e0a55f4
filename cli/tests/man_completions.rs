//! `zmem man` and `zmem completions`: the man pages and the shells'
//! completion scripts come from the CLI definition itself, so a page exists
//! for every command, `man -l` renders it, and bash completes commands and
//! flags from the script.

use std::process::{Command, Output};

use zmem_files::testutil::{skip, ScratchDir};

fn zmem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .output()
        .expect("run zmem")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What bash's completion function offers for the words typed so far.
fn bash_complete(script: &std::path::Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let prev = if cword > 0 { words[cword - 1] } else { "" };
    let prog = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={cword}; _zmem zmem '{}' '{prev}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words[cword]
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(prog)
        .output()
        .expect("bash");
    assert!(out.status.success(), "bash: {}", text(&out.stderr));
    text(&out.stdout).lines().map(str::to_string).collect()
}

#[test]
fn bash_completes_commands_and_flags() {
    if Command::new("bash").arg("-c").arg("true").output().is_err() {
        return skip("SKIP bash_completes_commands_and_flags: no bash");
    }
    let dir = ScratchDir::new("completions");
    let out = zmem(&["completions", "bash"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let script = dir.join("zmem.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    assert_eq!(bash_complete(&script, &["zmem", "ap"]), ["apply"]);
    let persist = bash_complete(&script, &["zmem", "pe"]);
    assert_eq!(persist, ["persist"]);
    let flags = bash_complete(&script, &["zmem", "apply", "--dr"]);
    assert_eq!(flags, ["--dry-run"]);
    let modes = bash_complete(&script, &["zmem", "bench", "wr"]);
    assert_eq!(modes, ["writeback"]);
}

#[test]
fn zsh_and_fish_scripts_name_every_command() {
    for shell in ["zsh", "fish"] {
        let out = zmem(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        let s = text(&out.stdout);
        for cmd in [
            "apply", "persist", "exporter", "policy", "status", "bench", "man",
        ] {
            assert!(s.contains(cmd), "{shell} script lacks {cmd}");
        }
    }
    let bad = zmem(&["completions", "tcsh"]);
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).contains("possible values"),
        "{}",
        text(&bad.stderr)
    );
}

#[test]
fn man_pages_for_every_command_render() {
    let dir = ScratchDir::new("man");
    let out_dir = dir.join("man1");
    let out = zmem(&["man", "--out-dir", out_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    for page in [
        "zmem.1",
        "zmem-apply.1",
        "zmem-bench-writeback.1",
        "zmem-policy.1",
    ] {
        let p = out_dir.join(page);
        assert!(p.is_file(), "{page} missing; listed:\n{listed}");
        assert!(listed.contains(p.to_str().unwrap()));
    }
    let roff = std::fs::read_to_string(out_dir.join("zmem-apply.1")).unwrap();
    assert!(
        roff.contains(".TH zmem-apply 1"),
        "{}",
        &roff[..200.min(roff.len())]
    );
    assert!(roff.contains("dry\\-run"), "apply's page lacks --dry-run");
    if Command::new("man").arg("--version").output().is_err() {
        return skip("SKIP man_pages_for_every_command_render (rendering): no man");
    }
    let shown = Command::new("man")
        .arg("-l")
        .arg(out_dir.join("zmem-apply.1"))
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .output()
        .expect("man");
    let page = text(&shown.stdout);
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    assert!(
        page.contains("NAME") && page.contains("zmem-apply"),
        "{page}"
    );
    assert!(page.contains("--dry-run"), "{page}");
}

#[test]
fn man_replaces_only_its_own_pages() {
    let dir = ScratchDir::new("man-replace");
    let out_dir = dir.join("man1");
    let first = zmem(&["man", "--out-dir", out_dir.to_str().unwrap()]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    // Its own pages are replaced on a second run.
    let again = zmem(&["man", "--out-dir", out_dir.to_str().unwrap()]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    // A page it did not write is kept, and named.
    let foreign = out_dir.join("zmem-apply.1");
    std::fs::write(&foreign, ".TH other 1\nsomeone else's page\n").unwrap();
    let refused = zmem(&["man", "--out-dir", out_dir.to_str().unwrap()]);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("zmem-apply.1"),
        "{}",
        text(&refused.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&foreign).unwrap(),
        ".TH other 1\nsomeone else's page\n"
    );
    let forced = zmem(&["man", "--force", "--out-dir", out_dir.to_str().unwrap()]);
    assert!(forced.status.success(), "{}", text(&forced.stderr));
    assert!(std::fs::read_to_string(&foreign)
        .unwrap()
        .contains(".TH zmem-apply 1"));
}

/// A page that may not be replaced leaves every other page unwritten: all pages or none.
#[test]
fn man_writes_every_page_or_none() {
    let dir = ScratchDir::new("man-all-or-none");
    let out_dir = dir.join("man1");
    std::fs::create_dir(&out_dir).unwrap();
    std::fs::write(out_dir.join("zmem-bench.1"), "my own notes\n").unwrap();
    let refused = zmem(&["man", "--out-dir", out_dir.to_str().unwrap()]);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("none written"),
        "{}",
        text(&refused.stderr)
    );
    let names: Vec<_> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(
        names,
        ["zmem-bench.1"],
        "pages written beside the refused one"
    );
}
