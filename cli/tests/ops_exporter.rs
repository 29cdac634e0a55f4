//! `zmem exporter`: the output parses as Prometheus text format (a parser of the format's
//! rules, as `promtool check metrics` applies them), over HTTP and with `--once`, including a
//! `zmem serve` device reached through a control socket.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use zmem_files::testutil::ScratchDir;

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ops/admin/tests/fixtures")
        .join(case)
}

/// One sample: metric name, labels, value.
type Sample = (String, BTreeMap<String, String>, f64);

fn valid_name(n: &str) -> bool {
    let mut c = n.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_' || ch == ':')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == ':')
}

/// Parse Prometheus text format 0.0.4; Err names the line and the rule broken.
fn parse_exposition(text: &str) -> Result<Vec<Sample>, String> {
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut helps: BTreeSet<String> = BTreeSet::new();
    let mut seen_samples: BTreeSet<String> = BTreeSet::new();
    let mut series: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    if !text.ends_with('\n') {
        return Err("output does not end with a newline".into());
    }
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let mut it = rest.splitn(3, ' ');
            let kw = it.next().unwrap_or("");
            let name = it
                .next()
                .ok_or(format!("{ln}: comment without metric name"))?;
            let val = it.next().unwrap_or("");
            match kw {
                "HELP" => {
                    if !valid_name(name) || !helps.insert(name.to_string()) {
                        return Err(format!("{ln}: bad or repeated HELP for {name}"));
                    }
                    if val.trim().is_empty() {
                        return Err(format!("{ln}: empty HELP for {name}"));
                    }
                }
                "TYPE" => {
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&val) {
                        return Err(format!("{ln}: unknown type {val}"));
                    }
                    if types.insert(name.to_string(), val.to_string()).is_some()
                        || seen_samples.contains(name)
                    {
                        return Err(format!(
                            "{ln}: TYPE for {name} repeated or after its samples"
                        ));
                    }
                    if val == "counter" && !name.ends_with("_total") {
                        return Err(format!("{ln}: counter {name} does not end in _total"));
                    }
                }
                _ => {}
            }
            continue;
        }
        let (name, rest) = match line.find(['{', ' ']) {
            Some(p) => (&line[..p], &line[p..]),
            None => return Err(format!("{ln}: no value")),
        };
        if !valid_name(name) {
            return Err(format!("{ln}: bad metric name {name:?}"));
        }
        let mut labels = BTreeMap::new();
        let value_part = if let Some(r) = rest.strip_prefix('{') {
            let b: Vec<char> = r.chars().collect();
            let mut i = 0;
            loop {
                if b.get(i) == Some(&'}') {
                    i += 1;
                    break;
                }
                let st = i;
                while i < b.len() && b[i] != '=' {
                    i += 1;
                }
                if i >= b.len() {
                    return Err(format!("{ln}: label without ="));
                }
                let lname: String = b[st..i].iter().collect();
                if !valid_name(&lname) || lname.starts_with("__") {
                    return Err(format!("{ln}: bad label name {lname:?}"));
                }
                i += 1;
                if b.get(i) != Some(&'"') {
                    return Err(format!("{ln}: label value not quoted"));
                }
                i += 1;
                let mut v = String::new();
                loop {
                    match b.get(i) {
                        None => return Err(format!("{ln}: unterminated label value")),
                        Some('\\') => {
                            match b.get(i + 1) {
                                Some('n') => v.push('\n'),
                                Some('\\') => v.push('\\'),
                                Some('"') => v.push('"'),
                                _ => return Err(format!("{ln}: bad escape in label value")),
                            }
                            i += 2;
                        }
                        Some('"') => {
                            i += 1;
                            break;
                        }
                        Some(c) => {
                            v.push(*c);
                            i += 1;
                        }
                    }
                }
                if labels.insert(lname.clone(), v).is_some() {
                    return Err(format!("{ln}: label {lname} repeated"));
                }
                match b.get(i) {
                    Some(',') => i += 1,
                    Some('}') => {
                        i += 1;
                        break;
                    }
                    _ => return Err(format!("{ln}: expected , or }} after a label")),
                }
            }
            let tail: String = b[i..].iter().collect();
            if !tail.starts_with(' ') {
                return Err(format!("{ln}: no space before the value"));
            }
            tail
        } else {
            rest.to_string()
        };
        let mut parts = value_part.split_whitespace();
        let v = parts.next().ok_or(format!("{ln}: no value"))?;
        let value: f64 = match v {
            "NaN" => f64::NAN,
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().map_err(|_| format!("{ln}: bad value {v:?}"))?,
        };
        if let Some(ts) = parts.next() {
            ts.parse::<i64>()
                .map_err(|_| format!("{ln}: bad timestamp"))?;
        }
        if parts.next().is_some() {
            return Err(format!("{ln}: trailing text"));
        }
        if !types.contains_key(name) {
            return Err(format!("{ln}: sample of {name} without TYPE"));
        }
        seen_samples.insert(name.to_string());
        if !series.insert(format!("{name}{labels:?}")) {
            return Err(format!("{ln}: duplicate series {name}{labels:?}"));
        }
        out.push((name.to_string(), labels, value));
    }
    Ok(out)
}

#[test]
fn the_parser_rejects_broken_exposition() {
    assert!(parse_exposition("# TYPE a gauge\na 1\n").is_ok());
    for bad in [
        "a 1\n",
        "# TYPE a gauge\na{x=\"1\"} one\n",
        "# TYPE a counter\na 1\n",
        "# TYPE a gauge\na{x=1} 1\n",
        "# TYPE a gauge\na 1\na 2\n",
        "# TYPE a gauge\na{x=\"1\" 1\n",
        "# TYPE 1a gauge\n1a 1\n",
        "# TYPE a gauge\na 1",
    ] {
        assert!(parse_exposition(bad).is_err(), "{bad:?} accepted");
    }
}

/// A stand-in for a `zmem serve` control socket (docs/ctl-protocol.md), answering `count`
/// connections from canned attributes.
fn fake_ctl(path: &Path, count: usize) -> std::thread::JoinHandle<()> {
    let l = UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        let attrs = [
            (
                "mm_stat",
                "  1048576   262144   327680        0   327680       16        0        0        0",
            ),
            ("comp_algorithm", "lzo lz4 [zstd] "),
            ("disksize", "67108864"),
            ("io_stat", "       0        0 0        3"),
        ];
        for _ in 0..count {
            let Ok((mut s, _)) = l.accept() else { return };
            let mut req = String::new();
            let _ = BufReader::new(&s).read_line(&mut req);
            let mut w = req.split_whitespace();
            let reply = match (w.next(), w.next()) {
                (Some("list"), _) => format!(
                    "ok\n{}\n",
                    attrs.iter().map(|a| a.0).collect::<Vec<_>>().join("\n")
                ),
                (Some("read"), Some(a)) => match attrs.iter().find(|x| x.0 == a) {
                    Some((_, v)) => format!("ok\n{v}\n"),
                    None => format!("err ENOENT no attribute {a}\n"),
                },
                _ => "err EINVAL bad request\n".to_string(),
            };
            let _ = s.write_all(reply.as_bytes());
        }
    })
}

#[test]
fn once_output_parses_and_covers_zram_zswap_and_serve() {
    let (_scratch, root) = ScratchDir::with_copy("cli-exporter", &fixture("15-policy/root"));
    fs::create_dir_all(root.join("run/zmem")).unwrap();
    // The exporter reads mm_stat, comp_algorithm, disksize, io_stat and bd_stat of the served device.
    let server = fake_ctl(&root.join("run/zmem/vm1.ctl"), 5);
    let text = exporter_once(&root);
    let samples = parse_exposition(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    server.join().unwrap();
    let get = |name: &str, dev: &str| {
        samples
            .iter()
            .find(|(n, l, _)| n == name && l.get("device").map(String::as_str) == Some(dev))
            .map(|s| s.2)
    };
    assert_eq!(
        get("zmem_zram_orig_data_bytes", "zram0"),
        Some(2147483648.0)
    );
    assert_eq!(get("zmem_zram_compression_ratio", "zram0"), Some(4.0));
    assert_eq!(
        get("zmem_zram_backing_written_bytes_total", "zram0"),
        Some(200.0 * 4096.0)
    );
    assert_eq!(
        get("zmem_zram_orig_data_bytes", "serve:vm1"),
        Some(1048576.0)
    );
    assert_eq!(get("zmem_zram_notify_free_total", "serve:vm1"), Some(3.0));
    // The algorithm is on the info series; every other series has the same labels.
    let serve = samples
        .iter()
        .find(|(n, l, _)| n == "zmem_zram_info" && l["device"] == "serve:vm1")
        .unwrap();
    assert_eq!(
        (
            serve.1["algorithm"].as_str(),
            serve.1["source"].as_str(),
            serve.2
        ),
        ("zstd", "serve", 1.0)
    );
    for (n, l, _) in &samples {
        if n.starts_with("zmem_zram_") && n != "zmem_zram_info" {
            let keys: Vec<&String> = l.keys().collect();
            assert_eq!(keys, ["device", "source"], "{n}: {l:?}");
        }
    }
    assert!(samples
        .iter()
        .any(|(n, _, v)| n == "zmem_zswap_stores_total" && *v == 20.0));
    assert!(samples
        .iter()
        .any(|(n, _, v)| n == "zmem_exporter_read_errors" && *v == 0.0));
}

/// `zmem exporter` on port 0 over fixture 06-in-use with `extra` flags; its address.
fn exporter_on_fixture(extra: &[&str]) -> (std::process::Child, String) {
    let root = fixture("06-in-use/root");
    let mut child = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args([
            "exporter",
            "--listen",
            "127.0.0.1:0",
            "--root",
            root.to_str().unwrap(),
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .trim()
        .strip_prefix("zmem exporter listening on http://")
        .and_then(|s| s.strip_suffix("/metrics"))
        .unwrap()
        .to_string();
    (child, addr)
}

#[test]
fn http_metrics_endpoint() {
    let (mut child, addr) = exporter_on_fixture(&["--max-requests", "2"]);
    let get = |path: &str| {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut r = String::new();
        s.read_to_string(&mut r).unwrap();
        r
    };
    let r = get("/metrics");
    let (head, body) = r.split_once("\r\n\r\n").unwrap();
    assert!(
        head.starts_with("HTTP/1.1 200") && head.contains("text/plain; version=0.0.4"),
        "{head}"
    );
    let samples = parse_exposition(body).unwrap_or_else(|e| panic!("{e}\n{body}"));
    assert!(samples.iter().any(|(n, l, _)| n == "zmem_zram_info"
        && l["device"] == "zram0"
        && l["algorithm"] == "lzo-rle"));
    assert!(get("/nope").starts_with("HTTP/1.1 404"));
    assert!(child.wait().unwrap().success());
}

/// `zmem exporter --once --root ROOT`: its exposition, which must succeed.
fn exporter_once(root: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(["exporter", "--once", "--root", root.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A real scrape (`zmem exporter --once`) of fixture 15-policy (a device with recompression
/// and writeback) with zswap's debugfs counters present: (the scratch directory holding the
/// tree, removed when dropped; exposition text).
fn scrape_fixture_with_zswap(name: &str) -> (ScratchDir, String) {
    let (scratch, root) = ScratchDir::with_copy(&format!("cli-{name}"), &fixture("15-policy/root"));
    let dbg = root.join("sys/kernel/debug/zswap");
    fs::create_dir_all(&dbg).unwrap();
    for (k, v) in [
        ("pool_limit_hit", "2"),
        ("reject_compress_poor", "5"),
        ("reject_alloc_fail", "0"),
        ("pool_total_size", "4096"),
        ("stored_pages", "3"),
        ("written_back_pages", "1"),
    ] {
        fs::write(dbg.join(k), format!("{v}\n")).unwrap();
    }
    let text = exporter_once(&root);
    (scratch, text)
}

/// The `# TYPE` of every metric in an exposition.
fn types_of(text: &str) -> BTreeMap<&str, &str> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .collect()
}

#[test]
fn grafana_dashboard_uses_only_exported_metrics() {
    let (_scratch, text) = scrape_fixture_with_zswap("grafana");
    let samples = parse_exposition(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let names: BTreeSet<&str> = samples.iter().map(|s| s.0.as_str()).collect();
    let dash =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/grafana-zmem.json"))
            .unwrap();
    let mut used = BTreeSet::new();
    for (i, _) in dash.match_indices("zmem_") {
        let n: String = dash[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if n != "zmem_" && !n.starts_with("zmem_zram_zswap") {
            used.insert(n);
        }
    }
    assert!(used.len() > 10);
    // Per host: job and instance variables, every query filtered by them, sums per
    // instance (never across hosts), and no declared-but-unused datasource input.
    let d: serde_json::Value = serde_json::from_str(&dash).unwrap();
    assert!(d.get("__inputs").is_none(), "unused __inputs");
    let vars: Vec<&str> = d["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert!(
        vars.contains(&"job") && vars.contains(&"instance"),
        "{vars:?}"
    );
    for p in d["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().into_iter().flatten() {
            let e = t["expr"].as_str().unwrap_or("");
            let metrics = e.matches("zmem_").count();
            assert_eq!(e.matches("instance=~\"$instance\"").count(), metrics, "{e}");
            assert!(!e.contains("sum("), "sum across hosts: {e}");
        }
    }
    for n in &used {
        assert!(
            names.contains(n.as_str()),
            "dashboard uses {n}, which the exporter does not export"
        );
    }
    check_queries_against_series(&d, &samples, &types_of(&text));
}

/// Every dashboard query against the scraped series: a `rate(…)` is over a counter and a
/// plain panel over a gauge, and every label a selector filters on (other than the `job`
/// and `instance` Prometheus adds) is on every series of that metric.
fn check_queries_against_series(
    d: &serde_json::Value,
    samples: &[Sample],
    types: &BTreeMap<&str, &str>,
) {
    let mut checked = 0;
    for p in d["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().into_iter().flatten() {
            let e = t["expr"].as_str().unwrap_or("");
            for (i, _) in e.match_indices("zmem_") {
                let name: String = e[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let in_rate = e[..i].ends_with("rate(");
                let ty = types.get(name.as_str()).copied().unwrap_or("none");
                assert_eq!(in_rate, ty == "counter", "{name} is a {ty}: {e}");
                let rest = &e[i + name.len()..];
                let selector = rest
                    .strip_prefix('{')
                    .and_then(|r| r.split_once('}'))
                    .map(|(s, _)| s)
                    .unwrap_or("");
                for m in selector.split(',').filter(|m| !m.is_empty()) {
                    let label = m.split(['=', '!']).next().unwrap().trim();
                    if label == "job" || label == "instance" {
                        continue;
                    }
                    let series: Vec<_> = samples.iter().filter(|s| s.0 == name).collect();
                    assert!(
                        !series.is_empty() && series.iter().all(|s| s.1.contains_key(label)),
                        "{e}: not every {name} series has the label {label}"
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 20, "only {checked} metric uses checked");
}

/// `promtool check metrics` (Prometheus's own linter) on a real scrape, where promtool is
/// installed (Debian: package prometheus).
#[test]
fn promtool_check_metrics_on_a_real_scrape() {
    let Ok(mut child) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        zmem_files::testutil::skip(
            "SKIP promtool_check_metrics_on_a_real_scrape: promtool is not installed (Debian package prometheus)",
        );
        return;
    };
    let (_scratch, text) = scrape_fixture_with_zswap("promtool");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "promtool check metrics: {report}\n{text}"
    );
    assert_eq!(report.trim(), "", "promtool's lint findings");
}

#[test]
fn a_device_removed_while_it_is_scraped_is_left_out_not_an_error() {
    let (_scratch, root) =
        ScratchDir::with_copy("cli-exporter-vanished", &fixture("06-in-use/root"));
    // /sys/block/zramN links into /sys/devices; after hot_remove the link
    // leads nowhere, which is what a scrape sees between listing and reading.
    std::os::unix::fs::symlink(
        "../devices/virtual/block/zram7",
        root.join("sys/block/zram7"),
    )
    .unwrap();
    let text = exporter_once(&root);
    let samples = parse_exposition(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(
        samples
            .iter()
            .any(|(n, _, v)| n == "zmem_exporter_read_errors" && *v == 0.0),
        "{text}"
    );
    assert!(!text.contains("zram7"), "{text}");
    assert!(samples
        .iter()
        .any(|(n, l, _)| n == "zmem_zram_orig_data_bytes" && l["device"] == "zram0"));
}

#[test]
fn a_dead_control_socket_is_counted_not_fatal() {
    let (_scratch, root) = ScratchDir::with_copy("cli-exporter-dead", &fixture("06-in-use/root"));
    fs::create_dir_all(root.join("run/zmem")).unwrap();
    // A socket file whose server is gone (as after a crash of `zmem serve`).
    drop(UnixListener::bind(root.join("run/zmem/gone.ctl")).unwrap());
    let text = exporter_once(&root);
    let samples = parse_exposition(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(
        samples
            .iter()
            .any(|(n, _, v)| n == "zmem_exporter_read_errors" && *v == 1.0),
        "{text}"
    );
    assert!(samples
        .iter()
        .any(|(n, l, _)| n == "zmem_zram_orig_data_bytes" && l["device"] == "zram0"));
}

/// A scraper that sends half a request holds one slot until its deadline and
/// never delays another scrape; HEAD answers the headers of GET.
#[test]
fn slow_clients_do_not_delay_scrapes_and_head_works() {
    let (mut child, addr) = exporter_on_fixture(&["--timeout", "1s", "--max-requests", "4"]);
    let mut slow = std::net::TcpStream::connect(&addr).unwrap();
    write!(slow, "GET /metr").unwrap();
    let t = std::time::Instant::now();
    let ask = |req: &str| {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        s.write_all(req.as_bytes()).unwrap();
        let mut r = String::new();
        s.read_to_string(&mut r).unwrap();
        r
    };
    let get = ask("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(get.starts_with("HTTP/1.1 200"), "{get}");
    assert!(
        t.elapsed() < std::time::Duration::from_millis(900),
        "{:?}",
        t.elapsed()
    );
    let head = ask("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    let (h, body) = head.split_once("\r\n\r\n").unwrap();
    assert!(
        h.starts_with("HTTP/1.1 200") && h.contains("Content-Length: "),
        "{h}"
    );
    assert!(!h.contains("Content-Length: 0\r"), "{h}");
    assert!(body.is_empty(), "HEAD has no body");
    // The slow client is cut at its 1 s deadline.
    slow.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    assert!(
        t.elapsed() < std::time::Duration::from_secs(3),
        "{:?}",
        t.elapsed()
    );
    assert!(ask("POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
    assert!(child.wait().unwrap().success());
}
