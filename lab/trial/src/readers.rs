//! Readers of the figures load generators print on their normal standard
//! output, so that no wrapper is needed: each reader recognises its tool's
//! output and names its figures by the conventions of [`crate::metrics`]
//! (a time ends in its unit, `_ms` or `_us`; a rate in `_per_s`, `_rps`,
//! `_tps`, `_qps` or `_iops`). docs/trial.md lists every name.

use serde_json::Value;

use crate::metrics::Metric;

/// A reader's figures: name, value, unit.
pub type Figures = Vec<(String, f64, &'static str)>;

/// One load generator's reader.
pub struct Reader {
    /// The tool and the output it reads, as the metrics' `source` says.
    pub name: &'static str,
    /// Its figures as (name, value, unit), or `None` when the output is not its tool's.
    pub read: fn(&str) -> Option<Figures>,
}

/// Every reader; the workload's output is offered to each.
pub const READERS: &[Reader] = &[
    Reader {
        name: "redis-benchmark --csv",
        read: redis_benchmark_csv,
    },
    Reader {
        name: "pgbench",
        read: pgbench,
    },
    Reader {
        name: "fio --output-format=json",
        read: fio_json,
    },
    Reader {
        name: "sysbench",
        read: sysbench,
    },
];

/// The figures every reader that recognises `stdout` finds in it.
pub fn read_output(stdout: &str) -> Vec<Metric> {
    READERS
        .iter()
        .filter_map(|r| Some((r.name, (r.read)(stdout)?)))
        .flat_map(|(source, v)| {
            v.into_iter().map(move |(name, value, unit)| Metric {
                name,
                value,
                unit: Some(unit.to_string()),
                source: source.to_string(),
            })
        })
        .filter(|m| m.value.is_finite())
        .collect()
}

/// A test's name as a metric prefix: lower case, runs of anything but
/// letters and digits as one `_` (`LRANGE_100 (first 100 elements)` →
/// `lrange_100_first_100_elements`).
fn slug(s: &str) -> String {
    let mut o = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            o.push(c.to_ascii_lowercase());
        } else if !o.ends_with('_') {
            o.push('_');
        }
    }
    o.trim_matches('_').chars().take(40).collect()
}

fn unquote(f: &str) -> &str {
    f.trim().trim_matches('"')
}

/// `redis-benchmark --csv`: a header `"test","rps","avg_latency_ms",…` and
/// one row per test (Redis 7); Redis 6 and older print `"TEST","RPS"` rows
/// without a header. Per test T: `T_rps`, and `T_avg_ms`, `T_min_ms`,
/// `T_p50_ms`, `T_p95_ms`, `T_p99_ms`, `T_max_ms` from the latency columns.
fn redis_benchmark_csv(out: &str) -> Option<Figures> {
    let mut cols: Option<Vec<String>> = None;
    let mut v = Vec::new();
    for line in out.lines().map(str::trim).filter(|l| l.starts_with('"')) {
        let f: Vec<&str> = line.split("\",\"").map(unquote).collect();
        if f.first() == Some(&"test") && f.get(1) == Some(&"rps") {
            cols = Some(f.iter().map(|s| s.to_string()).collect());
            continue;
        }
        let header = cols
            .clone()
            .unwrap_or_else(|| vec!["test".into(), "rps".into()]);
        if f.len() != header.len() {
            continue;
        }
        let test = slug(f[0]);
        for (c, x) in header.iter().zip(&f).skip(1) {
            let Ok(x) = x.parse::<f64>() else { continue };
            match c.strip_suffix("_latency_ms") {
                Some(stat) => v.push((format!("{test}_{stat}_ms"), x, "ms")),
                None if c == "rps" => v.push((format!("{test}_rps"), x, "1/s")),
                None => {}
            }
        }
    }
    (!v.is_empty()).then_some(v)
}

/// The number after `key` on a line that starts with it (`tps = 115.48 (…)`).
fn after<'a>(line: &'a str, key: &str) -> Option<f64> {
    let rest: &'a str = line.trim().strip_prefix(key)?;
    rest.split_whitespace().next()?.parse().ok()
}

/// pgbench's summary: `pgbench_tps`, `pgbench_latency_avg_ms`,
/// `pgbench_latency_stddev_ms` (with `-P` or `--rate`), `pgbench_connect_ms`
/// (initial connection time), `pgbench_failed` (failed transactions).
fn pgbench(out: &str) -> Option<Figures> {
    if !out.contains("number of transactions actually processed:") {
        return None;
    }
    let keys: [(&str, &str, &str); 5] = [
        ("tps = ", "pgbench_tps", "1/s"),
        ("latency average = ", "pgbench_latency_avg_ms", "ms"),
        ("latency stddev = ", "pgbench_latency_stddev_ms", "ms"),
        ("initial connection time = ", "pgbench_connect_ms", "ms"),
        ("number of failed transactions: ", "pgbench_failed", ""),
    ];
    let mut v = Vec::new();
    for line in out.lines() {
        for (key, name, unit) in keys {
            if let Some(x) = after(line, key) {
                v.push((name.to_string(), x, unit));
            }
        }
    }
    (!v.is_empty()).then_some(v)
}

/// fio's JSON (`--output-format=json`), summed over its jobs, per direction
/// D (`read`, `write`, `trim`) that did I/O: `fio_D_iops`,
/// `fio_D_bw_kib_per_s`, `fio_D_lat_mean_us` (mean over all I/Os),
/// `fio_D_lat_max_us`, `fio_D_clat_p99_us` and `fio_D_clat_p999_us` (the
/// worst job's completion-latency percentiles).
fn fio_json(out: &str) -> Option<Figures> {
    let start = out.find('{')?;
    let doc: Value = serde_json::Deserializer::from_str(&out[start..])
        .into_iter::<Value>()
        .next()?
        .ok()?;
    doc.get("fio version")?;
    let jobs = doc.get("jobs")?.as_array()?;
    let mut v = Vec::new();
    for d in ["read", "write", "trim"] {
        let sides: Vec<&Value> = jobs.iter().filter_map(|j| j.get(d)).collect();
        let num = |s: &Value, path: &[&str]| {
            path.iter()
                .try_fold(s, |x, k| x.get(*k))
                .and_then(Value::as_f64)
        };
        let ios: f64 = sides.iter().filter_map(|s| num(s, &["total_ios"])).sum();
        if ios <= 0.0 {
            continue;
        }
        let sum = |p: &[&str]| sides.iter().filter_map(|s| num(s, p)).sum::<f64>();
        let max = |p: &[&str]| {
            sides
                .iter()
                .filter_map(|s| num(s, p))
                .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
        };
        let weighted: f64 = sides
            .iter()
            .filter_map(|s| Some(num(s, &["lat_ns", "mean"])? * num(s, &["total_ios"])?))
            .sum();
        v.push((format!("fio_{d}_iops"), sum(&["iops"]), "1/s"));
        v.push((format!("fio_{d}_bw_kib_per_s"), sum(&["bw"]), "KiB/s"));
        v.push((format!("fio_{d}_lat_mean_us"), weighted / ios / 1e3, "us"));
        let us = |x: Option<f64>| x.map(|x| x / 1e3);
        let named = [
            ("lat_max_us", us(max(&["lat_ns", "max"]))),
            (
                "clat_p99_us",
                us(max(&["clat_ns", "percentile", "99.000000"])),
            ),
            (
                "clat_p999_us",
                us(max(&["clat_ns", "percentile", "99.900000"])),
            ),
        ];
        for (n, x) in named {
            if let Some(x) = x {
                v.push((format!("fio_{d}_{n}"), x, "us"));
            }
        }
    }
    (!v.is_empty()).then_some(v)
}

/// The number inside the parentheses before `unit` (`(605885.54 per second)`).
fn in_parens(line: &str, unit: &str) -> Option<f64> {
    let open = line.rfind('(')?;
    line[open + 1..]
        .strip_suffix(')')?
        .trim()
        .strip_suffix(unit)?
        .trim()
        .parse()
        .ok()
}

/// sysbench 1.x: `sysbench_events_per_s` (cpu), `sysbench_tps` and
/// `sysbench_qps` (OLTP), `sysbench_ops_per_s` and `sysbench_mib_per_s`
/// (memory), `sysbench_read_mib_per_s` and `sysbench_written_mib_per_s`
/// (fileio), `sysbench_total_s`, and the latency section:
/// `sysbench_latency_min_ms`, `…_avg_ms`, `…_max_ms`, `…_pNN_ms` (the
/// percentile it was asked for, 95 by default).
fn sysbench(out: &str) -> Option<Figures> {
    if !out.lines().any(|l| l.starts_with("sysbench ")) {
        return None;
    }
    let mut v = Vec::new();
    let mut latency = false;
    for raw in out.lines() {
        let l = raw.trim();
        if raw.trim_end().ends_with(':') && !raw.starts_with(' ') {
            latency = l == "Latency (ms):";
        }
        let mut push = |n: &str, x: Option<f64>, u: &'static str| {
            if let Some(x) = x {
                v.push((n.to_string(), x, u));
            }
        };
        if latency {
            for stat in ["min", "avg", "max"] {
                push(
                    &format!("sysbench_latency_{stat}_ms"),
                    after(l, &format!("{stat}:")),
                    "ms",
                );
            }
            if let Some((p, rest)) = l.split_once("th percentile:") {
                let x = rest.trim().parse().ok();
                push(&format!("sysbench_latency_p{}_ms", slug(p)), x, "ms");
            }
            continue;
        }
        push(
            "sysbench_events_per_s",
            after(l, "events per second:"),
            "1/s",
        );
        push(
            "sysbench_total_s",
            after(l, "total time:").or_else(|| {
                l.strip_prefix("total time:")?
                    .trim()
                    .strip_suffix('s')?
                    .parse()
                    .ok()
            }),
            "s",
        );
        if l.starts_with("transactions:") {
            push("sysbench_tps", in_parens(l, "per sec."), "1/s");
        }
        if l.starts_with("queries:") {
            push("sysbench_qps", in_parens(l, "per sec."), "1/s");
        }
        if l.starts_with("Total operations:") {
            push("sysbench_ops_per_s", in_parens(l, "per second"), "1/s");
        }
        if l.contains("MiB transferred (") {
            push("sysbench_mib_per_s", in_parens(l, "MiB/sec"), "MiB/s");
        }
        push("sysbench_read_mib_per_s", after(l, "read, MiB/s:"), "MiB/s");
        push(
            "sysbench_written_mib_per_s",
            after(l, "written, MiB/s:"),
            "MiB/s",
        );
    }
    (!v.is_empty()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! sample {
        ($f:literal) => {
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/output/",
                $f
            ))
        };
    }

    fn get(m: &[Metric], name: &str) -> f64 {
        m.iter()
            .find(|x| x.name == name)
            .unwrap_or_else(|| panic!("no {name} in {m:?}"))
            .value
    }

    fn only(m: &[Metric], source: &str) {
        assert!(m.iter().all(|x| x.source == source), "{m:?}");
        for x in m {
            assert!(crate::metrics::valid_name(&x.name), "{}", x.name);
            assert!(
                crate::metrics::direction_of(&x.name).is_some() || x.name == "pgbench_failed",
                "{}",
                x.name
            );
        }
    }

    #[test]
    fn redis_benchmark_csv_of_redis_7() {
        let m = read_output(sample!("redis-benchmark-csv.txt"));
        only(&m, "redis-benchmark --csv");
        assert_eq!(m.len(), 14);
        assert_eq!(get(&m, "get_rps"), 43478.26);
        assert_eq!(get(&m, "get_max_ms"), 3.231);
        assert_eq!(get(&m, "set_p99_ms"), 7.103);
        assert_eq!(get(&m, "set_avg_ms"), 0.912);
        let m = read_output(sample!("redis-benchmark-csv-lrange.txt"));
        assert_eq!(get(&m, "lrange_100_first_100_elements_p50_ms"), 1.151);
        assert_eq!(get(&m, "lpush_needed_to_benchmark_lrange_rps"), 33898.30);
        // Redis 6 and older: no header, rps only.
        let m = read_output("\"SET\",\"81300.81\"\n\"GET\",\"80645.16\"\n");
        assert_eq!((m.len(), get(&m, "get_rps")), (2, 80645.16));
    }

    #[test]
    fn pgbench_summary() {
        let m = read_output(sample!("pgbench.txt"));
        only(&m, "pgbench");
        assert_eq!(get(&m, "pgbench_tps"), 115.485389);
        assert_eq!(get(&m, "pgbench_latency_avg_ms"), 8.659);
        assert_eq!(get(&m, "pgbench_connect_ms"), 5.568);
        assert_eq!(get(&m, "pgbench_failed"), 0.0);
        let m = read_output(sample!("pgbench-r.txt"));
        assert_eq!(get(&m, "pgbench_tps"), 160.870419);
        assert_eq!(m.len(), 4, "{m:?}");
    }

    #[test]
    fn fio_json_over_jobs() {
        let m = read_output(sample!("fio-randread.json"));
        only(&m, "fio --output-format=json");
        assert!(m.iter().all(|x| x.name.starts_with("fio_read_")), "{m:?}");
        assert_eq!(m.len(), 6);
        assert!(get(&m, "fio_read_iops") > 0.0);
        assert!(get(&m, "fio_read_clat_p99_us") >= get(&m, "fio_read_lat_mean_us") * 0.0);
        assert!(get(&m, "fio_read_lat_max_us") >= get(&m, "fio_read_lat_mean_us"));
        let m = read_output(sample!("fio-randrw.json"));
        assert_eq!(m.len(), 12);
        let doc: Value = serde_json::from_str(sample!("fio-randrw.json")).unwrap();
        let iops: f64 = doc["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["write"]["iops"].as_f64().unwrap())
            .sum();
        assert_eq!(get(&m, "fio_write_iops"), iops);
    }

    #[test]
    fn sysbench_cpu_and_memory() {
        let m = read_output(sample!("sysbench-cpu.txt"));
        only(&m, "sysbench");
        assert_eq!(get(&m, "sysbench_events_per_s"), 733.44);
        assert_eq!(get(&m, "sysbench_total_s"), 2.0051);
        assert_eq!(get(&m, "sysbench_latency_max_ms"), 76.35);
        assert_eq!(get(&m, "sysbench_latency_p95_ms"), 10.09);
        assert_eq!(m.len(), 6, "{m:?}");
        let m = read_output(sample!("sysbench-memory.txt"));
        assert_eq!(get(&m, "sysbench_ops_per_s"), 605885.54);
        assert_eq!(get(&m, "sysbench_mib_per_s"), 591.69);
        let oltp = "sysbench 1.0.20\nSQL statistics:\n    transactions:                        1000   (99.80 per sec.)\n    queries:                             20000  (1996.04 per sec.)\n";
        let m = read_output(oltp);
        assert_eq!(
            (get(&m, "sysbench_tps"), get(&m, "sysbench_qps")),
            (99.80, 1996.04)
        );
    }

    #[test]
    fn other_output_gives_nothing() {
        assert!(read_output("hello\n{\"a\": 1}\ntps = 3\n\"x\"\n").is_empty());
        assert!(read_output("").is_empty());
    }
}
