# 40-trial: issue 31's done-when trial under the cgroup hierarchy as booted:
# a zram config and a disk config, memalloc 192M in 128M, every run exit 0,
# and nothing left behind (swap, cgroup, controller, zram device).
. "$(dirname "$0")/lib.sh"
dir=$(swap_capable_dir) || { result trial SKIP "no disk for the disk config's swap file (scripts/vm check gives the guest one)"; exit 0; }
trap 'swap_dir_release "$dir"' EXIT
st_before=$(subtree_control)
size=192M mem=128M repeat=1
[ "${QUICK:-0}" = 1 ] && { size=96M; mem=64M; }
echo "cgroup.subtree_control before: [$st_before]"
rc=0
"$ZMEM" trial --builtin memalloc --memory "$mem" --size "$size" --config zram:lz4 --config disk \
    --swap-dir "$dir" --repeat "$repeat" --format json >"$OUT/trial.json" 2>"$OUT/trial.log" || rc=$?
cat "$OUT/trial.log"
# Every run exited 0 (the JSON's outcome per run), and how many there were.
runs=$(python3 - "$OUT/trial.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
bad = ["%s#%s: %s" % (r["config"], r["round"], r["outcome"]) for r in t["runs"]
       if r["outcome"] != {"status": "exited", "code": 0}]
print("%d runs, cgroup %s" % (len(t["runs"]), t["cgroup"]) + ("; not exit 0: " + "; ".join(bad) if bad else ""))
sys.exit(1 if bad or not t["runs"] else 0)
PY
) || { [ "$rc" != 0 ] || rc=1; }
st_after=$(subtree_control)
echo "cgroup.subtree_control after: [$st_after]"
if [ "$rc" != 0 ]; then
    result trial FAIL "zmem trial exited $rc: $runs"
elif ! left=$(leftovers); then
    result trial FAIL "left behind: $left"
elif [ "$st_before" != "$st_after" ]; then
    result trial FAIL "cgroup.subtree_control was [$st_before], is [$st_after]"
else
    result trial PASS "memalloc $size in $mem, zram:lz4 and disk: $runs, all exit 0; nothing left behind"
fi
