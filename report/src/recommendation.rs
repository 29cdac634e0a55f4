//! The recommendation for people (each setting with the arithmetic and the
//! reasons behind it) and as JSON.

use std::fmt::Write as _;

use zmem_verdict::Recommendation;

/// The recommendation for people: each setting with its reasons, then the
/// zram-generator.conf and the sysctl.d snippet.
pub fn recommendation_text(r: &Recommendation) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "recommendation");
    let _ = writeln!(o, "  use {}", r.use_);
    let _ = writeln!(o, "  primary algorithm: {}", r.primary);
    let _ = writeln!(
        o,
        "  recompression: {}",
        r.recompress.as_deref().unwrap_or("none")
    );
    for line in &r.algorithm_reasons {
        let _ = writeln!(o, "    - {line}");
    }
    let _ = writeln!(
        o,
        "  disksize {} MiB, mem_limit {} MiB",
        r.sizes.disksize_mib, r.sizes.mem_limit_mib
    );
    for line in &r.size_arithmetic {
        let _ = writeln!(o, "    - {line}");
    }
    let _ = writeln!(o, "  vm.swappiness = {}", r.swappiness);
    for line in &r.swappiness_arithmetic {
        let _ = writeln!(o, "    - {line}");
    }
    let _ = writeln!(o, "  vm.page-cluster = {}", r.page_cluster);
    for line in &r.page_cluster_reasons {
        let _ = writeln!(o, "    - {line}");
    }
    let _ = writeln!(o, "  zram or zswap: {}", r.use_);
    for line in &r.use_reasons {
        let _ = writeln!(o, "    - {line}");
    }
    let _ = writeln!(
        o,
        "\n--- zram-generator.conf ---\n{}",
        r.zram_generator_conf
    );
    let _ = writeln!(o, "--- sysctl.d snippet ---\n{}", r.sysctl_conf);
    o
}

/// The recommendation as JSON.
pub fn recommendation_json(r: &Recommendation) -> serde_json::Value {
    let mut v = serde_json::to_value(r).expect("recommendation serialises");
    if let Some(o) = v.as_object_mut() {
        if let Some(u) = o.remove("use_") {
            o.insert("use".into(), u);
        }
    }
    v
}

/// `{"error": msg}`.
pub fn error_json(msg: &str) -> serde_json::Value {
    serde_json::json!({ "error": msg })
}

/// Pretty-printed JSON.
pub fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).expect("json value serialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every reason and the size arithmetic are shown, under their setting.
    #[test]
    fn text_shows_every_reason_and_the_arithmetic() {
        let r = Recommendation {
            primary: "lz4".into(),
            recompress: Some("zstd".into()),
            algorithm_reasons: vec!["lz4: best score".into(), "zstd: 20% smaller".into()],
            sizes: zmem_verdict::sizes(24576, 2.6391),
            size_arithmetic: vec!["memory when full: RAM − disksize/ratio + disksize".into()],
            swappiness: 133,
            swappiness_arithmetic: vec!["x = 2".into()],
            page_cluster: 0,
            page_cluster_reasons: vec!["pc0 scores best".into()],
            use_: "zram".into(),
            use_reasons: vec!["no disk swap".into()],
            zram_generator_conf: "[zram0]\n".into(),
            sysctl_conf: "[sysctl]\n".into(),
        };
        let t = recommendation_text(&r);
        for line in [
            "  primary algorithm: lz4",
            "  recompression: zstd",
            "    - zstd: 20% smaller",
            "    - memory when full: RAM − disksize/ratio + disksize",
            "  vm.swappiness = 133",
            "  vm.page-cluster = 0",
            "  zram or zswap: zram",
            "--- zram-generator.conf ---",
        ] {
            assert!(t.contains(line), "{line:?} missing from {t}");
        }
        assert_eq!(recommendation_json(&r)["use"], "zram");
    }
}
