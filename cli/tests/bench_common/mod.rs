//! What the bench tests share: running the binary and a small corpus of
//! zero, text and random pages.

use std::path::PathBuf;
use std::process::{Command, Output};

use zmem_files::testutil::ScratchDir;

pub fn zmem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .output()
        .expect("run zmem")
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// 48 pages: 16 zero, 16 text, 16 random (huge), in `dir`.
pub fn write_corpus(dir: &ScratchDir, name: &str) -> PathBuf {
    let mut data = Vec::new();
    let mut x = 0x1234_5678_9abc_def1u64;
    for i in 0..48 {
        let mut p = vec![0u8; 4096];
        match i % 3 {
            0 => {}
            1 => {
                for (j, c) in p.chunks_mut(16).enumerate() {
                    let s = format!("line {j:05} slot {i}\n");
                    c.copy_from_slice(&s.as_bytes()[..16]);
                }
            }
            _ => {
                for c in p.chunks_mut(8) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    c.copy_from_slice(&x.to_le_bytes());
                }
            }
        }
        data.extend_from_slice(&p);
    }
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    path
}
