//! `compression-algorithm`: the primary algorithm, recompression algorithms and their
//! parameters (Documentation/admin-guide/blockdev/zram.rst: comp_algorithm, recomp_algorithm,
//! algorithm_params).

use super::{Algo, Algorithms, KNOWN_ALGORITHMS};

/// `key=value` parameters as written, in order.
type Params = Vec<(String, String)>;

/// Parse `compression-algorithm`: `lzo-rle zstd(level=3) (type=idle)`.
pub fn parse_algorithms(s: &str) -> Result<Algorithms, String> {
    let mut algos = Vec::new();
    let mut global = Vec::new();
    for t in tokens(s)? {
        let (name, params) = name_and_params(&t)?;
        if name.is_empty() {
            if !global.is_empty() {
                return Err("more than one global `(…)` parameter group".into());
            }
            check_recompress_params(&params)?;
            global = params;
            continue;
        }
        check_algorithm(name, &params)?;
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
        return Err("recompression parameters given but no recompression algorithm".into());
    }
    Ok(Algorithms {
        primary,
        recompress: algos,
        recompress_params: global,
    })
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

/// A known algorithm with parameters algorithm_params takes (level, dict, deflate.winbits).
fn check_algorithm(name: &str, params: &[(String, String)]) -> Result<(), String> {
    if !KNOWN_ALGORITHMS.contains(&name) {
        return Err(format!(
            "unknown algorithm `{name}`; zram knows {}",
            KNOWN_ALGORITHMS.join(", ")
        ));
    }
    for (k, v) in params {
        match k.as_str() {
            "level" => {
                v.parse::<i32>()
                    .map_err(|_| format!("{name} level must be an integer, not `{v}`"))?;
            }
            "dict" => {
                if !v.starts_with('/') {
                    return Err(format!("{name} dict must be an absolute path, not `{v}`"));
                }
            }
            "deflate.winbits" => {
                v.parse::<i32>()
                    .map_err(|_| format!("deflate.winbits must be an integer, not `{v}`"))?;
            }
            _ => {
                return Err(format!(
                    "unknown parameter `{k}` for {name}; known: level, dict, deflate.winbits"
                ))
            }
        }
    }
    Ok(())
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
