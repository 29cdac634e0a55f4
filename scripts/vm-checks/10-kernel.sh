# 10-kernel: what this kernel's zram and cgroup hierarchy offer (facts, no verdict
# beyond "zram is there").
. "$(dirname "$0")/lib.sh"
uname -r >"$OUT/uname"
echo "kernel      $(cat "$OUT/uname")$([ "$IN_VM" = 1 ] && echo ' (booted under TCG; timings mean nothing)')"
if ! zram_loaded; then
    result zram FAIL "no /sys/class/zram-control (modprobe zram failed)"
    exit 0
fi
if grep -qs '^zram ' /proc/modules; then kind=module; else kind=built-in; fi
zram_attrs >"$OUT/attrs"
id=$(cat /sys/class/zram-control/hot_add)
cat "/sys/block/zram$id/comp_algorithm" >"$OUT/comp_algorithm"
echo "$id" >/sys/class/zram-control/hot_remove
echo "zram        $kind; comp_algorithm: $(cat "$OUT/comp_algorithm")"
fs=$(awk '$2 == "/sys/fs/cgroup" { print $3 }' /proc/mounts)
case $fs in cgroup2) cg="v2 (cgroup2)" ;; tmpfs) cg="v1 (tmpfs with controller mounts)" ;; *) cg=${fs:-nothing mounted} ;; esac
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    st=$(xargs </sys/fs/cgroup/cgroup.subtree_control)
    cg+="; controllers: $(xargs </sys/fs/cgroup/cgroup.controllers); subtree_control: ${st:--}"
fi
echo "cgroup      $cg"
wb=$(grep -xE 'backing_dev|writeback|writeback_limit|writeback_limit_enable|bd_stat|writeback_compressed|compressed_writeback|writeback_batch_size' "$OUT/attrs" | xargs)
if grep -qx backing_dev "$OUT/attrs"; then echo "writeback   yes: $wb"; else echo "writeback   no (no backing_dev attribute)"; fi
if grep -qx recomp_algorithm "$OUT/attrs"; then echo "recompress  yes (recomp_algorithm, recompress)"; else echo "recompress  no (no recomp_algorithm attribute)"; fi
result zram PASS "$kind; $(xargs <"$OUT/comp_algorithm")"
