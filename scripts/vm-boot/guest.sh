#!/bin/sh
# Guest side of `scripts/vm boot`: run by zmem-bootcheck.service once the
# guest (systemd as PID 1) has booted. Writes what it finds into /bootcheck
# (one file per question, read by the host after power-off), then powers off.
out=/bootcheck
mkdir -p $out
rec() { name=$1; shift; "$@" >$out/$name 2>&1; echo $? >$out/$name.rc; }

# The second part, `zmem-bootcheck purge`: started by the first part as a
# transient unit, so that it runs once the boot is over, as an admin's purge
# would, and outside zmem-bootcheck.service's start timeout (dpkg's
# maintainer scripts take minutes under TCG: each daemon-reload about 2.5
# minutes on a loaded host). Then the guest powers off.
if [ "${1:-}" = purge ]; then
    p=$out/purge
    mkdir -p $p
    exec >$p/log 2>&1
    set -x
    trap 'echo done >$p/done; sync; systemctl poweroff' EXIT
    timeout 600 systemctl is-system-running --wait >$p/system-state 2>&1
    # Install, enable, remove, purge (docs/ops.md, "Installing"): after `dpkg --purge zmem`
    # nothing of zmem runs and nothing of the package is left: no unit, no
    # enablement link, no /etc/zmem, no /var/lib/zmem, no policy state. Planted
    # first: a verdict of root's (`zmem bench verdict`, in /var/lib/zmem), which
    # purge removes, and a file zmem did not write in /var/lib/zmem, which it keeps.
    head -c 4M /usr/bin/zmem >/tmp/corpus
    rec purge/verdict zmem bench verdict /tmp/corpus --algo lz4 --rounds 1 --no-kernel --fs-read 100
    echo "the user's, not zmem's" >/var/lib/zmem/keep.backing
    rec purge/enable systemctl enable --now zmem-exporter.service zmem-policy.service
    for i in $(seq 1 30); do
        [ -e /run/zmem/policy.state ] && break
        sleep 1
    done
    pgrep -a -x zmem >$p/before-procs
    ls -A /etc/zmem /var/lib/zmem /run/zmem >$p/before-files 2>&1
    find /etc/systemd /usr/lib/systemd /lib/systemd /var/lib/systemd -name 'zmem-exporter*' -o -name 'zmem-policy*' >$p/before-units 2>/dev/null
    # Remove first (the units stop, the configuration stays), then purge. Under
    # TCG each systemctl daemon-reload of the maintainer scripts takes minutes;
    # man-db's index is not rebuilt (its trigger, as on a build machine).
    echo 'man-db man-db/auto-update boolean false' | debconf-set-selections
    rec purge/remove timeout 1200 dpkg --remove zmem
    pgrep -a -x zmem >$p/remove-procs
    systemctl list-jobs --no-legend >$p/remove-jobs 2>&1
    ls -A /etc/zmem /var/lib/zmem >$p/remove-files 2>&1
    find /etc/systemd /usr/lib/systemd /lib/systemd /var/lib/systemd -name 'zmem-exporter*' -o -name 'zmem-policy*' >$p/remove-units 2>/dev/null
    rec purge/dpkg timeout 1200 dpkg --purge zmem
    pgrep -a -x zmem >$p/procs
    echo $? >$p/procs.rc
    find /etc/systemd /usr/lib/systemd /lib/systemd /var/lib/systemd -name 'zmem-exporter*' -o -name 'zmem-policy*' >$p/units 2>&1
    # Unit files systemd knows (list-units --all would still show both as
    # "not-found": zmem-bootcheck.service names them in its After=).
    systemctl list-unit-files --no-legend 'zmem-exporter*' 'zmem-policy*' >$p/loaded 2>&1
    for d in /etc/zmem /var/lib/zmem /run/zmem /usr/share/doc/zmem; do
        [ -e $d ] && echo "$d: $(ls -A $d | tr '\n' ' ')"
    done >$p/left
    ls /var/lib/dpkg/info/zmem.* >$p/dpkg-info 2>&1
    ls /usr/bin/zmem /etc/systemd/zram-generator.conf /etc/sysctl.d/90-zmem.conf >$p/kept 2>&1
    exit 0
fi

exec >$out/guest.log 2>&1
set -x
# Whatever happens below, the guest powers off (the host waits for that), or
# the purge check it hands over to does.
handed=
trap 'echo done >$out/done; sync; [ -n "$handed" ] || systemctl poweroff' EXIT

# This unit is part of the boot (multi-user.target wants it), so the system is
# still "starting" while it runs: `is-system-running --wait` would wait for itself.
# Both units are enabled by the host before the boot; give them time to start.
for i in $(seq 1 60); do
    systemctl is-active --quiet zmem-exporter.service zmem-policy.service && break
    sleep 1
done
systemctl is-system-running >$out/system-state 2>&1
rec units-active systemctl is-active zmem-exporter.service zmem-policy.service
rec verify systemd-analyze verify /usr/lib/systemd/system/zmem-exporter.service /usr/lib/systemd/system/zmem-policy.service
rec metrics python3 -c 'import urllib.request,sys; sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:9877/metrics", timeout=20).read().decode())'
cat /proc/swaps >$out/swaps
cat /sys/block/zram0/comp_algorithm >$out/comp_algorithm 2>&1
cat /sys/block/zram0/disksize >$out/disksize 2>&1
grep MemTotal /proc/meminfo >$out/memtotal
sysctl -n vm.swappiness >$out/swappiness
sysctl -n vm.page-cluster >$out/page-cluster
rec dry-run zmem apply --dry-run /etc/zmem/zmem.conf
rec status zmem status
rec completion bash -c '. /usr/share/bash-completion/completions/zmem; COMP_WORDS=(zmem ap); COMP_CWORD=1; _zmem zmem ap zmem; echo "${COMPREPLY[@]}"'
rec man sh -c 'MANPAGER=cat MANWIDTH=80 man zmem-apply | head -8'
if zmem doctor --help >/dev/null 2>&1; then
    rec doctor-clean zmem doctor
    # Plant what zmem doctor must find: zswap on in front of zram, a disk swap
    # above zram's priority, page-cluster 3.
    echo Y >/sys/module/zswap/parameters/enabled
    sysctl -q vm.page-cluster=3
    disk=$(ls /dev/vd? 2>/dev/null | head -1)
    [ -n "$disk" ] && mkswap -q "$disk" && swapon -p 200 "$disk"
    rec doctor-planted zmem doctor
    rec doctor-planted-json zmem doctor --format json
    echo N >/sys/module/zswap/parameters/enabled
    sysctl -q vm.page-cluster=0
    [ -n "$disk" ] && swapoff "$disk"
    rec doctor-fixed zmem doctor
fi
journalctl -b -u zmem-exporter.service -u zmem-policy.service -u systemd-zram-setup@zram0.service --no-pager >$out/journal 2>&1
systemctl --failed --no-legend >$out/failed 2>&1
systemd-run --no-block --unit=zmem-purgecheck /usr/local/sbin/zmem-bootcheck purge >$out/purge-handover 2>&1 && handed=yes
