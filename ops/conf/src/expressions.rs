//! Size expressions of `zram-size` and `zram-resident-limit`: arithmetic in MiB over `ram`
//! (MemTotal in MiB), read and evaluated exactly as zram-generator 1.2.1 does (its evaluator
//! is the fasteval 0.2 crate; this is zmem's own implementation of that grammar, checked
//! against zram-generator by cli/tests/zram_generator_diff.rs):
//!
//! * a value is a number (`1e3`, `.5`, a sign in front: `-2`, SI suffixes `500k` = 500·10³,
//!   `2M`, `1G`, `1T`, `5m` = 5·10⁻³, `u`, `µ`, `n`, `p`), `ram`, `(…)` or `[…]`, a unary
//!   `-`, `+` or `!` applied to the next *value* (so `-2^10` is `(-2)^10`), or a function;
//! * binary operators are applied in passes, not by usual precedence: `^` (right to left),
//!   then `%`, `/`, `*` (right to left), `-`, `+` (right to left), the comparisons `< <= > >=
//!   == !=` (1 or 0), `&&`, `||`: `ram * 3 % 4096` is `ram * (3 % 4096)`;
//! * functions: `min(…)`, `max(…)`, `int`, `ceil`, `floor`, `abs`, `sign`, `log(x)` (base
//!   10), `log(base, x)`, `round(x)`, `round(modulus, x)` (the modulus first), `e()`, `pi()`,
//!   `sin` … `atanh`; arguments separated by `,` or `;`; any other name (and `e`, `pi`
//!   without `()`) is unknown, an error only when the section is evaluated;
//! * at most 4096 bytes, 32 levels of nesting and 64 sub-expressions and operands.

/// Bytes of the kernel's slot table per page of disksize, at least: `struct
/// zram_table_entry` (drivers/block/zram/zram_drv.h) is two words, 16 bytes on 64-bit —
/// the handle, and the flags (sharing their word with the entry's lock and access time in the
/// newest layouts). Measured on 6.18: a 64 GiB device raised VmallocUsed by 262,696 kB
/// (16 Mi pages × 16 bytes = 262,144 kB, and the rest). disksize_store vmallocs the table
/// whole, before one page is stored.
pub const SLOT_TABLE_ENTRY_BYTES: u64 = 16;

/// Bytes per page where the kernel keeps each slot's access time in a `ktime_t` of its own
/// (CONFIG_ZRAM_MEMORY_TRACKING, later CONFIG_ZRAM_TRACK_ENTRY_ACTIME): measured with
/// scripts/vm, a 16 GiB device raised VmallocUsed by 98,496 kB in Debian's 6.1 and 98,524 kB
/// in its 6.12 (4 Mi pages × 24 bytes = 98,304 kB), 65,696 kB in its 7.3 (16 bytes). The share
/// below is reckoned with it, so it holds on such kernels too.
pub const SLOT_TABLE_ENTRY_BYTES_TRACKED: u64 = 24;

const PAGE_SIZE: u64 = 4096;

/// Without `--force`, the slot tables of the devices `zmem apply` sets up take at most
/// 1/`SLOT_TABLE_SHARE` of RAM (1/16, 6.25 %: at 24 bytes per page a device of 10.7 ×
/// `ram`, a compression ratio no real workload reaches).
pub const SLOT_TABLE_SHARE: u64 = 16;

/// The kernel's slot table for `disksize` bytes, where it tracks access times (the most).
pub fn slot_table_bytes(disksize: u64) -> u64 {
    disksize
        .div_ceil(PAGE_SIZE)
        .saturating_mul(SLOT_TABLE_ENTRY_BYTES_TRACKED)
}

/// Why devices of `disksize` bytes in total (`what` names them) would give the kernel's
/// slot tables more than 1/[`SLOT_TABLE_SHARE`] of `mem_total` bytes of RAM, with the
/// numbers; `None` when they stay within it.
pub fn slot_table_refusal(what: &str, disksize: u64, mem_total: u64) -> Option<String> {
    let table = slot_table_bytes(disksize);
    let most = mem_total / SLOT_TABLE_SHARE;
    (table > most).then(|| {
        format!(
            "{what}: disksize {} MiB needs a slot table of up to {} MiB in the kernel ({} bytes \
             per 4 KiB page where it tracks access times, as Debian's 6.1 and 6.12 do, {} otherwise; \
             allocated whole when disksize is set, before a page is stored), more \
             than 1/{SLOT_TABLE_SHARE} of this machine's {} MiB of RAM ({} MiB, a device of \
             {} MiB at most); choose a smaller zram-size, or --force to set it up anyway",
            disksize >> 20,
            table >> 20,
            SLOT_TABLE_ENTRY_BYTES_TRACKED,
            SLOT_TABLE_ENTRY_BYTES,
            mem_total >> 20,
            most >> 20,
            (most / SLOT_TABLE_ENTRY_BYTES_TRACKED * PAGE_SIZE) >> 20,
        )
    })
}

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
    /// could not hold: one whose slot table alone ([`SLOT_TABLE_ENTRY_BYTES`]
    /// per 4 KiB page) would need all of its RAM, i.e. 256 × `ram` or more. A
    /// smaller share is [`slot_table_refusal`]'s business (apply's `--force`).
    pub fn eval_bytes(&self, ram_mib: f64) -> Result<u64, String> {
        let mib = self.eval_mib(ram_mib)?;
        if mib.is_nan() || mib < 0.0 {
            return Err(format!("`{}` gives {mib} MiB", self.source));
        }
        let most = ram_mib.max(1.0) * (PAGE_SIZE / SLOT_TABLE_ENTRY_BYTES) as f64;
        if mib >= most {
            return Err(format!(
                "`{}` gives {mib:.0} MiB, more than this machine could hold (its slot table \
                 alone would need more than the {ram_mib:.0} MiB of RAM; at most {most:.0} MiB); \
                 at boot zram-generator writes disksize {} and the kernel refuses it, so the \
                 device is not set up",
                self.source,
                (mib * 1048576.0) as u64
            ));
        }
        Ok((mib * 1048576.0) as u64)
    }
}

// ---------------------------------------------------------------------------------------------
// fasteval's grammar: Expr = Value (Op Value)*.

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Or,
    And,
    Ne,
    Eq,
    Ge,
    Le,
    Gt,
    Lt,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Exp,
}

#[derive(Debug, Clone, PartialEq)]
struct Expr {
    first: Value,
    pairs: Vec<(Op, Value)>,
}

#[derive(Debug, Clone, PartialEq)]
enum Value {
    Num(f64),
    Var(String),
    Neg(Box<Value>),
    Pos(Box<Value>),
    Not(Box<Value>),
    Group(Box<Expr>),
    /// A known function with its arguments (arity checked when read).
    Func(&'static str, Vec<Expr>),
    /// An unknown function: an error when evaluated (fasteval looks it up then).
    Unknown(String),
}

/// fasteval's limits (Parser::new and Slab::new).
pub const MAX_EXPR_LEN: usize = 4096;
pub const MAX_EXPR_DEPTH: usize = 32;
const MAX_PARTS: usize = 64;

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

struct P<'a> {
    s: &'a [u8],
    i: usize,
    src: &'a str,
    /// Sub-expressions and unary operands so far (fasteval's slab holds 64 of each).
    exprs: usize,
    vals: usize,
}

fn parse_expr(src: &str) -> Result<Expr, String> {
    if src.len() > MAX_EXPR_LEN {
        return Err(format!(
            "expression `{}` is {} bytes long; zram-generator reads at most {MAX_EXPR_LEN}",
            shown(src),
            src.len()
        ));
    }
    let mut p = P {
        s: src.as_bytes(),
        i: 0,
        src,
        exprs: 0,
        vals: 0,
    };
    p.expression(0, true)
}

/// The functions fasteval knows and how many arguments each takes.
const FUNCS: [(&str, usize, usize); 21] = [
    ("int", 1, 1),
    ("ceil", 1, 1),
    ("floor", 1, 1),
    ("abs", 1, 1),
    ("sign", 1, 1),
    ("log", 1, 2),
    ("round", 1, 2),
    ("min", 1, usize::MAX),
    ("max", 1, usize::MAX),
    ("e", 0, 0),
    ("pi", 0, 0),
    ("sin", 1, 1),
    ("cos", 1, 1),
    ("tan", 1, 1),
    ("asin", 1, 1),
    ("acos", 1, 1),
    ("atan", 1, 1),
    ("sinh", 1, 1),
    ("cosh", 1, 1),
    ("tanh", 1, 1),
    ("asinh", 1, 1),
];
const FUNCS_MORE: [&str; 2] = ["acosh", "atanh"];

impl P<'_> {
    fn peek_at(&self, k: usize) -> Option<u8> {
        self.s.get(self.i + k).copied()
    }
    fn spaces(&mut self) {
        while matches!(self.peek_at(0), Some(b' ' | b'\n' | b'\t' | b'\r')) {
            self.i += 1;
        }
    }
    fn rest(&self) -> &str {
        self.src.get(self.i..).unwrap_or("")
    }
    fn too_deep(&self, depth: usize) -> Result<(), String> {
        if depth > MAX_EXPR_DEPTH {
            return Err(format!(
                "expression `{}` nests deeper than zram-generator's {MAX_EXPR_DEPTH} levels",
                shown(self.src)
            ));
        }
        Ok(())
    }
    fn count(&mut self, expr: bool) -> Result<(), String> {
        let n = if expr {
            &mut self.exprs
        } else {
            &mut self.vals
        };
        *n += 1;
        if *n > MAX_PARTS {
            return Err(format!(
                "expression `{}` has more than {MAX_PARTS} parenthesised parts, arguments or signs; zram-generator refuses it",
                shown(self.src)
            ));
        }
        Ok(())
    }

    fn expression(&mut self, depth: usize, whole: bool) -> Result<Expr, String> {
        self.too_deep(depth)?;
        let first = self.value(depth)?;
        let mut pairs = Vec::new();
        while let Some(op) = self.binary_op() {
            pairs.push((op, self.value(depth)?));
        }
        self.spaces();
        if whole && self.i < self.s.len() {
            return Err(format!(
                "`{}` cannot follow what comes before it",
                self.rest()
            ));
        }
        self.count(true)?;
        Ok(Expr { first, pairs })
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        self.too_deep(depth)?;
        if let Some(n) = self.constant()? {
            return Ok(Value::Num(n));
        }
        if let Some(v) = self.unary(depth)? {
            return Ok(v);
        }
        if let Some(v) = self.callable(depth)? {
            return Ok(v);
        }
        if self.i >= self.s.len() {
            return Err("the expression ends where a value is expected".into());
        }
        Err(format!(
            "`{}` is not a value (a number, `ram`, `(` or a function)",
            self.rest()
        ))
    }

    /// A number: digits and `.`, a sign only first (or after `e`), an exponent, an SI suffix.
    fn constant(&mut self) -> Result<Option<f64>, String> {
        self.spaces();
        let (mut len, mut sign_ok, mut suffix_ok, mut saw) = (0, true, true, false);
        while let Some(b) = self.peek_at(len) {
            if b.is_ascii_digit() || b == b'.' {
                saw = true;
                sign_ok = false;
            } else if sign_ok && (b == b'-' || b == b'+') {
                sign_ok = false;
            } else if saw && (b == b'e' || b == b'E') {
                suffix_ok = false;
                sign_ok = true;
            } else {
                break;
            }
            len += 1;
        }
        if !saw {
            return Ok(None);
        }
        let mut tok = self.src[self.i..self.i + len].to_string();
        if suffix_ok {
            let (exp, n) = match self.peek_at(len) {
                Some(b'k' | b'K') => (3, 1),
                Some(b'M') => (6, 1),
                Some(b'G') => (9, 1),
                Some(b'T') => (12, 1),
                Some(b'm') => (-3, 1),
                Some(b'u' | b'\xb5') => (-6, 1),
                Some(b'\xc2') if self.peek_at(len + 1) == Some(b'\xb5') => (-6, 2),
                Some(b'n') => (-9, 1),
                Some(b'p') => (-12, 1),
                _ => (0, 0),
            };
            if exp != 0 {
                tok = format!("{tok}e{exp}");
                len += n;
            }
        }
        let v = tok
            .parse::<f64>()
            .map_err(|_| format!("`{tok}` is not a number"))?;
        self.i += len;
        Ok(Some(v))
    }

    fn unary(&mut self, depth: usize) -> Result<Option<Value>, String> {
        self.spaces();
        let b = match self.peek_at(0) {
            Some(b @ (b'+' | b'-' | b'!' | b'(' | b'[')) => b,
            _ => return Ok(None),
        };
        self.i += 1;
        if b == b'(' || b == b'[' {
            let close = if b == b'(' { b')' } else { b']' };
            let e = self.expression(depth + 1, false)?;
            self.spaces();
            return match self.peek_at(0) {
                Some(c) if c == close => {
                    self.i += 1;
                    Ok(Some(Value::Group(Box::new(e))))
                }
                None => Err(format!("`{}` is missing", close as char)),
                Some(_) => Err(format!(
                    "`{}` where `{}` should close the group",
                    self.rest(),
                    close as char
                )),
            };
        }
        let v = Box::new(self.value(depth + 1)?);
        self.count(false)?;
        Ok(Some(match b {
            b'-' => Value::Neg(v),
            b'+' => Value::Pos(v),
            _ => Value::Not(v),
        }))
    }

    fn binary_op(&mut self) -> Option<Op> {
        self.spaces();
        let (op, n) = match (self.peek_at(0)?, self.peek_at(1)) {
            (b'+', _) => (Op::Add, 1),
            (b'-', _) => (Op::Sub, 1),
            (b'*', _) => (Op::Mul, 1),
            (b'/', _) => (Op::Div, 1),
            (b'%', _) => (Op::Mod, 1),
            (b'^', _) => (Op::Exp, 1),
            (b'<', Some(b'=')) => (Op::Le, 2),
            (b'<', _) => (Op::Lt, 1),
            (b'>', Some(b'=')) => (Op::Ge, 2),
            (b'>', _) => (Op::Gt, 1),
            (b'=', Some(b'=')) => (Op::Eq, 2),
            (b'!', Some(b'=')) => (Op::Ne, 2),
            (b'|', Some(b'|')) => (Op::Or, 2),
            (b'&', Some(b'&')) => (Op::And, 2),
            _ => return None,
        };
        self.i += n;
        Some(op)
    }

    /// A variable or a function call.
    fn callable(&mut self, depth: usize) -> Result<Option<Value>, String> {
        self.spaces();
        let st = self.i;
        while self.peek_at(0).is_some_and(|b| {
            b.is_ascii_alphabetic() || b == b'_' || (self.i > st && b.is_ascii_digit())
        }) {
            self.i += 1;
        }
        if self.i == st {
            return Ok(None);
        }
        let name = self.src[st..self.i].to_string();
        self.spaces();
        let close = match self.peek_at(0) {
            Some(b'(') => b')',
            Some(b'[') => b']',
            _ => return Ok(Some(Value::Var(name))),
        };
        self.i += 1;
        let args = self.arguments(&name, close, depth)?;
        function(name, args).map(Some)
    }

    fn arguments(&mut self, name: &str, close: u8, depth: usize) -> Result<Vec<Expr>, String> {
        let mut args = Vec::new();
        loop {
            self.spaces();
            match self.peek_at(0) {
                Some(c) if c == close => {
                    self.i += 1;
                    return Ok(args);
                }
                None => return Err(format!("{name}( has no closing `{}`", close as char)),
                Some(_) => {}
            }
            if !args.is_empty() {
                match self.peek_at(0) {
                    Some(b',' | b';') => self.i += 1,
                    _ => {
                        return Err(format!(
                            "`{}` in the arguments of {name}(): expected `,` or `{}`",
                            self.rest(),
                            close as char
                        ))
                    }
                }
            }
            args.push(self.expression(depth + 1, false)?);
        }
    }
}

/// A call of `name` with `args`: a known function with the right number of arguments, or
/// an unknown one (an error when evaluated, as in zram-generator).
fn function(name: String, args: Vec<Expr>) -> Result<Value, String> {
    let known = FUNCS
        .iter()
        .map(|f| (f.0, f.1, f.2))
        .chain(FUNCS_MORE.iter().map(|n| (*n, 1, 1)))
        .find(|f| f.0 == name);
    match known {
        Some((n, lo, hi)) if (lo..=hi).contains(&args.len()) => Ok(Value::Func(n, args)),
        Some((n, lo, hi)) => Err(match (lo, hi) {
            (0, 0) => format!("{n}() takes no arguments"),
            (1, 1) => format!("{n}() takes one argument"),
            (1, 2) => format!("{n}() takes one or two arguments"),
            _ => format!("{n}() takes one or more arguments"),
        }),
        None if args.is_empty() && name == "ram" => Ok(Value::Var(name)),
        None => Ok(Value::Unknown(name)),
    }
}

/// fasteval's float equality.
fn feq(a: f64, b: f64) -> bool {
    (a - b).abs() <= 8.0 * f64::EPSILON
}

fn apply(op: Op, a: f64, b: f64) -> f64 {
    let bool = |x: bool| if x { 1.0 } else { 0.0 };
    match op {
        Op::Add => a + b,
        Op::Sub => a - b,
        Op::Mul => a * b,
        Op::Div => a / b,
        Op::Mod => a % b,
        Op::Exp => a.powf(b),
        Op::Lt => bool(a < b),
        Op::Le => bool(a <= b),
        Op::Gt => bool(a > b),
        Op::Ge => bool(a >= b),
        Op::Eq => bool(feq(a, b)),
        Op::Ne => bool(!feq(a, b)),
        Op::Or => {
            if !feq(a, 0.0) {
                a
            } else {
                b
            }
        }
        Op::And => {
            if feq(a, 0.0) {
                a
            } else {
                b
            }
        }
    }
}

/// The passes over a chain of operators: which operators, and whether right to left.
const PASSES: [(&[Op], bool); 9] = [
    (&[Op::Exp], true),
    (&[Op::Mod], false),
    (&[Op::Div], false),
    (&[Op::Mul], true),
    (&[Op::Sub], false),
    (&[Op::Add], true),
    (&[Op::Lt, Op::Gt, Op::Le, Op::Ge, Op::Eq, Op::Ne], false),
    (&[Op::And], false),
    (&[Op::Or], false),
];

fn eval(e: &Expr, ram: f64) -> Result<f64, String> {
    let mut vals = vec![value(&e.first, ram)?];
    let mut ops = Vec::new();
    for (op, v) in &e.pairs {
        ops.push(*op);
        vals.push(value(v, ram)?);
    }
    for (set, right_to_left) in PASSES {
        if right_to_left {
            for i in (0..ops.len()).rev() {
                if set.contains(&ops[i]) {
                    vals[i] = apply(ops[i], vals[i], vals[i + 1]);
                    vals.remove(i + 1);
                    ops.remove(i);
                }
            }
        } else {
            let mut i = 0;
            while i < ops.len() {
                if set.contains(&ops[i]) {
                    vals[i] = apply(ops[i], vals[i], vals[i + 1]);
                    vals.remove(i + 1);
                    ops.remove(i);
                } else {
                    i += 1;
                }
            }
        }
    }
    Ok(vals[0])
}

fn value(v: &Value, ram: f64) -> Result<f64, String> {
    Ok(match v {
        Value::Num(n) => *n,
        Value::Var(name) if name == "ram" => ram,
        Value::Var(name) => {
            return Err(format!(
                "unknown variable `{name}`: zram-generator knows `ram` (MemTotal in MiB); constants are written e() and pi()"
            ))
        }
        Value::Unknown(name) => {
            return Err(format!(
                "unknown function {name}(); zram-generator knows min max int ceil floor round abs sign log e pi and the trigonometric functions"
            ))
        }
        Value::Neg(x) => -value(x, ram)?,
        Value::Pos(x) => value(x, ram)?,
        Value::Not(x) => {
            if feq(value(x, ram)?, 0.0) {
                1.0
            } else {
                0.0
            }
        }
        Value::Group(e) => eval(e, ram)?,
        Value::Func(f, args) => {
            let a: Vec<f64> = args.iter().map(|x| eval(x, ram)).collect::<Result<_, _>>()?;
            call(f, &a)
        }
    })
}

fn call(f: &str, a: &[f64]) -> f64 {
    let x = a.first().copied().unwrap_or(0.0);
    match f {
        "int" => x.trunc(),
        "ceil" => x.ceil(),
        "floor" => x.floor(),
        "abs" => x.abs(),
        "sign" => x.signum(),
        "log" => {
            let (base, n) = if a.len() == 2 {
                (a[0], a[1])
            } else {
                (10.0, x)
            };
            if feq(base, 2.0) {
                n.log2()
            } else if feq(base, 10.0) {
                n.log10()
            } else {
                n.log(base)
            }
        }
        "round" => {
            let (m, n) = if a.len() == 2 { (a[0], a[1]) } else { (1.0, x) };
            (n / m).round() * m
        }
        "min" | "max" => {
            let mut r = x;
            let mut nan = r.is_nan();
            for v in &a[1..] {
                r = if f == "min" { r.min(*v) } else { r.max(*v) };
                nan |= r.is_nan();
            }
            if nan {
                f64::NAN
            } else {
                r
            }
        }
        "e" => std::f64::consts::E,
        "pi" => std::f64::consts::PI,
        "sin" => x.sin(),
        "cos" => x.cos(),
        "tan" => x.tan(),
        "asin" => x.asin(),
        "acos" => x.acos(),
        "atan" => x.atan(),
        "sinh" => x.sinh(),
        "cosh" => x.cosh(),
        "tanh" => x.tanh(),
        "asinh" => x.asinh(),
        "acosh" => x.acosh(),
        _ => x.atanh(),
    }
}
