//! Which compressors the running kernel's crypto API can give zswap: the ones
//! /proc/crypto lists, and the ones built in or loadable as `crypto/NAME.ko`
//! (modules.builtin, modules.dep of the running kernel).

use crate::Sys;

/// Whether /proc/crypto's text lists `name`.
fn crypto_lists(crypto: &str, name: &str) -> bool {
    crypto.lines().any(|l| {
        l.split_once(':')
            .is_some_and(|(k, v)| k.trim() == "name" && v.trim() == name)
    })
}

/// Whether the kernel can give zswap this compressor: loaded in /proc/crypto,
/// or available as a (built-in or loadable) crypto module. `known` are the
/// compressors to name when it cannot.
pub fn zswap_compressor_available(sys: &Sys, name: &str, known: &[&str]) -> Result<(), String> {
    let crypto = sys.read("/proc/crypto").unwrap_or_default();
    if crypto_lists(&crypto, name) {
        return Ok(());
    }
    let rel = sys.read("/proc/sys/kernel/osrelease").unwrap_or_default();
    let needle = format!("crypto/{name}.ko");
    for f in ["modules.builtin", "modules.dep"] {
        let list = format!("/lib/modules/{}/{f}", rel.trim());
        if sys.read(&list).is_ok_and(|t| t.contains(&needle)) {
            return Ok(());
        }
    }
    let have: Vec<&str> = known
        .iter()
        .copied()
        .filter(|k| crypto_lists(&crypto, k))
        .collect();
    Err(format!(
        "zswap compressor {name} is not available: not in /proc/crypto and no crypto/{name}.ko module (compressors available: {})",
        if have.is_empty() { "none".to_string() } else { have.join(", ") }
    ))
}

/// The compressors of `known` (crypto API names) that zswap can use on this kernel.
pub fn zswap_compressors(sys: &Sys, known: &[&str]) -> Vec<String> {
    known
        .iter()
        .filter(|c| zswap_compressor_available(sys, c, known).is_ok())
        .map(|c| c.to_string())
        .collect()
}
