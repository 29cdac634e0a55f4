//! `zmem policy`'s round over a machine: every kernel zram device and every
//! `zmem serve` device (control sockets in `serve-sockets`), each with its
//! remembered state and the recompression types its configuration names.

use zmem_device::{AttrTarget, DryRun};

use zmem_host::{find_ctl_sockets, Sys, SysfsDevice};

use zmem_policy::{round, Policy, State};

use crate::zram;
use zmem_conf::Config;

/// Every device there is, in the order a round visits them: kernel
/// devices, then served ones.
fn present(sys: &Sys, p: &Policy) -> std::io::Result<Vec<Box<dyn AttrTarget>>> {
    let mut v: Vec<Box<dyn AttrTarget>> = Vec::new();
    for n in zram::list_devices(sys)? {
        v.push(Box::new(SysfsDevice::new(sys, &n)));
    }
    for c in find_ctl_sockets(sys, &p.serve_sockets) {
        v.push(Box::new(c));
    }
    Ok(v)
}

/// A device's `(type=…)` recompression parameter in the configuration chooses its types.
fn recompress_types(cfg: Option<&Config>, label: &str) -> Option<Vec<String>> {
    let d = cfg?.devices.iter().find(|d| d.name == label)?;
    let a = d.algorithms.as_ref()?;
    a.recompress_params
        .iter()
        .find(|(k, _)| k == "type")
        .map(|(_, v)| vec![v.clone()])
}

/// One round at `now` on every device, or on those the policy's `devices`
/// names when it names any. With `dry_run` nothing is written and
/// the state is left as it was. Otherwise the state of a device that is gone
/// is forgotten: a device hot-added later under the same name (the kernel
/// reuses the lowest free number) starts without its backoffs and without
/// its daily writeback count.
pub fn round_all(
    sys: &Sys,
    p: &Policy,
    cfg: Option<&Config>,
    state: &mut State,
    now: u64,
    dry_run: bool,
    log: &mut dyn FnMut(String),
) -> std::io::Result<()> {
    let all = present(sys, p)?;
    if !dry_run {
        state
            .devices
            .retain(|label, _| all.iter().any(|t| t.label() == *label));
    }
    let visit = all
        .into_iter()
        .filter(|t| p.devices.is_empty() || p.devices.contains(&t.label()));
    for t in visit {
        let label = t.label();
        let types = recompress_types(cfg, &label);
        let st = state.devices.entry(label).or_default();
        if dry_run {
            let mut scratch = st.clone();
            round(
                sys,
                p,
                &DryRun(t.as_ref()),
                &mut scratch,
                now,
                types.as_deref(),
                log,
            );
        } else {
            round(sys, p, t.as_ref(), st, now, types.as_deref(), log);
        }
    }
    Ok(())
}
