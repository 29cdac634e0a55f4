//! `zmem policy`'s round over a machine: every kernel zram device and every
//! `zmem serve` device (control sockets in `serve-sockets`), each with its
//! remembered state and the recompression types its configuration names.

use zmem_device::{AttrTarget, DryRun};

use zmem_files::LockError;
use zmem_host::{find_ctl_sockets, Sys, SysfsDevice};

use zmem_policy::{round, Policy, State};

use crate::zram;
use zmem_conf::Config;

/// The devices of a round, each as an attribute target.
type Targets = Vec<Box<dyn AttrTarget>>;

/// Every device there is, in the order a round visits them: kernel
/// devices, then served ones; and the labels of the served devices whose
/// server maintains them itself (`zmem serve --maint`: its control socket
/// answers `maint`), which the round leaves alone.
fn present(sys: &Sys, p: &Policy) -> std::io::Result<(Targets, Vec<String>)> {
    let mut v: Vec<Box<dyn AttrTarget>> = Vec::new();
    let mut maintained = Vec::new();
    for n in zram::list_devices(sys)? {
        v.push(Box::new(SysfsDevice::new(sys, &n)));
    }
    for c in find_ctl_sockets(sys, &p.serve_sockets) {
        if c.has_attr("maint") {
            maintained.push(c.label());
        }
        v.push(Box::new(c));
    }
    Ok((v, maintained))
}

/// One `zmem policy` per state file: two daemons would each count their own
/// writeback against the daily limit (which protects flash from wear), and each
/// save its state over the other's. The lock (`STATE.lock`, naming the holder's
/// pid) is held until this process exits.
fn hold_state_lock(sys: &Sys) -> std::io::Result<()> {
    let state = sys.path(&zmem_policy::state_file(sys));
    let mut name = state.clone().into_os_string();
    name.push(".lock");
    let path = std::path::PathBuf::from(name);
    zmem_files::hold_for_process(&path).map_err(|e| match e {
        LockError::Held { holder, .. } => std::io::Error::new(
            std::io::ErrorKind::WouldBlock,
            format!(
                "another zmem policy (pid {}) is running on {} (lock {}): two would each count \
                 only their own writeback against the daily limit; stop it first",
                holder.map(|p| p.to_string()).unwrap_or_else(|| "?".into()),
                state.display(),
                path.display()
            ),
        ),
        e => std::io::Error::other(format!("cannot take the policy lock: {e}")),
    })
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
    if !dry_run {
        hold_state_lock(sys)?;
    }
    let (all, maintained) = present(sys, p)?;
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
        if maintained.contains(&label) {
            let name = label.strip_prefix("serve:").unwrap_or(&label);
            log(format!(
                "{label}: skipped, its zmem serve maintains it (--maint; `zmem ctl {name} maint` shows its rounds)"
            ));
            continue;
        }
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
