#!/usr/bin/env bash
# Interleaved runs of `zmem bench device` for one or more zmem binaries,
# with the median of each figure per binary — for timing on a shared, noisy
# machine (docs/zram.md, "Speed"; dated runs in bench/results/).
#
#   scripts/bench-engine.sh -r ROUNDS -a ALGO [-t THREADS] [-n REQUESTS] [-k] [-f] CORPUS BIN...
#
# -k adds the kernel rows (root and kernel zram needed; each run hot-adds its
# own device). -f adds the codec floor (`zmem bench floor`): the codec alone
# on the same pages and requests, the least any engine can spend. Each round
# runs every BIN once, in order; the raw CSV of every run is kept under $OUT
# (default a temporary directory) and the medians are printed per binary,
# target and page-cluster: mean latency (µs), reads per CPU-second, write
# MiB/s, and with -k the engine/kernel (and codec/kernel) ratios: the median
# of the runs' ratios, then the lowest and highest run (`0.45x 0.41-0.51`).
# Every BIN needs the `zmem bench device`/`floor` subcommands (older builds
# spelled them `zmem bench CORPUS` and `zmem bench --floor CORPUS`).
set -euo pipefail

rounds=5 algo=lz4 threads=1 requests=200000 kernel=0 floor=0
while getopts "r:a:t:n:kf" o; do
    case $o in
    r) rounds=$OPTARG ;;
    a) algo=$OPTARG ;;
    t) threads=$OPTARG ;;
    n) requests=$OPTARG ;;
    k) kernel=1 ;;
    f) floor=1 ;;
    *) sed -n 2,17p "$0" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || { sed -n 2,17p "$0" >&2; exit 2; }
corpus=$1
shift
out=${OUT:-$(mktemp -d /tmp/zmem-bench-engine.XXXXXX)}
mkdir -p "$out"
mode=device
[ "$floor" = 0 ] || mode=floor
extra=()
[ "$kernel" = 1 ] || extra+=(--no-kernel)

for r in $(seq 1 "$rounds"); do
    for bin in "$@"; do
        name=$(basename "$bin")
        "$bin" bench "$mode" --algo "$algo" --threads "$threads" --requests "$requests" \
            "${extra[@]}" --format csv "$corpus" >"$out/$name.$r.csv" 2>/dev/null
    done
done

python3 - "$out" "$@" <<'EOF'
import csv, statistics, sys, os
out, bins = sys.argv[1], [os.path.basename(b) for b in sys.argv[2:]]
med = lambda v: statistics.median(v) if v else float("nan")
span = lambda v: f"{med(v):.2f}x {min(v):.2f}-{max(v):.2f}"


def ratios(runs, a, b, pc):
    """a/b mean read latency and write rate, per run: median, lowest, highest."""
    lat, wr = [], []
    for run in runs:
        x = [r for r in run if r["target"] == a and r["page_cluster"] == pc]
        y = [r for r in run if r["target"] == b and r["page_cluster"] == pc]
        if x and y:
            lat.append(float(x[0]["lat_mean_ns"]) / float(y[0]["lat_mean_ns"]))
            wr.append(float(x[0]["write_mibps"]) / float(y[0]["write_mibps"]))
    return (span(lat), span(wr)) if lat else ("", "")


print(f"runs in {out}")
print("binary          target  pc  lat_mean_us  reads/cpu_s  write_MiB/s        x/kern_lat      x/kern_write  runs")
for b in bins:
    runs = []
    for f in sorted(os.listdir(out)):
        if f.startswith(b + ".") and f.endswith(".csv"):
            runs.append(list(csv.DictReader(open(os.path.join(out, f)))))
    for target in ("engine", "codec", "kernel"):
        for pc in "0123":
            rows = [[x for x in run if x["target"] == target and x["page_cluster"] == pc] for run in runs]
            rows = [r[0] for r in rows if r]
            if not rows:
                continue
            lat = med([float(r["lat_mean_ns"]) / 1000 for r in rows])
            rpc = med([float(r["reads_per_cpu_s"]) for r in rows if r["reads_per_cpu_s"]])
            wr = med([float(r["write_mibps"]) for r in rows])
            rl = rw = ""
            if target != "kernel":
                rl, rw = ratios(runs, target, "kernel", pc)
            print(f"{b:15} {target:7} {pc:>2}  {lat:11.2f}  {rpc:11.0f}  {wr:11.1f}  {rl:>16}  {rw:>16}  {len(rows)}")
    # With -f: how far the engine is from the floor, run by run.
    for pc in "0123":
        rl, rw = ratios(runs, "engine", "codec", pc)
        if rl:
            print(f"{b:15} engine/codec floor pc={pc}: read latency {rl}, write rate {rw}")
EOF
