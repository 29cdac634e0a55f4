//! liblzo2 (Debian's liblzo2-2, from liblzo2-dev) loaded at run time with
//! dlopen, so the tests and the benchmark build without it and say why they
//! skip when it is missing. Used as the interop oracle and speed reference.

use std::ffi::{c_int, c_uint, c_void, CStr};

type CompressFn = unsafe extern "C" fn(*const u8, usize, *mut u8, *mut usize, *mut c_void) -> c_int;
type InitFn = unsafe extern "C" fn(
    c_uint,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
) -> c_int;

/// `LZO_VERSION` of the headers these signatures follow (2.10).
const LZO_VERSION: c_uint = 0x20a0;
/// `LZO1X_1_MEM_COMPRESS`: 16384 dictionary pointers.
pub const LZO1X_1_MEM_COMPRESS: usize = 16384 * std::mem::size_of::<*const u8>();
/// `LZO1X_999_MEM_COMPRESS`.
pub const LZO1X_999_MEM_COMPRESS: usize = 14 * 16384 * 2;
/// `LZO_E_OK`.
pub const LZO_E_OK: c_int = 0;

/// The liblzo2 functions the tests use.
pub struct LibLzo {
    lzo1x_1: CompressFn,
    lzo1x_999: CompressFn,
    decompress_safe: CompressFn,
}

const CANDIDATES: [&CStr; 2] = [c"liblzo2.so.2", c"liblzo2.so"];

fn sym<T: Copy>(h: *mut c_void, name: &CStr) -> Result<T, String> {
    // SAFETY: `h` is a live handle from dlopen and `name` is NUL-terminated.
    let p = unsafe { libc::dlsym(h, name.as_ptr()) };
    if p.is_null() {
        return Err(format!("liblzo2 has no symbol {name:?}"));
    }
    assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: T is a function pointer type of the symbol's C signature (from
    // lzo1x.h / lzoconf.h of liblzo2 2.10), the same size as a data pointer.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) })
}

impl LibLzo {
    /// Load liblzo2 and run `lzo_init()`. `Err` says why it is unavailable.
    pub fn load() -> Result<LibLzo, String> {
        let mut h = std::ptr::null_mut();
        for c in CANDIDATES {
            // SAFETY: dlopen with a NUL-terminated name; a null result is handled.
            h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            if !h.is_null() {
                break;
            }
        }
        if h.is_null() {
            return Err("liblzo2 is not installed (apt-get install liblzo2-dev)".into());
        }
        let init: InitFn = sym(h, c"__lzo_init_v2")?;
        let ptr = std::mem::size_of::<*const u8>() as c_int;
        // SAFETY: __lzo_init_v2 only compares the sizes it is given with its own.
        let r = unsafe {
            init(
                LZO_VERSION,
                std::mem::size_of::<i16>() as c_int,
                std::mem::size_of::<c_int>() as c_int,
                std::mem::size_of::<libc::c_long>() as c_int,
                4,
                std::mem::size_of::<usize>() as c_int,
                ptr,
                ptr,
                ptr,
                6 * ptr,
            )
        };
        if r != LZO_E_OK {
            return Err(format!("lzo_init() failed with {r}"));
        }
        Ok(LibLzo {
            lzo1x_1: sym(h, c"lzo1x_1_compress")?,
            lzo1x_999: sym(h, c"lzo1x_999_compress")?,
            decompress_safe: sym(h, c"lzo1x_decompress_safe")?,
        })
    }

    fn call(f: CompressFn, src: &[u8], dst: &mut [u8], wrkmem: &mut [u8]) -> Result<usize, c_int> {
        let mut n = dst.len();
        let wrk = if wrkmem.is_empty() {
            std::ptr::null_mut()
        } else {
            wrkmem.as_mut_ptr() as *mut c_void
        };
        // SAFETY: src and dst are valid for their lengths; liblzo2 writes at
        // most `n` bytes to dst (the safe decompressor checks, and callers of
        // the compressors give dst >= lzo1x_worst_compress); wrkmem is as
        // large as the algorithm's *_MEM_COMPRESS.
        let r = unsafe { f(src.as_ptr(), src.len(), dst.as_mut_ptr(), &mut n, wrk) };
        if r == LZO_E_OK {
            Ok(n)
        } else {
            Err(r)
        }
    }

    /// `lzo1x_1_compress`; dst must hold `src.len() + src.len() / 16 + 67`.
    pub fn compress_1(
        &self,
        src: &[u8],
        dst: &mut [u8],
        wrkmem: &mut [u8],
    ) -> Result<usize, c_int> {
        assert!(
            dst.len() >= src.len() + src.len() / 16 + 67 && wrkmem.len() >= LZO1X_1_MEM_COMPRESS
        );
        Self::call(self.lzo1x_1, src, dst, wrkmem)
    }

    /// `lzo1x_999_compress`; dst must hold `src.len() + src.len() / 16 + 67`.
    pub fn compress_999(
        &self,
        src: &[u8],
        dst: &mut [u8],
        wrkmem: &mut [u8],
    ) -> Result<usize, c_int> {
        assert!(
            dst.len() >= src.len() + src.len() / 16 + 67 && wrkmem.len() >= LZO1X_999_MEM_COMPRESS
        );
        Self::call(self.lzo1x_999, src, dst, wrkmem)
    }

    /// `lzo1x_decompress_safe`: the decoded length, or liblzo2's error code.
    pub fn decompress_safe(&self, src: &[u8], dst: &mut [u8]) -> Result<usize, c_int> {
        Self::call(self.decompress_safe, src, dst, &mut [])
    }
}
