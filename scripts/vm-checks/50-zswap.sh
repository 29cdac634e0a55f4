# 50-zswap: `zmem bench zswap`'s kernel row equals the engine's row at the same
# pool limit (docs/vm.md): the same pages stored and the same pool bytes, with
# the swap file in --swap-dir on a filesystem that can hold one; zswap's
# parameters, cgroup.subtree_control and the swaps as before.
. "$(dirname "$0")/lib.sh"
dir=$(swap_capable_dir) || { result zswap SKIP "no disk for the swap file (scripts/vm check gives the guest one)"; exit 0; }
trap 'swap_dir_release "$dir"' EXIT
params() { for p in enabled compressor max_pool_percent accept_threshold_percent; do
    printf '%s=%s ' "$p" "$(cat /sys/module/zswap/parameters/$p 2>/dev/null)"; done; }
zswap_before=$(params)
st_before=$(subtree_control)
echo "zswap before: $zswap_before; cgroup.subtree_control before: [$st_before]"
accesses=5000
[ "${QUICK:-0}" = 1 ] && accesses=2000
# lz4 where the kernel has it for zswap (Debian: a module), else lzo (the host's 6.18).
algo=lzo
if grep -qx 'name *: lz4' /proc/crypto || modinfo -n lz4 >/dev/null 2>&1; then algo=lz4; fi
echo "+ zmem bench zswap --algo $algo --accesses $accesses --swap-dir $dir"
rc=0
"$ZMEM" bench zswap --algo "$algo" --accesses "$accesses" --swap-dir "$dir" --format json \
    >"$OUT/zswap.json" 2>"$OUT/zswap.log" || rc=$?
cat "$OUT/zswap.log"
zswap_after=$(params)
st_after=$(subtree_control)
echo "zswap after: $zswap_after; cgroup.subtree_control after: [$st_after]"
seen=$(python3 - "$OUT/zswap.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
for r in rows:
    print("  %-5s %-6s budget %d stored %d ram_used %d written_back %d" % (r["engine"], r["target"],
          r["budget_bytes"], r["stored_pages"], r["ram_used_bytes"], r["written_back_pages"]))
k = [i for i, r in enumerate(rows) if r["target"] == "kernel"]
if not k:
    print("no kernel row"); sys.exit(2)
kern, eng = rows[k[0]], rows[k[0] - 1]
same = all(kern[f] == eng[f] for f in ("budget_bytes", "stored_pages", "ram_used_bytes"))
print("kernel row: %d pages stored, %d bytes of pool; engine at the same limit: %d, %d" % (
      kern["stored_pages"], kern["ram_used_bytes"], eng["stored_pages"], eng["ram_used_bytes"]))
sys.exit(0 if same else 1)
PY
) || rc2=$?
echo "$seen"
summary=$(echo "$seen" | tail -1)
if [ "$rc" != 0 ]; then
    result zswap FAIL "zmem bench zswap exited $rc: $(tail -1 "$OUT/zswap.log")"
elif [ "${rc2:-0}" = 2 ]; then
    result zswap SKIP "no kernel row: $(grep 'no kernel rows' "$OUT/zswap.log" | head -1)"
elif [ "${rc2:-0}" != 0 ]; then
    result zswap FAIL "kernel and engine rows differ: $summary"
elif ! left=$(leftovers); then
    result zswap FAIL "left behind: $left"
elif [ "$zswap_before" != "$zswap_after" ] || [ "$st_before" != "$st_after" ]; then
    result zswap FAIL "not restored: zswap [$zswap_before] → [$zswap_after], subtree_control [$st_before] → [$st_after]"
else
    result zswap PASS "$summary (equal); nothing left behind"
fi
