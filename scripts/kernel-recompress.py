#!/usr/bin/env python3
"""Record, step by step, what a kernel's zram does with recompression.

Owns: the recording behind engine/zram/tests/fixtures/recompress/kernel-*.txt,
which engine/zram/tests/kernel_recompress.rs replays on the engine (with the
same kernel version's model) on any host, comparing every figure.

A zram device is hot-added with `backing_dev` on BACKING (a block device the
script may overwrite: the VM lab's --disk, $ZMEM_VM_DISK), and the steps of
STEPS below run on it: recomp_algorithm at several priorities,
algorithm_params per priority, the pages of PAGES (raw 4 KiB pages; .gz read
through gzip) written at their index, then recompress with every selector
(type=idle|huge|huge_idle, threshold=, max_pages=, algo=, priority=) and its
refusals, idle marking (all, and by age after a wait), reads, and writeback of
what recompression left. After every step it records the step's result (ok or
the errno of the write), mm_stat, bd_stat, debug_stat's miss_free, the flags of
every allocated slot from debugfs's block_state, and a CRC-32 of every page
the step read.

Needs a kernel with CONFIG_ZRAM_MULTI_COMP, WRITEBACK, TRACK_ENTRY_ACTIME and
MEMORY_TRACKING, with the zstd and deflate backends (`scripts/vm build
7.3-all`). Run it as root inside the VM lab:

    scripts/vm run 7.3-all --disk 64M -- python3 scripts/kernel-recompress.py \\
        engine/zram/tests/fixtures/recompress/pages.bin.gz \\
        | sed -n '/^# kernel-recompress/,/^# end/p' \\
        > engine/zram/tests/fixtures/recompress/kernel-7.3.txt

Output (stdout): comment lines ('#'), then per step a `step` line and its
record lines (tab-separated; the format is in the header it prints). Only the
device this script hot-added is touched; it is reset and removed at the end,
also on failure. On a kernel without recompression it says so and exits 2.
"""

import datetime
import errno
import gzip
import hashlib
import mmap
import os
import subprocess
import sys
import time
import zlib

PAGE = 4096
CONTROL = "/sys/class/zram-control"
DEBUGFS = "/sys/kernel/debug"

# The steps: (op, argument, value). op `store` writes VALUE to attribute ARG
# (BACKING stands for the backing device); `write` writes the pages
# ARG (`all`); `read` reads ARG (`all`, or `mod8=R`: the pages i with
# i % 8 == R) and records their CRC-32; `sleep` waits ARG seconds.
STEPS = [
    ("store", "comp_algorithm", "lz4"),
    ("store", "recomp_algorithm", "algo=zstd priority=1"),
    ("store", "recomp_algorithm", "algo=deflate priority=2"),
    ("store", "recomp_algorithm", "algo=zstd priority=4"),
    ("store", "recomp_algorithm", "algo=nonesuch"),
    ("store", "recomp_algorithm", "priority=2"),
    ("store", "algorithm_params", "priority=1 level=1"),
    ("store", "algorithm_params", "algo=deflate level=9"),
    ("store", "algorithm_params", "algo=lz4hc level=4"),
    ("store", "algorithm_params", "algo=zstd priority=2 level=5"),
    ("store", "backing_dev", "BACKING"),
    ("store", "disksize", "PAGES"),
    ("store", "recomp_algorithm", "algo=lz4hc priority=3"),
    ("write", "all", ""),
    # Refusals, before anything was recompressed.
    ("store", "recompress", "type=cold"),
    ("store", "recompress", "type=idle type=cold"),
    ("store", "recompress", "priority=0"),
    ("store", "recompress", "priority=3"),
    ("store", "recompress", "priority=4"),
    ("store", "recompress", "algo=lz4hc"),
    ("store", "recompress", "algo=zstd priority=2"),
    ("store", "recompress", "threshold=4096"),
    ("store", "recompress", "max_pages=x"),
    ("store", "recompress", "max_pages"),
    ("store", "idle", "4294967296"),
    # Idle pages, largest first, a few at a time.
    ("store", "idle", "all"),
    ("read", "mod8=0", ""),
    ("store", "recompress", "type=idle priority=1 max_pages=5"),
    ("store", "recompress", "type=idle priority=1 max_pages=5 threshold=2400"),
    # Huge pages: zstd first (not the last algorithm: no 'n'), then deflate.
    ("store", "recompress", "type=huge priority=1"),
    ("store", "recompress", "type=huge_idle priority=2"),
    ("store", "recompress", "type=huge priority=2"),
    # By name: deflate is priority 2; everything of at least 2000 bytes.
    ("store", "recompress", "algo=deflate threshold=2000"),
    ("store", "compact", "1"),
    # Idle by age: the pages read now are young, the rest old.
    ("sleep", "3", ""),
    ("read", "mod8=1", ""),
    ("store", "idle", "4294967295"),
    ("store", "idle", "2"),
    ("store", "recompress", "type=idle algo=zstd priority=1"),
    ("store", "recompress", "type=idle priority=2"),
    # What recompression left, written back.
    ("store", "writeback", "huge"),
    ("store", "writeback", "idle"),
    ("read", "all", ""),
    ("store", "recompress", "priority=1"),
    ("store", "recompress", "priority=2 max_pages=3"),
    ("store", "compact", "1"),
    ("read", "all", ""),
]


def read_pages(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if not data or len(data) % PAGE:
        sys.exit(f"{path}: {len(data)} bytes is not a whole number of 4 KiB pages")
    return data


def sysfs_read(path):
    with open(path) as f:
        return f.read()


def store(dev, attr, value):
    """Write VALUE to the attribute: 'ok' or the errno's name."""
    try:
        with open(f"/sys/block/{dev}/{attr}", "w") as f:
            f.write(value)
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def hot_add():
    if not os.path.isdir(CONTROL):
        subprocess.run(["modprobe", "zram", "num_devices=0"], check=True)
    with open(f"{CONTROL}/hot_add") as f:
        return "zram" + f.read().strip()


def remove(dev):
    store(dev, "reset", "1")
    with open(f"{CONTROL}/hot_remove", "w") as f:
        f.write(dev[len("zram"):])


def block_state(dev):
    """'INDEX:FLAGS' for every allocated slot, or '-' (not initialised)."""
    try:
        text = sysfs_read(f"{DEBUGFS}/zram/{dev}/block_state")
    except OSError:
        return "-"
    return " ".join(f"{f[0]}:{f[2]}" for f in (line.split() for line in text.splitlines()))


def pages_of(spec, n):
    if spec == "all":
        return range(n)
    return [i for i in range(n) if i % 8 == int(spec.split("=")[1])]


class Device:
    def __init__(self, dev, data, backing):
        self.dev, self.data, self.backing = dev, data, backing
        self.n = len(data) // PAGE
        self.buf = mmap.mmap(-1, PAGE)  # page-aligned, as O_DIRECT needs
        self.fd = None

    def open(self):
        if self.fd is None:
            self.fd = os.open(f"/dev/{self.dev}", os.O_RDWR | os.O_DIRECT)
        return self.fd

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def run(self, op, arg, value):
        """One step: (result, 'INDEX:CRC ...' of the pages read, or '')."""
        if op == "store":
            value = {"BACKING": self.backing, "PAGES": str(self.n * PAGE)}.get(value, value)
            return store(self.dev, arg, value), ""
        if op == "sleep":
            time.sleep(int(arg))
            return "ok", ""
        fd, crcs = self.open(), []
        for i in pages_of(arg, self.n):
            try:
                if op == "write":
                    self.buf.seek(0)
                    self.buf.write(self.data[i * PAGE:(i + 1) * PAGE])
                    os.pwrite(fd, self.buf, i * PAGE)
                else:
                    os.preadv(fd, [self.buf], i * PAGE)
                    crcs.append(f"{i}:{zlib.crc32(self.buf[:]):08x}")
            except OSError as e:
                return errno.errorcode.get(e.errno, str(e.errno)), " ".join(crcs)
        return "ok", " ".join(crcs)

    def record(self):
        d = f"/sys/block/{self.dev}"
        miss_free = sysfs_read(f"{d}/debug_stat").splitlines()[1].split()[1]
        return [
            ("mm_stat", " ".join(sysfs_read(f"{d}/mm_stat").split())),
            ("bd_stat", " ".join(sysfs_read(f"{d}/bd_stat").split())),
            ("miss_free", miss_free),
            ("block_state", block_state(self.dev)),
        ]


def header(path, data, backing):
    print("# kernel-recompress: recompression step by step in the kernel's zram")
    print(f"# kernel {os.uname().release}")
    print(f"# date {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}")
    digest = hashlib.sha256(data).hexdigest()
    print(f"# pages {os.path.basename(path)}: {len(data) // PAGE} pages, sha256 {digest}")
    print(f"# backing_dev {backing}")
    print("# recorded by: scripts/vm run 7.3-all --disk 64M -- python3 scripts/kernel-recompress.py PAGES"
          " | sed -n '/^# kernel-recompress/,/^# end/p'")
    print("# format: step<TAB>N<TAB>OP<TAB>ARG<TAB>VALUE, then result (ok or errno), mm_stat,"
          " bd_stat, miss_free (debug_stat), block_state (INDEX:FLAGS of every allocated slot,"
          " flags s w h i r n as debugfs prints them; '-' before disksize), read (INDEX:CRC-32"
          " of every page the step read)")


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: kernel-recompress.py PAGES[.gz] [BACKING]  (BACKING default: $ZMEM_VM_DISK)")
    path = sys.argv[1]
    backing = sys.argv[2] if len(sys.argv) == 3 else os.environ.get("ZMEM_VM_DISK", "")
    if not backing:
        sys.exit("kernel-recompress: no backing device (give BACKING, or run under scripts/vm run --disk)")
    data = read_pages(path)
    with open("/proc/mounts") as f:
        if not any(line.split()[2] == "debugfs" for line in f):
            subprocess.run(["mount", "-t", "debugfs", "debugfs", DEBUGFS], check=False)
    dev = hot_add()
    d = Device(dev, data, backing)
    try:
        if not os.path.exists(f"/sys/block/{dev}/recomp_algorithm"):
            print(f"# kernel-recompress: {os.uname().release} has no recomp_algorithm (CONFIG_ZRAM_MULTI_COMP)")
            sys.exit(2)
        header(path, data, backing)
        for n, (op, arg, value) in enumerate(STEPS):
            result, reads = d.run(op, arg, value)
            print(f"step\t{n}\t{op}\t{arg}\t{value}")
            print(f"result\t{result}")
            for k, v in d.record():
                print(f"{k}\t{v}")
            if op == "read":
                print(f"read\t{reads}")
            sys.stdout.flush()
        print("# end")
    finally:
        d.close()
        remove(dev)


if __name__ == "__main__":
    main()
