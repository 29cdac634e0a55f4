//! The INI syntax of zram-generator.conf exactly as zram-generator 1.2.1 reads it (its INI
//! reader is rust-ini 0.18 with default options; this is zmem's own implementation of that
//! behaviour, checked against zram-generator by cli/tests/zram_generator_diff.rs):
//!
//! * whitespace (newlines included) between items is skipped; `#` or `;` starts a comment
//!   only as the first character of a line: an indented comment, or one after a section
//!   header, is an error for zram-generator ("doesn't support inline comment");
//! * a key runs to the next `=` or `:` *across lines*: a line without `=` is glued onto what
//!   follows (comment lines and section headers included) into one key, which is unknown,
//!   so the keys or sections it swallows are dropped ([`Item::Key::lines`] > 1);
//! * a value runs to the end of the line, `#` included (no inline comments); surrounding
//!   `"` or `'` are removed; `\` escapes (`\n`, `\t`, `\x0041`, `\` + newline joins lines)
//!   in keys, values and section names;
//! * a section name runs to the next `]` (across lines too);
//! * a UTF-8 byte-order mark at the start of the file is skipped.

/// One item of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    /// `[name]` (trimmed), on 1-based `line`.
    Section { name: String, line: usize },
    /// `key = value` (both trimmed); `line` is where the key starts, `lines` how many lines
    /// the key spans (more than 1: lines without `=` glued into it).
    Key {
        key: String,
        value: String,
        line: usize,
        lines: usize,
    },
}

/// A syntax error zram-generator stops at: 1-based line and a reason in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub line: usize,
    pub reason: String,
}

struct Scanner<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    ch: Option<char>,
    /// 0-based line and the column of `ch` (1 = first character of a line).
    line: usize,
    col: usize,
}

impl Scanner<'_> {
    fn bump(&mut self) {
        self.ch = self.chars.next();
        match self.ch {
            Some('\n') => {
                self.line += 1;
                self.col = 0;
            }
            Some(_) => self.col += 1,
            None => {}
        }
    }

    fn error<T>(&self, line: usize, reason: impl Into<String>) -> Result<T, SyntaxError> {
        Err(SyntaxError {
            line: line + 1,
            reason: reason.into(),
        })
    }

    fn skip_whitespace(&mut self) {
        while self.ch.is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    /// Spaces and tabs after `=` (not the end of the line).
    fn skip_blanks(&mut self) {
        while self
            .ch
            .is_some_and(|c| c == '\t' || (c != '\n' && c != '\r' && c.is_whitespace()))
        {
            self.bump();
        }
    }

    /// Characters up to (not including) one of `end`, with `\` escapes; `what` names what is
    /// being read for the error at the end of the file.
    fn until(&mut self, end: &[char], eof_ok: bool, what: &str) -> Result<String, SyntaxError> {
        let start = self.line;
        let mut s = String::new();
        loop {
            match self.ch {
                None if eof_ok => return Ok(s),
                None => return self.error(start, format!("{what} runs to the end of the file")),
                Some(c) if end.contains(&c) => return Ok(s),
                Some('\\') => {
                    self.bump();
                    match self.ch {
                        None => {
                            return self
                                .error(start, "a `\\` at the end of the file escapes nothing")
                        }
                        Some(c) => self.escape(c, &mut s, start)?,
                    }
                }
                Some(c) => s.push(c),
            }
            self.bump();
        }
    }

    /// The character after a `\`.
    fn escape(&mut self, c: char, s: &mut String, start: usize) -> Result<(), SyntaxError> {
        match c {
            '0' => s.push('\0'),
            'a' => s.push('\x07'),
            'b' => s.push('\x08'),
            't' => s.push('\t'),
            'r' => s.push('\r'),
            'n' => s.push('\n'),
            '\n' => {}
            'x' => {
                let mut code = String::new();
                for _ in 0..4 {
                    self.bump();
                    if self.ch == Some('\\') {
                        self.bump();
                        if self.ch != Some('\n') {
                            return self.error(start, "`\\x` needs four hexadecimal digits");
                        }
                    }
                    match self.ch {
                        Some(c) => code.push(c),
                        None => return self.error(start, "`\\x` needs four hexadecimal digits"),
                    }
                }
                let c = u32::from_str_radix(&code, 16)
                    .ok()
                    .and_then(char::from_u32)
                    .map_or_else(
                        || self.error(start, format!("`\\x{code}` is no character")),
                        Ok,
                    )?;
                s.push(c);
            }
            c => s.push(c),
        }
        Ok(())
    }

    fn value(&mut self) -> Result<String, SyntaxError> {
        self.bump();
        self.skip_blanks();
        let eol = ['\n', '\r'];
        match self.ch {
            Some(q @ ('"' | '\'')) => {
                self.bump();
                let quoted = self.until(&[q], false, "a quoted value")?;
                self.bump();
                Ok(quoted + &self.until(&eol, true, "a value")?)
            }
            _ => self.until(&eol, true, "a value"),
        }
    }
}

/// The items of a file's text, or the syntax error zram-generator stops at.
pub(crate) fn items(text: &str) -> Result<Vec<Item>, SyntaxError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut s = Scanner {
        chars: text.chars().peekable(),
        ch: None,
        line: 0,
        col: 0,
    };
    s.bump();
    let mut out = Vec::new();
    let mut key: Option<(String, usize, usize)> = None;
    s.skip_whitespace();
    while let Some(c) = s.ch {
        match c {
            '#' | ';' => {
                if s.col > 1 {
                    return s.error(s.line, format!("`{c}` after other text on the line: zram-generator takes comments only at the start of a line (no indented comments, no comments after a value or section header)"));
                }
                while let Some(c) = s.ch {
                    s.bump();
                    if c == '\n' {
                        break;
                    }
                }
            }
            '[' => {
                let line = s.line;
                s.bump();
                let name = s.until(&[']'], false, "a section header without `]`")?;
                out.push(Item::Section {
                    name: name.trim().to_string(),
                    line: line + 1,
                });
                s.bump();
            }
            '=' | ':' => {
                let Some((k, line, lines)) = key.take().filter(|k| !k.0.is_empty()) else {
                    return s.error(s.line, format!("`{c}` with no key before it"));
                };
                let value = s.value()?.trim().to_string();
                out.push(Item::Key {
                    key: k,
                    value,
                    line,
                    lines,
                });
            }
            _ => {
                let line = s.line;
                let k = s.until(&['=', ':'], false, "a line without `=`")?;
                let trimmed = k.trim();
                // Lines the key spans, from its first character to its end.
                let lines = trimmed.matches('\n').count() + 1;
                key = Some((trimmed.to_string(), line + 1, lines));
            }
        }
        s.skip_whitespace();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<(String, String)> {
        items(text)
            .unwrap()
            .into_iter()
            .map(|i| match i {
                Item::Section { name, .. } => (format!("[{name}]"), String::new()),
                Item::Key { key, value, .. } => (key, value),
            })
            .collect()
    }

    #[test]
    fn as_zram_generator_reads_it() {
        let kv = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(
            keys("\u{feff}[zram0]\nzram-size: 5 # not a comment\n"),
            [kv("[zram0]", ""), kv("zram-size", "5 # not a comment")]
        );
        assert_eq!(
            keys("[zram0]\nfoo\n# c\nzram-size = 5\n"),
            [kv("[zram0]", ""), kv("foo\n# c\nzram-size", "5")]
        );
        assert_eq!(
            keys("[ zram1\n]\nx = \"a b\" c\ny=5\\\n0\n"),
            [kv("[zram1]", ""), kv("x", "a b c"), kv("y", "50")]
        );
        assert_eq!(keys("a=\r\nb=1\r\n"), [kv("a", ""), kv("b", "1")]);
    }

    #[test]
    fn errors_name_the_line_in_words() {
        let e = items("[zram0]\nzram-size = 1\n  # indented\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.reason.contains("only at the start of a line"), "{e:?}");
        let e = items("[zram0] # swap\n").unwrap_err();
        assert_eq!(e.line, 1);
        let e = items("[zram0]\nswap\n").unwrap_err();
        assert_eq!(
            (e.line, e.reason.as_str()),
            (2, "a line without `=` runs to the end of the file")
        );
        let e = items("[zram0\n").unwrap_err();
        assert!(e.reason.contains("without `]`"), "{e:?}");
        let e = items("= 5\n").unwrap_err();
        assert!(e.reason.contains("no key"), "{e:?}");
    }
}
