//! The engine as a kernel: every measurement builds its engine zram and zswap
//! devices from one [`EngineKernel`], the kernel version they behave as — the
//! one asked for (`--kernel`), else the running kernel's when the run compares
//! with it (kernel rows), else the newest zmem models. Nothing in the lab calls
//! `Zram::builder()` or `Zswap::builder()` (`tests/engine_kernel.rs` checks), so
//! no mode can forget the model.

use zmem_kernel::{KernelModel, KernelVersion};
use zmem_zram::{Zram, ZramBuilder};
use zmem_zswap::{Zswap, ZswapBuilder};

/// The kernel version an engine device behaves as, and why that one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineKernel {
    pub model: KernelModel,
    pub why: String,
}

/// The running kernel's version, from /proc/sys/kernel/osrelease.
pub fn running_kernel() -> Result<KernelVersion, String> {
    let path = "/proc/sys/kernel/osrelease";
    let rel = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    KernelVersion::parse(&rel).ok_or_else(|| format!("cannot parse the kernel release {rel:?}"))
}

impl EngineKernel {
    /// The model for a run: `asked`; else, when the run sits `beside_running`
    /// (it measures the running kernel's own device too), the running kernel's;
    /// else the newest.
    pub fn choose(asked: Option<KernelModel>, beside_running: bool) -> EngineKernel {
        let running = if asked.is_none() && beside_running {
            running_kernel()
        } else {
            Err("not read".into())
        };
        Self::pick(asked, beside_running, running)
    }

    /// [`Self::choose`] with the running kernel's version given (a version zmem
    /// does not model falls back to the newest, and says so).
    pub fn pick(
        asked: Option<KernelModel>,
        beside_running: bool,
        running: Result<KernelVersion, String>,
    ) -> EngineKernel {
        let of = |model, why: &str| EngineKernel {
            model,
            why: why.to_string(),
        };
        if let Some(m) = asked {
            return of(m, "--kernel");
        }
        let newest = KernelModel::newest();
        if !beside_running {
            return of(newest, "the newest modeled; no kernel rows");
        }
        match running.map(KernelModel::new) {
            Ok(Ok(m)) => of(m, "the running kernel's"),
            Ok(Err(e)) => of(newest, &format!("the newest modeled; {e}")),
            Err(e) => of(newest, &format!("the newest modeled; {e}")),
        }
    }

    /// The newest model (a run that compares with no kernel and has no `--kernel`).
    pub fn newest() -> EngineKernel {
        Self::pick(None, false, Err(String::new()))
    }

    /// An engine zram device's builder, behaving as this kernel's zram.
    pub fn zram(&self) -> ZramBuilder {
        Zram::for_kernel(self.model)
    }

    /// An engine zswap's builder, behaving as this kernel's zswap.
    pub fn zswap(&self) -> ZswapBuilder {
        Zswap::for_kernel(self.model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_follows_the_running_kernel_when_it_is_measured() {
        let v = |a, b| KernelVersion::new(a, b);
        let m = |a, b| KernelModel::new(v(a, b)).unwrap();
        let got = EngineKernel::pick(Some(m(6, 12)), true, Ok(v(6, 1)));
        assert_eq!((got.model, got.why.as_str()), (m(6, 12), "--kernel"));
        assert_eq!(EngineKernel::pick(None, true, Ok(v(6, 1))).model, m(6, 1));
        assert_eq!(
            EngineKernel::pick(None, false, Ok(v(6, 1))).model,
            KernelModel::newest()
        );
        let got = EngineKernel::pick(None, true, Ok(v(5, 10)));
        assert_eq!(got.model, KernelModel::newest());
        assert!(
            got.why.contains("does not model kernel 5.10"),
            "{}",
            got.why
        );
        let got = EngineKernel::pick(None, true, Err("cannot read".into()));
        assert!(got.model == KernelModel::newest() && got.why.contains("cannot read"));
    }

    #[test]
    fn devices_behave_as_the_model() {
        let k = EngineKernel::pick(
            KernelModel::parse("6.1").ok(),
            true,
            Ok(KernelVersion::new(7, 3)),
        );
        let z = k.zram().disksize(4096).build().unwrap();
        assert_eq!(z.kernel().to_string(), "6.1");
    }
}
