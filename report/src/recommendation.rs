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
