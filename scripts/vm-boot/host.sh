# scripts/vm boot — sourced by scripts/vm: install zmem's .deb into a Debian
# root filesystem with systemd (bookworm, with Debian's systemd-zram-generator),
# `zmem persist` boot.conf there, enable zmem-exporter.service and
# zmem-policy.service, boot a distro kernel with systemd as PID 1, and check
# what the boot made (docs/ops.md, "Proven by a boot"):
#   - systemd-analyze verify passes on both units;
#   - both units are active, and the exporter's scrape passes promtool;
#   - zram0 is swap at boot.conf's priority and algorithm, the sysctls are
#     boot.conf's, and `zmem apply --dry-run` of the same file after the boot
#     plans nothing ("nothing to do"): the boot made what apply plans;
#   - zmem doctor (when the binary has it) is clean, finds each planted
#     problem (zswap on, a disk swap above zram, page-cluster 3), and is
#     clean again after their fixes;
#   - once the boot is over (guest.sh purge, a transient unit): with both
#     units enabled and running, a verdict of root's in /var/lib/zmem and a
#     file of the user's beside it, `dpkg --remove zmem` stops the units and
#     keeps the configuration, and `dpkg --purge zmem` leaves no zmem process,
#     no unit, link or deb-systemd-helper state, no /etc/zmem, no policy state,
#     only the user's file in /var/lib/zmem and persist's files for other
#     programs (zram-generator.conf, sysctl.d).
# The base root filesystem is made once (mmdebstrap, ~280 MB, cached in
# $CACHE/rootfs-bookworm); each boot writes into an overlay of it, removed
# afterwards.

BOOT_SUITE=bookworm
BOOT_PACKAGES=systemd,systemd-sysv,udev,systemd-zram-generator,util-linux,procps,kmod,python3,man-db,bash-completion

boot_rootfs() {
    local base=$CACHE/rootfs-$BOOT_SUITE
    if [ ! -x "$base/usr/lib/systemd/systemd" ] || [ ! -e "$base/.zmem-packages" ] ||
        [ "$(cat "$base/.zmem-packages")" != "$BOOT_PACKAGES" ]; then
        command -v mmdebstrap >/dev/null || die "boot: mmdebstrap missing (scripts/vm setup)"
        say "boot: making the $BOOT_SUITE root filesystem (mmdebstrap; once)"
        rm -rf "$base"
        mmdebstrap --quiet --variant=minbase --include="$BOOT_PACKAGES" "$BOOT_SUITE" "$base" "$MIRROR" >&2 ||
            die "boot: mmdebstrap $BOOT_SUITE failed"
        echo "$BOOT_PACKAGES" >"$base/.zmem-packages"
    fi
    echo "$base"
}

# The per-boot root: an overlay of the base, the host's kernel modules bound in.
boot_mounts=()
boot_umount() {
    local i
    for ((i = ${#boot_mounts[@]} - 1; i >= 0; i--)); do umount "${boot_mounts[$i]}" 2>/dev/null || umount -l "${boot_mounts[$i]}" 2>/dev/null || true; done
    boot_mounts=()
}
boot_overlay() {
    local base=$1 dir=$2
    mkdir -p "$dir/upper" "$dir/work" "$dir/root"
    mount -t overlay overlay -o "lowerdir=$base,upperdir=$dir/upper,workdir=$dir/work" "$dir/root" ||
        die "boot: cannot mount an overlay of $base"
    boot_mounts+=("$dir/root")
    mkdir -p "$dir/root/usr/lib/modules"
    mount --bind /usr/lib/modules "$dir/root/usr/lib/modules" && boot_mounts+=("$dir/root/usr/lib/modules")
}

# In the overlay, before the boot: install the package, persist, enable.
boot_prepare() {
    local root=$1 deb=$2
    cp "$deb" "$root/tmp/zmem.deb"
    chroot "$root" dpkg -i /tmp/zmem.deb >"$BOOT_OUT/dpkg" 2>&1 || die "boot: dpkg -i failed: $(tail -3 "$BOOT_OUT/dpkg")"
    cp "$REPO/scripts/vm-boot/boot.conf" "$root/tmp/boot.conf"
    # Debian's systemd-zram-generator ships /etc/systemd/zram-generator.conf (a default
    # [zram0]): persist refuses to replace a file it did not write, naming it, then --force.
    local prc=0
    chroot "$root" zmem persist /tmp/boot.conf >"$BOOT_OUT/persist-refused" 2>&1 || prc=$?
    echo "$prc" >"$BOOT_OUT/persist-refused.rc"
    prc=0
    chroot "$root" zmem persist --force /tmp/boot.conf >"$BOOT_OUT/persist" 2>&1 || prc=$?
    echo "$prc" >"$BOOT_OUT/persist.rc"
    chroot "$root" systemctl enable zmem-exporter.service zmem-policy.service >"$BOOT_OUT/enable" 2>&1 ||
        die "boot: systemctl enable failed: $(cat "$BOOT_OUT/enable")"
    install -m 755 "$REPO/scripts/vm-boot/guest.sh" "$root/usr/local/sbin/zmem-bootcheck"
    cat >"$root/etc/systemd/system/zmem-bootcheck.service" <<'UNIT'
[Unit]
Description=scripts/vm boot: check what the boot made, then power off
After=multi-user.target zmem-exporter.service zmem-policy.service swap.target
[Service]
Type=oneshot
TimeoutStartSec=900
ExecStart=/usr/local/sbin/zmem-bootcheck
[Install]
WantedBy=multi-user.target
UNIT
    chroot "$root" systemctl enable zmem-bootcheck.service >/dev/null 2>&1
}

boot_result() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$BOOT_OUT/results"; }

# After the boot: one verdict per question.
boot_verdicts() {
    local o=$1/bootcheck
    [ -f "$o/done" ] || { boot_result boot FAIL "the guest check did not finish (guest.log: $(tail -2 "$o/guest.log" 2>/dev/null))"; return; }
    boot_result boot PASS "$(cat "$o/system-state")"
    local prc; prc=$(cat "$BOOT_OUT/persist.rc")
    if [ "$(cat "$BOOT_OUT/persist-refused.rc")" = 0 ] || ! grep -q "zram-generator.conf" "$BOOT_OUT/persist-refused"; then
        boot_result persist-refuses-package-default FAIL "persist without --force: $(tail -1 "$BOOT_OUT/persist-refused")"
    else
        boot_result persist-refuses-package-default PASS "$(tail -1 "$BOOT_OUT/persist-refused")"
    fi
    [ "$prc" = 0 ] && boot_result persist PASS "--force: $(grep -c '^wrote' "$BOOT_OUT/persist") files" ||
        boot_result persist FAIL "exit $prc: $(tail -2 "$BOOT_OUT/persist")"
    [ "$(cat "$o/verify.rc")" = 0 ] && boot_result systemd-analyze-verify PASS "" ||
        boot_result systemd-analyze-verify FAIL "$(head -3 "$o/verify")"
    [ "$(cat "$o/units-active.rc")" = 0 ] && boot_result units-active PASS "$(tr '\n' ' ' <"$o/units-active")" ||
        boot_result units-active FAIL "$(tr '\n' ' ' <"$o/units-active")"
    if [ "$(cat "$o/metrics.rc")" != 0 ]; then
        boot_result exporter FAIL "no scrape: $(tail -1 "$o/metrics")"
    elif ! PATH="$PATH:$REPO/target/ci-tools/usr/bin" command -v promtool >/dev/null; then
        boot_result exporter SKIP "promtool not found (scraped $(grep -c '^zmem_\|^zram_\|^zswap_' "$o/metrics") samples)"
    elif PATH="$PATH:$REPO/target/ci-tools/usr/bin" promtool check metrics <"$o/metrics" >"$BOOT_OUT/promtool" 2>&1; then
        boot_result exporter PASS "$(grep -vc '^#' "$o/metrics") samples, promtool clean"
    else
        boot_result exporter FAIL "promtool: $(head -2 "$BOOT_OUT/promtool")"
    fi
    local swap alg ds mem want
    swap=$(awk '$1 == "/dev/zram0" { print $5 }' "$o/swaps")
    alg=$(sed -n 's/.*\[\([^]]*\)\].*/\1/p' "$o/comp_algorithm")
    ds=$(cat "$o/disksize")
    mem=$(awk '{ print $2 }' "$o/memtotal")
    # zram-generator: ram in MiB (MemTotal / 1024, truncated), min(ram / 2, 4096) MiB.
    want=$(((mem / 1024 / 2 < 4096 ? mem / 1024 / 2 : 4096) * 1024 * 1024))
    [ "$swap" = 100 ] && [ "$alg" = lz4 ] && [ "$ds" = "$want" ] &&
        boot_result zram-swap PASS "/dev/zram0 swap prio $swap, $alg, disksize $ds" ||
        boot_result zram-swap FAIL "prio '${swap:-not swap}', algorithm '$alg', disksize $ds (want 100, lz4, $want)"
    [ "$(cat "$o/swappiness")" = 180 ] && [ "$(cat "$o/page-cluster")" = 0 ] &&
        boot_result sysctl PASS "swappiness 180, page-cluster 0" ||
        boot_result sysctl FAIL "swappiness $(cat "$o/swappiness"), page-cluster $(cat "$o/page-cluster") (want 180, 0)"
    grep -q "nothing to do" "$o/dry-run" && boot_result plan-equals-boot PASS "apply --dry-run after the boot: $(grep 'nothing to do' "$o/dry-run")" ||
        boot_result plan-equals-boot FAIL "apply --dry-run after the boot plans: $(grep -v '^#' "$o/dry-run" | head -3 | tr '\n' ';')"
    [ "$(cat "$o/completion")" = apply ] && boot_result completion PASS "zmem ap<TAB> -> apply" ||
        boot_result completion FAIL "zmem ap<TAB> -> '$(cat "$o/completion")'"
    grep -q "zmem-apply" "$o/man" && boot_result man PASS "man zmem-apply renders" || boot_result man FAIL "$(head -2 "$o/man")"
    if [ -f "$o/doctor-clean.rc" ]; then
        [ "$(cat "$o/doctor-clean.rc")" = 0 ] && boot_result doctor-clean PASS "" || boot_result doctor-clean FAIL "$(head -3 "$o/doctor-clean" | tr '\n' ';')"
        local miss=
        for w in zswap page-cluster priority; do grep -qi "$w" "$o/doctor-planted" || miss+=" $w"; done
        [ "$(cat "$o/doctor-planted.rc")" != 0 ] && [ -z "$miss" ] && boot_result doctor-planted PASS "exit $(cat "$o/doctor-planted.rc"), found zswap, page-cluster, priority" ||
            boot_result doctor-planted FAIL "exit $(cat "$o/doctor-planted.rc"), missed:${miss:- none}"
        [ "$(cat "$o/doctor-fixed.rc")" = 0 ] && boot_result doctor-fixed PASS "" || boot_result doctor-fixed FAIL "$(head -3 "$o/doctor-fixed" | tr '\n' ';')"
    else
        boot_result doctor SKIP "this zmem has no doctor command"
    fi
    purge_verdicts "$o/purge"
}

# `dpkg --purge zmem` after enabling both units (guest.sh, docs/ops.md "Installing").
purge_verdicts() {
    local p=$1 before left
    [ -f "$p/dpkg.rc" ] || { boot_result purge FAIL "the guest did not get to the purge"; return; }
    [ "$(cat "$p/dpkg.rc")" = 0 ] && boot_result purge PASS "$(grep -c . "$p/dpkg") lines from dpkg --purge zmem" ||
        boot_result purge FAIL "exit $(cat "$p/dpkg.rc"): $(tail -2 "$p/dpkg" | tr '\n' ';')"
    if [ "$(cat "$p/remove.rc")" != 0 ] || [ -s "$p/remove-procs" ]; then
        boot_result remove FAIL "exit $(cat "$p/remove.rc"), running after: $(tr '\n' ';' <"$p/remove-procs")"
    elif ! grep -qx zmem.conf "$p/remove-files" || ! grep -q '^verdict-' "$p/remove-files"; then
        boot_result remove FAIL "the configuration did not stay: $(tr '\n' ' ' <"$p/remove-files")"
    else
        boot_result remove PASS "units stopped, nothing running; /etc/zmem/zmem.conf and the verdict kept"
    fi
    before=$(awk '{ print $3 }' "$p/before-procs" | sort | tr '\n' ' ')
    if [ -s "$p/procs" ] || [ "$(cat "$p/procs.rc")" = 0 ]; then
        boot_result purge-stops FAIL "still running: $(tr '\n' ';' <"$p/procs")"
    elif [ "$(grep -c . "$p/before-procs")" -lt 2 ]; then
        boot_result purge-stops FAIL "both units were not running before the purge: $(tr '\n' ';' <"$p/before-procs")"
    else
        boot_result purge-stops PASS "before: zmem ${before% }; after: nothing"
    fi
    if [ -s "$p/units" ] || grep -q 'zmem-' "$p/loaded"; then
        boot_result purge-units FAIL "left: $(cat "$p/units" "$p/loaded" | tr '\n' ' ')"
    elif ! grep -q 'wants/zmem-policy.service' "$p/before-units"; then
        boot_result purge-units FAIL "zmem-policy.service was not enabled before the purge: $(tr '\n' ' ' <"$p/before-units")"
    else
        boot_result purge-units PASS "$(grep -c . "$p/before-units") unit files, links and states before, none after"
    fi
    # What must go: /etc/zmem (README, persist's zmem.conf), the verdict, the policy
    # state, /usr/share/doc/zmem; what must stay: the user's file in /var/lib/zmem and
    # the files persist wrote for other programs (zram-generator.conf, sysctl.d).
    left=$(cat "$p/left")
    local miss=
    for f in zmem.conf verdict- policy.state; do grep -q "$f" "$p/before-files" || miss+=" $f"; done
    if [ -n "$miss" ]; then
        boot_result purge-files FAIL "missing before the purge:$miss ($(tr '\n' ' ' <"$p/before-files"))"
    elif [ "$left" != "/var/lib/zmem: keep.backing " ] || grep -q '^/var/lib/dpkg' "$p/dpkg-info" ||
        grep -q '^/usr/bin/zmem$' "$p/kept" || [ "$(grep -c '^/etc/' "$p/kept")" != 2 ]; then
        boot_result purge-files FAIL "left: ${left:-nothing}; $(tr '\n' ' ' <"$p/kept")"
    else
        boot_result purge-files PASS "gone: /etc/zmem, the verdict, policy.state, /run/zmem; kept: /var/lib/zmem/keep.backing (not zmem's), zram-generator.conf, 90-zmem.conf"
    fi
}

cmd_boot() {
    [ $# -ge 1 ] || die "boot: KERNEL missing (scripts/vm boot KERNEL --deb FILE)"
    case $1 in -h | --help) usage; return ;; esac
    local ver deb= timeout=3000
    ver=$(resolve "$1"); shift
    while [ $# -gt 0 ]; do
        case $1 in
        --deb) deb=${2:?--deb needs a .deb file (scripts/deb)}; shift 2 ;;
        --timeout) timeout=${2:?--timeout needs seconds}; shift 2 ;;
        *) die "boot: unknown option '$1'" ;;
        esac
    done
    need_root boot "$CACHE and overlay mounts"
    [ -n "$deb" ] || die "boot: --deb FILE missing (build it with scripts/deb)"
    [ -f "$deb" ] || die "boot: $deb not found"
    need_vng
    local base dir=$VM_RUNDIR.boot
    base=$(boot_rootfs)
    BOOT_OUT=$dir/out
    rm -rf "$dir" && mkdir -p "$BOOT_OUT"
    trap 'boot_umount; rm -rf "$VM_RUNDIR" "$VM_RUNDIR.boot" "$VM_DISK"' EXIT
    boot_overlay "$base" "$dir"
    boot_prepare "$dir/root" "$(realpath "$deb")"
    rm -f "$VM_DISK" && truncate -s 256M "$VM_DISK"
    echo "# scripts/vm boot $ver — $(date -u '+%Y-%m-%d %H:%M UTC'), $(dpkg-deb -f "$deb" Package Version | tr '\n' ' ')"
    exec 9>"$CACHE/vm.lock"
    if ! flock -n 9; then
        say "another VM of this lab is running: waiting for it"
        flock -w "${ZMEM_VM_WAIT:-3600}" 9 || die "another VM of this lab held $CACHE/vm.lock"
    fi
    say "booting $ver with systemd (TCG, 1 CPU, 1G, timeout ${timeout}s)"
    local vrc=0
    # vng puts systemd.zram=0 on the command line; the later systemd.zram=1 wins.
    PATH="$CACHE/venv/bin:$PATH" timeout -k 20 "$timeout" "$(vng_bin)" -r "$ver" --root "$dir/root" --rw --systemd \
        --disable-kvm --cpus 1 --memory 1G --disk "$VM_DISK" --append "systemd.zram=1" \
        </dev/null >"$CACHE/vng-boot.log" 2>&1 || vrc=$?
    exec 9>&-
    [ $vrc = 124 ] || [ $vrc = 137 ] && say "boot: timed out after ${timeout}s"
    boot_verdicts "$dir/root"
    local keep
    keep="$CACHE/checks/boot-$ver-$(date -u +%Y%m%dT%H%M%SZ)"
    mkdir -p "$keep" && cp -a "$BOOT_OUT/." "$keep/" && cp -a "$dir/root/bootcheck" "$keep/guest" 2>/dev/null || true
    results_table "$BOOT_OUT/results"
    say "raw files: $keep"
    ! grep -q $'\tFAIL\t' "$BOOT_OUT/results"
}
