//! Compression back-ends of a device (zcomp): which algorithms exist, the
//! `comp_algorithm` list format, and one [`StreamPool`] (per-thread streams)
//! per configured priority.

use zmem_codec::{Backend, CodecError, Params, StreamPool};

use zmem_kernel::{AttrError, Errno};

/// Priorities 0 (primary) to 3 (secondary algorithms for recompression).
pub const MAX_COMPS: usize = 4;
/// The primary priority.
pub const PRIMARY: usize = 0;
/// The kernel's build default (CONFIG_ZRAM_DEF_COMP).
pub const DEFAULT_ALGORITHM: &str = zmem_codec::ZRAM_DEFAULT.name;
/// `CRYPTO_MAX_ALG_NAME`: names this long or longer are -E2BIG.
pub const MAX_ALG_NAME: usize = 128;

/// The algorithms a device offers: the codec registry (kernel order, then
/// zmem's own) plus any extra back-ends an embedder registered.
#[derive(Clone, Default)]
pub struct Backends {
    extra: Vec<&'static dyn Backend>,
}

impl std::fmt::Debug for Backends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Backends {
    pub fn with_extra(extra: Vec<&'static dyn Backend>) -> Self {
        Backends { extra }
    }

    /// Every name, in list order.
    pub fn names(&self) -> Vec<&'static str> {
        let mut v = zmem_codec::names();
        for b in &self.extra {
            if !v.contains(&b.name()) {
                v.push(b.name());
            }
        }
        v
    }

    /// Find by exact name.
    pub fn find(&self, name: &str) -> Option<&'static dyn Backend> {
        self.extra
            .iter()
            .copied()
            .find(|b| b.name() == name)
            .or_else(|| zmem_codec::all().iter().copied().find(|b| b.name() == name))
    }

    /// `zcomp_available_show`: each name followed by a space, the selected
    /// one in brackets, then a newline.
    pub fn available_show(&self, selected: Option<&str>) -> String {
        let mut s = String::new();
        for n in self.names() {
            if Some(n) == selected {
                s.push('[');
                s.push_str(n);
                s.push_str("] ");
            } else {
                s.push_str(n);
                s.push(' ');
            }
        }
        s.push('\n');
        s
    }
}

/// One configured compressor (`zram->comps[prio]`).
pub struct Comp {
    pub name: &'static str,
    pub streams: StreamPool,
}

impl std::fmt::Debug for Comp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Comp({})", self.name)
    }
}

/// Map a codec error at compressor creation to the errno the kernel returns.
pub fn create_error(algo: &str, e: CodecError) -> AttrError {
    let errno = match e {
        CodecError::Library { .. } => Errno::ENOMEM,
        _ => Errno::EINVAL,
    };
    AttrError::new(errno, format!("cannot create the {algo} compressor: {e}"))
}

/// `zcomp_create`: check parameters by creating the streams.
pub fn create(backend: &'static dyn Backend, params: &Params) -> Result<Comp, AttrError> {
    let streams =
        StreamPool::new(backend, params.clone()).map_err(|e| create_error(backend.name(), e))?;
    Ok(Comp {
        name: backend.name(),
        streams,
    })
}
