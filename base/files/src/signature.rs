//! What a file or block device already holds, before zmem writes to it.
//!
//! zmem never overwrites data it did not create without `--force`
//! (zswap's backing file, `apply`'s `[disk-swap]` device). [`probe`] looks
//! for the on-disk signatures blkid would report at the offsets their
//! formats define: swap areas (`mm/swapfile.c`'s `SWAPSPACE2` at the end of
//! the first page), ext2/3/4, XFS, Btrfs, FAT, NTFS, LUKS, squashfs,
//! ISO 9660, and partition tables (MBR, GPT); and for any non-zero byte in
//! the first MiB, which means data of unknown kind.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// What [`probe`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signature {
    /// A swap area (`mkswap`): safe to reuse as swap.
    Swap,
    /// A filesystem, encrypted volume or partition table, by name.
    Format(&'static str),
    /// Non-zero bytes of unknown kind; the offset of the first one.
    Data { offset: u64 },
}

impl std::fmt::Display for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Signature::Swap => write!(f, "a swap signature (SWAPSPACE2)"),
            Signature::Format(name) => write!(f, "a {name} signature"),
            Signature::Data { offset } => write!(f, "data (a non-zero byte at offset {offset})"),
        }
    }
}

/// (offset, magic, name) of every format recognised.
const MAGICS: &[(u64, &[u8], &str)] = &[
    (0x438, &[0x53, 0xef], "ext2/3/4 filesystem"),
    (0, b"XFSB", "XFS filesystem"),
    (0x10040, b"_BHRfS_M", "Btrfs filesystem"),
    (0x36, b"FAT1", "FAT filesystem"),
    (0x52, b"FAT32", "FAT filesystem"),
    (3, b"NTFS    ", "NTFS filesystem"),
    (0, b"LUKS\xba\xbe", "LUKS volume"),
    (0, b"hsqs", "squashfs filesystem"),
    (0x8001, b"CD001", "ISO 9660 filesystem"),
    (0x200, b"EFI PART", "GPT partition table"),
];

/// Bytes scanned for unknown data.
pub const SCAN_BYTES: u64 = 1 << 20;

fn read_at(file: &File, off: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let mut got = 0;
    while got < len {
        match file.read_at(&mut buf[got..], off + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(got);
    Ok(buf)
}

/// What `file` holds, if anything: a known signature first, then any
/// non-zero byte in its first [`SCAN_BYTES`]. `None` for an empty or
/// all-zero (e.g. sparse, freshly created) file.
pub fn probe(file: &File) -> io::Result<Option<Signature>> {
    let page = read_at(file, 0, 4096)?;
    if page.len() == 4096 && (&page[4086..] == b"SWAPSPACE2" || &page[4086..] == b"SWAP-SPACE") {
        return Ok(Some(Signature::Swap));
    }
    for &(off, magic, name) in MAGICS {
        if read_at(file, off, magic.len())? == magic {
            return Ok(Some(Signature::Format(name)));
        }
    }
    if page.len() >= 512 && page[510] == 0x55 && page[511] == 0xaa {
        return Ok(Some(Signature::Format(
            "MBR partition table or boot sector",
        )));
    }
    let mut off = 0u64;
    while off < SCAN_BYTES {
        let chunk = read_at(file, off, 64 * 1024)?;
        if let Some(i) = chunk.iter().position(|&b| b != 0) {
            return Ok(Some(Signature::Data {
                offset: off + i as u64,
            }));
        }
        if chunk.len() < 64 * 1024 {
            break;
        }
        off += chunk.len() as u64;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(tag: &str, writes: &[(u64, &[u8])], len: u64) -> (std::path::PathBuf, File) {
        let p = std::env::temp_dir().join(format!("zmem-sig-{tag}-{}", std::process::id()));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&p)
            .unwrap();
        f.set_len(len).unwrap();
        for (off, b) in writes {
            f.write_all_at(b, *off).unwrap();
        }
        (p, f)
    }

    #[test]
    fn recognises_formats_swap_data_and_nothing() {
        type Case<'a> = (&'a str, Vec<(u64, &'a [u8])>, Option<Signature>);
        let cases: Vec<Case> = vec![
            ("empty", vec![], None),
            ("swap", vec![(4086, b"SWAPSPACE2")], Some(Signature::Swap)),
            (
                "ext4",
                vec![(0x438, &[0x53, 0xef])],
                Some(Signature::Format("ext2/3/4 filesystem")),
            ),
            (
                "gpt",
                vec![(0x200, b"EFI PART")],
                Some(Signature::Format("GPT partition table")),
            ),
            (
                "mbr",
                vec![(510, &[0x55, 0xaa])],
                Some(Signature::Format("MBR partition table or boot sector")),
            ),
            (
                "data",
                vec![(70_000, b"x")],
                Some(Signature::Data { offset: 70_000 }),
            ),
        ];
        for (tag, writes, want) in cases {
            let (p, f) = file_with(tag, &writes, 1 << 20);
            assert_eq!(probe(&f).unwrap(), want, "{tag}");
            std::fs::remove_file(p).unwrap();
        }
    }

    #[test]
    fn a_text_file_is_data() {
        let p = std::env::temp_dir().join(format!("zmem-sig-text-{}", std::process::id()));
        std::fs::write(&p, b"root:x:0:0:root:/root:/bin/bash\n").unwrap();
        let f = File::open(&p).unwrap();
        assert_eq!(probe(&f).unwrap(), Some(Signature::Data { offset: 0 }));
        std::fs::remove_file(p).unwrap();
    }
}
