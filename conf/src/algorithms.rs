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
pub fn parse_algorithms_with_warnings(s: &str) -> Result<(Algorithms, Vec<String>), String> {
    let mut warnings = Vec::new();
    let mut algos = Vec::new();
    let mut global = Vec::new();
    for t in tokens(s)? {
        if t.starts_with('(') {
            if !global.is_empty() {
                return Err("more than one global `(…)` parameter group".into());
            }
            global = global_params(&t, &mut warnings)?;
            continue;
        }
        let (name, params) = name_and_params(&t)?;
        let params = check_algorithm(name, params, &mut warnings)?;
        algos.push(Algo {
            name: name.to_string(),
            params,
        });
    }
    if algos.is_empty() {
        return Err("compression-algorithm names no algorithm".into());
    }
    if algos.len() > 4 {
        return Err(format!(
            "zram takes at most 3 recompression algorithms, {} given",
            algos.len() - 1
        ));
    }
    let primary = algos.remove(0);
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
    Ok((a, warnings))
}

/// The global group `(type=huge,threshold=1024)`: the parameters `zmem policy` recompresses
/// with. zram-generator keeps the group without reading it and writes nothing of it at
/// setup, so words that are not `key=value` are dropped with a warning; known keys with bad
/// values are errors.
fn global_params(t: &str, warnings: &mut Vec<String>) -> Result<Params, String> {
    let inner = t[1..]
        .strip_suffix(')')
        .ok_or_else(|| format!("text after `)` in `{t}`"))?;
    let mut kept = Vec::new();
    for p in inner
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|p| !p.is_empty())
    {
        match parse_params(p) {
            Ok(mut one) => kept.append(&mut one),
            Err(_) => warnings.push(format!(
                "recompression parameter `{p}` is not key=value; ignored"
            )),
        }
    }
    check_recompress_params(&kept)?;
    Ok(kept)
}

fn key_values(params: &[(String, String)]) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Split on whitespace outside parentheses (one level of them).
fn tokens(s: &str) -> Result<Vec<String>, String> {
    let mut tokens = Vec::new();
    let mut cur = String::new();
    let mut depth = 0;
    for c in s.chars() {
        match c {
            '(' => {
                depth += 1;
                if depth > 1 {
                    return Err("nested parentheses in compression-algorithm".into());
                }
                cur.push(c);
            }
            ')' => {
                if depth == 0 {
                    return Err("`)` without `(` in compression-algorithm".into());
                }
                depth -= 1;
                cur.push(c);
            }
            c if c.is_whitespace() && depth == 0 => {
                if !cur.is_empty() {
                    tokens.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if depth != 0 {
        return Err("unclosed `(` in compression-algorithm".into());
    }
    if !cur.is_empty() {
        tokens.push(cur);
    }
    Ok(tokens)
}

/// `zstd(level=3)` → (`zstd`, [(level, 3)]); `(type=huge)` → (``, [(type, huge)]).
fn name_and_params(t: &str) -> Result<(&str, Params), String> {
    match t.find('(') {
        Some(i) => {
            let inner = t[i + 1..]
                .strip_suffix(')')
                .ok_or_else(|| format!("text after `)` in `{t}`"))?;
            Ok((&t[..i], parse_params(inner)?))
        }
        None => Ok((t, Vec::new())),
    }
}

/// The global group: what recompress takes besides the algorithm (type, threshold,
/// max_pages), used by `zmem policy`.
fn check_recompress_params(params: &[(String, String)]) -> Result<(), String> {
    for (k, v) in params {
        match k.as_str() {
            "type" => {
                if !["idle", "huge", "huge_idle"].contains(&v.as_str()) {
                    return Err(format!(
                        "recompression type must be idle, huge or huge_idle, not `{v}`"
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
            "{name} level {level} is refused by the kernel when the device is set up; {range}"
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

fn parse_params(s: &str) -> Result<Params, String> {
    let mut v = Vec::new();
    for p in s
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|p| !p.is_empty())
    {
        let (k, val) = p
            .split_once('=')
            .ok_or_else(|| format!("parameter `{p}` is not key=value"))?;
        if k.is_empty() || val.is_empty() {
            return Err(format!("parameter `{p}` is not key=value"));
        }
        v.push((k.to_string(), val.to_string()));
    }
    Ok(v)
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
