# scripts/vm-checks/lib.sh — sourced by every check. A check is one file
# NN-name.sh in this directory; `scripts/vm check` runs them in NN order inside
# the guest (or on this machine: `scripts/vm check host`) with:
#   ZMEM      the zmem binary under test
#   OUT       this check's directory for raw files (kept on the host afterwards)
#   RESULTS   the file `result` appends to
#   CORPUS    a page corpus (made on the host by `zmem corpus gen`)
#   REQUESTS  bench device's --requests
#   QUICK     1 for the quick set (CI), 0 for the whole check
#   ZMEM_VM_DISK  the guest's --disk (/dev/vda), unset on the host
#   IN_VM     1 inside a VM, 0 on the host
# A check prints what it does and what it saw, and records one line per
# verdict with `result NAME PASS|FAIL|SKIP DETAIL`. It undoes what it changed.

# result NAME STATUS DETAIL...: one verdict line (tab-separated) for the summary.
result() {
    local name=$1 status=$2
    shift 2
    case $status in PASS | FAIL | SKIP) ;; *) status=FAIL ;; esac
    printf '%s\t%s\t%s\n' "$name" "$status" "$*" >>"$RESULTS"
    echo "$status $name: $*"
}

# zram_loaded: make sure /sys/class/zram-control exists (Debian builds zram as
# a module; num_devices=0 so that loading it creates no device).
zram_loaded() {
    [ -e /sys/class/zram-control/hot_add ] && return 0
    modprobe zram num_devices=0 2>/dev/null || true
    [ -e /sys/class/zram-control/hot_add ]
}

# zram_attrs: the attribute names a hot-added device has (the device is removed again).
zram_attrs() {
    local id
    id=$(cat /sys/class/zram-control/hot_add) || return 1
    ls "/sys/block/zram$id"
    echo "$id" >/sys/class/zram-control/hot_remove
}

# swap_capable_dir: a directory on a filesystem that can hold a swap file,
# echoed. In a VM: the --disk, formatted ext4 and mounted (undone by
# swap_dir_release). On the host: a fresh directory under /var/tmp.
swap_capable_dir() {
    local d
    if [ "${IN_VM:-0}" = 1 ]; then
        [ -n "${ZMEM_VM_DISK:-}" ] || return 1
        d=$(mktemp -d /tmp/zmem-check-disk.XXXXXX)
        mkfs.ext4 -q -F "$ZMEM_VM_DISK" >/dev/null 2>&1 && mount "$ZMEM_VM_DISK" "$d" || { rmdir "$d"; return 1; }
    else
        d=$(mktemp -d /var/tmp/zmem-check.XXXXXX)
    fi
    echo "$d"
}

swap_dir_release() {
    local d=$1
    if mountpoint -q "$d" 2>/dev/null; then umount "$d"; fi
    rm -rf "$d"
}

# subtree_control: the root cgroup's cgroup.subtree_control as one line
# (empty on cgroup v1), to compare before and after a check.
subtree_control() {
    cat /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null | xargs
}

# No zmem-made change left: no swap, no zmem cgroup, and the same zram devices
# as at the start (ZRAM_BEFORE, set below). Echoes what is left, fails if any.
leftovers() {
    local left=""
    [ "$(tail -n +2 /proc/swaps | wc -l)" = 0 ] || left+=" swaps:$(tail -n +2 /proc/swaps | awk '{print $1}' | xargs)"
    local now
    now=$(ls -d /sys/block/zram* 2>/dev/null | xargs -n1 basename 2>/dev/null | xargs)
    [ "$now" = "$ZRAM_BEFORE" ] || left+=" zram:[$now] (before: [$ZRAM_BEFORE])"
    if find /sys/fs/cgroup -maxdepth 3 -name 'zmem*' 2>/dev/null | grep -q .; then
        left+=" cgroups:$(find /sys/fs/cgroup -maxdepth 3 -name 'zmem*' | xargs)"
    fi
    echo "${left# }"
    [ -z "$left" ]
}
ZRAM_BEFORE=$(ls -d /sys/block/zram* 2>/dev/null | xargs -n1 basename 2>/dev/null | xargs)
