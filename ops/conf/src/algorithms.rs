//! `compression-algorithm`: the primary algorithm, recompression algorithms and their
//! parameters (Documentation/admin-guide/blockdev/zram.rst: comp_algorithm, recomp_algorithm,
//! algorithm_params).

use std::sync::LazyLock;

pub use zmem_codec::OutOfRange;

use super::{Algo, Algorithms, KNOWN_ALGORITHMS};

/// `key=value` parameters as written, in order.
type Params = Vec<(String, String)>;

/// Parse `compression-algorithm`: `lzo-rle zstd(level=3) (type=idle)`.
pub fn parse_algorithms(s: &str) -> Result<Algorithms, String> {
    parse_algorithms_with_warnings(s).map(|(a, _)| a)
}

/// Parse `compression-algorithm`, with warnings for what the kernel takes but does not do
/// as written (a level it clamps, a parameter it ignores; such parameters are dropped).
///
/// The value is split as zram-generator 1.2.1 splits it (src/config.rs:
/// `parse_compression_algorithm_params`): at whitespace, then each word at its first `(`
/// into the algorithm and its parameters (one trailing `)` removed, commas read as spaces);
/// a word without a name (`(type=huge)`) is the global recompression group, the last one
/// wins. Empty: the kernel's default algorithm. What zram-generator would write and the
/// kernel refuse (a word after a space inside parentheses read as an algorithm, a fourth
/// recompression algorithm, a level that is no number) is dropped with a warning saying
/// so.
pub fn parse_algorithms_with_warnings(s: &str) -> Result<(Algorithms, Vec<String>), String> {
    parse_optional_algorithms(s).and_then(|(a, w)| {
        a.map(|a| (a, w))
            .ok_or_else(|| "compression-algorithm names no algorithm".to_string())
    })
}

/// [`parse_algorithms_with_warnings`], `None` for an empty value (the kernel's default).
pub fn parse_optional_algorithms(s: &str) -> Result<(Option<Algorithms>, Vec<String>), String> {
    let mut warnings = Vec::new();
    let mut algos = Vec::new();
    let mut global = String::new();
    for word in s.split_whitespace() {
        let (name, params) = match word.find('(') {
            Some(i) => {
                let p = &word[i + 1..];
                let p = p.strip_suffix(')').unwrap_or(p);
                (&word[..i], p.replace(',', " "))
            }
            None => (word, String::new()),
        };
        if name.is_empty() {
            global = params;
            continue;
        }
        if !KNOWN_ALGORITHMS.contains(&name) {
            // A typo is an error; the rest of a parameter list split at a space a warning.
            if algos.is_empty() || !name.contains(['=', ')']) {
                let boot = if algos.is_empty() {
                    "the device keeps its default algorithm"
                } else {
                    "the device has no recompression algorithm at that priority"
                };
                return Err(format!(
                    "unknown algorithm `{name}`; zram knows {} (at boot zram-generator writes it and the kernel refuses it: {boot})",
                    KNOWN_ALGORITHMS.join(", ")
                ));
            }
            warnings.push(format!(
                "`{name}` is read as recompression algorithm {} (zram-generator splits compression-algorithm at every space, also inside parentheses): at boot zram-generator writes it to recomp_algorithm and the kernel refuses it; not written",
                algos.len()
            ));
            continue;
        }
        let params = params_of(name, &params, &mut warnings)?;
        algos.push(Algo {
            name: name.to_string(),
            params,
        });
    }
    if algos.is_empty() {
        return Ok((None, warnings));
    }
    if algos.len() > 4 {
        let extra: Vec<String> = algos.drain(4..).map(|a| a.name).collect();
        warnings.push(format!(
            "zram takes at most 3 recompression algorithms: at boot zram-generator writes `{}` at priority 4 and above and the kernel refuses them; not written",
            extra.join(" ")
        ));
    }
    let primary = algos.remove(0);
    for (i, a) in algos
        .iter()
        .enumerate()
        .filter(|(_, a)| !a.params.is_empty())
    {
        warnings.push(format!(
            "{}: parameters `{}` are written to algorithm_params (priority={}); at boot zram-generator writes them to recompress instead, which sets no parameter, so after a reboot {} runs without them",
            a.name,
            key_values(&a.params),
            i + 1,
            a.name
        ));
    }
    let mut global = global_params(&global, &mut warnings)?;
    if !global.is_empty() && algos.is_empty() {
        warnings.push(format!(
            "recompression parameters `{}` given but no recompression algorithm; ignored",
            key_values(&global)
        ));
        global.clear();
    }
    let a = Algorithms {
        primary,
        recompress: algos,
        recompress_params: global,
    };
    Ok((Some(a), warnings))
}

/// An algorithm's parameters as zram-generator passes them (words `key=value`). A word
/// that is not `key=value`, or a level that is no number, makes the kernel refuse the whole
/// algorithm_params write (`algorithm_params_store`: a token without a value is EINVAL), so
/// zram-generator's device ends with none of them: all are dropped, with a warning.
fn params_of(name: &str, params: &str, warnings: &mut Vec<String>) -> Result<Params, String> {
    let mut kv = Vec::new();
    for p in params.split_whitespace() {
        match p.split_once('=') {
            Some((k, v)) if !k.is_empty() => kv.push((k.to_string(), v.to_string())),
            _ => {
                warnings.push(format!(
                    "{name}: parameter `{p}` is not key=value: at boot zram-generator writes `{params}` and the kernel refuses the whole algorithm_params write; none of them written"
                ));
                return Ok(Vec::new());
            }
        }
    }
    if let Some((_, v)) = kv
        .iter()
        .find(|(k, v)| k == "level" && zmem_kernel::kstrtoint(v, 10).is_err())
    {
        warnings.push(format!(
            "{name}: level `{v}` is not a number: at boot zram-generator writes `{params}` and the kernel refuses the whole algorithm_params write; none of them written"
        ));
        return Ok(Vec::new());
    }
    check_algorithm(name, kv, warnings)
}

/// The global group `type=huge threshold=1024` (commas already spaces): the parameters
/// `zmem policy` recompresses with. zram-generator keeps the group without reading it and
/// writes nothing of it at setup, so words that are not `key=value` are dropped with a
/// warning; known keys with bad values are errors.
fn global_params(inner: &str, warnings: &mut Vec<String>) -> Result<Params, String> {
    let mut kept = Vec::new();
    for p in inner.split_whitespace() {
        match p.split_once('=') {
            Some((k, v)) if !k.is_empty() && !v.is_empty() => {
                kept.push((k.to_string(), v.to_string()))
            }
            _ => warnings.push(format!(
                "recompression parameter `{p}` is not key=value; ignored"
            )),
        }
    }
    check_recompress_params(&kept).map_err(|e| {
        format!(
            "{e} (zram-generator keeps this group without reading it, so at boot it is ignored; zmem refuses it because `zmem policy` recompresses with it)"
        )
    })?;
    Ok(kept)
}

fn key_values(params: &[(String, String)]) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The global group: what recompress takes besides the algorithm (type, threshold,
/// max_pages), used by `zmem policy`.
fn check_recompress_params(params: &[(String, String)]) -> Result<(), String> {
    for (k, v) in params {
        match k.as_str() {
            "type" => {
                if !zmem_kernel::page_type::RECOMPRESS.contains(&v.as_str()) {
                    return Err(format!(
                        "recompression type must be one of {}, not `{v}`",
                        zmem_kernel::page_type::RECOMPRESS.join(", ")
                    ));
                }
            }
            "threshold" | "max_pages" => {
                v.parse::<u64>()
                    .map_err(|_| format!("recompression {k} must be a number, not `{v}`"))?;
            }
            _ => {
                return Err(format!(
                    "unknown recompression parameter `{k}`; known: type, threshold, max_pages"
                ))
            }
        }
    }
    Ok(())
}

/// The `level` range of each algorithm that has one, and what the kernel's backend does
/// outside it: the codec registry's ([`zmem_codec::LevelRange`], which `zmem codecs` lists).
pub static LEVEL_RANGES: LazyLock<Vec<(&'static str, i32, i32, OutOfRange)>> =
    LazyLock::new(|| {
        zmem_codec::all()
            .iter()
            .filter_map(|b| b.info().level.map(|r| (b.name(), r.min, r.max, r.kernel)))
            .collect()
    });

/// A known algorithm with the parameters algorithm_params takes (level, dict,
/// deflate.winbits). Returns the parameters to write: zram_drv.c's `algorithm_params_store`
/// (6.18) skips keys it does not know, so those are dropped with a warning.
fn check_algorithm(
    name: &str,
    params: Params,
    warnings: &mut Vec<String>,
) -> Result<Params, String> {
    if !KNOWN_ALGORITHMS.contains(&name) {
        return Err(format!(
            "unknown algorithm `{name}`; zram knows {}",
            KNOWN_ALGORITHMS.join(", ")
        ));
    }
    let mut kept = Vec::new();
    for (k, v) in params {
        match k.as_str() {
            "level" => {
                let level = zmem_kernel::kstrtoint(&v, 10)
                    .map_err(|_| format!("{name} level must be an integer, not `{v}`"))?;
                check_level(name, level, warnings)?;
            }
            "dict" => {
                if !v.starts_with('/') {
                    return Err(format!("{name} dict must be an absolute path, not `{v}`"));
                }
            }
            "deflate.winbits" => {
                zmem_kernel::kstrtoint(&v, 10)
                    .map_err(|_| format!("deflate.winbits must be an integer, not `{v}`"))?;
            }
            _ => {
                warnings.push(format!(
                    "{name}: parameter `{k}={v}` is not written: the kernel's algorithm_params ignores keys other than level, dict, deflate.winbits"
                ));
                continue;
            }
        }
        kept.push((k, v));
    }
    Ok(kept)
}

/// A level outside the algorithm's range: a warning when the kernel clamps it, an error when
/// the kernel would fail.
fn check_level(name: &str, level: i32, warnings: &mut Vec<String>) -> Result<(), String> {
    let Some(&(_, lo, hi, what)) = LEVEL_RANGES.iter().find(|r| r.0 == name) else {
        return Ok(());
    };
    if (lo..=hi).contains(&level) {
        return Ok(());
    }
    let range = format!("{name} levels go from {lo} to {hi} (`zmem codecs`)");
    match what {
        OutOfRange::Refused => Err(format!(
            "{name} level {level} is refused by the kernel when the device is set up; {range} (at boot zram-generator writes it and the device fails to set up)"
        )),
        OutOfRange::Clamped => {
            warnings.push(format!(
                "{name} level {level}: {range}; the kernel's {name} uses its nearest level instead"
            ));
            Ok(())
        }
        OutOfRange::Taken => {
            warnings.push(format!(
                "{name} level {level}: {range}; the kernel's {name} takes it (below 1 as 1; above, as a larger acceleration that compresses less)"
            ));
            Ok(())
        }
    }
}

impl Algo {
    /// `zstd(level=3)` as written in the config.
    pub fn to_config(&self) -> String {
        if self.params.is_empty() {
            self.name.clone()
        } else {
            format!(
                "{}({})",
                self.name,
                self.params
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            )
        }
    }
}
