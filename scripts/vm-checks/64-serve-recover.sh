# 64-serve-recover: `zmem serve --ublk` survives `kill -9` (docs/serve.md "Crash recovery"):
# an ext4 on /dev/ublkbN takes files, each fsync'ed and then recorded with its checksum,
# while the server is killed with SIGKILL; `zmem serve --ublk --ublk-id N --recover`
# re-attaches the device (the queued I/O resumes) and serves the store its keeper held.
# The writer finishes, the filesystem unmounts, e2fsck -fn finds it clean, it mounts again
# and every recorded file reads back with its checksum; SIGTERM then deletes the device
# and ends the keeper.
. "$(dirname "$0")/lib.sh"
if ! modprobe ublk_drv 2>/dev/null || [ ! -e /dev/ublk-control ]; then
    result serve-recover SKIP "no ublk driver (modprobe ublk_drv failed; CONFIG_BLK_DEV_UBLK)"
    exit 0
fi
size=256M before=200 after=50
[ "${QUICK:-0}" = 1 ] && before=30 after=10
id=47
sockdir=$(mktemp -d /tmp/zmem-recover-ctl.XXXXXX)
ctl="$sockdir/rec.ctl"
mnt=$(mktemp -d /tmp/zmem-recover.XXXXXX)
acked="$sockdir/acked.txt" # the guest's own /tmp: appended while read
: >"$acked"
pid= wpid=
cleanup() {
    cp "$acked" "$OUT/acked.txt" 2>/dev/null
    [ -n "$wpid" ] && kill -KILL "$wpid" 2>/dev/null
    mountpoint -q "$mnt" && umount "$mnt"
    rmdir "$mnt" 2>/dev/null
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    [ -e "$sockdir/rec.keep" ] && kill "$(keeper_pid)" 2>/dev/null
    rm -rf "$sockdir"
}
trap cleanup EXIT
fail() { result serve-recover FAIL "$*"; exit 0; }
keeper_pid() { cat "$OUT"/first.log "$OUT"/second.log 2>/dev/null | sed -n 's/.*the keeper (pid \([0-9]*\)).*/\1/p' | tail -1; }

# serve LOG ARGS...: zmem serve --ublk in the background; waits for its `serving` line.
serve() {
    local log=$1
    shift
    echo "+ zmem serve --ublk --size $size --ublk-id $id --export rec --ctl $ctl $*"
    "$ZMEM" serve --ublk --size "$size" --ublk-id "$id" --export rec --ctl "$ctl" "$@" \
        >"$OUT/$log.out" 2>"$OUT/$log.log" &
    pid=$!
    for _ in $(seq 600); do
        grep -q '^serving /dev/ublkb' "$OUT/$log.out" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    cat "$OUT/$log.log"
    grep -q "^serving /dev/ublkb$id\$" "$OUT/$log.out" || { pid=; fail "$log: no 'serving /dev/ublkb$id' line"; }
}

# The writer: 64 KiB files of random bytes, each fsync'ed, then recorded (acknowledged).
writer() {
    local i=0 f
    while [ ! -e "$sockdir/stop" ]; do
        f=f$i
        head -c 65536 /dev/urandom >"$sockdir/blk"
        cp "$sockdir/blk" "$mnt/$f" && sync "$mnt/$f" || { echo "write $f failed" >>"$OUT/writer.err"; return 1; }
        echo "$(sha256sum <"$sockdir/blk" | cut -d' ' -f1) $f" >>"$acked"
        i=$((i + 1))
    done
}
count() { wc -l <"$acked"; }
wait_count() {
    for _ in $(seq 3000); do [ "$(count)" -ge "$1" ] && return 0; sleep 0.1; done
    return 1
}

serve first
dev=/dev/ublkb$id
echo "+ mkfs.ext4 $dev; mount; the writer"
mkfs.ext4 -q -F "$dev" >"$OUT/mkfs.log" 2>&1 || fail "mkfs.ext4: $(tail -1 "$OUT/mkfs.log")"
mount "$dev" "$mnt" || fail "mount $dev"
writer &
wpid=$!
wait_count "$before" || fail "the writer acknowledged only $(count) files"
echo "+ kill -9 $pid (after $(count) files acknowledged, the writer running)"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
pid=
n_kill=$(count)
sleep 1
[ -e "$sockdir/rec.keep" ] || fail "no keeper socket after the crash"

echo "+ zmem serve --recover with another --algo (lz4, the dead server's is the default lzo-rle): refused"
if timeout 60 "$ZMEM" serve --ublk --size "$size" --ublk-id "$id" --export rec --ctl "$ctl" --algo lz4 \
    --recover >/dev/null 2>"$OUT/refused.log"; then
    fail "--recover with another --algo was accepted"
fi
cat "$OUT/refused.log"
grep -q -- "--algo differs" "$OUT/refused.log" || fail "refusal does not name --algo: $(tail -1 "$OUT/refused.log")"

serve second --recover
grep -q "zmem serve: recovered " "$OUT/second.log" || fail "no 'recovered' line"
wait_count $((n_kill + after)) || fail "the writer did not resume after recovery ($(count) files)"
touch "$sockdir/stop"
wait "$wpid" || fail "the writer failed: $(cat "$OUT/writer.err" 2>/dev/null)"
wpid=
n=$(count)
echo "+ umount; e2fsck -fn; mount; sha256 of every acknowledged file ($n, $n_kill before the kill)"
umount "$mnt" || fail "umount $dev"
e2fsck -fn "$dev" >"$OUT/fsck.log" 2>&1 || { tail -5 "$OUT/fsck.log"; fail "e2fsck -fn after recovery: $(tail -1 "$OUT/fsck.log")"; }
tail -1 "$OUT/fsck.log"
mount "$dev" "$mnt" || fail "mount $dev after recovery"
bad=0
while read -r sum f; do
    [ "$(sha256sum <"$mnt/$f" | cut -d' ' -f1)" = "$sum" ] || { echo "differs: $f"; bad=$((bad + 1)); }
done <"$acked"
[ "$bad" = 0 ] || fail "$bad of $n acknowledged files differ"
umount "$mnt"
mm=$("$ZMEM" ctl "$ctl" mm_stat) || fail "zmem ctl $ctl mm_stat"
echo "mm_stat after recovery: $mm"

echo "+ kill -TERM $pid"
kpid=$(keeper_pid)
kill -TERM "$pid"
for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "server still running 30 s after SIGTERM"
wait "$pid" || fail "zmem serve --recover exited $? after SIGTERM"
pid=
tail -2 "$OUT/second.log"
sleep 1
[ -e "$dev" ] && fail "$dev still there after SIGTERM"
[ -e "$sockdir/rec.keep" ] && fail "the keeper's socket is still there after SIGTERM"
# A zombie (an orphan's exit not yet reaped by init) has ended.
state=$([ -n "$kpid" ] && awk '{print $3}' "/proc/$kpid/stat" 2>/dev/null)
[ -n "$state" ] && [ "$state" != Z ] && fail "the keeper (pid $kpid) still runs after SIGTERM"
result serve-recover PASS "$dev: ext4 with $n_kill fsync'ed files, kill -9 with the writer running, --recover: $(sed -n 's/^zmem serve: recovered \([0-9]*\) pages.*/\1 pages/p' "$OUT/second.log") back, the writer resumed ($n files), e2fsck -fn clean, every file's sha256 equal; SIGTERM deleted the device and ended the keeper"
