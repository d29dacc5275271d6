//! The swap space the engine keeps: slots by device and offset (`swap_map`),
//! each page's last swap entry (its PTE while swapped out), and the
//! read-only view policies get of them.

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
    /// `referenced` until reclaim has passed it over once.
    Mapped { gen: u32, referenced: bool },
}

impl Cache {
    pub(super) fn resident(self) -> bool {
        self != Cache::No
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
    pub(super) zero: bool,
    pub(super) cache: Cache,
}

/// Swap slots by device and offset: dense arrays, as `swap_map` is.
#[derive(Default)]
pub(super) struct SlotTable {
    pub(super) devs: Vec<Vec<Option<Slot>>>,
}

impl SlotTable {
    pub(super) fn get(&self, e: &SwapEntry) -> Option<&Slot> {
        self.devs
            .get(e.dev as usize)?
            .get(e.offset as usize)?
            .as_ref()
    }

    pub(super) fn get_mut(&mut self, e: &SwapEntry) -> Option<&mut Slot> {
        self.devs
            .get_mut(e.dev as usize)?
            .get_mut(e.offset as usize)?
            .as_mut()
    }

    #[inline]
    pub(super) fn prefetch(&self, e: &SwapEntry) {
        if let Some(s) = self
            .devs
            .get(e.dev as usize)
            .and_then(|d| d.get(e.offset as usize))
        {
            prefetch(s);
        }
    }

    fn contains_key(&self, e: &SwapEntry) -> bool {
        self.get(e).is_some()
    }

    fn cell(&mut self, e: &SwapEntry) -> &mut Option<Slot> {
        let (d, o) = (e.dev as usize, e.offset as usize);
        if self.devs.len() <= d {
            self.devs.resize_with(d + 1, Vec::new);
        }
        let dev = &mut self.devs[d];
        if dev.len() <= o {
            dev.resize(o + 1, None);
        }
        &mut dev[o]
    }

    pub(super) fn insert(&mut self, e: SwapEntry, s: Slot) {
        *self.cell(&e) = Some(s);
    }

    pub(super) fn remove(&mut self, e: &SwapEntry) -> Option<Slot> {
        self.devs
            .get_mut(e.dev as usize)?
            .get_mut(e.offset as usize)?
            .take()
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

    fn get(&self, &(mm, vpage): &(u32, u64)) -> Option<SwapEntry> {
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
