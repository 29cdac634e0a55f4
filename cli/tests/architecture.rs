//! ARCHITECTURE.md's dependency table says what `cargo metadata` says: every
//! workspace crate, its zmem dependencies and its test-only (dev) ones.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

type Deps = BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>;

fn short(name: &str) -> String {
    name.strip_prefix("zmem-").unwrap_or(name).to_string()
}

/// `cargo metadata` of the workspace (no dependencies' packages).
fn metadata(root: &Path) -> serde_json::Value {
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
    serde_json::from_slice(&out.stdout).unwrap()
}

/// crate → (dependencies, dev-dependencies) among the workspace's crates, from cargo.
fn from_cargo(root: &Path) -> Deps {
    let m = metadata(root);
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

/// The rows between `<!-- NAME: begin -->` and `<!-- NAME: end -->`, as cells.
fn table_rows(text: &str, name: &str) -> Vec<Vec<String>> {
    let begin = text
        .find(&format!("<!-- {name}: begin -->"))
        .expect("begin");
    let end = text.find(&format!("<!-- {name}: end -->")).expect("end");
    text[begin..end]
        .lines()
        .filter(|l| {
            l.starts_with("| ") && !l.starts_with("| crate |") && !l.starts_with("| layer |")
        })
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// Every crate sits in the folder the dependency table names, inside its layer's folder, and
/// depends only on crates of its own layer or of the layers below it (the layers table's order).
#[test]
fn crates_live_in_their_layer_and_depend_downwards() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let mut layer_of = BTreeMap::new();
    for (i, row) in table_rows(&doc, "layers").iter().enumerate() {
        let folder = row[1].trim_matches('`').trim_end_matches('/').to_string();
        for c in cell(&row[2]) {
            layer_of.insert(c, (i, folder.clone()));
        }
    }
    let folders: BTreeMap<String, String> = table_rows(&doc, "dependencies")
        .iter()
        .map(|r| {
            (
                short(&r[0]),
                r[1].trim_matches('`').trim_end_matches('/').to_string(),
            )
        })
        .collect();
    let root = root.canonicalize().unwrap();
    let mut wrong = Vec::new();
    for (dir, pkg) in crate_folders(&root) {
        let rel = dir
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .to_string();
        let me = short(&pkg);
        let Some((layer, layer_dir)) = layer_of.get(&me) else {
            wrong.push(format!("{pkg} is in no layer"));
            continue;
        };
        if folders.get(&me) != Some(&rel) {
            wrong.push(format!(
                "{pkg} is in {rel}, the table says {:?}",
                folders.get(&me)
            ));
        }
        if !(rel == *layer_dir || rel.starts_with(&format!("{layer_dir}/"))) {
            wrong.push(format!(
                "{pkg} ({rel}) is outside its layer's folder {layer_dir}/"
            ));
        }
        for d in &from_cargo(&root)[&pkg].0 {
            if layer_of.get(d).is_some_and(|(l, _)| l > layer) {
                wrong.push(format!("{pkg} depends on {d}, a layer above it"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

mod architecture_src;

use architecture_src::{circles, edges, modules, name};

/// The workspace's crates: (folder, package name), from `cargo metadata`.
fn crate_folders(root: &Path) -> Vec<(std::path::PathBuf, String)> {
    let m = metadata(root);
    m["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let manifest = Path::new(p["manifest_path"].as_str().unwrap());
            (
                manifest.parent().unwrap().to_path_buf(),
                p["name"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The circles the design keeps, each explained where it lives: a device and
/// its features call each other as the kernel's zram_drv.c and zswap.c do
/// (engine/zram/src/lib.rs, engine/zswap/src/lib.rs say so).
const KEPT_CIRCLES: &[(&str, &[&str])] = &[
    (
        "zmem-zram",
        &[
            "device",
            "fastpath",
            "idle",
            "pp",
            "recompress",
            "recover",
            "writeback",
        ],
    ),
    ("zmem-zswap", &["engine", "shrink"]),
];

#[test]
fn no_import_circles_between_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for (dir, pkg) in crate_folders(&root) {
        let src = dir.join("src");
        if !src.is_dir() {
            continue;
        }
        for c in circles(&edges(&modules(&src))) {
            let names: Vec<String> = c.iter().map(name).collect();
            let kept = KEPT_CIRCLES
                .iter()
                .any(|(p, m)| *p == pkg && names.iter().map(String::as_str).eq(m.iter().copied()));
            if !kept {
                found.push(format!("{pkg}: {}", names.join(" <-> ")));
            }
        }
    }
    assert!(
        found.is_empty(),
        "import circles between files:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_circle_check_sees_a_circle() {
    let dir = std::env::temp_dir().join(format!("zmem-arch-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("b")).unwrap();
    std::fs::write(dir.join("lib.rs"), "mod a;\nmod b;\npub use a::A;\n").unwrap();
    std::fs::write(dir.join("a.rs"), "use crate::b::c::C;\npub struct A(C);\n").unwrap();
    std::fs::write(dir.join("b/mod.rs"), "mod c;\n").unwrap();
    // b::c reaches a through the root's re-export; a test module's import is not an edge.
    std::fs::write(
        dir.join("b/c.rs"),
        "pub struct C;\nfn f(_: crate::A) {}\n#[cfg(test)]\nmod tests { use super::super::super::a::A; }\n",
    )
    .unwrap();
    let mods = modules(&dir);
    let e = edges(&mods);
    std::fs::remove_dir_all(&dir).unwrap();
    let c = circles(&e);
    assert_eq!(c.len(), 1, "{e:?}");
    assert_eq!(c[0].iter().map(name).collect::<Vec<_>>(), ["a", "b::c"]);
}

/// A dependency a crate's own code (tests left out) never names belongs in
/// [dev-dependencies].
#[test]
fn test_only_dependencies_are_dev_dependencies() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let deps = from_cargo(&root);
    let mut wrong = Vec::new();
    for (dir, pkg) in crate_folders(&root) {
        let mods = modules(&dir.join("src"));
        for d in &deps[&pkg].0 {
            let ident = format!("zmem_{d}");
            if !mods.values().any(|t| t.contains(&ident)) {
                wrong.push(format!("{pkg} uses zmem-{d} only in tests"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A library's surface reads in one screen: its modules are private and
/// lib.rs re-exports what users need, with a few namespaces kept public (a
/// command's API such as ops' `apply`, a wire protocol such as nbd's `proto`).
/// `#[doc(hidden)]` test helpers do not count.
const MAX_PUBLIC_MODULES: usize = 4;

#[test]
fn libraries_keep_their_modules_private() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut wide = Vec::new();
    let mut total = 0;
    for (dir, pkg) in crate_folders(&root) {
        let Ok(lib) = std::fs::read_to_string(dir.join("src/lib.rs")) else {
            continue;
        };
        let mut hidden = false;
        let mut public = Vec::new();
        for line in lib.lines().map(str::trim) {
            if let Some(m) = line.strip_prefix("pub mod ") {
                if !hidden {
                    public.push(m.trim_end_matches(';').to_string());
                }
            }
            hidden = line == "#[doc(hidden)]";
        }
        total += public.len();
        if public.len() > MAX_PUBLIC_MODULES {
            wide.push(format!("{pkg}: {}", public.join(", ")));
        }
    }
    assert!(
        wide.is_empty(),
        "more than {MAX_PUBLIC_MODULES} public modules:\n{}",
        wide.join("\n")
    );
    // The whole workspace: 80 before the crates were narrowed.
    assert!(total <= 20, "{total} public modules across the workspace");
}
