//! Output formats shared by every command: `--format table|json|csv`.

use clap::ValueEnum;

/// How a command prints its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    /// Aligned columns for people
    #[default]
    Table,
    /// One JSON document (an array of row objects, or an object)
    Json,
    /// Comma-separated values with a header row; opens in a spreadsheet
    Csv,
}

/// Rows of text cells under named columns, printed as an aligned table or CSV.
/// (JSON output serialises the command's own row type instead.)
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(headers: &[&str]) -> Self {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// Aligned columns; numbers (cells that parse as f64 or are `-`) right-aligned.
    pub fn render_table(&self) -> String {
        let n = self.headers.len();
        let mut width: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(n) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        // A column is right-aligned when every cell in it is a number (or `-`).
        let is_num = |c: &str| c == "-" || c.parse::<f64>().is_ok();
        let right: Vec<bool> = (0..n)
            .map(|i| {
                !self.rows.is_empty()
                    && self.rows.iter().all(|r| r.get(i).is_none_or(|c| is_num(c)))
            })
            .collect();
        let mut out = String::new();
        let mut line = |cells: &[String], header: bool| {
            let mut l = String::new();
            for (i, c) in cells.iter().enumerate().take(n) {
                if i > 0 {
                    l.push_str("  ");
                }
                let pad = width[i] - c.chars().count();
                if !header && right[i] {
                    l.push_str(&" ".repeat(pad));
                    l.push_str(c);
                } else {
                    l.push_str(c);
                    if i + 1 < n {
                        l.push_str(&" ".repeat(pad));
                    }
                }
            }
            out.push_str(l.trim_end());
            out.push('\n');
        };
        line(&self.headers, true);
        for r in &self.rows {
            line(r, false);
        }
        out
    }

    /// RFC 4180 CSV with a header row.
    pub fn render_csv(&self) -> String {
        let esc = |c: &str| {
            if c.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", c.replace('"', "\"\""))
            } else {
                c.to_string()
            }
        };
        let mut out = String::new();
        for r in std::iter::once(&self.headers).chain(&self.rows) {
            out.push_str(&r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(","));
            out.push('\n');
        }
        out
    }
}

/// CSV of serialisable rows with exactly their JSON field names and units
/// (docs/fields.md): one column per field, a missing value (`null`) empty.
pub fn csv_of<T: serde::Serialize>(rows: &[T]) -> String {
    let vals: Vec<serde_json::Value> = rows
        .iter()
        .filter_map(|r| serde_json::to_value(r).ok())
        .collect();
    let Some(serde_json::Value::Object(first)) = vals.first() else {
        return String::new();
    };
    let headers: Vec<&str> = first.keys().map(String::as_str).collect();
    let mut t = Table::new(&headers);
    for v in &vals {
        t.push(
            headers
                .iter()
                .map(|h| match &v[*h] {
                    serde_json::Value::Null => String::new(),
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect(),
        );
    }
    t.render_csv()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_of_uses_the_json_names_and_leaves_missing_values_empty() {
        #[derive(serde::Serialize)]
        struct R {
            algo: &'static str,
            lat_mean_ns: Option<f64>,
        }
        let csv = csv_of(&[
            R {
                algo: "lz4",
                lat_mean_ns: Some(1500.0),
            },
            R {
                algo: "a,b",
                lat_mean_ns: None,
            },
        ]);
        assert_eq!(csv, "algo,lat_mean_ns\nlz4,1500.0\n\"a,b\",\n");
    }

    #[test]
    fn table_aligns_and_csv_escapes() {
        let mut t = Table::new(&["name", "ratio", "note"]);
        t.push(vec!["lz4".into(), "2.5".into(), "a, \"b\"".into()]);
        t.push(vec!["deflate".into(), "10.25".into(), "".into()]);
        t.push(vec!["842".into(), "-".into(), "x".into()]);
        let s = t.render_table();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "name     ratio  note");
        assert_eq!(lines[1], "lz4        2.5  a, \"b\"");
        assert_eq!(lines[2], "deflate  10.25");
        assert_eq!(lines[3], "842          -  x");
        let c = t.render_csv();
        assert_eq!(
            c,
            "name,ratio,note\nlz4,2.5,\"a, \"\"b\"\"\"\ndeflate,10.25,\n842,-,x\n"
        );
    }
}
