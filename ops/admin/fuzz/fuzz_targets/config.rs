#![no_main]
//! zram-generator.conf + zmem extensions, and the size expressions in it: errors, never panics;
//! what parses renders to text that parses to the same rendering.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(cfg) = zmem_conf::parse(text, std::path::Path::new("fuzz.conf")) {
        for d in &cfg.devices {
            let _ = d.zram_size.eval_bytes(8192.0);
        }
        let _ = zmem_policy::Policy::from_config(&cfg);
        let _ = zmem_admin::persist::files(&cfg, "/usr/bin/zmem", false);
        // What the reader takes, written back, reads again to the same text.
        let text = cfg.render();
        let back = zmem_conf::parse(&text, std::path::Path::new("fuzz.conf"))
            .unwrap_or_else(|e| panic!("rendered text does not parse: {e}\n{text}"));
        assert_eq!(back.render(), text);
    }
    // Strict: unknown keys and sections are errors instead of warnings.
    let _ = zmem_conf::parse_with(text, std::path::Path::new("fuzz.conf"), true);
    let _ = zmem_conf::parse_algorithms_with_warnings(text);
    let _ = zmem_conf::kernel_zram_option(text);
    // The same [policy] keys as `zmem serve --maint=…`.
    let _ = zmem_policy::Policy::default().with_spec(text);
    let _ = (zmem_conf::parse_size(text), zmem_conf::parse_duration(text));
});
