//! ARCHITECTURE.md's dependency table says what `cargo metadata` says: every
//! workspace crate, its zmem dependencies and its test-only (dev) ones.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

type Deps = BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>;

fn short(name: &str) -> String {
    name.strip_prefix("zmem-").unwrap_or(name).to_string()
}

/// crate → (dependencies, dev-dependencies) among the workspace's crates, from cargo.
fn from_cargo(root: &Path) -> Deps {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut deps = Deps::new();
    for p in m["packages"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap().to_string();
        let (mut normal, mut dev) = (BTreeSet::new(), BTreeSet::new());
        for d in p["dependencies"].as_array().unwrap() {
            let dn = d["name"].as_str().unwrap();
            if !dn.starts_with("zmem") {
                continue;
            }
            match d["kind"].as_str() {
                None => normal.insert(short(dn)),
                Some("dev") => dev.insert(short(dn)),
                Some(_) => false,
            };
        }
        deps.insert(name, (normal, dev));
    }
    deps
}

fn cell(s: &str) -> BTreeSet<String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty() && *x != "—")
        .map(str::to_string)
        .collect()
}

/// The same from the table between the `dependencies` markers of ARCHITECTURE.md.
fn from_doc(text: &str) -> Deps {
    let begin = text
        .find("<!-- dependencies: begin -->")
        .expect("begin marker");
    let end = text.find("<!-- dependencies: end -->").expect("end marker");
    let mut deps = Deps::new();
    for line in text[begin..end].lines().filter(|l| l.starts_with("| zmem")) {
        let f: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(f.len(), 4, "{line}");
        deps.insert(f[0].to_string(), (cell(f[2]), cell(f[3])));
    }
    deps
}

#[test]
fn architecture_md_matches_cargo_metadata() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    assert_eq!(from_doc(&doc), from_cargo(&root));
}
