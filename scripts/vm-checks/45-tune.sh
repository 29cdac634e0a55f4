# 45-tune: zmem tune under the cgroup hierarchy as booted. Quick: memalloc 96M
# in 64M, one candidate, one run each. Whole: issue 31's re-run of the kvstore
# tune that cgroup v1 OOM-killed (docs/tune.md), kvstore 256M in 128M, two
# candidates, one run each. Verdicts: tune's exit status (0 with a winner, or 1
# when no configuration held the workload: a finding, not a failure), PSI
# recorded for every run that ran (memory.pressure of its cgroup on v2,
# /proc/pressure/memory system-wide on v1), on v2 memory.swap.max and
# memory.zswap.max read back as tune set them (and the cgroup gone after),
# and nothing left behind.
. "$(dirname "$0")/lib.sh"
dir=$(swap_capable_dir) || { result tune SKIP "no disk for the trials' swap file (scripts/vm check gives the guest one)"; exit 0; }
trap 'swap_dir_release "$dir"' EXIT
st_before=$(subtree_control)
echo "cgroup.subtree_control before: [$st_before]"
if [ "${QUICK:-0}" = 1 ]; then
    what="memalloc 96M in 64M"
    set -- --memory 64M --builtin memalloc --size 96M --candidates 1 --rounds 1 --requests 200 --capture-max 8M
else
    what="kvstore 256M in 128M"
    set -- --memory 128M --builtin kvstore --size 256M --candidates 2 --rounds 1 --requests 500 --capture-max 16M
fi
echo "+ zmem tune $* --repeat 1 --swap-dir $dir"
rc=0
"$ZMEM" tune "$@" --repeat 1 --swap-dir "$dir" --format json >"$OUT/tune.json" 2>"$OUT/tune.log" || rc=$?
cat "$OUT/tune.log"
st_after=$(subtree_control)
echo "cgroup.subtree_control after: [$st_after]"
echo "tune exit status: $rc"
# What the runs saw, and the verdicts on PSI and the cgroup settings.
seen=$(python3 - "$OUT/tune.json" "$rc" <<'PY'
import json, sys
try:
    t = json.load(open(sys.argv[1]))
except ValueError:
    print("no JSON report"); sys.exit(1)
rc = int(sys.argv[2])
tr = t["trial"]
bad = []
if rc == 1 and not t.get("no_fit"):
    bad.append("exit 1 without a no_fit finding")
ran = [r for r in tr["runs"] if r["wall_s"] > 0]
for r in tr["runs"]:
    p = r.get("memory_pressure")
    full = "-" if not p or p["psi_full_total_s"] is None else "%.2f" % p["psi_full_total_s"]
    ps = "-" if not p else "%s some %.2f s full %s s" % (p["psi_scope"], p["psi_some_total_s"], full)
    st = ", ".join("%s=%s (wanted %s)" % (s["file"], s["value"], s["wanted"]) for s in r.get("cgroup_settings", []))
    out = r["outcome"]["status"] + ("" if r["outcome"]["status"] != "exited" else " %d" % r["outcome"]["code"])
    print("  run %s #%d: %s in %.2f s; psi %s; %s" % (r["config"], r["round"], out, r["wall_s"], ps, st or "no v2 settings"))
    if r["wall_s"] > 0 and not p:
        bad.append("%s: no PSI" % r["config"])
    if r["wall_s"] > 0 and p and p["psi_scope"] != ("cgroup" if tr["cgroup"] == "v2" else "system"):
        bad.append("%s: PSI scope %s on %s" % (r["config"], p["psi_scope"], tr["cgroup"]))
    if tr["cgroup"] == "v2" and r["wall_s"] > 0:
        got = {s["file"]: s for s in r.get("cgroup_settings", [])}
        for f in ("memory.swap.max", "memory.zswap.max"):
            s = got.get(f)
            if s is None or s["value"] != s["wanted"]:
                bad.append("%s: %s %s" % (r["config"], f, s))
    if tr["cgroup"] == "v1" and r.get("cgroup_settings"):
        bad.append("%s: v2 settings on v1" % r["config"])
print("cgroup %s, %d runs (%d ran), winner %s%s" % (tr["cgroup"], len(tr["runs"]), len(ran),
      t["winner"]["config"] if t.get("winner") else "none",
      "; " + "; ".join(bad) if bad else ""))
sys.exit(1 if bad or not ran else 0)
PY
) || { [ "$rc" -gt 1 ] || rc=9; }
echo "$seen"
summary=$(echo "$seen" | tail -1)
# A zswap trial beside it: what its cgroup gets (the pool bounded by
# memory.zswap.max, memory.zswap.writeback where the kernel has it: 6.8+).
algo=lzo
if grep -qx 'name *: lz4' /proc/crypto || modinfo -n lz4 >/dev/null 2>&1; then algo=lz4; fi
echo "+ zmem trial --builtin memalloc --memory 32M --size 48M --config zswap:$algo --repeat 1 --swap-dir $dir"
zrc=0
"$ZMEM" trial --builtin memalloc --memory 32M --size 48M --config "zswap:$algo" --repeat 1 \
    --swap-dir "$dir" >"$OUT/trial-zswap.txt" 2>&1 || zrc=$?
cat "$OUT/trial-zswap.txt"
zline=$(grep -E '^cgroup v2, zswap|none exist on cgroup v1' "$OUT/trial-zswap.txt" | head -1)
[ "$zrc" = 0 ] && [ -n "$zline" ] || { [ "$rc" -gt 1 ] || rc=8; summary="$summary; zswap trial exited $zrc"; }
st_after=$(subtree_control)
if [ "$rc" != 0 ] && [ "$rc" != 1 ]; then
    result tune FAIL "$what: zmem tune exited $rc: $summary"
elif ! left=$(leftovers); then
    result tune FAIL "$what: left behind: $left"
elif [ "$st_before" != "$st_after" ]; then
    result tune FAIL "$what: cgroup.subtree_control was [$st_before], is [$st_after]"
else
    result tune PASS "$what: exit $rc, $summary; PSI per run, cgroup settings as set; zswap:$algo trial: ${zline#cgroup v2, }; nothing left behind"
fi
