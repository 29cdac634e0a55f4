//! `zmem codecs`: every algorithm in registry order (the kernel's backend
//! table, then zmem's extensions), whether the kernel ships it, its
//! parameters with defaults and ranges, and its format.

use crate::output::{Format, Table};

/// Arguments of `zmem codecs`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

fn json_str(s: &str) -> serde_json::Value {
    serde_json::Value::String(s.to_string())
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let all = zmem_codec::all();
    match args.format {
        Format::Json => {
            let rows: Vec<serde_json::Value> = all
                .iter()
                .map(|b| {
                    let params: Vec<serde_json::Value> = b
                        .params()
                        .iter()
                        .map(|p| {
                            serde_json::json!({
                                "key": p.key, "default": p.default, "range": p.range, "help": p.help,
                            })
                        })
                        .collect();
                    serde_json::json!({
                        "name": json_str(b.name()),
                        "origin": if b.in_kernel() { "kernel" } else { "zmem" },
                        "params": params,
                        "format": json_str(b.description()),
                    })
                })
                .collect();
            println!("{}", serde_json::to_string_pretty(&rows)?);
        }
        Format::Table | Format::Csv => {
            let mut t = Table::new(&["algorithm", "origin", "params", "format"]);
            for b in all {
                let params = if b.params().is_empty() {
                    "none".to_string()
                } else {
                    b.params()
                        .iter()
                        .map(|p| format!("{}={} ({})", p.key, p.default, p.range))
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                let origin = if b.in_kernel() { "kernel" } else { "zmem" };
                t.push(vec![
                    b.name().into(),
                    origin.into(),
                    params,
                    b.description().into(),
                ]);
            }
            if args.format == Format::Csv {
                print!("{}", t.render_csv());
            } else {
                print!("{}", t.render_table());
                println!(
                    "\nparams: key=default (accepted values), as zram's algorithm_params takes them; \
                     `zmem bench codecs` measures them all"
                );
            }
        }
    }
    Ok(())
}
