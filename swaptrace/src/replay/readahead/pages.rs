//! Each page's last swap entry, per address space: the PTEs the engine
//! keeps while pages are swapped out, in PMD-sized leaves.

use super::space::{prefetch, MixHasher};
use crate::trace::SwapEntry;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// Pages per PMD with 4 KiB pages.
pub(super) const PMD_PAGES: u64 = 512;

/// The last swap entry of each page, per address space, in PMD-sized
/// leaves (the window's neighbours share a leaf). The PTE holds the entry
/// while the slot is still the page's and not mapped
/// ([`SwapView::swapped_at`]), so faults and reclaim need not touch it.
/// A leaf holds 4 bytes a page ([`Pte`]); an entry that does not fit (an
/// offset of 2^27 or more: swap beyond 512 GiB) is kept beside the leaves.
#[derive(Default)]
pub(super) struct PageTable {
    leaves: HashMap<u64, Box<[u32; PMD_PAGES as usize]>, BuildHasherDefault<MixHasher>>,
    /// By leaf key and index in the leaf.
    wide: HashMap<(u64, u32), SwapEntry, BuildHasherDefault<MixHasher>>,
}

/// A page's entry in a leaf: 0 none, [`Pte::WIDE`] kept in `wide`, else
/// `(dev << 27 | offset) + 1`.
struct Pte;

impl Pte {
    const OFFSET_BITS: u32 = 27;
    const WIDE: u32 = u32::MAX;

    fn pack(e: SwapEntry) -> Option<u32> {
        let v = (e.dev as u64) << Self::OFFSET_BITS | e.offset;
        (e.offset < 1 << Self::OFFSET_BITS && v + 1 < Self::WIDE as u64).then(|| v as u32 + 1)
    }

    fn unpack(v: u32) -> Option<SwapEntry> {
        let v = v.checked_sub(1)?;
        Some(SwapEntry {
            dev: (v >> Self::OFFSET_BITS) as u8,
            offset: (v & ((1 << Self::OFFSET_BITS) - 1)) as u64,
        })
    }
}

/// Leaf key: address space and PMD index (user addresses have < 2^36 PMDs).
fn leaf_key(mm: u32, vpage: u64) -> u64 {
    ((mm as u64) << 36) ^ (vpage / PMD_PAGES)
}

/// The address space and first page of a leaf, from its key.
pub(super) fn leaf_start(key: u64) -> (u32, u64) {
    ((key >> 36) as u32, (key & ((1 << 36) - 1)) * PMD_PAGES)
}

impl PageTable {
    #[inline]
    pub(super) fn prefetch(&self, mm: u32, vpage: u64) {
        if let Some(leaf) = self.leaves.get(&leaf_key(mm, vpage)) {
            prefetch(&leaf[(vpage % PMD_PAGES) as usize]);
        }
    }

    /// The entry a leaf's value stands for (page `i` of leaf `key`).
    fn entry(&self, v: u32, key: u64, i: u32) -> Option<SwapEntry> {
        match v {
            Pte::WIDE => self.wide.get(&(key, i)).copied(),
            v => Pte::unpack(v),
        }
    }

    pub(super) fn get(&self, &(mm, vpage): &(u32, u64)) -> Option<SwapEntry> {
        let key = leaf_key(mm, vpage);
        let i = (vpage % PMD_PAGES) as u32;
        let leaf = self.leaves.get(&key)?;
        self.entry(leaf[i as usize], key, i)
    }

    pub(super) fn insert(&mut self, (mm, vpage): (u32, u64), e: SwapEntry) -> Option<SwapEntry> {
        let key = leaf_key(mm, vpage);
        let i = (vpage % PMD_PAGES) as u32;
        let leaf = self
            .leaves
            .entry(key)
            .or_insert_with(|| Box::new([0; PMD_PAGES as usize]));
        let v = Pte::pack(e).unwrap_or(Pte::WIDE);
        let old = std::mem::replace(&mut leaf[i as usize], v);
        let old = match old {
            Pte::WIDE => self.wide.remove(&(key, i)),
            old => Pte::unpack(old),
        };
        if v == Pte::WIDE {
            self.wide.insert((key, i), e);
        }
        old
    }

    /// The first page of `[from, end)` of `mm` in a leaf the table has:
    /// leaf by leaf, or through the leaves where the range spans more.
    pub(super) fn next_leaf(&self, mm: u32, from: u64, end: u64) -> Option<u64> {
        if end.saturating_sub(from) / PMD_PAGES <= self.leaves.len() as u64 {
            let mut p = from;
            while p < end {
                if self.leaves.contains_key(&leaf_key(mm, p)) {
                    return Some(p);
                }
                p = (p / PMD_PAGES + 1) * PMD_PAGES;
            }
            return None;
        }
        let starts = self.leaves.keys().map(|&k| leaf_start(k));
        starts
            .filter(|&(m, s)| m == mm && s.saturating_add(PMD_PAGES) > from && s < end)
            .map(|(_, s)| s.max(from))
            .min()
    }

    /// The keys of all leaves, sorted: by address space, then address.
    pub(super) fn leaf_keys(&self) -> Vec<u64> {
        let mut keys: Vec<u64> = self.leaves.keys().copied().collect();
        keys.sort_unstable();
        keys
    }

    /// Page `i` of leaf `key` ([`leaf_start`]): None without such a leaf.
    pub(super) fn leaf_entry(&self, key: u64, i: u64) -> Option<Option<SwapEntry>> {
        let leaf = self.leaves.get(&key)?;
        Some(self.entry(leaf[i as usize], key, i as u32))
    }

    /// Takes the entries of address space `mm`'s pages `[start, end)` out,
    /// with their pages, and drops the leaves left empty.
    pub(super) fn take_range(&mut self, mm: u32, start: u64, end: u64) -> Vec<(u64, SwapEntry)> {
        if end <= start {
            return Vec::new();
        }
        let (first, last) = (start / PMD_PAGES, (end - 1) / PMD_PAGES);
        // Whichever is fewer: the range's leaves, or all leaves.
        let keys: Vec<u64> = if last - first < self.leaves.len() as u64 {
            (first..=last)
                .map(|pmd| leaf_key(mm, pmd * PMD_PAGES))
                .filter(|k| self.leaves.contains_key(k))
                .collect()
        } else {
            self.leaves
                .keys()
                .copied()
                .filter(|&k| {
                    let (m, at) = leaf_start(k);
                    m == mm && at / PMD_PAGES >= first && at / PMD_PAGES <= last
                })
                .collect()
        };
        let mut out = Vec::new();
        for key in keys {
            let (_, at) = leaf_start(key);
            let Some(leaf) = self.leaves.get_mut(&key) else {
                continue;
            };
            let (lo, hi) = (start.max(at) - at, end.min(at + PMD_PAGES) - at);
            for i in lo..hi {
                if let Some(e) = take_pte(leaf, &mut self.wide, key, i as u32) {
                    out.push((at + i, e));
                }
            }
            if leaf.iter().all(|&v| v == 0) {
                self.leaves.remove(&key);
            }
        }
        out
    }

    pub(super) fn remove(&mut self, &(mm, vpage): &(u32, u64)) -> Option<SwapEntry> {
        let key = leaf_key(mm, vpage);
        let i = (vpage % PMD_PAGES) as u32;
        let leaf = self.leaves.get_mut(&key)?;
        take_pte(leaf, &mut self.wide, key, i)
    }
}

/// Clears page `i` of leaf `key` and returns the entry it held.
fn take_pte(
    leaf: &mut [u32; PMD_PAGES as usize],
    wide: &mut HashMap<(u64, u32), SwapEntry, BuildHasherDefault<MixHasher>>,
    key: u64,
    i: u32,
) -> Option<SwapEntry> {
    match std::mem::take(&mut leaf[i as usize]) {
        Pte::WIDE => wide.remove(&(key, i)),
        v => Pte::unpack(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_table_keeps_every_entry_narrow_or_wide() {
        let mut t = PageTable::default();
        // (entry, fits a leaf's 4 bytes)
        let entries = [
            (SwapEntry { dev: 0, offset: 0 }, true),
            (
                SwapEntry {
                    dev: 31,
                    offset: (1 << 27) - 3,
                },
                true,
            ),
            // The value reserved for "wide", and everything from 2^27 on.
            (
                SwapEntry {
                    dev: 31,
                    offset: (1 << 27) - 2,
                },
                false,
            ),
            (
                SwapEntry {
                    dev: 0,
                    offset: 1 << 27,
                },
                false,
            ),
            (
                SwapEntry {
                    dev: 3,
                    offset: (1 << 58) - 1,
                },
                false,
            ),
        ];
        for (i, &(e, narrow)) in entries.iter().enumerate() {
            assert_eq!(Pte::pack(e).is_some(), narrow, "{e:?}");
            let page = (7, 1000 + i as u64);
            assert_eq!(t.insert(page, e), None);
            assert_eq!(t.get(&page), Some(e));
            let key = leaf_key(page.0, page.1);
            assert_eq!(t.leaf_entry(key, page.1 % PMD_PAGES), Some(Some(e)));
        }
        assert_eq!(t.wide.len(), 3);
        // Replacing narrow by wide and back returns the old entry.
        let page = (7, 1000);
        assert_eq!(t.insert(page, entries[4].0), Some(entries[0].0));
        assert_eq!(t.insert(page, entries[1].0), Some(entries[4].0));
        assert_eq!(t.wide.len(), 3);
        for (i, &(e, _)) in entries.iter().enumerate().skip(1) {
            assert_eq!(t.remove(&(7, 1000 + i as u64)), Some(e));
        }
        assert!(t.wide.is_empty());
        assert_eq!(t.get(&(7, 1001)), None);
    }
}
