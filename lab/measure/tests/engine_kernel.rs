//! Every tool that models a kernel builds its engine through one function:
//! the lab through `zmem_measure::EngineKernel` (`lab/measure/src/engine.rs`),
//! `zmem serve` through `Zram::for_kernel`/`Zswap::for_kernel` with its
//! `--kernel`. A `Zram::builder()` or `Zswap::builder()` anywhere else in the
//! lab's or serve's sources (tests aside) would build a device of the newest
//! kernel behind the model's back, as `bench writeback`'s kernel rows once did.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let name = e.file_name();
        if p.is_dir() && name != "tests" && name != "fuzz" && name != "target" {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_engine_device_is_built_without_the_kernel_model() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for d in ["lab", "serving/serve/src"] {
        sources(&root.join(d), &mut files);
    }
    assert!(files.len() > 20, "found only {} sources", files.len());
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        // Unit tests (a module at the end of the file) may build what they like.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for call in ["Zram::builder()", "Zswap::builder()", "ZramBuilder::new()"] {
            if code.contains(call) && !f.ends_with("lab/measure/src/engine.rs") {
                bad.push(format!("{}: {call}", f.display()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "build engine devices through zmem_measure::EngineKernel (or Zram::for_kernel): {bad:#?}"
    );
}
