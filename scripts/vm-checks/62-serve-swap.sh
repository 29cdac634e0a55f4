# 62-serve-swap: `zmem serve --swap` as the only swap (docs/serve.md, "As swap").
# The server is served over a unix socket and attached by the kernel's NBD client
# (/dev/nbdN, two connections), and by ublk (/dev/ublkbN) when `zmem serve --help`
# lists --ublk; mkswap + swapon on it, then a workload in a cgroup whose
# memory.max is below its working set writes a known pattern into every page
# and reads every page back. PASS: it ends within the bound with every page
# right, pages went through the served device, and every thread of the server
# is an IO flusher. Then swapoff, disconnect, stop: nothing left behind.
# Also: the kernel's NBD client with four connections (CAN_MULTI_CONN) reads
# back what it wrote through them (O_DIRECT, the page cache bypassed).
. "$(dirname "$0")/lib.sh"
quick=${QUICK:-0}
work=256M mem=96M limit=600
[ "$quick" = 1 ] && { work=128M; mem=64M; limit=400; }
dir=$(mktemp -d /tmp/zmem-serve-swap.XXXXXX)
cg=/sys/fs/cgroup/zmem-serve-swap
st_before=$(subtree_control)
server=
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    [ -d "$cg" ] && rmdir "$cg" 2>/dev/null
    [ "$(subtree_control)" = "$st_before" ] || echo "-memory" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT

# start_server NAME ARGS...: zmem serve in the background; its first stdout
# line (listening on … / serving /dev/ublkbN) into $ready within 60 s.
start_server() {
    local name=$1
    shift
    "$ZMEM" serve "$@" >"$OUT/$name.out" 2>"$OUT/$name.err" &
    server=$!
    local i
    for i in $(seq 600); do
        ready=$(head -1 "$OUT/$name.out" 2>/dev/null)
        [ -n "$ready" ] && { cat "$OUT/$name.err"; return 0; }
        kill -0 "$server" 2>/dev/null || break
        sleep 0.1
    done
    cat "$OUT/$name.err"
    return 1
}

stop_server() {
    kill -TERM "$server" 2>/dev/null
    timeout 30 tail --pid="$server" -f /dev/null
    wait "$server" 2>/dev/null
    server=
}

# not_flushers: server threads without PF_MEMALLOC_NOIO|PF_LOCAL_THROTTLE
# (the mask is read off a python3 that sets PR_SET_IO_FLUSHER on itself).
not_flushers() {
    python3 - "$server" <<'PY'
import ctypes, glob, sys
def flags(path):
    s = open(path).read()
    return int(s[s.rindex(")") + 2:].split()[6])
before = flags("/proc/thread-self/stat")
if ctypes.CDLL(None, use_errno=True).prctl(57, 1, 0, 0, 0) != 0:
    print("prctl(PR_SET_IO_FLUSHER) failed here"); sys.exit(1)
mask = flags("/proc/thread-self/stat") & ~before
bad = []
for t in glob.glob("/proc/%s/task/*/stat" % sys.argv[1]):
    try:
        if flags(t) & mask != mask:
            bad.append(open(t).read().split(")")[0].split("(")[1])
    except OSError:
        pass  # a zmem-populate thread that ended meanwhile
print(" ".join(bad))
PY
}

# pressure_verify: the workload in the cgroup, bounded; prints its result line.
pressure_verify() {
    timeout -k 10 "$limit" sh -c 'echo $$ >'"$cg"'/cgroup.procs && exec python3 - '"$work" <<'PY'
import mmap, struct, sys, time
n = int(sys.argv[1].rstrip("M")) * 256
m = mmap.mmap(-1, n * 4096)
t = time.time()
for i in range(n):
    m[i * 4096:(i + 1) * 4096] = struct.pack("<QQ", i, 0x5a5a0000 + i % 251) * 256
bad = sum(1 for i in range(n)
          if m[i * 4096:(i + 1) * 4096] != struct.pack("<QQ", i, 0x5a5a0000 + i % 251) * 256)
print("wrote and read back %d pages (%d MiB) in %.0f s: %d wrong" % (n, n // 256, time.time() - t, bad))
sys.exit(1 if bad else 0)
PY
}

# swap_run KIND DEVICE: the device as the only swap under the workload.
swap_run() {
    local kind=$1 dev=$2 rc=0 res flushers stat
    mkswap "$dev" >/dev/null && swapon "$dev" || { result "serve-swap-$kind" FAIL "mkswap/swapon $dev failed"; return; }
    echo "swaps: $(tail -n +2 /proc/swaps | awk '{print $1}' | xargs)"
    flushers=$(not_flushers)
    res=$(pressure_verify) || rc=$?
    echo "$res"
    grep -E 'swap|oom' "$cg/memory.events" 2>/dev/null | xargs echo "memory.events:"
    stat=$("$ZMEM" ctl "$dir/swap.ctl" mm_stat)
    echo "mm_stat after: $stat"
    timeout 300 swapoff "$dev" || echo "swapoff $dev failed"
    local orig
    orig=$(echo "$stat" | awk '{print $1}')
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        result "serve-swap-$kind" FAIL "workload $work in memory.max $mem not done in ${limit}s (a deadlock?)"
    elif [ "$rc" != 0 ]; then
        result "serve-swap-$kind" FAIL "workload exit $rc: $res"
    elif [ "${orig:-0}" = 0 ]; then
        result "serve-swap-$kind" FAIL "no page reached the served device: $res"
    elif [ -n "$flushers" ]; then
        result "serve-swap-$kind" FAIL "server threads not IO flushers: $flushers"
    else
        result "serve-swap-$kind" PASS "$work in memory.max $mem as the only swap on $dev: $res; $((orig >> 20)) MiB went through the device; every server thread an IO flusher"
    fi
}

# sockets: how many sockets the server holds (listening and control included).
sockets() { ls -l "/proc/$server/fd" 2>/dev/null | grep -c 'socket:'; }

# multi_conn: four connections, 16 MiB written with O_DIRECT, read back the same.
multi_conn() {
    local dev=/dev/nbd1 before after
    before=$(sockets)
    nbd-client -unix "$dir/nbd.sock" "$dev" -N swap -C 4 -b 4096 || { result nbd-multi-conn FAIL "nbd-client -C 4 failed"; return; }
    after=$(sockets)
    head -c 16M /dev/urandom >"$dir/data"
    dd if="$dir/data" of="$dev" bs=1M oflag=direct status=none
    if dd if="$dev" bs=1M count=16 iflag=direct status=none | cmp -s - "$dir/data"; then
        result nbd-multi-conn PASS "nbd-client -C 4 -b 4096 (the server holds $((after - before)) more socket descriptors); 16 MiB written and read back with O_DIRECT, the same"
    else
        result nbd-multi-conn FAIL "what was read through four connections differs from what was written"
    fi
    nbd-client -d "$dev" >/dev/null
}

modprobe nbd nbds_max=4 2>/dev/null
if ! [ -b /dev/nbd0 ] || ! command -v nbd-client >/dev/null; then
    result serve-swap-nbd SKIP "no nbd module or no nbd-client (apt-get install nbd-client)"
    exit 0
fi
[ -e /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers ||
    { result serve-swap-nbd SKIP "no cgroup v2 memory controller"; exit 0; }
grep -qw memory /sys/fs/cgroup/cgroup.subtree_control || echo "+memory" >/sys/fs/cgroup/cgroup.subtree_control
mkdir "$cg" && echo "$mem" >"$cg/memory.max"
[ "$(tail -n +2 /proc/swaps | wc -l)" = 0 ] || { result serve-swap-nbd SKIP "another swap is on"; exit 0; }

size=$((2 * ${work%M}))M
if start_server nbd --swap --size "$size" --algo lz4 --export swap \
    --listen "unix:$dir/nbd.sock" --ctl "$dir/swap.ctl"; then
    nbd-client -unix "$dir/nbd.sock" /dev/nbd0 -N swap -C 2 -b 4096 &&
        swap_run nbd /dev/nbd0 && nbd-client -d /dev/nbd0 >/dev/null
    multi_conn
    stop_server
else
    result serve-swap-nbd FAIL "zmem serve --swap did not start: $(tail -1 "$OUT/nbd.err")"
fi

if "$ZMEM" serve --help | grep -q -- '--ublk'; then
    modprobe ublk_drv 2>/dev/null
    if start_server ublk --ublk --swap --size "$size" --algo lz4 --export swap --ctl "$dir/swap.ctl" &&
        dev=$(echo "$ready" | sed -n 's/^serving //p') && [ -b "$dev" ]; then
        swap_run ublk "$dev"
        stop_server
    else
        result serve-swap-ublk FAIL "zmem serve --ublk --swap did not give a device: $ready $(tail -1 "$OUT/ublk.err")"
    fi
else
    result serve-swap-ublk SKIP "zmem serve has no --ublk"
fi
rmdir "$cg"
if ! left=$(leftovers); then result serve-swap FAIL "left behind: $left"; fi
