//! apply / status / revert against the running kernel, on a device this test hot-adds itself
//! (HotDevice). Nothing else is touched: the config names only that device, zswap's
//! max_pool_percent is changed and must come back exactly, and the undo list lives in a private
//! state directory.

use std::fs;

use zmem_admin as zram;
use zmem_admin::apply::{self, ApplyError, Options};
use zmem_admin::status;
use zmem_conf as config;
use zmem_files::testutil::ScratchDir;
use zmem_host::HotDevice;
use zmem_host::Sys;

fn zswap_params() -> Vec<(String, String)> {
    let mut v = Vec::new();
    for e in fs::read_dir("/sys/module/zswap/parameters")
        .into_iter()
        .flatten()
    {
        let e = e.unwrap();
        v.push((
            e.file_name().to_string_lossy().into_owned(),
            fs::read_to_string(e.path()).unwrap_or_default(),
        ));
    }
    v.sort();
    v
}

#[test]
fn apply_check_revert_on_a_hot_added_device() {
    if let Err(why) = HotDevice::available() {
        zmem_files::testutil::skip(&format!(
            "SKIP apply_check_revert_on_a_hot_added_device: {why}"
        ));
        return;
    }
    if !std::path::Path::new("/sys/module/zswap/parameters/max_pool_percent").exists() {
        zmem_files::testutil::skip(
            "SKIP apply_check_revert_on_a_hot_added_device: no zswap max_pool_percent",
        );
        return;
    }
    for tool in ["mkswap", "swapon", "swapoff"] {
        if !["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
            .iter()
            .any(|d| std::path::Path::new(d).join(tool).exists())
        {
            zmem_files::testutil::skip(&format!(
                "SKIP apply_check_revert_on_a_hot_added_device: {tool} not installed"
            ));
            return;
        }
    }
    let dev = HotDevice::create().expect("hot_add");
    let name = format!("zram{}", dev.id());
    let scratch = ScratchDir::new("ops-real");
    let state = scratch.join("state");
    let sys = Sys::real().with_state_dir(state.to_str().unwrap());
    let zswap_before = zswap_params();
    let pool: u32 = fs::read_to_string("/sys/module/zswap/parameters/max_pool_percent")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let new_pool = if pool == 20 { 21 } else { 20 };
    let algo = dev
        .algorithms()
        .unwrap()
        .into_iter()
        .find(|a| a == "lz4")
        .unwrap_or_else(|| "lzo".into());
    // Swap priority 0: below every swap device other tests set up, used only when they are full.
    let text = format!(
        "[{name}]\nzram-size = 64\ncompression-algorithm = {algo}\nswap-priority = 0\n\n[zswap]\nmax_pool_percent = {new_pool}\n"
    );
    let cfg = config::parse(&text, std::path::Path::new("real.conf")).unwrap();
    let plan = apply::plan(&sys, &cfg, Options::default()).unwrap();
    let mut log = Vec::new();
    let result = apply::execute(&sys, &plan, &mut |l| log.push(l.to_string()));
    // Whatever happens below, revert before asserting.
    let check = || -> Result<(), String> {
        result.clone().map_err(|e| e.to_string())?;
        let d = zram::read_device(&sys, &name).map_err(|e| e.to_string())?;
        if d.algorithm.as_deref() != Some(algo.as_str()) || d.disksize != 64 << 20 {
            return Err(format!(
                "device not configured: {:?} {}",
                d.algorithm, d.disksize
            ));
        }
        let swap = d.swap.as_ref().ok_or("device not swapped on")?;
        if swap.priority != 0 {
            return Err(format!("swap priority {}", swap.priority));
        }
        let p = fs::read_to_string("/sys/module/zswap/parameters/max_pool_percent").unwrap();
        if p.trim() != new_pool.to_string() {
            return Err(format!("max_pool_percent {p}"));
        }
        // Idempotent.
        let again = apply::plan(&sys, &cfg, Options::default()).map_err(|e| e.to_string())?;
        if !again.steps.is_empty() {
            return Err(format!("second apply would change {:?}", again.steps));
        }
        // In use: a different config is refused without --force, and nothing changes.
        let other = config::parse(
            &text.replace("zram-size = 64", "zram-size = 32"),
            std::path::Path::new("real.conf"),
        )
        .unwrap();
        match apply::plan(&sys, &other, Options::default()) {
            Err(ApplyError::InUse(_)) => {}
            x => return Err(format!("expected in-use refusal, got {x:?}")),
        }
        // Status shows it with units written out.
        let st = status::collect(&sys, false).map_err(|e| e.to_string())?;
        let text = status::render_text(&st);
        if !text.contains(&format!("{name}: swap, priority 0"))
            || !text.contains("64.0 MiB of uncompressed data")
        {
            return Err(format!("status text:\n{text}"));
        }
        Ok(())
    };
    let checked = check();
    let reverted = apply::revert(&sys, &mut |l| log.push(format!("revert: {l}")));
    checked.unwrap_or_else(|e| panic!("{e}\nlog:\n{}", log.join("\n")));
    reverted.unwrap_or_else(|e| panic!("revert: {e}\nlog:\n{}", log.join("\n")));
    assert_eq!(
        dev.read_attr("initstate").unwrap(),
        "0",
        "device reset by revert"
    );
    assert!(
        !fs::read_to_string("/proc/swaps")
            .unwrap()
            .contains(&format!("/dev/{name} ")),
        "swap still on"
    );
    assert_eq!(
        zswap_params(),
        zswap_before,
        "zswap parameters not as found"
    );
}

#[test]
fn policy_round_on_a_hot_added_device_uses_only_what_the_kernel_has() {
    use zmem_device::AttrTarget;
    use zmem_host::SysfsDevice;
    use zmem_policy::{self as policy, DeviceState, Policy};
    if let Err(why) = HotDevice::available() {
        zmem_files::testutil::skip(&format!(
            "SKIP policy_round_on_a_hot_added_device_uses_only_what_the_kernel_has: {why}"
        ));
        return;
    }
    let dev = HotDevice::with_config("lzo", 8 << 20).expect("device");
    // Some compressible data.
    let page: Vec<u8> = (0..4096u32)
        .map(|i| b"zram policy test "[(i % 17) as usize])
        .collect();
    let data: Vec<u8> = page.iter().cycle().take(4 << 20).copied().collect();
    {
        // Through the page cache: sync so the pages reach zram before mm_stat is read.
        use std::io::Write;
        let mut f = fs::OpenOptions::new()
            .write(true)
            .open(dev.dev_path())
            .unwrap();
        f.write_all(&data).unwrap();
        f.sync_all().unwrap();
    }
    let sys = Sys::real();
    let t = SysfsDevice::new(&sys, &format!("zram{}", dev.id()));
    let has_recompress = t.has_attr("recompress");
    let has_writeback = t.has_attr("writeback");
    let mut st = DeviceState::default();
    let mut log = Vec::new();
    policy::round(
        &sys,
        &Policy::default(),
        &t,
        &mut st,
        1_700_000_000,
        None,
        &mut |l| log.push(l),
    );
    let text = log.join("\n");
    assert!(!text.contains("failed"), "{text}");
    if !has_recompress {
        assert!(
            text.contains("recompression skipped: not supported"),
            "{text}"
        );
    }
    if !has_writeback {
        assert!(text.contains("writeback skipped: not supported"), "{text}");
    }
    if has_recompress || has_writeback {
        println!("policy log on a kernel with recompress={has_recompress} writeback={has_writeback}:\n{text}");
    }
    // The data is still there.
    let mut back = vec![0u8; 4096];
    use std::io::Read;
    fs::File::open(dev.dev_path())
        .unwrap()
        .read_exact(&mut back)
        .unwrap();
    assert_eq!(back, page);
}
