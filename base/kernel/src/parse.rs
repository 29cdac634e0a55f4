//! The kernel's parsing routines as zram's attribute stores use them:
//! `memparse`, `kstrto*`, `next_arg` (key=value lists) and `sysfs_streq`.
//! Each follows the kernel's acceptance rules, including its quirks, so an
//! attribute write is accepted or refused exactly when the kernel would.

use crate::{AttrError, Errno};

/// `simple_strtoull(s, &end, 0)`: radix from the prefix (`0x` + hex digit →
/// 16, leading `0` → 8, else 10), no sign, no whitespace skipping; overflow
/// wraps silently. Returns the value and the number of bytes consumed
/// (0 when no digit was found).
fn simple_strtoull(s: &[u8]) -> (u64, usize) {
    let mut i = 0;
    let base: u64 = if s.first() == Some(&b'0') {
        if s.len() > 2 && (s[1] | 0x20) == b'x' && s[2].is_ascii_hexdigit() {
            i = 2;
            16
        } else {
            8
        }
    } else {
        10
    };
    let start = i;
    let mut v: u64 = 0;
    while i < s.len() {
        let d = match s[i] {
            c @ b'0'..=b'9' => (c - b'0') as u64,
            c @ b'a'..=b'f' => (c - b'a' + 10) as u64,
            c @ b'A'..=b'F' => (c - b'A' + 10) as u64,
            _ => break,
        };
        if d >= base {
            break;
        }
        v = v.wrapping_mul(base).wrapping_add(d);
        i += 1;
    }
    if i == start {
        // "0x" with a hex digit always has digits; a bare prefix cannot get here
        // because base 8 starts at the '0' itself.
        return (0, 0);
    }
    (v, i)
}

/// `memparse(ptr, &end)`: a C integer followed by an optional K/M/G/T/P/E
/// suffix (any case, powers of 1024). Trailing text after the suffix is
/// ignored. Returns the value and how many bytes were consumed: 0 means the
/// kernel's "nothing parsed" (`buf == end`). Note the kernel quirk kept here:
/// a bare suffix such as `K` consumes one byte and parses as 0.
pub fn memparse(s: &str) -> (u64, usize) {
    let b = s.as_bytes();
    let (mut v, mut n) = simple_strtoull(b);
    let shift = match b.get(n).map(|c| c.to_ascii_uppercase()) {
        Some(b'E') => 60,
        Some(b'P') => 50,
        Some(b'T') => 40,
        Some(b'G') => 30,
        Some(b'M') => 20,
        Some(b'K') => 10,
        _ => 0,
    };
    if shift != 0 {
        v = if shift >= 64 { 0 } else { v << shift };
        n += 1;
    }
    (v, n)
}

/// The error kinds of `kstrto*`: EINVAL for bad syntax, ERANGE for overflow.
fn kerr(errno: Errno, what: &str, s: &str) -> AttrError {
    let shown = s.strip_suffix('\n').unwrap_or(s);
    match errno {
        Errno::ERANGE => AttrError::new(errno, format!("{shown:?} is out of range for {what}")),
        _ => AttrError::new(errno, format!("{shown:?} is not a valid {what}")),
    }
}

/// `kstrtoull(s, base)`: optional leading `+`, digits only (base 0 picks the
/// radix from the prefix), one trailing newline allowed, nothing else.
pub fn kstrtoull(s: &str, base: u32) -> Result<u64, AttrError> {
    let what = "unsigned integer";
    let body = s.strip_suffix('\n').unwrap_or(s);
    let body = body.strip_prefix('+').unwrap_or(body);
    let (base, digits) = match base {
        0 => {
            if (body.starts_with("0x") || body.starts_with("0X"))
                && body[2..]
                    .bytes()
                    .next()
                    .is_some_and(|c| c.is_ascii_hexdigit())
            {
                (16, &body[2..])
            } else if body.starts_with('0') {
                (8, body)
            } else {
                (10, body)
            }
        }
        16 => (
            16,
            body.strip_prefix("0x")
                .or_else(|| body.strip_prefix("0X"))
                .unwrap_or(body),
        ),
        b => (b, body),
    };
    if digits.is_empty() {
        return Err(kerr(Errno::EINVAL, what, s));
    }
    let mut v: u64 = 0;
    let mut overflow = false;
    for c in digits.bytes() {
        let d = match (c as char).to_digit(base) {
            Some(d) => d as u64,
            None => return Err(kerr(Errno::EINVAL, what, s)),
        };
        match v.checked_mul(base as u64).and_then(|x| x.checked_add(d)) {
            Some(x) => v = x,
            None => overflow = true,
        }
    }
    if overflow {
        return Err(kerr(Errno::ERANGE, what, s));
    }
    Ok(v)
}

/// `kstrtoll(s, base)`: like [`kstrtoull`] with an optional leading `-`.
pub fn kstrtoll(s: &str, base: u32) -> Result<i64, AttrError> {
    if let Some(rest) = s.strip_prefix('-') {
        let v = kstrtoull(rest, base)
            .map_err(|e| AttrError::new(e.errno, e.message.replace("unsigned ", "")))?;
        if v > i64::MAX as u64 + 1 {
            return Err(kerr(Errno::ERANGE, "integer", s));
        }
        Ok((v as i64).wrapping_neg())
    } else {
        let v = kstrtoull(s, base)
            .map_err(|e| AttrError::new(e.errno, e.message.replace("unsigned ", "")))?;
        i64::try_from(v).map_err(|_| kerr(Errno::ERANGE, "integer", s))
    }
}

/// `kstrtoint(s, base)`.
pub fn kstrtoint(s: &str, base: u32) -> Result<i32, AttrError> {
    let v = kstrtoll(s, base)?;
    i32::try_from(v).map_err(|_| kerr(Errno::ERANGE, "int", s))
}

/// `kstrtou16(s, base)`.
pub fn kstrtou16(s: &str, base: u32) -> Result<u16, AttrError> {
    let v = kstrtoull(s, base)?;
    u16::try_from(v).map_err(|_| kerr(Errno::ERANGE, "16-bit unsigned integer", s))
}

/// `kstrtoul(s, base)` (64-bit long).
pub fn kstrtoul(s: &str, base: u32) -> Result<u64, AttrError> {
    kstrtoull(s, base)
}

/// `kstrtobool(s)`: the first characters decide, as lib/kstrtox.c does:
/// `y`/`t`/`e`/`1` true, `n`/`f`/`d`/`0` false (either case), `on`/`off`; anything else
/// is refused (None).
pub fn kstrtobool(s: &str) -> Option<bool> {
    let b = s.as_bytes();
    match b.first() {
        // lib/kstrtox.c: y/t/e (yes, true, enable), n/f/d, 1/0, on/off; this
        // machine's 6.18 takes each (zswap's `enabled`: t f e d T F E D).
        Some(b'y' | b'Y' | b't' | b'T' | b'e' | b'E' | b'1') => Some(true),
        Some(b'n' | b'N' | b'f' | b'F' | b'd' | b'D' | b'0') => Some(false),
        Some(b'o' | b'O') => match b.get(1) {
            Some(b'n' | b'N') => Some(true),
            Some(b'f' | b'F') => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// `sysfs_streq(a, b)`: equal, ignoring one trailing newline on either side.
pub fn sysfs_streq(a: &str, b: &str) -> bool {
    a.strip_suffix('\n').unwrap_or(a) == b.strip_suffix('\n').unwrap_or(b)
}

/// The kernel's `isspace` (space, \t \n \v \f \r).
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Split a `key=value key="quoted value" ...` list with the kernel's
/// `next_arg()` rules: leading whitespace skipped, tokens end at unquoted
/// whitespace, a token's first `=` (not at position 0) separates key and
/// value, quotes around the token or the value are removed. A token without
/// `=` yields `(key, None)`.
pub fn next_args(input: &str) -> Vec<(String, Option<String>)> {
    let b = input.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() && is_space(b[i]) {
        i += 1;
    }
    while i < b.len() {
        let mut start = i;
        let mut in_quote = false;
        let mut quoted = false;
        if b[start] == b'"' {
            start += 1;
            in_quote = true;
            quoted = true;
        }
        let mut j = start;
        let mut equals = 0usize;
        while j < b.len() {
            if is_space(b[j]) && !in_quote {
                break;
            }
            if equals == 0 && b[j] == b'=' {
                equals = j - start;
            }
            if b[j] == b'"' {
                in_quote = !in_quote;
            }
            j += 1;
        }
        // Token is b[start..j]; the kernel strips a closing quote in place.
        let tok = &b[start..j];
        let mut end = tok.len();
        let (key, val) = if equals == 0 {
            if quoted && end > 0 && tok[end - 1] == b'"' {
                end -= 1;
            }
            (&tok[..end], None)
        } else {
            let key = &tok[..equals];
            let mut vs = equals + 1;
            if vs < end && tok[vs] == b'"' {
                vs += 1;
                if tok[end - 1] == b'"' && end > vs {
                    end -= 1;
                }
            } else if quoted && tok[end - 1] == b'"' && end > vs {
                end -= 1;
            }
            (key, Some(&tok[vs.min(end)..end]))
        };
        out.push((
            String::from_utf8_lossy(key).into_owned(),
            val.map(|v| String::from_utf8_lossy(v).into_owned()),
        ));
        i = if j < b.len() { j + 1 } else { j };
        while i < b.len() && is_space(b[i]) {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kstrtobool_rules() {
        for t in [
            "1", "y", "Yes", "true", "T", "e", "Enable", "on", "ON\n", "1x",
        ] {
            assert_eq!(kstrtobool(t), Some(true), "{t}");
        }
        for f in ["0", "n", "no", "false", "F", "d", "Disable", "off", "Of"] {
            assert_eq!(kstrtobool(f), Some(false), "{f}");
        }
        for bad in ["", "o", "2", "x", " 1"] {
            assert_eq!(kstrtobool(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn memparse_suffixes_and_radix() {
        assert_eq!(memparse("1"), (1, 1));
        assert_eq!(memparse("4k"), (4096, 2));
        assert_eq!(memparse("1G\n"), (1 << 30, 2));
        assert_eq!(memparse("0x10M"), (16 << 20, 5));
        assert_eq!(memparse("010"), (8, 3));
        assert_eq!(memparse("abc"), (0, 0));
        assert_eq!(memparse(""), (0, 0));
        assert_eq!(
            memparse("K"),
            (0, 1),
            "kernel quirk: a bare suffix is consumed"
        );
        assert_eq!(memparse("2Mjunk"), (2 << 20, 2));
        assert_eq!(memparse("0x"), (0, 1));
        assert_eq!(memparse("09"), (0, 1), "9 is not an octal digit");
    }

    #[test]
    fn kstrto_rules() {
        assert_eq!(kstrtoull("0\n", 10).unwrap(), 0);
        assert_eq!(kstrtoull("+7", 10).unwrap(), 7);
        assert_eq!(kstrtoull("0x1f", 0).unwrap(), 31);
        assert_eq!(kstrtoull("017", 0).unwrap(), 15);
        assert_eq!(kstrtoull("7\n\n", 10).unwrap_err().errno, Errno::EINVAL);
        assert_eq!(kstrtoull(" 7", 10).unwrap_err().errno, Errno::EINVAL);
        assert_eq!(kstrtoull("", 10).unwrap_err().errno, Errno::EINVAL);
        assert_eq!(
            kstrtoull("99999999999999999999", 10).unwrap_err().errno,
            Errno::ERANGE
        );
        assert_eq!(kstrtou16("65536", 10).unwrap_err().errno, Errno::ERANGE);
        assert_eq!(kstrtou16("65535", 10).unwrap(), 65535);
        assert_eq!(kstrtoint("-5", 10).unwrap(), -5);
        assert_eq!(
            kstrtoint("2147483648", 10).unwrap_err().errno,
            Errno::ERANGE
        );
        assert_eq!(kstrtoint("-2147483648", 10).unwrap(), i32::MIN);
        assert_eq!(kstrtoint("1.5", 10).unwrap_err().errno, Errno::EINVAL);
    }

    #[test]
    fn next_arg_rules() {
        let v = next_args("  algo=zstd level=3 dict=\"/a b\"\n");
        assert_eq!(
            v,
            vec![
                ("algo".into(), Some("zstd".into())),
                ("level".into(), Some("3".into())),
                ("dict".into(), Some("/a b".into())),
            ]
        );
        assert_eq!(next_args("level"), vec![("level".into(), None)]);
        assert_eq!(
            next_args("level="),
            vec![("level".into(), Some(String::new()))]
        );
        assert_eq!(
            next_args("=3"),
            vec![("=3".into(), None)],
            "'=' at position 0 is not a separator"
        );
        assert_eq!(
            next_args("\"a=b c\""),
            vec![("a".into(), Some("b c".into()))]
        );
        assert!(next_args("   \n").is_empty());
    }

    #[test]
    fn streq() {
        assert!(sysfs_streq("all\n", "all"));
        assert!(sysfs_streq("all", "all\n"));
        assert!(!sysfs_streq("all\n\n", "all"));
        assert!(!sysfs_streq("al", "all"));
    }
}
