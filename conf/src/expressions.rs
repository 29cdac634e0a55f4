//! Size expressions of `zram-size` and `zram-resident-limit`: arithmetic in MiB over `ram`
//! (MemTotal in MiB), as zram-generator.conf(5) describes them.

/// A size expression in MiB over `ram`, parsed when the file is read.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeExpr {
    pub source: String,
    pub line: usize,
    /// The file it was read from, when it is not the configuration's first file (a drop-in).
    pub file: Option<std::path::PathBuf>,
    expr: Expr,
}

impl SizeExpr {
    pub fn parse(source: &str, line: usize) -> Result<SizeExpr, String> {
        let expr = parse_expr(source)?;
        Ok(SizeExpr {
            source: source.to_string(),
            line,
            file: None,
            expr,
        })
    }
    /// Value in MiB for a machine with `ram_mib` MiB.
    pub fn eval_mib(&self, ram_mib: f64) -> Result<f64, String> {
        eval(&self.expr, ram_mib)
    }
    /// Value in bytes, truncated as zram-generator's `process_size` does (`(mib * 1024.0 *
    /// 1024.0) as u64`); the kernel's disksize_store rounds it up to whole pages
    /// (`PAGE_ALIGN`). NaN, infinite
    /// and negative results are refused, and so is a size this machine
    /// could not hold: one whose slot table alone (16 bytes per 4 KiB page,
    /// zram_drv.c's `struct zram_table_entry`) would need more than its RAM,
    /// i.e. more than 256 × `ram`.
    pub fn eval_bytes(&self, ram_mib: f64) -> Result<u64, String> {
        let mib = self.eval_mib(ram_mib)?;
        if !mib.is_finite() || mib < 0.0 {
            return Err(format!("`{}` gives {mib} MiB", self.source));
        }
        let most = ram_mib.max(1.0) * 256.0;
        if mib > most {
            return Err(format!(
                "`{}` gives {mib:.0} MiB, more than this machine could hold (its slot table \
                 alone would need more than the {ram_mib:.0} MiB of RAM; at most {most:.0} MiB)",
                self.source
            ));
        }
        Ok((mib * 1048576.0) as u64)
    }
}

// ---------------------------------------------------------------------------------------------
// Size expressions: numbers, `ram`, + - * / % ^, parentheses, and the functions
// min max int ceil floor round abs log; constants e and pi (π).

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Num(f64),
    Ram,
    Neg(Box<Expr>),
    Bin(char, Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
    src: &'a str,
    /// Nesting of parentheses, calls, unary signs and powers so far.
    depth: usize,
}

/// The longest expression read, in bytes: zram-generator.conf's examples
/// are a few dozen; the bound keeps evaluation (recursive over the tree)
/// within a small stack whatever the file holds.
pub const MAX_EXPR_LEN: usize = 1024;
/// The deepest nesting of parentheses, calls, signs and powers.
pub const MAX_EXPR_DEPTH: usize = 64;

/// The start of an expression, for error messages.
fn shown(src: &str) -> String {
    let mut end = src.len().min(60);
    while !src.is_char_boundary(end) {
        end -= 1;
    }
    if end < src.len() {
        format!("{}…", &src[..end])
    } else {
        src.to_string()
    }
}

fn parse_expr(src: &str) -> Result<Expr, String> {
    if src.trim().is_empty() {
        return Err("empty expression".into());
    }
    if src.len() > MAX_EXPR_LEN {
        return Err(format!(
            "expression `{}` is {} bytes long; at most {MAX_EXPR_LEN} are read",
            shown(src),
            src.len()
        ));
    }
    let mut p = P {
        s: src.as_bytes(),
        i: 0,
        src,
        depth: 0,
    };
    let e = p.sum()?;
    p.ws();
    if p.i < p.s.len() {
        return Err(format!("unexpected `{}`", &src[p.i..]));
    }
    Ok(e)
}

impl<'a> P<'a> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }
    fn sum(&mut self) -> Result<Expr, String> {
        let mut l = self.product()?;
        while let Some(c @ (b'+' | b'-')) = self.peek() {
            self.i += 1;
            let r = self.product()?;
            l = Expr::Bin(c as char, Box::new(l), Box::new(r));
        }
        Ok(l)
    }
    fn product(&mut self) -> Result<Expr, String> {
        let mut l = self.unary()?;
        while let Some(c @ (b'*' | b'/' | b'%')) = self.peek() {
            self.i += 1;
            let r = self.unary()?;
            l = Expr::Bin(c as char, Box::new(l), Box::new(r));
        }
        Ok(l)
    }
    fn unary(&mut self) -> Result<Expr, String> {
        self.depth += 1;
        if self.depth > MAX_EXPR_DEPTH {
            return Err(format!(
                "expression `{}` nests deeper than {MAX_EXPR_DEPTH} levels",
                shown(self.src)
            ));
        }
        let r = self.unary_inner();
        self.depth -= 1;
        r
    }
    fn unary_inner(&mut self) -> Result<Expr, String> {
        match self.peek() {
            Some(b'-') => {
                self.i += 1;
                Ok(Expr::Neg(Box::new(self.unary()?)))
            }
            Some(b'+') => {
                self.i += 1;
                self.unary()
            }
            _ => self.power(),
        }
    }
    fn power(&mut self) -> Result<Expr, String> {
        let base = self.atom()?;
        if self.peek() == Some(b'^') {
            self.i += 1;
            let exp = self.unary()?;
            return Ok(Expr::Bin('^', Box::new(base), Box::new(exp)));
        }
        Ok(base)
    }
    fn atom(&mut self) -> Result<Expr, String> {
        match self.peek() {
            None => Err("expression ends too early".into()),
            Some(b'(') => {
                self.i += 1;
                let e = self.sum()?;
                if self.peek() != Some(b')') {
                    return Err("missing `)`".into());
                }
                self.i += 1;
                Ok(e)
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => self.number(),
            Some(_) => {
                let name = self.name()?;
                if self.peek() == Some(b'(') {
                    self.i += 1;
                    return self.call(name);
                }
                variable(name)
            }
        }
    }
    /// Index of the first byte at or after `from` that is not `accept`ed.
    fn skip(&self, from: usize, accept: impl Fn(u8) -> bool) -> usize {
        let mut i = from;
        while i < self.s.len() && accept(self.s[i]) {
            i += 1;
        }
        i
    }
    /// A decimal number with an optional exponent: 42, 2.5, 1e3, 2.5E-2.
    fn number(&mut self) -> Result<Expr, String> {
        let st = self.i;
        self.i = self.skip(self.i, |b| b.is_ascii_digit() || b == b'.');
        if self.i < self.s.len() && (self.s[self.i] == b'e' || self.s[self.i] == b'E') {
            let mut j = self.i + 1;
            if j < self.s.len() && (self.s[j] == b'-' || self.s[j] == b'+') {
                j += 1;
            }
            if j < self.s.len() && self.s[j].is_ascii_digit() {
                self.i = self.skip(j, |b| b.is_ascii_digit());
            }
        }
        let t = &self.src[st..self.i];
        t.parse()
            .map(Expr::Num)
            .map_err(|_| format!("bad number `{t}`"))
    }
    /// A function or variable name (letters, digits, `_`, and non-ASCII such as π).
    fn name(&mut self) -> Result<&'a str, String> {
        let src: &'a str = self.src;
        let st = self.i;
        self.i = self.skip(st, |b| b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80);
        let name = &src[st..self.i];
        if name.is_empty() {
            return Err(format!("unexpected `{}`", &src[st..]));
        }
        Ok(name)
    }
    /// The arguments of `name(` up to its `)`, checked against the function's arity.
    fn call(&mut self, name: &str) -> Result<Expr, String> {
        let mut args = Vec::new();
        if self.peek() == Some(b')') {
            self.i += 1;
        } else {
            loop {
                args.push(self.sum()?);
                match self.peek() {
                    Some(b',') => self.i += 1,
                    Some(b')') => {
                        self.i += 1;
                        break;
                    }
                    _ => return Err(format!("missing `)` after arguments of {name}()")),
                }
            }
        }
        let arity_ok = match name {
            "min" | "max" => !args.is_empty(),
            "int" | "ceil" | "floor" | "abs" => args.len() == 1,
            "round" => args.len() == 1 || args.len() == 2,
            "log" => args.len() == 1 || args.len() == 2,
            _ => {
                return Err(format!(
                    "unknown function {name}(); known: min max int ceil floor round abs log"
                ))
            }
        };
        if !arity_ok {
            return Err(format!("wrong number of arguments to {name}()"));
        }
        Ok(Expr::Call(name.to_string(), args))
    }
}

/// `ram` (MemTotal in MiB) and the constants e and pi (π).
fn variable(name: &str) -> Result<Expr, String> {
    match name {
        "ram" => Ok(Expr::Ram),
        "e" => Ok(Expr::Num(std::f64::consts::E)),
        "pi" | "π" => Ok(Expr::Num(std::f64::consts::PI)),
        _ => Err(format!(
            "unknown variable `{name}` (only `ram`, MemTotal in MiB, is known)"
        )),
    }
}

fn eval(e: &Expr, ram: f64) -> Result<f64, String> {
    Ok(match e {
        Expr::Num(n) => *n,
        Expr::Ram => ram,
        Expr::Neg(x) => -eval(x, ram)?,
        Expr::Bin(op, a, b) => {
            let (a, b) = (eval(a, ram)?, eval(b, ram)?);
            match op {
                '+' => a + b,
                '-' => a - b,
                '*' => a * b,
                '/' if b == 0.0 => return Err("division by zero".into()),
                '/' => a / b,
                '%' if b == 0.0 => return Err("modulo by zero".into()),
                '%' => a % b,
                _ => a.powf(b),
            }
        }
        Expr::Call(f, args) => {
            let v: Vec<f64> = args
                .iter()
                .map(|a| eval(a, ram))
                .collect::<Result<_, _>>()?;
            match f.as_str() {
                "min" => v.iter().cloned().fold(f64::INFINITY, f64::min),
                "max" => v.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
                "int" => v[0].trunc(),
                "ceil" => v[0].ceil(),
                "floor" => v[0].floor(),
                "abs" => v[0].abs(),
                "round" => {
                    let m = v.get(1).copied().unwrap_or(1.0);
                    (v[0] / m).round() * m
                }
                _ => {
                    if v.len() == 2 {
                        v[1].log(v[0])
                    } else {
                        v[0].log10()
                    }
                }
            }
        }
    })
}
