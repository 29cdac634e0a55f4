# 70-recompress: recompression step by step in this kernel's zram
# (scripts/kernel-recompress.py on the fixture's pages, with the guest's disk
# as backing device), compared with the recording the engine is checked
# against in CI (engine/zram/tests/fixtures/recompress/kernel-MAJOR.MINOR.txt,
# replayed by engine/zram/tests/kernel_recompress.rs): PASS when every step's
# result, mm_stat, bd_stat, miss_free, slot flags and page CRCs are equal, so
# kernel = recording = engine. SKIP where the kernel has no recomp_algorithm
# (CONFIG_ZRAM_MULTI_COMP: none of Debian's), no disk was given, or no
# recording exists for this version (the new recording is kept in OUT).
. "$(dirname "$0")/lib.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
fixtures=$repo/engine/zram/tests/fixtures/recompress
zram_loaded || { result recompress SKIP "no zram in this kernel"; exit 0; }
if ! zram_attrs | grep -qx recomp_algorithm; then
    result recompress SKIP "no recomp_algorithm (built without CONFIG_ZRAM_MULTI_COMP)"
    exit 0
fi
[ -n "${ZMEM_VM_DISK:-}" ] || { result recompress SKIP "no --disk for backing_dev"; exit 0; }
rel=$(uname -r)
ver=$(echo "$rel" | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
rc=0
python3 "$repo/scripts/kernel-recompress.py" "$fixtures/pages.bin.gz" "$ZMEM_VM_DISK" \
    >"$OUT/kernel-$ver.txt" 2>"$OUT/err" || rc=$?
# The disk is left as found: zero what writeback may have used (the fixture's 64 pages and block 0).
head -c $((65 * 4096)) /dev/zero | dd of="$ZMEM_VM_DISK" bs=4096 conv=notrunc status=none 2>/dev/null || true
if [ $rc != 0 ]; then
    result recompress FAIL "kernel-recompress.py exited $rc: $(tail -c 300 "$OUT/err")"
    exit 0
fi
want=$fixtures/kernel-$ver.txt
if [ ! -f "$want" ]; then
    result recompress SKIP "no recording for $ver in $fixtures (this run's: $OUT/kernel-$ver.txt)"
    exit 0
fi
steps=$(grep -c '^step' "$want")
# Headers (kernel, date, disk) aside, the recordings must be equal line for line.
if diff <(grep -v '^#' "$want") <(grep -v '^#' "$OUT/kernel-$ver.txt") >"$OUT/diff"; then
    result recompress PASS "$rel: $steps steps, every result, mm_stat, bd_stat, miss_free, slot flag and page CRC equal to $(basename "$want") (which the engine replays equal in CI)"
else
    result recompress FAIL "$rel differs from $(basename "$want"): $(grep -c '^[<>]' "$OUT/diff") lines, first: $(grep -m1 '^[<>]' "$OUT/diff" | cut -c1-200)"
fi
if ! left=$(leftovers); then result recompress:leftovers FAIL "left behind: $left"; fi
