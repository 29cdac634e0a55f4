//! `zmem bench --zswap [CORPUS...]`: the corpus through zswap and through
//! zram + disk swap at the same RAM budget, with a hot/cold access pattern
//! (`zmem_lab::zswap`); as root with zswap, also through the kernel's
//! zswap unless `--no-kernel`.

use zmem_lab::zswap::{self, KernelOptions, Options, Row, COLUMNS};

use crate::output::{Format, Table};

/// `--budget`: a share of the corpus (0 < x ≤ 1, e.g. 0.1) or a size with a suffix (64M).
fn budget(s: &str) -> anyhow::Result<(Option<u64>, f64)> {
    if let Ok(f) = s.parse::<f64>() {
        if f > 0.0 && f <= 1.0 {
            return Ok((None, f));
        }
    }
    let v = zmem_units::parse_size(s).unwrap_or(0);
    if v == 0 {
        anyhow::bail!(
            "--budget {s:?}: give a share of the corpus in (0, 1] (e.g. 0.1) or a size (e.g. 64M)"
        );
    }
    Ok((Some(v), 0.0))
}

pub fn run(args: &super::Args) -> anyhow::Result<()> {
    let (budget_bytes, budget_fraction) = budget(&args.budget)?;
    let algos = if args.algo.is_empty() {
        vec!["lzo".to_string()]
    } else {
        args.algo.clone()
    };
    let base = Options {
        zpool: args.zpool.clone(),
        budget_bytes,
        budget_fraction: if budget_bytes.is_some() {
            1.0
        } else {
            budget_fraction
        },
        hot: args.hot,
        hot_access: args.hot_access,
        accesses: args.accesses,
        worker: zswap::parse_worker(&args.worker)?,
        ..Options::default()
    };
    // Bad options fail before the corpus is built.
    for a in &algos {
        Options {
            algorithm: a.clone(),
            ..base.clone()
        }
        .validate()?;
    }
    let corpora = zmem_corpus::files_or_default(&args.corpus)?;
    let kernel = KernelOptions {
        force: args.force,
        dir: base.dir.clone(),
    };
    let mut rows: Vec<Row> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for c in &corpora {
        for a in &algos {
            let o = Options {
                algorithm: a.clone(),
                ..base.clone()
            };
            if args.no_kernel {
                rows.extend(zswap::run(c, &o)?);
                continue;
            }
            let (r, why) = zswap::run_with_kernel(c, &o, &kernel)?;
            rows.extend(r);
            if let Some(why) = why {
                if !notes.contains(&why) {
                    notes.push(why);
                }
            }
        }
    }
    for n in &notes {
        eprintln!("zmem bench: no kernel rows: {n}");
    }
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&rows)?),
        Format::Csv | Format::Table => {
            let mut t = Table::new(&COLUMNS);
            for r in &rows {
                t.push(r.cells());
            }
            if args.format == Format::Csv {
                print!("{}", crate::output::csv_of(&rows));
                return Ok(());
            }
            print!("{}", t.render_table());
            for c in &corpora {
                println!("corpus {}: {} pages ({})", c.name, c.page_count(), c.source);
            }
            println!(
                "pattern: {:.0}% of the pages get {:.0}% of {} swap-ins (each followed by a swap-out); budget = zswap \
                 pool limit = zram mem_limit in bytes; zram overflows to a disk swap file and never writes back; \
                 hit = served from RAM; latency of the swap-in in microseconds; backing_r/w = page reads/writes of the file; \
                 stored = pages in the pool at the end, B/stored = ram_used / stored; target kernel = the running kernel's zswap \
                 (pool limit = max_pool_percent of RAM, at least 1 %), with the engine at that same limit in the row before it",
                args.hot * 100.0,
                args.hot_access * 100.0,
                args.accesses
            );
        }
    }
    Ok(())
}
