# 66-hostile-ublk: `zmem serve --ublk` attacked (docs/hostile.md "Round 3, second pass"):
# a second server asking for the same --ublk-id or the same --export, --recover
# against a live server's device and a device that does not exist, absurd --queues and
# --queue-depth, hostile control requests while ublk I/O runs (the data must read back),
# a reader holding /dev/ublkbN open when the server stops, and a plain serve after a
# SIGKILL. Each refusal must be an error that names the cause, leave no device behind and
# leave the running server serving. Bounded: every command runs under `timeout`.
. "$(dirname "$0")/lib.sh"
if ! modprobe ublk_drv 2>/dev/null || [ ! -e /dev/ublk-control ]; then
    result hostile-ublk SKIP "no ublk driver (modprobe ublk_drv failed; CONFIG_BLK_DEV_UBLK)"
    exit 0
fi
size=64M
io_mib=16
[ "${QUICK:-0}" = 1 ] && io_mib=4
pids=
cleanup() {
    for p in $pids; do kill -TERM "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    rm -f /tmp/zmem-hostile-ublk.pat /tmp/zmem-hostile-ublk.back
}
trap cleanup EXIT
failed=
fail() { echo "FAIL: $*"; failed="$failed; $*"; }
ublk_devs() { ls /sys/class/ublk-char 2>/dev/null | xargs; }

# serve NAME ARGS...: start `zmem serve --ublk --size $size ARGS` in the background; sets
# $pid and $dev (empty when it did not start within 60 s: then it is stopped).
serve() {
    local name=$1
    shift
    "$ZMEM" serve --ublk --size "$size" "$@" >"$OUT/$name.out" 2>"$OUT/$name.log" &
    pid=$! dev=
    pids="$pids $pid"
    for _ in $(seq 600); do
        dev=$(sed -n 's/^serving \(\/dev\/ublkb[0-9]*\)$/\1/p' "$OUT/$name.out")
        [ -n "$dev" ] && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    echo "$name did not start: $(tail -2 "$OUT/$name.log")"
    return 1
}

# refused WHAT WANT ARGS...: `zmem serve --ublk --size $size ARGS` must exit non-zero within
# 60 s, its message containing WANT, and leave the set of ublk devices as it was.
refused() {
    local what=$1 want=$2 before rc=0
    shift 2
    before=$(ublk_devs)
    timeout -k 5 60 "$ZMEM" serve --ublk --size "$size" "$@" >"$OUT/refused.out" 2>"$OUT/refused.log" || rc=$?
    echo "+ $what: exit $rc: $(grep -v '^zmem serve: [0-9]' "$OUT/refused.log" | tail -1)"
    [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ] || fail "$what: exit $rc (served or hung)"
    grep -q -- "$want" "$OUT/refused.log" || fail "$what: no '$want' in: $(tail -1 "$OUT/refused.log")"
    [ "$(ublk_devs)" = "$before" ] || fail "$what: ublk devices $before became $(ublk_devs)"
}

# still_serves DEV: 1 MiB written at a random place reads back the same.
still_serves() {
    local off=$((RANDOM % 60))
    head -c 1M /dev/urandom >/tmp/zmem-hostile-ublk.pat
    timeout 30 dd if=/tmp/zmem-hostile-ublk.pat of="$1" bs=1M seek="$off" oflag=direct conv=fsync status=none &&
        timeout 30 dd if="$1" of=/tmp/zmem-hostile-ublk.back bs=1M skip="$off" count=1 iflag=direct status=none &&
        cmp -s /tmp/zmem-hostile-ublk.pat /tmp/zmem-hostile-ublk.back
}

serve a --ublk-id 7 --export hx || { result hostile-ublk FAIL "the first server did not start"; exit 0; }
a_pid=$pid a_dev=$dev
echo "serving $a_dev (pid $a_pid); /run/zmem and its socket: $(stat -c '%U:%G %a %F' /run/zmem /run/zmem/hx.ctl | xargs)"
[ "$a_dev" = /dev/ublkb7 ] || fail "--ublk-id 7 gave $a_dev"

refused "a second server with --ublk-id 7" "ublkb7" --ublk-id 7 --export hy
still_serves "$a_dev" || fail "$a_dev stopped serving after a second --ublk-id 7"
refused "a second server on --export hx" "in use by a running server" --export hx
refused "--recover of the live /dev/ublkb7" "live" --recover --ublk-id 7 --export hz
still_serves "$a_dev" || fail "$a_dev stopped serving after --recover against it"
refused "--recover of a device that does not exist" "ublk device 99" --recover --ublk-id 99 --export hz
[ -e /dev/ublkb99 ] && fail "--recover --ublk-id 99 made /dev/ublkb99"
refused "--queues 0" "--queues 0" --queues 0 --export hz
refused "--queues 5000" "--queues 5000" --queues 5000 --export hz
refused "--queue-depth 0" "--queue-depth 0" --queue-depth 0 --export hz
refused "--queue-depth 70000" "queue-depth" --queue-depth 70000 --export hz
refused "--ublk-id 4294967295" "ublk-id" --ublk-id 4294967295 --export hz

# Hostile control requests while ublk I/O runs: every refusal an error, the data intact.
echo "+ $io_mib MiB written through $a_dev while control requests arrive"
head -c "${io_mib}M" /dev/urandom >"$OUT/pattern.bin"
timeout 120 dd if="$OUT/pattern.bin" of="$a_dev" bs=64k oflag=direct conv=fsync status=none &
dd_pid=$!
ctl=/run/zmem/hx.ctl
for req in "reset 1" "disksize 1G" "comp_algorithm zstd" "max_comp_streams 0" "idle all" \
    "compact 1" "recompress type=huge" "writeback idle" "backing_dev /dev/vda" "mem_used_max 0"; do
    set -- $req
    r=$(timeout 20 "$ZMEM" ctl "$ctl" "$@" 2>&1) && rc=0 || rc=$?
    echo "  ctl $req: exit $rc $r" | head -c 300
    echo
done
python3 - "$ctl" <<'EOF' || fail "raw control requests: the server did not answer each"
import socket, sys
for req in [b"\x00\xff" * 4096 + b"\n", b"A" * 70000, b"disksize\n", b"\n", b"mm_stat extra words here\n"]:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(sys.argv[1])
    try:
        s.sendall(req)
    except OSError:
        pass
    s.shutdown(socket.SHUT_WR)
    reply = b""
    while True:
        try:
            b = s.recv(4096)
        except OSError:
            break
        if not b:
            break
        reply += b
    print("  raw", repr(req[:12]), "->", repr(reply[:80]))
EOF
wait "$dd_pid" || fail "writing $a_dev while control requests arrived failed"
timeout 60 dd if="$a_dev" of="$OUT/back.bin" bs=64k count=$((io_mib * 16)) iflag=direct status=none
cmp -s "$OUT/pattern.bin" "$OUT/back.bin" || fail "$a_dev read back other data after the control requests"
rm -f "$OUT/pattern.bin" "$OUT/back.bin"
echo "  mm_stat: $("$ZMEM" ctl "$ctl" mm_stat)"

# A reader holding /dev/ublkb7 open when the server stops: the server exits at once (before,
# DEL_DEV waited for the reader to close it), the device goes when the reader closes it.
echo "+ SIGTERM while a reader holds $a_dev open"
sleep 120 <"$a_dev" &
holder=$!
t0=$(date +%s)
kill -TERM "$a_pid"
for _ in $(seq 150); do kill -0 "$a_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$a_pid" 2>/dev/null; then
    fail "the server still runs 15 s after SIGTERM with a reader holding $a_dev"
    kill -KILL "$a_pid"
fi
wait "$a_pid"
rc=$?
echo "  exit $rc after $(($(date +%s) - t0)) s; $(tail -1 "$OUT/a.log")"
[ "$rc" = 0 ] || fail "the server exited $rc after SIGTERM with a reader holding $a_dev"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
sleep 1
[ -e "$a_dev" ] && fail "$a_dev still there after its server stopped and the reader closed it"
grep -q hx.ctl <(ls /run/zmem) && fail "the control socket /run/zmem/hx.ctl is left"

# SIGKILL, then a plain (non-recover) serve asking for the same id (7: free again once the
# reader above closed it).
serve k --ublk-id 7 --export hk || fail "server k did not start on --ublk-id 7 (the reader's device not deleted?)"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
sleep 1
echo "+ after SIGKILL: devices $(ublk_devs); /run/zmem: $(ls /run/zmem | xargs)"
refused "a plain serve of the id a SIGKILLed server left" "--recover --ublk-id 7" --ublk-id 7 --export hk2
# Its keeper holds the dead server's store: a plain serve of that export would lose it.
refused "a plain serve on the SIGKILLed server's export" "--recover" --export hk
refused "--recover of another export into the SIGKILLed server's device" "nothing to recover" --recover --ublk-id 7 --export hr
if [ -e /sys/class/ublk-char/ublkc7 ]; then
    serve r --recover --ublk-id 7 --export hk || fail "recovering ublkb7 failed"
    [ -n "$dev" ] && still_serves "$dev" || fail "the recovered /dev/ublkb7 does not serve"
    kill -TERM "$pid"
    wait "$pid"
fi
# The largest queues the driver takes: refused or served within bounds, never the guest's
# memory (4096 x 4096 tags of 512 KiB buffers would be 8 TiB).
echo "+ --queues 4096 --queue-depth 4096"
if serve q --queues 4096 --queue-depth 4096 --export hq; then
    echo "  served $dev: $(grep -E 'VmRSS|Threads' /proc/$pid/status | xargs)"
    still_serves "$dev" || fail "--queues 4096 --queue-depth 4096: $dev does not serve"
    kill -TERM "$pid"
    wait "$pid"
else
    echo "  $(tail -1 "$OUT/q.log")"
fi
free -m | sed -n 2p
sleep 1
left=$(ublk_devs)
[ -z "$left" ] || fail "ublk devices left at the end: $left"
if [ -n "$failed" ]; then
    result hostile-ublk FAIL "${failed#; }"
else
    result hostile-ublk PASS "second --ublk-id, second --export, --recover of a live and a missing device, absurd --queues/--queue-depth/--ublk-id refused, nothing left; control requests during I/O left the data intact; SIGTERM with a reader holding the device exits at once; a plain serve after SIGKILL (its id or its export) names --recover, --recover of another export refused, --recover of its own export serves"
fi
