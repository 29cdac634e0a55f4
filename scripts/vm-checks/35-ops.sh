# 35-ops: the ops commands against this kernel's zram with writeback
# (docs/ops.md): `zmem apply` of a config with a device whose backing_dev is
# the guest's --disk (zram0, fs-type none) and a swap device (zram1);
# `zmem status`; `zmem policy --once` writing back idle pages (bd_stat must
# grow); `zmem exporter --once` checked with `promtool check metrics`;
# `zmem apply --revert`; nothing left behind. On a kernel without
# backing_dev (or without a disk) the writeback parts SKIP with the reason;
# status and the exporter, which only read, still run.
. "$(dirname "$0")/lib.sh"
zram_loaded || { result ops SKIP "no zram in this kernel"; exit 0; }
promtool=$(command -v promtool || true)
for p in "$(dirname "$ZMEM")/../ci-tools/usr/bin/promtool" "$(dirname "$0")/../../target/ci-tools/usr/bin/promtool"; do
    [ -z "$promtool" ] && [ -x "$p" ] && promtool=$p
done
mounts_before=$(awk '{print $2}' /proc/mounts | sort | xargs)
state_before=$(ls /run/zmem 2>/dev/null | xargs)

# The exporter's scrape, checked by promtool (SKIP without promtool).
exporter_check() { # NAME
    local rc=0
    "$ZMEM" exporter --once >"$OUT/$1.prom" 2>"$OUT/$1.err" || rc=$?
    if [ $rc != 0 ]; then
        result "ops:$1" FAIL "zmem exporter --once exited $rc: $(tail -c 300 "$OUT/$1.err")"
    elif [ -z "$promtool" ]; then
        result "ops:$1" SKIP "$(grep -c '^zmem_' "$OUT/$1.prom") series; no promtool (on the PATH or target/ci-tools, as .ci/run extracts it)"
    elif "$promtool" check metrics <"$OUT/$1.prom" >"$OUT/$1.promtool" 2>&1; then
        result "ops:$1" PASS "$(grep -c '^zmem_' "$OUT/$1.prom") series; promtool check metrics: no finding"
    else
        result "ops:$1" FAIL "promtool check metrics: $(head -c 300 "$OUT/$1.promtool")"
    fi
}

zram_attrs >"$OUT/attrs"
why=
grep -qx backing_dev "$OUT/attrs" || why="no backing_dev: $(uname -r)'s zram is built without CONFIG_ZRAM_WRITEBACK"
[ -z "$why" ] && [ -z "${ZMEM_VM_DISK:-}" ] && why="no disk for backing_dev (scripts/vm check gives the guest one as \$ZMEM_VM_DISK)"
if [ -n "$why" ]; then
    rc=0; "$ZMEM" status >"$OUT/status.txt" 2>&1 || rc=$?
    if [ $rc = 0 ]; then result ops:status PASS "$(grep -c . "$OUT/status.txt") lines"; else result ops:status FAIL "exit $rc: $(tail -c 300 "$OUT/status.txt")"; fi
    exporter_check exporter
    result ops:apply-writeback SKIP "$why"
    result ops:policy-writeback SKIP "$why"
    exit 0
fi

dir=$(mktemp -d /tmp/zmem-admin.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/zmem.conf" <<CONF
[zram0]
zram-size = 32
compression-algorithm = lz4
writeback-device = $ZMEM_VM_DISK
fs-type = none

[zram1]
zram-size = 16
compression-algorithm = lz4
swap-priority = 100

[policy]
recompress = no
writeback-backoff = 0s
writeback-idle-min = 1s
writeback-idle-max = 1s
writeback-min-per-round = 0
writeback-max-per-round = 64MiB
CONF
cat "$dir/zmem.conf" >"$OUT/zmem.conf"

rc=0; "$ZMEM" apply "$dir/zmem.conf" >"$OUT/apply.log" 2>&1 || rc=$?
cat "$OUT/apply.log"
bd=$(cat /sys/block/zram0/backing_dev 2>/dev/null)
if [ $rc != 0 ]; then
    result ops:apply FAIL "zmem apply exited $rc: $(tail -c 300 "$OUT/apply.log")"
elif [ "$bd" != "$ZMEM_VM_DISK" ] || ! grep -q '^/dev/zram1 ' /proc/swaps; then
    result ops:apply FAIL "zram0 backing_dev [$bd], swaps: $(tail -n +2 /proc/swaps | awk '{print $1}' | xargs)"
else
    result ops:apply PASS "zram0 backing_dev $bd, zram1 swapped on"
fi

# Pages for the policy to write back: the corpus, written 3 s before the round.
dd if="$CORPUS" of=/dev/zram0 bs=1M oflag=direct status=none 2>"$OUT/dd.err" || result ops:data FAIL "dd: $(cat "$OUT/dd.err")"
sleep 3
rc=0; "$ZMEM" status >"$OUT/status.txt" 2>&1 || rc=$?
cat "$OUT/status.txt"
if [ $rc != 0 ]; then
    result ops:status FAIL "exit $rc: $(tail -c 300 "$OUT/status.txt")"
elif ! grep -q "$ZMEM_VM_DISK" "$OUT/status.txt"; then
    result ops:status FAIL "no backing device $ZMEM_VM_DISK in the status"
else
    result ops:status PASS "zram0 with backing device $ZMEM_VM_DISK, zram1 on swap"
fi

before=$(cat /sys/block/zram0/bd_stat | xargs)
rc=0; "$ZMEM" policy --config "$dir/zmem.conf" --once >"$OUT/policy.log" 2>&1 || rc=$?
cat "$OUT/policy.log"
after=$(cat /sys/block/zram0/bd_stat | xargs)
w0=$(echo "$before" | awk '{print $3}'); w1=$(echo "$after" | awk '{print $3}')
if [ $rc != 0 ]; then
    result ops:policy-writeback FAIL "zmem policy --once exited $rc: $(tail -c 300 "$OUT/policy.log")"
elif [ "${w1:-0}" -gt "${w0:-0}" ]; then
    result ops:policy-writeback PASS "bd_stat [$before] -> [$after] (bd_writes +$((w1 - w0)))"
else
    result ops:policy-writeback FAIL "bd_stat did not grow: [$before] -> [$after]"
fi

exporter_check exporter
if ! grep -qE '^zmem_zram_backing_written_bytes_total\{[^}]*device="zram0"[^}]*\} [1-9]' "$OUT/exporter.prom"; then
    result ops:exporter-bd FAIL "no zmem_zram_backing_written_bytes_total > 0 for zram0"
else
    result ops:exporter-bd PASS "$(grep -E '^zmem_zram_backing_written_bytes_total\{[^}]*device="zram0"' "$OUT/exporter.prom")"
fi

rc=0; "$ZMEM" apply --revert >"$OUT/revert.log" 2>&1 || rc=$?
cat "$OUT/revert.log"
rm -f /run/zmem/policy.state
[ -z "$state_before" ] && rmdir /run/zmem 2>/dev/null
mounts_after=$(awk '{print $2}' /proc/mounts | sort | xargs)
if [ $rc != 0 ]; then
    result ops:revert FAIL "zmem apply --revert exited $rc: $(tail -c 300 "$OUT/revert.log")"
elif ! left=$(leftovers); then
    result ops:revert FAIL "left behind: $left"
elif [ "$mounts_before" != "$mounts_after" ]; then
    result ops:revert FAIL "mounts changed: [$mounts_before] -> [$mounts_after]"
elif [ -n "$(ls /run/zmem 2>/dev/null | xargs)" ] && [ "$(ls /run/zmem | xargs)" != "$state_before" ]; then
    result ops:revert FAIL "/run/zmem holds $(ls /run/zmem | xargs) (before: [$state_before])"
else
    result ops:revert PASS "devices removed, swaps off, mounts and /run/zmem as before"
fi
