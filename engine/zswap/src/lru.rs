//! The LRU of zswap entries: newest at the head, the shrinker walks from the
//! tail. Each entry carries a sequence number; rotating gives it a new one.

use std::collections::BTreeMap;

#[derive(Debug, Default)]
pub struct Lru {
    by_seq: BTreeMap<u64, u64>,
    next: u64,
}

impl Lru {
    /// Adds `offset` at the head; returns its sequence number.
    pub fn add(&mut self, offset: u64) -> u64 {
        let s = self.next;
        self.next += 1;
        self.by_seq.insert(s, offset);
        s
    }

    pub fn remove(&mut self, seq: u64) {
        self.by_seq.remove(&seq);
    }

    /// Moves the entry with `seq` to the head; returns its new sequence number.
    pub fn rotate(&mut self, seq: u64) -> u64 {
        match self.by_seq.remove(&seq) {
            Some(off) => self.add(off),
            None => seq,
        }
    }

    /// The tail (least recently added/rotated): (seq, offset).
    pub fn tail(&self) -> Option<(u64, u64)> {
        self.by_seq.iter().next().map(|(s, o)| (*s, *o))
    }

    /// Offsets from the tail (oldest) to the head (youngest).
    pub fn offsets(&self) -> impl Iterator<Item = u64> + '_ {
        self.by_seq.values().copied()
    }

    pub fn len(&self) -> usize {
        self.by_seq.len()
    }
}
