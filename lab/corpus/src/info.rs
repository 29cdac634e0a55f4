//! What a corpus file holds (`zmem corpus info`): its pages and same-filled
//! pages, counted by streaming the file, with its sidecar's account of where
//! they came from.

use std::path::Path;

use anyhow::Result;

use crate::corpus::open_checked;
use crate::sidecar::{count_same_filled, Sidecar};

/// The sidecar of the corpus at `path` (or an "unknown" one) with the pages
/// and same-filled pages counted in the file; a note when the sidecar's
/// count differs. The file gets the same checks as every other corpus
/// command (regular file or block device, not empty, whole pages).
pub fn info(path: &Path) -> Result<Sidecar> {
    let input = open_checked(path)?;
    let mut f = input.file;
    let mut buf = vec![0u8; 1 << 20];
    let (mut pages, mut same) = (0u64, 0u64);
    let mut left = input.len;
    while left > 0 {
        let want = buf.len().min(left as usize);
        let n = read_full(&mut f, &mut buf[..want])?;
        let whole = n - n % 4096;
        pages += (whole / 4096) as u64;
        same += count_same_filled(&buf[..whole]);
        if n < want {
            break;
        }
        left -= n as u64;
    }
    let mut sc = Sidecar::read_for(path)?.unwrap_or_else(|| Sidecar {
        source: "unknown (no sidecar)".into(),
        ..Default::default()
    });
    if sc.pages != pages && sc.source != "unknown (no sidecar)" {
        sc.notes.push(format!(
            "the sidecar says {} pages, the file has {pages}",
            sc.pages
        ));
    }
    sc.pages = pages;
    sc.same_filled_pages = same;
    Ok(sc)
}

fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> Result<usize> {
    use std::io::Read;
    let mut n = 0;
    while n < buf.len() {
        let k = f.read(&mut buf[n..])?;
        if k == 0 {
            break;
        }
        n += k;
    }
    Ok(n)
}
