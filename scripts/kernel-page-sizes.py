#!/usr/bin/env python3
"""Record the compressed length the running kernel's zram gives each page.

Owns: the recording behind engine/codec/tests/fixtures/kernel-sizes-*.txt, which
engine/codec/tests/kernel_sizes.rs compares the engine's codecs against on any host.

For every configuration (an algorithm the kernel's zram offers, optionally
with algorithm_params), a zram device is hot-added, set to it, and the pages
of PAGES (raw 4 KiB pages; .gz is read through gzip) are written one at a
time with O_DIRECT at successive offsets. After each write, the growth of
compr_data_size in mm_stat is the kernel's compressed length of that page;
a page that grows same_pages is same-filled (S), one that grows huge_pages is
stored huge (H: its compressed length was at least huge_class_size).

Run it as root inside the VM lab, which boots the distro kernels:

    scripts/vm run 7.3 -- python3 scripts/kernel-page-sizes.py \\
        engine/codec/tests/fixtures/kernel-pages.bin.gz \\
        | sed -n '/^# kernel-page-sizes/,/^# end/p' \\
        > engine/codec/tests/fixtures/kernel-sizes-7.3.txt

Output (stdout): comment lines starting with '#', then one line per
configuration: the configuration (ALGO or ALGO:key=value,...) and one field
per page. Only devices this script hot-added are touched, and each is reset
and removed before the next.
"""

import gzip
import hashlib
import mmap
import os
import subprocess
import sys

PAGE = 4096
CONTROL = "/sys/class/zram-control"
# Extra configurations, where the kernel has algorithm_params (6.12 and later).
WITH_PARAMS = [
    ("lz4hc", "level=4"),
    ("lz4hc", "level=12"),
    ("zstd", "level=1"),
    ("zstd", "level=9"),
    ("deflate", "level=1"),
    ("deflate", "level=9"),
]


def read_pages(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if not data or len(data) % PAGE:
        sys.exit(f"{path}: {len(data)} bytes is not a whole number of 4 KiB pages")
    return data


def sysfs_write(path, value):
    with open(path, "w") as f:
        f.write(value)


def mm_stat(dev):
    with open(f"/sys/block/{dev}/mm_stat") as f:
        return [int(x) for x in f.read().split()]


def hot_add():
    if not os.path.isdir(CONTROL):
        subprocess.run(["modprobe", "zram", "num_devices=0"], check=True)
    with open(f"{CONTROL}/hot_add") as f:
        return "zram" + f.read().strip()


def remove(dev):
    sysfs_write(f"/sys/block/{dev}/reset", "1")
    sysfs_write(f"{CONTROL}/hot_remove", dev[len("zram"):])


def record(data, algo, params):
    """One field per page for ALGO with PARAMS (None: the kernel's defaults)."""
    dev = hot_add()
    try:
        sysfs_write(f"/sys/block/{dev}/comp_algorithm", algo)
        if params:
            sysfs_write(f"/sys/block/{dev}/algorithm_params", f"algo={algo} {params}")
        sysfs_write(f"/sys/block/{dev}/disksize", str(len(data) + (1 << 20)))
        fd = os.open(f"/dev/{dev}", os.O_WRONLY | os.O_DIRECT)
        buf = mmap.mmap(-1, PAGE)  # page-aligned, as O_DIRECT needs
        fields = []
        try:
            before = mm_stat(dev)
            for off in range(0, len(data), PAGE):
                buf.seek(0)
                buf.write(data[off:off + PAGE])
                if os.pwrite(fd, buf, off) != PAGE:
                    sys.exit(f"{dev}: short write at {off}")
                after = mm_stat(dev)
                grew = after[1] - before[1]
                if after[5] > before[5]:
                    fields.append("S")
                elif after[7] > before[7]:
                    fields.append("H")
                else:
                    fields.append(str(grew))
                before = after
        finally:
            os.close(fd)
        return fields, mm_stat(dev)
    finally:
        remove(dev)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: kernel-page-sizes.py PAGES[.gz]")
    path = sys.argv[1]
    data = read_pages(path)
    dev = hot_add()
    try:
        with open(f"/sys/block/{dev}/comp_algorithm") as f:
            algos = [a.strip("[]") for a in f.read().split()]
        has_params = os.path.exists(f"/sys/block/{dev}/algorithm_params")
    finally:
        sysfs_write(f"{CONTROL}/hot_remove", dev[len("zram"):])
    configs = [(a, None) for a in algos]
    if has_params:
        configs += [(a, p) for a, p in WITH_PARAMS if a in algos]
    print("# kernel-page-sizes: per-page compressed lengths from the kernel's zram")
    print(f"# kernel {os.uname().release}")
    digest = hashlib.sha256(data).hexdigest()
    print(f"# pages {path}: {len(data) // PAGE} pages, sha256 {digest}")
    print("# recorded by: scripts/vm run KERNEL -- python3 scripts/kernel-page-sizes.py PAGES"
          " | sed -n '/^# kernel-page-sizes/,/^# end/p'")
    print("# fields: CONFIG, then per page: compressed length | S (same-filled) | H (huge)")
    for algo, params in configs:
        fields, stat = record(data, algo, params)
        name = algo + (":" + params.replace(" ", ",") if params else "")
        print(name, " ".join(fields))
        print(f"# mm_stat {name}: {' '.join(map(str, stat))}")
        sys.stdout.flush()
    print("# end")


if __name__ == "__main__":
    main()
