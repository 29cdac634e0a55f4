# 30-writeback: `zmem bench writeback` with its kernel rows: the same pages,
# step by step, through a kernel zram device whose backing_dev is the guest's
# --disk and through the engine (docs/writeback.md, "Kernel rows"). One verdict
# per step: PASS when bd_stat, orig_data_size, same/huge pages, the remaining
# writeback_limit, the step's errno and every page read back are equal (and
# compr_data_size within 0.1 %); SKIP (with the kernel's reason) where the
# kernel has no backing_dev, no disk was given, or the kernel refused an
# optional step. The disk is left as found (the bench zeroes what it wrote).
. "$(dirname "$0")/lib.sh"
zram_loaded || { result writeback SKIP "no zram in this kernel"; exit 0; }
zram_attrs >"$OUT/attrs"
backing=()
[ -n "${ZMEM_VM_DISK:-}" ] && backing=(--backing-dev "$ZMEM_VM_DISK")
runs=("plain")
if [ "${QUICK:-0}" != 1 ]; then
    runs+=("batch4")
    grep -qx compressed_writeback "$OUT/attrs" && runs+=("compressed")
fi
for run in "${runs[@]}"; do
    extra=()
    case $run in batch4) extra=(--wb-batch-size 4) ;; compressed) extra=(--wb-compressed) ;; esac
    rc=0
    "$ZMEM" bench writeback "$CORPUS" "${backing[@]}" "${extra[@]}" --format json \
        >"$OUT/$run.json" 2>"$OUT/$run.err" || rc=$?
    if [ $rc != 0 ]; then
        result "writeback:$run" FAIL "zmem bench writeback exited $rc: $(tail -c 300 "$OUT/$run.err")"
        continue
    fi
    python3 - "$OUT/$run.json" "$RESULTS" "$run" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))[0]
k, results, run = r["kernel"], sys.argv[2], sys.argv[3]
def verdict(name, status, detail):
    open(results, "a").write(f"{name}\t{status}\t{detail}\n")
    print(f"{status} {name}: {detail}")
print(f"# {run}: kernel {k['kernel']}, backing_dev {k['backing_dev'] or '-'}; {r['backing_check'] or 'no block device'}")
print(f"  writeback attributes: {' '.join(k['attrs']) or '-'}")
for n in k["notes"]:
    print(f"  {n}")
if not k["steps"]:
    verdict(f"writeback:{run}", k["verdict"], k.get("reason") or "")
    sys.exit(0)
print(f"  {'step':40} {'result k/e':>11} {'bd_stat kernel':>16} {'bd_stat engine':>16} {'huge k/e':>9} {'compr kernel':>12} {'engine':>9}")
for s in k["steps"]:
    a, b = s["kernel"], s["engine"]
    if a and b:
        bd = lambda x: f"{x['bd_count']}/{x['bd_reads']}/{x['bd_writes']}"
        print(f"  {s['step']:40} {a['result'] + '/' + b['result']:>11} {bd(a):>16} {bd(b):>16} "
              f"{str(a['huge_pages']) + '/' + str(b['huge_pages']):>9} {a['compr_data_size']:>12} {b['compr_data_size']:>9}")
    verdict(f"writeback:{run}:{s['step']}", s["verdict"], s["detail"] or "kernel = engine")
if k["verdict"] == "FAIL" and k.get("reason"):
    print(f"  {k['reason']}")
PY
done
if ! left=$(leftovers); then result writeback:leftovers FAIL "left behind: $left"; fi
if [ -n "${ZMEM_VM_DISK:-}" ] && [ "$(head -c 4194304 "$ZMEM_VM_DISK" | tr -d '\0' | wc -c)" != 0 ]; then
    result writeback:disk FAIL "$ZMEM_VM_DISK is not all zero in its first 4 MiB after the bench"
fi
