# 20-bench-device: `zmem bench device` on every algorithm this kernel's zram
# offers, the engine beside the kernel on the same pages. One verdict per
# algorithm: PASS when mem_used_total and compr_data_size are within 0.1 % of
# the kernel's and the same-filled and huge page counts are equal.
. "$(dirname "$0")/lib.sh"
zram_loaded || { result bench-device SKIP "no zram in this kernel"; exit 0; }
id=$(cat /sys/class/zram-control/hot_add)
algos=$(tr -d '[]' <"/sys/block/zram$id/comp_algorithm" | xargs | tr ' ' ,)
echo "$id" >/sys/class/zram-control/hot_remove
echo "$algos" >"$OUT/algos"
rc=0
"$ZMEM" bench device "$CORPUS" --algo "$algos" --requests "$REQUESTS" --format json \
    >"$OUT/bench.json" 2>"$OUT/bench.err" || rc=$?
if [ $rc != 0 ]; then
    result bench-device FAIL "zmem bench device exited $rc: $(tail -c 300 "$OUT/bench.err")"
    exit 0
fi
python3 - "$OUT" "$RESULTS" <<'PY'
import json, os, sys
d, results = sys.argv[1], sys.argv[2]
rows = {}
for r in json.load(open(os.path.join(d, "bench.json"))):
    if r.get("page_cluster", 0) == 0:
        rows[(r["target"], r["algo"])] = r
def rel(e, k):
    return (e - k) / k * 100 if k else 0.0
def verdict(name, status, detail):
    open(results, "a").write(f"{name}\t{status}\t{detail}\n")
print(f"{'algo':8} {'mem_used kernel':>15} {'engine':>10} {'diff':>9}   {'compr kernel':>12} {'engine':>10} {'diff':>9}   {'same k/e':>9}   {'huge k/e':>9}")
verdicts = []
for algo in open(os.path.join(d, "algos")).read().strip().split(","):
    k, e = rows.get(("kernel", algo)), rows.get(("engine", algo))
    if e is None or k is None or k.get("reason") or e.get("reason"):
        why = (k or {}).get("reason") or (e or {}).get("reason") or ("no kernel row" if k is None else "no engine row")
        print(f"{algo:8} {why}")
        verdicts.append((f"bench-device:{algo}", "SKIP", why))
        continue
    mu, cd = rel(e["mem_used_total"], k["mem_used_total"]), rel(e["compr_data_size"], k["compr_data_size"])
    same = (k["same_pages"], e["same_pages"]); huge = (k["huge_pages"], e["huge_pages"])
    print(f"{algo:8} {k['mem_used_total']:>15} {e['mem_used_total']:>10} {mu:>+8.3f}%"
          f"   {k['compr_data_size']:>12} {e['compr_data_size']:>10} {cd:>+8.3f}%"
          f"   {'%d/%d' % same:>9}   {'%d/%d' % huge:>9}")
    ok = abs(mu) <= 0.1 and abs(cd) <= 0.1 and same[0] == same[1] and huge[0] == huge[1]
    verdicts.append((f"bench-device:{algo}", "PASS" if ok else "FAIL",
                     f"mem_used {mu:+.3f}%, compr {cd:+.3f}%, same {same[0]}/{same[1]}, huge {huge[0]}/{huge[1]}"))
print("(diff: engine vs kernel; sizes in bytes from mm_stat, the same pages written to both; PASS within 0.1 %)")
for v in verdicts:
    verdict(*v)
    print(f"{v[1]} {v[0]}: {v[2]}")
PY
