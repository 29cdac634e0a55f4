#!/usr/bin/env bash
# zmem serve vs nbdkit memory, with fio's nbd engine over a Unix socket.
#
#   scripts/bench-nbd.sh [ZMEM_BINARY]
#
# Same fio jobs, same data (fio's generator with a fixed seed and
# buffer_compress_percentage), QD16, 4 KiB:
#   1. randwrite over the first $SIZE of a $DEV device (every block once),
#      then the server's RSS (VmRSS) is read;
#   2. randread for $RUNTIME seconds over what was written.
# Servers: zmem serve (--algo $ALGO), nbdkit memory allocator=zstd,
# nbdkit memory allocator=sparse (uncompressed).
# Env: DEV (default 1G), SIZE (512M), RUNTIME (10), ALGO (lz4), COMPRESS (70).
set -euo pipefail
cd "$(dirname "$0")/.."
ZMEM=${1:-${CARGO_TARGET_DIR:-target}/release/zmem}
DEV=${DEV:-1G}
SIZE=${SIZE:-512M}
RUNTIME=${RUNTIME:-10}
ALGO=${ALGO:-lz4}
COMPRESS=${COMPRESS:-70}
for t in fio nbdkit python3; do command -v "$t" >/dev/null || { echo "bench-nbd: $t is not installed" >&2; exit 1; }; done
[ -x "$ZMEM" ] || { echo "bench-nbd: $ZMEM not found (cargo build --release -p zmem)" >&2; exit 1; }
fio --enghelp | grep -qx '[[:space:]]*nbd' || { echo "bench-nbd: this fio has no nbd engine" >&2; exit 1; }

work=$(mktemp -d /tmp/bench-nbd.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

common=(--ioengine=nbd --bs=4k --iodepth=16 --numjobs=1 --group_reporting
        --randseed=4242 --buffer_compress_percentage="$COMPRESS" --buffer_compress_chunk=4k
        --refill_buffers --output-format=json)

json() { python3 -c 'import json,sys
t=open(sys.argv[1]).read(); j=json.loads(t[t.index("{"):])["jobs"][0][sys.argv[2]]
print("%.0f %.1f %.1f" % (j["iops"], j["bw_bytes"]/1048576, j["clat_ns"]["percentile"]["99.000000"]/1000))' "$@"; }

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

wait_sock() { for _ in $(seq 100); do [ -S "$1" ] && return 0; sleep 0.1; done; echo "bench-nbd: $1 never appeared" >&2; exit 1; }

run_one() { # label, then the server command (socket path is $work/s)
  local label=$1; shift
  rm -f "$work/s"
  "$@" >/dev/null 2>"$work/server.log" & pid=$!
  wait_sock "$work/s"
  local uri="nbd+unix:///?socket=$work/s"
  local rss0; rss0=$(rss_kib "$pid")
  fio --name=w "${common[@]}" --rw=randwrite --size="$SIZE" --uri="$uri" > "$work/w.json"
  local rss1; rss1=$(rss_kib "$pid")
  fio --name=r "${common[@]}" --rw=randread --size="$SIZE" --time_based --runtime="$RUNTIME" --uri="$uri" > "$work/r.json"
  read -r wi wb wp < <(json "$work/w.json" write)
  read -r ri rb rp < <(json "$work/r.json" read)
  printf '| %-34s | %9s | %7s | %8s | %9s | %7s | %8s | %8s |\n' "$label" "$wi" "$wb" "$wp" "$ri" "$rb" "$rp" "$(( (rss1 - rss0) / 1024 )) / $(( rss1 / 1024 ))"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
}

echo "fio $(fio --version), nbdkit $(nbdkit --version | awk '{print $2}'), $(nproc) CPUs, $(uname -r)"
echo "device $DEV, randwrite over $SIZE then randread ${RUNTIME}s, 4 KiB, QD16, buffer_compress_percentage=$COMPRESS"
echo
echo '| server                             | wr IOPS   | wr MiB/s| wr p99us | rd IOPS   | rd MiB/s| rd p99us | RSS MiB (+written / total) |'
echo '|------------------------------------|-----------|---------|----------|-----------|---------|----------|----------|'
run_one "zmem serve --algo $ALGO" "$ZMEM" serve --size "$DEV" --algo "$ALGO" --listen "unix:$work/s" --no-ctl
run_one "nbdkit memory allocator=zstd" nbdkit -f -U "$work/s" memory size="$DEV" allocator=zstd
run_one "nbdkit memory allocator=sparse" nbdkit -f -U "$work/s" memory size="$DEV" allocator=sparse
