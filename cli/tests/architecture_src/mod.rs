//! Reading a crate's sources as text, for the architecture checks: which module
//! (file) uses which, with `#[cfg(test)]` items and comments left out.
//!
//! A module is a file under `src/` (`a/b.rs` and `a/b/mod.rs` are `a::b`). An
//! edge A → B is a path in A's code that starts with `crate::`, `super::` or
//! `self::` and names an item of B, following `pub use` re-exports to the
//! module that defines the item. A parent's plain paths into its own children
//! (`child::f()`) are not edges: a module owning its children is a hierarchy,
//! not a circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

pub type Module = Vec<String>;

/// A crate's modules, each with its code (tests and comments removed).
pub fn modules(src: &Path) -> BTreeMap<Module, String> {
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out
}

fn walk(src: &Path, dir: &Path, out: &mut BTreeMap<Module, String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(src, &p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Module = rel
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            if matches!(
                parts.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                parts.pop();
            }
            let text = std::fs::read_to_string(&p).unwrap();
            out.insert(parts, strip_comments(&strip_tests(&text)));
        }
    }
}

/// The text without `#[cfg(test)]` items (a `mod tests { … }` block or one item up to `;`).
pub fn strip_tests(t: &str) -> String {
    let mut out = String::new();
    let mut rest = t;
    while let Some(i) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        let brace = after.find('{');
        let semi = after.find(';');
        match (brace, semi) {
            (Some(b), Some(s)) if s < b => rest = &after[s + 1..],
            (None, Some(s)) => rest = &after[s + 1..],
            (Some(b), _) => rest = &after[matching_brace(after, b) + 1..],
            (None, None) => return out,
        }
    }
    out.push_str(rest);
    out
}

/// Index of the `}` that closes the `{` at `open`.
fn matching_brace(t: &str, open: usize) -> usize {
    let mut depth = 0;
    for (i, c) in t.char_indices().skip_while(|(i, _)| *i < open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    t.len() - 1
}

fn strip_comments(t: &str) -> String {
    t.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path that starts at `crate`, `super` or `self`, with `{…}` groups expanded.
fn paths(t: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let b = t.as_bytes();
    for kw in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(i) = t[from..].find(kw).map(|i| i + from) {
            from = i + kw.len();
            if i > 0 && (is_ident(b[i - 1] as char) || b[i - 1] == b':') {
                continue;
            }
            let head = kw.trim_end_matches(':').to_string();
            expand(&t[from..], vec![head], &mut out);
        }
    }
    out
}

/// Read a path's tail (`a::b::{c, d::e}`) after the prefix `base`.
fn expand(t: &str, base: Vec<String>, out: &mut Vec<Vec<String>>) {
    let t = t.trim_start();
    if let Some(body) = t.strip_prefix('{') {
        let end = matching_brace(t, 0) - 1;
        let body = &body[..end];
        let (mut depth, mut start) = (0, 0);
        for (i, c) in body.char_indices().chain([(body.len(), ',')]) {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    let part = body[start..i].trim();
                    if !part.is_empty() {
                        expand(part, base.clone(), out);
                    }
                    start = i + 1;
                }
                _ => {}
            }
        }
        return;
    }
    let ident: String = t.chars().take_while(|&c| is_ident(c)).collect();
    if ident.is_empty() {
        out.push(base);
        return;
    }
    let mut path = base;
    path.push(ident.clone());
    let rest = &t[ident.len()..];
    match rest.strip_prefix("::") {
        Some(r) => expand(r, path, out),
        None => out.push(path),
    }
}

/// `pub use` re-exports: (module, name) → the module path it comes from.
fn reexports(mods: &BTreeMap<Module, String>) -> BTreeMap<(Module, String), Vec<String>> {
    let mut out = BTreeMap::new();
    for (m, t) in mods {
        for stmt in t.split(';') {
            let s = stmt.trim();
            let Some(i) = s.find("use ") else { continue };
            if !s[..i].trim_start().starts_with("pub") {
                continue;
            }
            let mut found = Vec::new();
            expand(&s[i + 4..], Vec::new(), &mut found);
            for p in found {
                let Some((name, from)) = p.split_last() else {
                    continue;
                };
                let name = name.rsplit(" as ").next().unwrap().to_string();
                out.insert((m.clone(), name), absolute(m, from));
            }
        }
    }
    out
}

/// A path as written in module `m` made absolute (from the crate root).
fn absolute(m: &Module, p: &[String]) -> Vec<String> {
    let mut base: Vec<String>;
    let mut rest = p;
    match p.first().map(String::as_str) {
        Some("crate") => {
            base = Vec::new();
            rest = &p[1..];
        }
        Some("self") => {
            base = m.clone();
            rest = &p[1..];
        }
        Some("super") => {
            base = m.clone();
            while rest.first().map(String::as_str) == Some("super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        _ => base = m.clone(),
    }
    base.extend(rest.iter().cloned());
    base
}

/// The module a path lands in: its longest prefix that is a module, through re-exports.
fn resolve(
    mods: &BTreeMap<Module, String>,
    re: &BTreeMap<(Module, String), Vec<String>>,
    mut path: Vec<String>,
) -> Module {
    for _ in 0..8 {
        let k = (0..=path.len())
            .rev()
            .find(|&k| mods.contains_key(&path[..k]))
            .unwrap_or(0);
        let module: Module = path[..k].to_vec();
        match path
            .get(k)
            .and_then(|next| re.get(&(module.clone(), next.clone())))
        {
            Some(to) if *to != path[..=k] => {
                let mut p = to.clone();
                p.extend(path[k + 1..].iter().cloned());
                path = p;
            }
            _ => return module,
        }
    }
    Vec::new()
}

/// The edges between a crate's modules.
pub fn edges(mods: &BTreeMap<Module, String>) -> BTreeSet<(Module, Module)> {
    let re = reexports(mods);
    let mut out = BTreeSet::new();
    for (m, t) in mods {
        for p in paths(t) {
            let target = resolve(mods, &re, absolute(m, &p));
            // A module's path to an ancestor (`super::X` in a child) is a
            // child using its parent: part of the hierarchy.
            if target != *m && !m.starts_with(&target) && mods.contains_key(&target) {
                out.insert((m.clone(), target));
            }
        }
    }
    out
}

/// The import circles: strongly connected sets of more than one module.
pub fn circles(edges: &BTreeSet<(Module, Module)>) -> Vec<BTreeSet<Module>> {
    let nodes: BTreeSet<&Module> = edges.iter().flat_map(|(a, b)| [a, b]).collect();
    let reach = |from: &Module| -> BTreeSet<Module> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for (a, b) in edges.iter().filter(|(a, _)| *a == n) {
                let _ = a;
                if seen.insert(b.clone()) {
                    todo.push(b.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&Module, BTreeSet<Module>> =
        nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut out: Vec<BTreeSet<Module>> = Vec::new();
    for n in &nodes {
        if out.iter().any(|c| c.contains(*n)) {
            continue;
        }
        let comp: BTreeSet<Module> = nodes
            .iter()
            .filter(|m| reaches[n].contains(**m) && reaches[**m].contains(*n))
            .map(|m| (*m).clone())
            .collect();
        if comp.len() > 1 {
            out.push(comp);
        }
    }
    out
}

/// `a::b` (or `lib` for the root).
pub fn name(m: &Module) -> String {
    if m.is_empty() {
        "lib".into()
    } else {
        m.join("::")
    }
}
