//! The swap space the engine keeps: slots by device and offset (`swap_map`),
//! each page's last swap entry (its PTE while swapped out), and the
//! read-only view policies get of them.

use super::input::{Event, ReplayInput, Store};
use crate::trace::SwapEntry;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Cache {
    /// On disk only.
    No,
    /// In the swap cache, not mapped: read ahead (PG_readahead while `ra`).
    Unused { ra: bool, ts: u64, gen: u32 },
    /// Mapped by the faulting page table (and still in the swap cache);
    /// `referenced` until reclaim has passed it over once; `dirty` when a
    /// write fault freed its slot (`should_try_to_free_swap()`): reclaim
    /// then writes it to a new slot, which the trace names.
    Mapped {
        gen: u32,
        referenced: bool,
        dirty: bool,
        /// On the active list (else the inactive one).
        active: bool,
    },
}

impl Cache {
    pub(super) fn resident(self) -> bool {
        self != Cache::No
    }

    /// Marks a mapped page dirty (its slot freed) or not.
    pub(super) fn set_dirty(&mut self, to: bool) {
        if let Cache::Mapped { dirty, .. } = self {
            *dirty = to;
        }
    }

    pub(super) fn active(self) -> bool {
        matches!(self, Cache::Mapped { active: true, .. })
    }

    pub(super) fn gen(self) -> Option<u32> {
        match self {
            Cache::No => None,
            Cache::Unused { gen, .. } | Cache::Mapped { gen, .. } => Some(gen),
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Slot {
    pub(super) mm: u32,
    pub(super) vpage: u64,
    pub(super) store: Store,
    pub(super) cache: Cache,
}

/// Swap slots by device and offset. Dense, as `swap_map` is, up to a
/// bound that grows with the entries the trace names on the device; a
/// hash map beyond it, so that a few far offsets (a damaged or hostile
/// trace) cost only their own slots.
#[derive(Default)]
pub(super) struct SlotTable {
    devs: Vec<DevSlots>,
}

#[derive(Default)]
struct DevSlots {
    /// Offsets below `dense_cap`, indexed directly (grown on touch).
    dense: Vec<Option<Slot>>,
    dense_cap: usize,
    /// Offsets at or beyond `dense_cap`.
    sparse: HashMap<u64, Slot, BuildHasherDefault<MixHasher>>,
}

/// A device's slots are dense up to at least this many offsets (2 MiB)...
const DENSE_MIN: u64 = 1 << 16;
/// ...or this many per swap entry the trace names on it.
const DENSE_PER_ENTRY: u64 = 4;

impl DevSlots {
    #[inline]
    fn dense_index(&self, offset: u64) -> Option<usize> {
        usize::try_from(offset).ok().filter(|&o| o < self.dense_cap)
    }
}

impl SlotTable {
    /// A table for `input`: each device dense up to its largest offset, if
    /// that is at most `DENSE_PER_ENTRY` times the entries it names (or
    /// `DENSE_MIN`), else up to that bound.
    pub(super) fn for_input(input: &ReplayInput) -> SlotTable {
        let mut named = vec![0u64; input.dev_max.len()];
        for ev in &input.events {
            if let Event::Out { entry, .. } | Event::Fault { entry, .. } = ev {
                if let Some(n) = named.get_mut(entry.dev as usize) {
                    *n += 1;
                }
            }
        }
        SlotTable::for_counts(&named, &input.dev_max)
    }

    /// [`SlotTable::for_input`] from the entries named on each device and
    /// each device's largest offset.
    pub(super) fn for_counts(named: &[u64], dev_max: &[u64]) -> SlotTable {
        let devs = named
            .iter()
            .zip(dev_max)
            .map(|(&n, &max)| {
                let bound = n.saturating_mul(DENSE_PER_ENTRY).max(DENSE_MIN);
                let cap = max.saturating_add(1).min(bound);
                DevSlots {
                    dense_cap: usize::try_from(cap).unwrap_or(usize::MAX),
                    ..DevSlots::default()
                }
            })
            .collect();
        SlotTable { devs }
    }

    #[inline]
    pub(super) fn get(&self, e: &SwapEntry) -> Option<&Slot> {
        let d = self.devs.get(e.dev as usize)?;
        match d.dense_index(e.offset) {
            Some(o) => d.dense.get(o)?.as_ref(),
            None => d.sparse.get(&e.offset),
        }
    }

    #[inline]
    pub(super) fn get_mut(&mut self, e: &SwapEntry) -> Option<&mut Slot> {
        let d = self.devs.get_mut(e.dev as usize)?;
        match d.dense_index(e.offset) {
            Some(o) => d.dense.get_mut(o)?.as_mut(),
            None => d.sparse.get_mut(&e.offset),
        }
    }

    #[inline]
    pub(super) fn prefetch(&self, e: &SwapEntry) {
        if let Some(s) = self
            .devs
            .get(e.dev as usize)
            .and_then(|d| d.dense_index(e.offset).and_then(|o| d.dense.get(o)))
        {
            prefetch(s);
        }
    }

    fn contains_key(&self, e: &SwapEntry) -> bool {
        self.get(e).is_some()
    }

    pub(super) fn insert(&mut self, e: SwapEntry, s: Slot) {
        let dev = e.dev as usize;
        if self.devs.len() <= dev {
            self.devs.resize_with(dev + 1, DevSlots::default);
        }
        let d = &mut self.devs[dev];
        let Some(o) = d.dense_index(e.offset) else {
            d.sparse.insert(e.offset, s);
            return;
        };
        if d.dense.len() <= o {
            // Grow by doubling, but never past the bound.
            let want = (o + 1).max(d.dense.len() * 2).min(d.dense_cap);
            d.dense.reserve_exact(want - d.dense.len());
            d.dense.resize(o + 1, None);
        }
        d.dense[o] = Some(s);
    }

    pub(super) fn remove(&mut self, e: &SwapEntry) -> Option<Slot> {
        let d = self.devs.get_mut(e.dev as usize)?;
        match d.dense_index(e.offset) {
            Some(o) => d.dense.get_mut(o)?.take(),
            None => d.sparse.remove(&e.offset),
        }
    }

    /// Swapoff done: drops device `dev`'s slots; returns how many were
    /// resident, and how many of those active.
    pub(super) fn clear_dev(&mut self, dev: u8) -> (usize, usize) {
        let Some(d) = self.devs.get_mut(dev as usize) else {
            return (0, 0);
        };
        let (mut resident, mut active) = (0, 0);
        for s in d.dense.iter().flatten().chain(d.sparse.values()) {
            resident += s.cache.resident() as usize;
            active += s.cache.active() as usize;
        }
        d.dense.clear();
        d.sparse.clear();
        (resident, active)
    }

    /// Offsets of device `dev` indexed directly so far.
    #[cfg(test)]
    pub(super) fn dense_len(&self, dev: u8) -> usize {
        self.devs.get(dev as usize).map_or(0, |d| d.dense.len())
    }

    /// Slots the table holds memory for, dense or hashed.
    #[cfg(test)]
    pub(super) fn allocated(&self) -> usize {
        self.devs
            .iter()
            .map(|d| d.dense.capacity() + d.sparse.capacity())
            .sum()
    }
}

/// Pages per PMD with 4 KiB pages.
pub(super) const PMD_PAGES: u64 = 512;

/// The last swap entry of each page, per address space, in PMD-sized
/// leaves (the window's neighbours share a leaf). 0 = none. The PTE holds
/// the entry while the slot is still the page's and not mapped
/// ([`SwapView::swapped_at`]), so faults and reclaim need not touch it.
#[derive(Default)]
pub(super) struct PageTable {
    leaves: HashMap<u64, Box<[u64; PMD_PAGES as usize]>, BuildHasherDefault<MixHasher>>,
}

/// Leaf key: address space and PMD index (user addresses have < 2^36 PMDs).
fn leaf_key(mm: u32, vpage: u64) -> u64 {
    ((mm as u64) << 36) ^ (vpage / PMD_PAGES)
}

/// The address space and first page of a leaf, from its key.
pub(super) fn leaf_start(key: u64) -> (u32, u64) {
    ((key >> 36) as u32, (key & ((1 << 36) - 1)) * PMD_PAGES)
}

/// A fast hasher for integer keys (multiply and fold): the replay's hot
/// path hashes one u64 per fault, and SipHash's DoS resistance buys nothing.
#[derive(Default)]
struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        let x = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^ (x >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 ^= v;
    }
}

/// An entry as a u64, 0 for none. Replay input holds only
/// [`SwapEntry::plausible`] entries (type < 32, offset < 2^58): they fit.
pub(super) fn pack(e: SwapEntry) -> u64 {
    ((e.dev as u64) << SwapEntry::OFFSET_BITS | e.offset) + 1
}

pub(super) fn unpack(v: u64) -> Option<SwapEntry> {
    let v = v.checked_sub(1)?;
    Some(SwapEntry {
        dev: (v >> SwapEntry::OFFSET_BITS) as u8,
        offset: v & ((1 << SwapEntry::OFFSET_BITS) - 1),
    })
}

impl PageTable {
    #[inline]
    pub(super) fn prefetch(&self, mm: u32, vpage: u64) {
        if let Some(leaf) = self.leaves.get(&leaf_key(mm, vpage)) {
            prefetch(&leaf[(vpage % PMD_PAGES) as usize]);
        }
    }

    pub(super) fn get(&self, &(mm, vpage): &(u32, u64)) -> Option<SwapEntry> {
        let leaf = self.leaves.get(&leaf_key(mm, vpage))?;
        unpack(leaf[(vpage % PMD_PAGES) as usize])
    }

    pub(super) fn insert(&mut self, (mm, vpage): (u32, u64), e: SwapEntry) -> Option<SwapEntry> {
        let leaf = self
            .leaves
            .entry(leaf_key(mm, vpage))
            .or_insert_with(|| Box::new([0; PMD_PAGES as usize]));
        unpack(std::mem::replace(
            &mut leaf[(vpage % PMD_PAGES) as usize],
            pack(e),
        ))
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
        Some(unpack(leaf[i as usize]))
    }

    pub(super) fn remove(&mut self, &(mm, vpage): &(u32, u64)) -> Option<SwapEntry> {
        let leaf = self.leaves.get_mut(&leaf_key(mm, vpage))?;
        unpack(std::mem::take(&mut leaf[(vpage % PMD_PAGES) as usize]))
    }
}

/// Read-only view of the swap space for policies.
pub struct SwapView<'a> {
    pub(super) slots: &'a SlotTable,
    pub(super) pages: &'a PageTable,
    pub(super) dev_max: &'a [u64],
}

impl SwapView<'_> {
    /// Whether the slot holds a page (`__read_swap_cache_async` reads only those).
    pub fn allocated(&self, e: SwapEntry) -> bool {
        self.slots.contains_key(&e)
    }

    /// Largest valid offset of a device (`si->max - 1`).
    pub fn dev_max(&self, dev: u8) -> u64 {
        self.dev_max.get(dev as usize).copied().unwrap_or(u64::MAX)
    }

    /// The swap entry in the PTE of (mm, virtual page), if it is swapped out.
    pub fn swapped_at(&self, mm: u32, vpage: u64) -> Option<SwapEntry> {
        let e = self.pages.get(&(mm, vpage))?;
        let s = self.slots.get(&e)?;
        let mapped = matches!(s.cache, Cache::Mapped { .. });
        ((s.mm, s.vpage) == (mm, vpage) && !mapped).then_some(e)
    }
}

/// than the caches and its accesses random, so overlapping misses pays.
#[inline(always)]
fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint: it reads nothing and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (r as *const T).cast(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}
