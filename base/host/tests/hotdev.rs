use zmem_host::HotDevice;

#[test]
fn hot_added_device_is_removed_on_drop() {
    if let Err(why) = HotDevice::available() {
        zmem_files::testutil::skip(&format!("SKIP hot_added_device_is_removed_on_drop: {why}"));
        return;
    }
    let before: Vec<_> = std::fs::read_dir("/sys/block")
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let id;
    {
        let d = HotDevice::with_config("lzo", 1 << 20).expect("create");
        id = d.id();
        assert_eq!(d.read_attr("initstate").unwrap(), "1");
        assert_eq!(d.mm_stat().unwrap().orig_data_size, 0);
        assert!(d.algorithms().unwrap().contains(&"lzo".to_string()));
    }
    assert!(!std::path::Path::new(&format!("/sys/block/zram{id}")).exists());
    let after: Vec<_> = std::fs::read_dir("/sys/block")
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before, after);
}
