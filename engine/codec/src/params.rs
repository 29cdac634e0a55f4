use std::path::Path;
use std::sync::Arc;

use zmem_kernel::KernelVersion;

use crate::CodecError;

/// Parameters as zram's `algorithm_params` has them.
///
/// `None` means the backend's default (the kernel's default for that algorithm).
/// The `key=value` tokenizer of `algorithm_params` lives in zmem-zram; this type
/// is what it produces, and what every backend checks in `new_stream`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    /// `level=L`: acceleration for lz4, HC level for lz4hc, zstd/deflate level.
    pub level: Option<i32>,
    /// `dict=FILE`: dictionary bytes (lz4, lz4hc, zstd).
    pub dict: Option<Arc<Vec<u8>>>,
    /// `deflate.winbits=W`: deflate window bits (the kernel's default is -11:
    /// raw deflate with a 2 KiB window; a positive value means a zlib wrapper).
    pub deflate_winbits: Option<i32>,
    /// Which kernel's zram to write as, where versions differ in a backend's
    /// defaults or library (e.g. zstd through the crypto API before 6.12).
    /// `None`: the newest kernel zmem models. Not an `algorithm_params` key.
    pub kernel: Option<KernelVersion>,
    /// The kernel's `PAGE_SIZE`, the input of every compression (4096,
    /// 16384 or 65536); `None`: 4096. zstd's parameters follow it
    /// (`zstd_get_params(level, PAGE_SIZE)`); lz4m and wkdm take 4096 only.
    /// Not an `algorithm_params` key.
    pub page_size: Option<usize>,
}

impl Params {
    /// Parameters with only `level` set.
    pub fn with_level(level: i32) -> Self {
        Params {
            level: Some(level),
            ..Params::default()
        }
    }

    /// Set a dictionary from bytes (builder style).
    pub fn dict_bytes(mut self, dict: Vec<u8>) -> Self {
        self.dict = Some(Arc::new(dict));
        self
    }

    /// Read `dict=FILE` as the kernel does (the whole file). An unreadable or
    /// empty file is an error naming the file.
    pub fn read_dict(path: &Path) -> Result<Arc<Vec<u8>>, CodecError> {
        let bytes = std::fs::read(path).map_err(|e| CodecError::InvalidParam {
            algo: "dict",
            reason: format!("cannot read dictionary file {}: {e}", path.display()),
        })?;
        if bytes.is_empty() {
            return Err(CodecError::InvalidParam {
                algo: "dict",
                reason: format!("dictionary file {} is empty", path.display()),
            });
        }
        Ok(Arc::new(bytes))
    }

    /// Set `dict` from a file (builder style); see [`Params::read_dict`].
    pub fn dict_file(mut self, path: &Path) -> Result<Self, CodecError> {
        self.dict = Some(Self::read_dict(path)?);
        Ok(self)
    }

    /// The dictionary bytes, if any.
    pub fn dict_slice(&self) -> Option<&[u8]> {
        self.dict.as_deref().map(|v| v.as_slice())
    }

    /// The page size streams compress ([`Params::page_size`], 4096 if unset).
    pub fn page(&self) -> usize {
        self.page_size.unwrap_or(crate::PAGE_SIZE)
    }

    /// Whether no parameter is set (every backend default).
    pub fn is_default(&self) -> bool {
        self.level.is_none() && self.dict.is_none() && self.deflate_winbits.is_none()
    }

    /// For backends without a dictionary: a set `dict` is an error.
    pub fn reject_dict(&self, algo: &'static str) -> Result<(), CodecError> {
        if self.dict.is_some() {
            return Err(CodecError::invalid_param(
                algo,
                format!("{algo} takes no dictionary (`zmem codecs` lists the algorithms that take dict=)"),
            ));
        }
        Ok(())
    }

    /// For backends other than deflate: a set `deflate.winbits` is an error.
    pub fn reject_winbits(&self, algo: &'static str) -> Result<(), CodecError> {
        if self.deflate_winbits.is_some() {
            return Err(CodecError::invalid_param(
                algo,
                format!("{algo} takes no deflate.winbits (only deflate does)"),
            ));
        }
        Ok(())
    }

    /// For backends without a level: a set `level` is an error.
    pub fn reject_level(&self, algo: &'static str) -> Result<(), CodecError> {
        if self.level.is_some() {
            return Err(CodecError::invalid_param(
                algo,
                format!("{algo} takes no level"),
            ));
        }
        Ok(())
    }

    /// The level, or `default`, checked against `min..=max`; the error names
    /// the valid range.
    pub fn level_in(
        &self,
        algo: &'static str,
        default: i32,
        min: i32,
        max: i32,
    ) -> Result<i32, CodecError> {
        match self.level {
            None => Ok(default),
            Some(l) if (min..=max).contains(&l) => Ok(l),
            Some(l) => Err(CodecError::invalid_param(
                algo,
                format!(
                    "level={l} is out of range; valid: level={min}..={max} (default {default})"
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_range_and_rejections() {
        let p = Params::with_level(13);
        let e = p.level_in("lz4hc", 9, 1, 12).unwrap_err().to_string();
        assert!(e.contains("level=13") && e.contains("1..=12"), "{e}");
        assert_eq!(Params::default().level_in("lz4hc", 9, 1, 12), Ok(9));
        assert_eq!(Params::with_level(12).level_in("lz4hc", 9, 1, 12), Ok(12));
        let d = Params::default().dict_bytes(vec![1, 2, 3]);
        assert!(d
            .reject_dict("deflate")
            .unwrap_err()
            .to_string()
            .contains("no dictionary"));
        assert!(d.reject_winbits("lz4").is_ok());
        assert!(!d.is_default() && Params::default().is_default());
    }

    #[test]
    fn dict_file_errors_name_the_file() {
        let e = Params::default()
            .dict_file(Path::new("/nonexistent/zmem-dict"))
            .unwrap_err();
        assert!(e.to_string().contains("/nonexistent/zmem-dict"), "{e}");
        let dir = std::env::temp_dir().join(format!("zmem-codec-dict-{}", std::process::id()));
        std::fs::write(&dir, b"").unwrap();
        let e = Params::default().dict_file(&dir).unwrap_err().to_string();
        assert!(e.contains("empty"), "{e}");
        std::fs::write(&dir, b"abc").unwrap();
        let p = Params::default().dict_file(&dir).unwrap();
        assert_eq!(p.dict_slice(), Some(&b"abc"[..]));
        std::fs::remove_file(&dir).unwrap();
    }
}
