# 60-serve-ublk: `zmem serve --ublk` as a kernel block device (docs/serve.md "ublk"):
# /dev/ublkbN appears with 4096-byte blocks and discard, takes an ext4 that passes
# fio --verify=crc32c, `zmem ctl` mm_stat shows the pages it stored, a discard of the
# whole device frees them, and SIGTERM stops the server and deletes the device.
. "$(dirname "$0")/lib.sh"
if ! modprobe ublk_drv 2>/dev/null || [ ! -e /dev/ublk-control ]; then
    result serve-ublk SKIP "no ublk driver (modprobe ublk_drv failed; CONFIG_BLK_DEV_UBLK)"
    exit 0
fi
size=256M fio_size=64M
[ "${QUICK:-0}" = 1 ] && fio_size=4M
# The control socket in the guest's own /tmp ($OUT is shared with the host: no sockets there).
sockdir=$(mktemp -d /tmp/zmem-ublk-ctl.XXXXXX)
ctl="$sockdir/ublk.ctl"
mnt=$(mktemp -d /tmp/zmem-ublk.XXXXXX)
pid=
cleanup() {
    mountpoint -q "$mnt" && umount "$mnt"
    rmdir "$mnt" 2>/dev/null
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$sockdir"
}
trap cleanup EXIT
fail() { result serve-ublk FAIL "$*"; exit 0; }

echo "+ zmem serve --ublk --size $size --ctl $ctl"
"$ZMEM" serve --ublk --size "$size" --ctl "$ctl" >"$OUT/serve.out" 2>"$OUT/serve.log" &
pid=$!
dev=
for _ in $(seq 600); do
    dev=$(sed -n 's/^serving \(\/dev\/ublkb[0-9]*\)$/\1/p' "$OUT/serve.out")
    [ -n "$dev" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
cat "$OUT/serve.log"
[ -n "$dev" ] || { pid=; fail "no 'serving /dev/ublkbN' line: $(tail -1 "$OUT/serve.log")"; }
[ -b "$dev" ] || fail "$dev is not a block device"
q=/sys/block/$(basename "$dev")/queue
limits="logical_block_size=$(cat $q/logical_block_size) physical_block_size=$(cat $q/physical_block_size) discard_granularity=$(cat $q/discard_granularity) write_zeroes_max_bytes=$(cat $q/write_zeroes_max_bytes)"
echo "$dev: $(blockdev --getsize64 "$dev") bytes, $limits"
case $limits in
    "logical_block_size=4096 physical_block_size=4096 discard_granularity=4096 write_zeroes_max_bytes="[1-9]*) ;;
    *) fail "$dev's queue limits: $limits" ;;
esac

echo "+ mkfs.ext4 $dev; mount; fio --verify=crc32c --size=$fio_size"
mkfs.ext4 -q -F "$dev" >"$OUT/mkfs.log" 2>&1 || fail "mkfs.ext4: $(tail -1 "$OUT/mkfs.log")"
mount "$dev" "$mnt" || fail "mount $dev"
fio --name=ublk-verify --filename="$mnt/fio.dat" --size="$fio_size" --bs=4k --rw=randwrite \
    --ioengine=psync --direct=1 --verify=crc32c --do_verify=1 --randrepeat=0 \
    --output="$OUT/fio.txt" >/dev/null 2>&1 || { tail -5 "$OUT/fio.txt"; fail "fio --verify=crc32c failed (see fio.txt)"; }
grep -E "err=|verify" "$OUT/fio.txt" | head -3
umount "$mnt" || fail "umount $dev"
e2fsck -fn "$dev" >"$OUT/fsck.log" 2>&1 || fail "e2fsck after unmount: $(tail -1 "$OUT/fsck.log")"

mmstat() { "$ZMEM" ctl "$ctl" mm_stat; }
mm=$(mmstat) || fail "zmem ctl $ctl mm_stat"
echo "mm_stat after fio: $mm"
orig=$(echo "$mm" | awk '{print $1}')
[ "${orig:-0}" -gt 0 ] || fail "mm_stat shows no data stored: $mm"
echo "+ blkdiscard $dev"
blkdiscard -f "$dev" || fail "blkdiscard $dev"
mm2=$(mmstat) || fail "zmem ctl $ctl mm_stat"
echo "mm_stat after blkdiscard: $mm2"
[ "$(echo "$mm2" | awk '{print $1}')" = 0 ] || fail "discard left data: $mm2"

echo "+ kill -TERM $pid"
kill -TERM "$pid"
rc=0
for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && { kill -KILL "$pid"; pid=; fail "server still running 30 s after SIGTERM"; }
wait "$pid" || rc=$?
pid=
tail -2 "$OUT/serve.log"
[ "$rc" = 0 ] || fail "zmem serve exited $rc after SIGTERM"
sleep 1
[ -e "$dev" ] && fail "$dev still there after SIGTERM"
ls /sys/class/ublk-char 2>/dev/null | grep -q . && fail "ublk char devices left: $(ls /sys/class/ublk-char | xargs)"
result serve-ublk PASS "$dev: ext4 + fio --verify=crc32c ($fio_size) passed, mm_stat orig_data_size $orig after, 0 after blkdiscard; SIGTERM deleted the device"
