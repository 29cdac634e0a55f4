//! `zmem bench full --report FILE.html`: one self-contained page (no scripts, no
//! network) with inline SVG charts drawn here: ratio against speed with the
//! Pareto frontier, latency per algorithm, a bar chart per metric, the
//! recommendation with its reasons, and the complete table.

use std::fmt::Write as _;

use zmem_verdict::{FullRow, FullTable, Ranking, Recommendation};

const ENGINE: &str = "#2f6db5";
const KERNEL: &str = "#e07b1a";
const FRONTIER: &str = "#c0392b";

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn color(target: &str) -> &'static str {
    if target == "kernel" {
        KERNEL
    } else {
        ENGINE
    }
}

/// Round a maximum up to a "nice" axis end (1, 2, 2.5, 5 × 10^k).
fn nice_max(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * p >= v {
            return m * p;
        }
    }
    10.0 * p
}

fn fmt_num(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Indexes of the Pareto-optimal points when both coordinates are to be maximised.
pub fn pareto(points: &[(f64, f64)]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..points.len())
        .filter(|&i| {
            let (x, y) = points[i];
            !points
                .iter()
                .enumerate()
                .any(|(j, &(a, b))| j != i && a >= x && b >= y && (a > x || b > y))
        })
        .collect();
    idx.sort_by(|&a, &b| points[a].0.partial_cmp(&points[b].0).unwrap());
    idx
}

/// Scatter: read MiB/s (x) against effective ratio (y) at page-cluster 0.
fn scatter(rows: &[&FullRow]) -> String {
    let pts: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| {
            (
                r.read_mib_s.unwrap_or(0.0),
                r.effective_ratio.or(r.ratio).unwrap_or(0.0),
            )
        })
        .collect();
    let (w, h, l, b, t, rgt) = (760.0, 420.0, 70.0, 50.0, 20.0, 30.0);
    let xmax = nice_max(pts.iter().map(|p| p.0).fold(0.0, f64::max));
    let ymax = nice_max(pts.iter().map(|p| p.1).fold(0.0, f64::max));
    let px = |x: f64| l + x / xmax * (w - l - rgt);
    let py = |y: f64| h - b - y / ymax * (h - b - t);
    let mut s = format!(
        r#"<svg class="chart" id="chart-pareto" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="ratio against speed">"#
    );
    for i in 0..=5 {
        let xv = xmax * i as f64 / 5.0;
        let yv = ymax * i as f64 / 5.0;
        let _ = write!(
            s,
            r##"<line x1="{x}" y1="{t}" x2="{x}" y2="{y0}" stroke="#ddd"/><text x="{x}" y="{yl}" text-anchor="middle" font-size="12">{xv}</text><line x1="{l}" y1="{y}" x2="{x1}" y2="{y}" stroke="#ddd"/><text x="{tx}" y="{ty}" text-anchor="end" font-size="12">{yv}</text>"##,
            x = px(xv),
            y0 = h - b,
            yl = h - b + 18.0,
            xv = fmt_num(xv),
            y = py(yv),
            x1 = w - rgt,
            tx = l - 6.0,
            ty = py(yv) + 4.0,
            yv = fmt_num(yv),
        );
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="13">random read MiB/s (page-cluster 0) →</text><text transform="translate(16,{}) rotate(-90)" text-anchor="middle" font-size="13">effective ratio →</text>"#,
        (l + w - rgt) / 2.0,
        h - 10.0,
        (h - b + t) / 2.0
    );
    let front = pareto(&pts);
    if front.len() > 1 {
        let path: Vec<String> = front
            .iter()
            .map(|&i| format!("{:.1},{:.1}", px(pts[i].0), py(pts[i].1)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{FRONTIER}" stroke-width="2" stroke-dasharray="6 4"/>"#,
            path.join(" ")
        );
    }
    for (i, r) in rows.iter().enumerate() {
        let (x, y) = (px(pts[i].0), py(pts[i].1));
        let on = front.contains(&i);
        let shape = if r.target == "kernel" {
            format!(
                r#"<rect x="{:.1}" y="{:.1}" width="10" height="10" fill="{}""#,
                x - 5.0,
                y - 5.0,
                KERNEL
            )
        } else {
            format!(r#"<circle cx="{x:.1}" cy="{y:.1}" r="5.5" fill="{ENGINE}""#)
        };
        let stroke = if on {
            format!(r#" stroke="{FRONTIER}" stroke-width="3""#)
        } else {
            String::new()
        };
        let _ = write!(
            s,
            r#"{shape}{stroke}><title>{} ({}): {:.0} MiB/s, {:.2}:1</title></{}><text x="{:.1}" y="{:.1}" font-size="11" fill="{}">{}{}</text>"#,
            esc(&r.algo),
            r.target,
            pts[i].0,
            pts[i].1,
            if r.target == "kernel" {
                "rect"
            } else {
                "circle"
            },
            x + 7.0,
            y - 6.0 - if r.target == "kernel" { 10.0 } else { 0.0 },
            color(&r.target),
            esc(&r.algo),
            if r.target == "kernel" { " (k)" } else { "" }
        );
    }
    s.push_str("</svg>");
    s
}

/// Horizontal bars: one bar per item, several series per item.
fn hbars(
    id: &str,
    title: &str,
    unit: &str,
    items: &[(String, &'static str, Vec<f64>)],
    series: &[(&str, &str)],
) -> String {
    let bar_h = 12.0;
    let group_h = bar_h * series.len() as f64 + 8.0;
    let (l, r, t) = (150.0, 80.0, 30.0);
    let w = 480.0;
    let h = t + group_h * items.len() as f64 + 30.0;
    let max = nice_max(
        items
            .iter()
            .flat_map(|i| i.2.iter().copied())
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max),
    );
    let mut s = format!(
        r#"<svg class="chart" id="{id}" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{t_}"><text x="4" y="18" font-size="14" font-weight="bold">{t_}</text>"#,
        t_ = esc(title)
    );
    for (gi, (label, col, vals)) in items.iter().enumerate() {
        let y0 = t + gi as f64 * group_h;
        let _ = write!(
            s,
            r#"<text x="{}" y="{:.1}" text-anchor="end" font-size="12" fill="{col}">{}</text>"#,
            l - 6.0,
            y0 + group_h / 2.0,
            esc(label)
        );
        for (si, v) in vals.iter().enumerate() {
            if !v.is_finite() {
                continue;
            }
            let bw = (v / max * (w - l - r)).max(1.0);
            let (_, fill) = series[si];
            let fill = if series.len() == 1 { col } else { fill };
            let _ = write!(
                s,
                r#"<rect x="{l}" y="{:.1}" width="{bw:.1}" height="{bar_h}" fill="{fill}"><title>{}: {} {unit}</title></rect><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
                y0 + si as f64 * bar_h,
                esc(label),
                fmt_num(*v),
                l + bw + 4.0,
                y0 + si as f64 * bar_h + bar_h - 2.0,
                fmt_num(*v)
            );
        }
    }
    let _ = write!(
        s,
        r##"<text x="{l}" y="{:.1}" font-size="11" fill="#555">0 … {} {}</text>"##,
        h - 8.0,
        fmt_num(max),
        esc(unit)
    );
    if series.len() > 1 {
        let mut x = l + 140.0;
        for (name, fill) in series {
            let _ = write!(
                s,
                r#"<rect x="{x}" y="{:.1}" width="10" height="10" fill="{fill}"/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
                h - 17.0,
                x + 13.0,
                h - 8.0,
                esc(name)
            );
            x += 100.0;
        }
    }
    s.push_str("</svg>");
    s
}

/// The chart label of a row: the algorithm, marked when the row is the kernel's.
fn row_label(r: &FullRow) -> String {
    if r.target == "kernel" {
        format!("{} (kernel)", r.algo)
    } else {
        r.algo.clone()
    }
}

/// The document head with the inline style sheet, the title and the corpus line.
fn write_head(h: &mut String, t: &FullTable, title: &str) {
    let _ = write!(
        h,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{}</title><style>
body{{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#222;max-width:1500px}}
h1{{font-size:24px}} h2{{font-size:19px;margin-top:32px;border-bottom:1px solid #ccc}}
.grid{{display:flex;flex-wrap:wrap;gap:12px}} .chart{{background:#fafafa;border:1px solid #e3e3e3}}
table{{border-collapse:collapse;font-size:12px}} td,th{{border:1px solid #ddd;padding:3px 6px;text-align:right}}
td:nth-child(-n+2),th{{text-align:left}} tr.kernel td{{background:#fff4e8}} tr.best td{{font-weight:bold}}
pre{{background:#f4f4f4;padding:10px;border:1px solid #ddd}} .legend span{{margin-right:16px}}
.rec li{{margin:3px 0}}
</style></head><body>"#,
        esc(title)
    );
    let _ = write!(
        h,
        "<h1>{}</h1><p>Corpus <b>{}</b>: {} pages of 4 KiB. Weights: {}.</p>",
        esc(title),
        esc(&t.corpus),
        t.pages,
        t.weights
    );
}

/// The best algorithm per goal, with why.
fn write_best_for(h: &mut String, t: &FullTable) {
    h.push_str("<h2>Best per goal, every measured row</h2><p>Engine-only algorithms are marked: they show what a kernel with them would gain, not what this kernel can run (that is the recommendation above).</p><ul>");
    for (goal, r, why) in t.best_lines() {
        let _ = write!(
            h,
            "<li><b>{goal}</b>: {} — {}</li>",
            esc(&t.best_label(r)),
            esc(&why)
        );
    }
    h.push_str("</ul>");
}

/// The recommendation with its reasons and config files, or why there is none.
fn write_recommendation(h: &mut String, rec: Option<&Recommendation>, rec_error: Option<&str>) {
    h.push_str(r#"<h2>Recommendation</h2><div class="rec">"#);
    match (rec, rec_error) {
        (Some(r), _) => {
            let _ = write!(
                h,
                "<p>Use <b>{}</b> with <b>{}</b>{}; disksize <b>{} MiB</b>, mem_limit <b>{} MiB</b>; vm.swappiness <b>{}</b>; vm.page-cluster <b>{}</b>.</p>",
                esc(&r.use_),
                esc(&r.primary),
                r.recompress.as_deref().map(|x| format!(", recompressing idle pages with <b>{}</b>", esc(x))).unwrap_or_default(),
                r.sizes.disksize_mib,
                r.sizes.mem_limit_mib,
                r.swappiness,
                r.page_cluster
            );
            for (head, lines) in [
                ("Algorithms", &r.algorithm_reasons),
                ("Sizes", &r.size_arithmetic),
                ("vm.swappiness", &r.swappiness_arithmetic),
                ("vm.page-cluster", &r.page_cluster_reasons),
                ("zram or zswap", &r.use_reasons),
            ] {
                let _ = write!(h, "<h3>{head}</h3><ul>");
                for l in lines {
                    let _ = write!(h, "<li>{}</li>", esc(l));
                }
                h.push_str("</ul>");
            }
            let _ = write!(
                h,
                "<h3>zmem.conf</h3><p>One file for <code>zmem apply zmem.conf</code> (preview with <code>--dry-run</code>) and <code>zmem persist zmem.conf</code>: zram-generator.conf sections plus <code>[sysctl]</code>.</p><pre>{}</pre>",
                esc(&r.config_file())
            );
        }
        (None, e) => {
            let _ = write!(
                h,
                "<p>No recommendation: {}</p>",
                esc(e.unwrap_or("not requested"))
            );
        }
    }
    h.push_str("</div>");
}

/// The ratio-against-speed scatter with its legend.
fn write_scatter(h: &mut String, pc0: &[&FullRow]) {
    let _ = write!(
        h,
        r#"<h2>Ratio against speed</h2><p class="legend"><span style="color:{ENGINE}">● engine</span><span style="color:{KERNEL}">■ kernel zram</span><span style="color:{FRONTIER}">- - Pareto frontier (nothing is both faster and smaller)</span></p>"#
    );
    h.push_str(&scatter(pc0));
}

/// Read latency through the device and decompress latency of the codec, per row.
fn write_latency(h: &mut String, pc0: &[&FullRow]) {
    h.push_str(r#"<h2>Latency per algorithm (page-cluster 0)</h2><div class="grid">"#);
    let lat: Vec<(String, &'static str, Vec<f64>)> = pc0
        .iter()
        .map(|r| {
            (
                row_label(r),
                color(&r.target),
                vec![
                    r.lat_mean_ns.map_or(f64::NAN, |v| v / 1000.0),
                    r.lat_p99_ns.map_or(f64::NAN, |v| v / 1000.0),
                ],
            )
        })
        .collect();
    h.push_str(&hbars(
        "chart-latency",
        "random 4 KiB read latency",
        "µs",
        &lat,
        &[("mean", "#6aa3e0"), ("p99", "#1c3f73")],
    ));
    let dlat: Vec<(String, &'static str, Vec<f64>)> = pc0
        .iter()
        .filter(|r| r.decompress_us_mean.is_some())
        .map(|r| {
            (
                row_label(r),
                color(&r.target),
                vec![
                    r.decompress_us_mean.unwrap_or(f64::NAN),
                    r.decompress_us_p99.unwrap_or(f64::NAN),
                ],
            )
        })
        .collect();
    h.push_str(&hbars(
        "chart-decompress-latency",
        "decompress latency per page (codec)",
        "µs",
        &dlat,
        &[("mean", "#8fd19e"), ("p99", "#2d7a3e")],
    ));
}

/// One bar chart per metric, for the rows that have it.
fn write_per_metric(h: &mut String, pc0: &[&FullRow]) {
    h.push_str("</div><h2>Per metric</h2><div class=\"grid\">");
    type Get = fn(&FullRow) -> Option<f64>;
    let metrics: [(&str, &str, &str, Get); 8] = [
        (
            "chart-eff-ratio",
            "effective ratio (orig / mem_used_total)",
            ":1",
            |r| r.effective_ratio,
        ),
        ("chart-ratio", "ratio (orig / compr_data_size)", ":1", |r| {
            r.ratio
        }),
        ("chart-compress", "compress MB/s (codec)", "MB/s", |r| {
            r.compress_mb_s
        }),
        ("chart-decompress", "decompress MB/s (codec)", "MB/s", |r| {
            r.decompress_mb_s
        }),
        (
            "chart-reclaim",
            "reclaim MB/s (memory freed per second)",
            "MB/s",
            |r| r.reclaim_mb_s,
        ),
        (
            "chart-read",
            "random read MiB/s (page-cluster 0)",
            "MiB/s",
            |r| r.read_mib_s,
        ),
        ("chart-iops", "IOPS (page-cluster 0)", "IOPS", |r| r.iops),
        ("chart-score", "weighted score (page-cluster 0)", "", |r| {
            r.score
        }),
    ];
    for (id, title, unit, get) in metrics {
        let items: Vec<(String, &'static str, Vec<f64>)> = pc0
            .iter()
            .filter_map(|r| get(r).map(|v| (row_label(r), color(&r.target), vec![v])))
            .collect();
        if !items.is_empty() {
            h.push_str(&hbars(id, title, unit, &items, &[(title, ENGINE)]));
        }
    }
    h.push_str("</div>");
}

/// Every row at every page-cluster, the overall best in bold.
fn write_table(h: &mut String, t: &FullTable) {
    h.push_str("<h2>Complete table</h2><table><tr>");
    for c in crate::table::HEAD {
        let _ = write!(h, "<th>{c}</th>");
    }
    h.push_str("</tr>");
    let best_overall = t.best.map(|b| b.overall);
    for (i, r) in t.rows.iter().enumerate() {
        let class = format!(
            "{}{}",
            r.target,
            if Some(i) == best_overall { " best" } else { "" }
        );
        let _ = write!(h, r#"<tr class="{class}">"#);
        for c in crate::table::row_cells(r) {
            let _ = write!(h, "<td>{}</td>", esc(&c));
        }
        h.push_str("</tr>");
    }
}

/// Missing rows, notes and the definitions of the units.
fn write_notes(h: &mut String, t: &FullTable) {
    h.push_str("</table><ul>");
    if let Some(k) = &t.kernel_missing {
        let _ = write!(h, "<li>No kernel rows: {}</li>", esc(k));
    }
    for m in &t.missing {
        let _ = write!(
            h,
            "<li>{} {}: unavailable: {}</li>",
            esc(&m.algo),
            esc(&m.target),
            esc(&m.reason)
        );
    }
    for n in &t.notes {
        let _ = write!(h, "<li>{}</li>", esc(n));
    }
    h.push_str("</ul><p>ratio = orig_data_size / compr_data_size; effective ratio = orig_data_size / mem_used_total (same-filled pages and allocator overhead included); MB/s = 10<sup>6</sup> B/s, MiB/s = 2<sup>20</sup> B/s; reclaim MB/s = compress MB/s × (1 − 1/ratio); latency per random read request of 2<sup>pc</sup> pages.</p></body></html>\n");
}

/// The page.
pub fn render(
    t: &FullTable,
    verdict: Option<&Ranking>,
    rec: Option<&Recommendation>,
    rec_error: Option<&str>,
    title: &str,
) -> String {
    let pc0: Vec<&FullRow> = t.rows.iter().filter(|r| r.page_cluster == 0).collect();
    let mut h = String::new();
    write_head(&mut h, t, title);
    // The deployable configuration first; the per-goal bests (which may be
    // algorithms this kernel lacks) after it.
    write_recommendation(&mut h, rec, rec_error);
    if let Some(r) = verdict {
        let _ = write!(
            h,
            "<h2>The verdict's rounds</h2><p>The pick above comes from these interleaved rounds (the same decision as <code>zmem bench</code> and <code>zmem recommend</code>); the table below informs.</p><pre>{}</pre>",
            esc(&crate::ranking::ranking_text(r))
        );
    }
    write_best_for(&mut h, t);
    write_scatter(&mut h, &pc0);
    write_latency(&mut h, &pc0);
    write_per_metric(&mut h, &pc0);
    write_table(&mut h, t);
    write_notes(&mut h, t);
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pareto_frontier() {
        let p = [(1.0, 3.0), (2.0, 2.0), (1.5, 1.5), (3.0, 1.0), (0.5, 2.5)];
        assert_eq!(pareto(&p), vec![0, 1, 3]);
        assert_eq!(
            pareto(&[(1.0, 1.0), (1.0, 1.0)]),
            vec![0, 1],
            "equal points do not dominate each other"
        );
    }

    #[test]
    fn nice_axis() {
        assert_eq!(nice_max(3.37), 5.0);
        assert_eq!(nice_max(7943.0), 10000.0);
        assert_eq!(nice_max(180.0), 200.0);
        assert_eq!(nice_max(0.0), 1.0);
    }

    #[test]
    fn page_has_every_chart_and_escapes() {
        let c = zmem_corpus::default_corpus();
        let opts = zmem_verdict::FullOptions {
            algorithms: vec!["lz4".into(), "zstd".into()],
            min_time: std::time::Duration::from_millis(5),
            requests: 100,
            page_clusters: vec![0, 1],
            kernel: false,
            ..Default::default()
        };
        let mut t = zmem_verdict::run_full(&c, &opts, &mut |_, _, _| {}).unwrap();
        t.corpus = "<script>".into();
        let html = render(&t, None, None, Some("no RAM"), "zmem bench");
        for id in [
            "chart-pareto",
            "chart-latency",
            "chart-eff-ratio",
            "chart-compress",
            "chart-read",
            "chart-score",
        ] {
            assert!(html.contains(&format!("id=\"{id}\"")), "{id}");
        }
        assert!(!html.contains("<script>") && html.contains("&lt;script&gt;"));
        assert!(
            html.matches("http://").all(|_| false)
                || html.matches("http://").count()
                    == html.matches("http://www.w3.org/2000/svg").count(),
            "only the SVG namespace"
        );
        assert!(!html.contains("https://"), "no external resources");
    }
}
