#!/usr/bin/env bash
# Every transport this machine has, side by side in one run of `zmem bench transport`
# (docs/serve.md, "Transports side by side"):
#
#   scripts/bench-transport.sh [-r ROUNDS] [-a ALGO] [-n REQUESTS] [-z ZMEM] [CORPUS]
#
# Targets, each added where the machine has it:
#   engine      zmem's zram device in the bench's own process
#   kernel      a kernel zram device hot-added by the bench (root, zram module)
#   nbd         `zmem serve` on a Unix socket, zmem's NBD client (one connection per queue slot)
#   ublk        `zmem serve --ublk`'s /dev/ublkbN (root, ublk_drv, a zmem with --ublk)
#   nbd-client  `zmem serve` attached to /dev/nbdN by the kernel's nbd-client (root, nbd module,
#               nbd-client installed), 4 connections
# All with the same algorithm (-a, default lz4) and the same pages. Without CORPUS, up to
# 96 MiB of this machine's process memory is captured first (`zmem capture`, root), into a private
# temporary directory removed at the end. Servers, nbd-client and devices started here are
# stopped and removed on exit, also on failure or Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=5 algo=lz4 requests=20000 zmem=${CARGO_TARGET_DIR:-target}/release/zmem
while getopts "r:a:n:z:" o; do
    case $o in
    r) rounds=$OPTARG ;;
    a) algo=$OPTARG ;;
    n) requests=$OPTARG ;;
    z) zmem=$OPTARG ;;
    *) sed -n 2,16p "$0" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ -x "$zmem" ] || { echo "bench-transport: $zmem not found (cargo build --release -p zmem)" >&2; exit 1; }

work=$(mktemp -d /tmp/zmem-bench-transport.XXXXXX)
pids=() nbddev=
cleanup() {
    [ -n "$nbddev" ] && nbd-client -d "$nbddev" >/dev/null 2>&1 || true
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

corpus=${1:-}
if [ -z "$corpus" ]; then
    corpus=$work/mem.corpus
    echo "# capturing process memory (up to 96 MiB)" >&2
    "$zmem" capture --all --max 96M -o "$corpus" >/dev/null 2>"$work/capture.log" ||
        { cat "$work/capture.log" >&2; exit 1; }
fi
pages=$(( $(stat -c %s "$corpus") / 4096 ))
[ "$pages" -ge 16384 ] || echo "# note: the corpus has $pages pages, under 64 MiB: too little for a published figure" >&2
size=$(( (pages * 4096 + (1 << 20) - 1) / (1 << 20) ))M

# Start `zmem serve ARGS`; once ready, $served is its first stdout line (what it serves).
serve() {
    local log=$work/serve.$#.$RANDOM
    "$zmem" serve --size "$size" --algo "$algo" --no-ctl "$@" >"$log.out" 2>"$log.err" &
    pids+=("$!")
    for _ in $(seq 300); do
        if [ -s "$log.out" ]; then served=$(head -1 "$log.out"); return 0; fi
        kill -0 "${pids[-1]}" 2>/dev/null || break
        sleep 0.1
    done
    echo "bench-transport: zmem serve $* did not start: $(cat "$log.err")" >&2
    return 1
}

targets=(--target engine)
notes=()
if [ -w /sys/class/zram-control/hot_add ]; then
    targets+=(--target kernel)
else
    notes+=("kernel zram: no /sys/class/zram-control (modprobe zram, as root)")
fi
serve --listen "unix:$work/nbd.sock" --export zmem
targets+=(--target "nbd+unix:///zmem?socket=$work/nbd.sock")
if ! "$zmem" serve --help | grep -q -- '--ublk'; then
    notes+=("ublk: this zmem has no serve --ublk")
elif [ ! -e /dev/ublk-control ]; then
    notes+=("ublk: no /dev/ublk-control (modprobe ublk_drv)")
else
    serve --ublk
    targets+=(--target "${served#serving }")
fi
if ! command -v nbd-client >/dev/null; then
    notes+=("nbd-client: not installed")
elif ! modprobe nbd 2>/dev/null && [ ! -e /sys/module/nbd ]; then
    notes+=("nbd-client: the kernel has no nbd module")
else
    serve --listen "unix:$work/kernel-nbd.sock" --export zmem
    for d in /sys/block/nbd*; do
        [ "$(cat "$d/size")" = 0 ] && { nbddev=/dev/${d##*/}; break; }
    done
    [ -n "$nbddev" ] || { echo "bench-transport: no free /dev/nbdN" >&2; exit 1; }
    nbd-client -unix "$work/kernel-nbd.sock" "$nbddev" -N zmem -C 4 -b 4096 >&2
    targets+=(--target "$nbddev")
fi

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $(nproc) CPUs, $("$zmem" --version | head -1), corpus $(basename "$corpus") ($pages pages), algo $algo"
for n in "${notes[@]}"; do echo "# not measured: $n"; done
echo "# $zmem bench transport $(basename "$corpus") --algo $algo --rounds $rounds --requests $requests ${targets[*]}"
"$zmem" bench transport "$corpus" --algo "$algo" --rounds "$rounds" --requests "$requests" "${targets[@]}"
