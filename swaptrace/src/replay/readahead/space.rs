//! The swap space the engine keeps: slots by device and offset (`swap_map`),
//! and the read-only view policies get of them and of the page table
//! ([`super::pages`]).

use super::input::{Event, ReplayInput, Store};
use super::pages::PageTable;
use crate::trace::SwapEntry;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Cache {
    /// On disk only.
    No,
    /// In the swap cache, not mapped: read ahead (PG_readahead while `ra`).
    /// `kept`: the kernel freed its folio, and this model, holding fewer
    /// pages than the kernel, keeps it (the engine's `Model::freed()`).
    /// `writing`: its write's I/O has not ended (PG_reclaim, the bit of
    /// PG_readahead, is set: `pageout()`), where the trace tells.
    Unused {
        ra: bool,
        ts: u64,
        gen: u32,
        kept: bool,
        writing: bool,
    },
    /// Mapped by the faulting page table (and still in the swap cache);
    /// `referenced` (the PTE's young bit) until reclaim has looked at it;
    /// `spared` (PG_referenced) once reclaim found it referenced and kept
    /// it for another trip around the inactive list; `dirty` when a write
    /// fault freed its slot (`should_try_to_free_swap()`): reclaim then
    /// writes it to a new slot, which the trace names.
    Mapped {
        gen: u32,
        referenced: bool,
        spared: bool,
        dirty: bool,
        /// On the active list (else the inactive one).
        active: bool,
    },
}

impl Cache {
    pub(super) fn resident(self) -> bool {
        self != Cache::No
    }

    pub(super) fn active(self) -> bool {
        matches!(self, Cache::Mapped { active: true, .. })
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Slot {
    pub(super) mm: u32,
    pub(super) vpage: u64,
    pub(super) store: Store,
    pub(super) cache: Cache,
}

/// A [`Slot`] as the table stores it, in 24 bytes: the model's state is
/// mostly slots, and the replay waits on memory, not on arithmetic.
/// `a`: the page (54 bits: an address shifted by at least 12, plus a
/// folio's index), the store, the cache state (0 for a vacant slot) and
/// its flags; `b`: address space and LRU generation; `ts`: when read ahead.
#[derive(Clone, Copy, Default)]
struct Packed {
    a: u64,
    b: u64,
    ts: u64,
}

const VPAGE_BITS: u32 = 54;
const STORE_SHIFT: u32 = 54;
const STATE_SHIFT: u32 = 56;
const NO: u64 = 1;
const UNUSED: u64 = 2;
const MAPPED: u64 = 3;
const RA: u64 = 1 << 58;
const REFERENCED: u64 = 1 << 59;
const DIRTY: u64 = 1 << 60;
const ACTIVE: u64 = 1 << 61;
/// `Cache::Mapped::spared`, in the bit `RA` has in an unused slot.
const SPARED: u64 = 1 << 58;
/// `Cache::Unused::kept`, in the bit `DIRTY` has in a mapped slot.
const KEPT: u64 = 1 << 60;
/// `Cache::Unused::writing`.
const WRITING: u64 = 1 << 62;

impl Packed {
    /// The state bits of `a`, the generation and the time of `cache`.
    #[inline(always)]
    fn cache_bits(cache: Cache) -> (u64, u32, u64) {
        match cache {
            Cache::No => (NO << STATE_SHIFT, 0, 0),
            Cache::Unused {
                ra,
                ts,
                gen,
                kept,
                writing,
            } => {
                let flags = [(ra, RA), (kept, KEPT), (writing, WRITING)]
                    .iter()
                    .fold(0, |f, &(on, bit)| if on { f | bit } else { f });
                ((UNUSED << STATE_SHIFT) | flags, gen, ts)
            }
            Cache::Mapped {
                gen,
                referenced,
                spared,
                dirty,
                active,
            } => {
                let flags = [
                    (referenced, REFERENCED),
                    (spared, SPARED),
                    (dirty, DIRTY),
                    (active, ACTIVE),
                ]
                .iter()
                .fold(0, |f, &(on, bit)| if on { f | bit } else { f });
                ((MAPPED << STATE_SHIFT) | flags, gen, 0)
            }
        }
    }

    #[inline]
    fn of(s: &Slot) -> Packed {
        debug_assert!(s.vpage < 1 << VPAGE_BITS, "vpage {:#x}", s.vpage);
        let store = match s.store {
            Store::Device => 0,
            Store::Zero => 1,
            Store::Zswap => 2,
            Store::WrittenBack => 3,
        };
        let (state, gen, ts) = Packed::cache_bits(s.cache);
        Packed {
            a: (s.vpage & ((1 << VPAGE_BITS) - 1)) | (store << STORE_SHIFT) | state,
            b: s.mm as u64 | (gen as u64) << 32,
            ts,
        }
    }

    /// Sets the cache state of a slot that holds a page.
    #[inline(always)]
    fn set_cache(&mut self, cache: Cache) {
        if self.vacant() {
            return;
        }
        let (state, gen, ts) = Packed::cache_bits(cache);
        self.a = (self.a & ((1 << STATE_SHIFT) - 1)) | state;
        self.b = (self.b & u32::MAX as u64) | (gen as u64) << 32;
        self.ts = ts;
    }

    #[inline]
    fn vacant(&self) -> bool {
        (self.a >> STATE_SHIFT) & 3 == 0
    }

    #[inline]
    fn get(&self) -> Option<Slot> {
        let gen = (self.b >> 32) as u32;
        let cache = match (self.a >> STATE_SHIFT) & 3 {
            NO => Cache::No,
            UNUSED => Cache::Unused {
                ra: self.a & RA != 0,
                ts: self.ts,
                gen,
                kept: self.a & KEPT != 0,
                writing: self.a & WRITING != 0,
            },
            MAPPED => Cache::Mapped {
                gen,
                referenced: self.a & REFERENCED != 0,
                spared: self.a & SPARED != 0,
                dirty: self.a & DIRTY != 0,
                active: self.a & ACTIVE != 0,
            },
            _ => return None,
        };
        let (mm, vpage) = self.page();
        Some(Slot {
            mm,
            vpage,
            store: self.store(),
            cache,
        })
    }

    #[inline(always)]
    fn store(&self) -> Store {
        match (self.a >> STORE_SHIFT) & 3 {
            1 => Store::Zero,
            2 => Store::Zswap,
            3 => Store::WrittenBack,
            _ => Store::Device,
        }
    }

    /// The address space and page the slot holds.
    #[inline(always)]
    fn page(&self) -> (u32, u64) {
        (self.b as u32, self.a & ((1 << VPAGE_BITS) - 1))
    }
}

/// What reclaim finds at a current LRU item ([`SlotTable::current`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Scan {
    /// Mapped and referenced: kept for another trip around the inactive
    /// list the first time (`spared` not yet), activated the next.
    Referenced { spared: bool },
    /// Mapped, unreferenced, its slot freed by a write: written anew.
    Dirty,
    /// Unreferenced and clean: dropped to its slot (`ra`: never used).
    Clean { ra: bool },
}

/// A slot held for the hot paths (reclaim, readahead): its state bits read
/// and written in place, without decoding the slot.
pub(super) struct SlotMut<'a>(&'a mut Packed);

impl SlotMut<'_> {
    #[inline(always)]
    pub(super) fn scan(&self) -> Scan {
        let a = self.0.a;
        if (a >> STATE_SHIFT) & 3 == MAPPED {
            if a & REFERENCED != 0 {
                Scan::Referenced {
                    spared: a & SPARED != 0,
                }
            } else if a & DIRTY != 0 {
                Scan::Dirty
            } else {
                Scan::Clean { ra: false }
            }
        } else {
            Scan::Clean { ra: a & RA != 0 }
        }
    }

    /// The page the slot holds.
    pub(super) fn page(&self) -> (u32, u64) {
        self.0.page()
    }

    /// A mapped page moved to the active list (`to`) or the inactive one,
    /// unreferenced, at generation `gen`; its dirt kept.
    #[inline(always)]
    pub(super) fn move_to(&mut self, active: bool, gen: u32) {
        let a = self.0.a & !(REFERENCED | ACTIVE);
        self.0.a = if active { a | ACTIVE } else { a };
        self.0.b = (self.0.b & u32::MAX as u64) | (gen as u64) << 32;
    }

    /// A mapped page kept on the inactive list at generation `gen`,
    /// unreferenced, with PG_referenced set (`FOLIOREF_KEEP`).
    #[inline(always)]
    pub(super) fn spare(&mut self, gen: u32) {
        self.move_to(false, gen);
        self.0.a |= SPARED;
    }

    /// In memory (any state but [`Cache::No`]).
    #[inline(always)]
    pub(super) fn resident(&self) -> bool {
        (self.0.a >> STATE_SHIFT) & 3 != NO
    }

    #[inline(always)]
    pub(super) fn store(&self) -> Store {
        self.0.store()
    }

    #[inline(always)]
    pub(super) fn set(&mut self, cache: Cache) {
        self.0.set_cache(cache);
    }
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
    dense: Vec<Packed>,
    dense_cap: usize,
    /// Offsets at or beyond `dense_cap`.
    sparse: HashMap<u64, Packed, BuildHasherDefault<MixHasher>>,
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
    fn packed(&self, e: &SwapEntry) -> Option<&Packed> {
        let d = self.devs.get(e.dev as usize)?;
        match d.dense_index(e.offset) {
            Some(o) => d.dense.get(o),
            None => d.sparse.get(&e.offset),
        }
    }

    #[inline(always)]
    fn packed_mut(&mut self, e: &SwapEntry) -> Option<&mut Packed> {
        let d = self.devs.get_mut(e.dev as usize)?;
        match d.dense_index(e.offset) {
            Some(o) => d.dense.get_mut(o),
            None => d.sparse.get_mut(&e.offset),
        }
    }

    /// `e`'s slot, if it holds a page.
    #[inline(always)]
    pub(super) fn slot_mut(&mut self, e: &SwapEntry) -> Option<SlotMut<'_>> {
        self.packed_mut(e).filter(|p| !p.vacant()).map(SlotMut)
    }

    /// `e`'s slot if its LRU generation is `gen` and it is on the list
    /// `active` names; else the LRU item is stale (None).
    #[inline(always)]
    pub(super) fn current(&mut self, e: &SwapEntry, gen: u32, active: bool) -> Option<SlotMut<'_>> {
        let p = self.packed_mut(e)?;
        let state = (p.a >> STATE_SHIFT) & 3;
        let current = (p.b >> 32) as u32 == gen
            && (state == UNUSED || state == MAPPED)
            && (p.a & ACTIVE != 0) == active;
        current.then_some(SlotMut(p))
    }

    #[inline]
    pub(super) fn get(&self, e: &SwapEntry) -> Option<Slot> {
        self.packed(e)?.get()
    }

    /// Sets the cache state of `e`'s slot, if it holds a page.
    #[inline(always)]
    pub(super) fn set_cache(&mut self, e: &SwapEntry, cache: Cache) {
        if let Some(p) = self.packed_mut(e) {
            p.set_cache(cache);
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
        self.packed(e).is_some_and(|p| !p.vacant())
    }

    pub(super) fn insert(&mut self, e: SwapEntry, s: Slot) {
        let dev = e.dev as usize;
        if self.devs.len() <= dev {
            self.devs.resize_with(dev + 1, DevSlots::default);
        }
        let d = &mut self.devs[dev];
        let s = Packed::of(&s);
        let Some(o) = d.dense_index(e.offset) else {
            d.sparse.insert(e.offset, s);
            return;
        };
        if d.dense.len() <= o {
            // Grow the capacity by doubling, but never past the bound.
            if d.dense.capacity() <= o {
                let want = (o + 1).max(d.dense.capacity() * 2).min(d.dense_cap);
                d.dense.reserve_exact(want - d.dense.len());
            }
            d.dense.resize(o + 1, Packed::default());
        }
        d.dense[o] = s;
    }

    pub(super) fn remove(&mut self, e: &SwapEntry) -> Option<Slot> {
        let d = self.devs.get_mut(e.dev as usize)?;
        match d.dense_index(e.offset) {
            Some(o) => std::mem::take(d.dense.get_mut(o)?).get(),
            None => d.sparse.remove(&e.offset)?.get(),
        }
    }

    /// Swapoff done: drops device `dev`'s slots; returns how many were
    /// resident, and how many of those active.
    pub(super) fn clear_dev(&mut self, dev: u8) -> (usize, usize) {
        let Some(d) = self.devs.get_mut(dev as usize) else {
            return (0, 0);
        };
        let (mut resident, mut active) = (0, 0);
        for s in d
            .dense
            .iter()
            .chain(d.sparse.values())
            .filter_map(Packed::get)
        {
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

/// A fast hasher for integer keys (multiply and fold): the replay's hot
/// path hashes one u64 per fault, and SipHash's DoS resistance buys nothing.
#[derive(Default)]
pub(crate) struct MixHasher(u64);

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

    fn write_u32(&mut self, v: u32) {
        self.0 = self.0.rotate_left(32) ^ v as u64;
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

    /// Whether a read of `e` would allocate and read a folio: the slot
    /// holds a page and is not in the swap cache.
    pub fn readable(&self, e: SwapEntry) -> bool {
        self.slots.get(&e).is_some_and(|s| !s.cache.resident())
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

/// Asks the CPU for the cache line of `r`: the slot and page tables are
/// larger than the caches and their accesses random, so overlapping misses
/// pays.
#[inline(always)]
pub(super) fn prefetch<T>(r: &T) {
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

#[cfg(test)]
mod packing {
    use super::*;

    #[test]
    fn a_slot_reads_back_as_it_was_stored() {
        let caches = [
            Cache::No,
            Cache::Unused {
                ra: true,
                ts: u64::MAX,
                gen: u32::MAX,
                kept: false,
                writing: false,
            },
            Cache::Unused {
                ra: false,
                ts: 7,
                gen: 0,
                kept: true,
                writing: false,
            },
            Cache::Mapped {
                gen: 3,
                referenced: true,
                spared: false,
                dirty: false,
                active: true,
            },
            Cache::Mapped {
                gen: u32::MAX,
                referenced: false,
                spared: true,
                dirty: true,
                active: false,
            },
        ];
        // The largest page a replay input holds: a 64-bit address shifted
        // by 12, plus a folio's last index.
        let vpages = [0, 1, (u64::MAX >> 12) + 511];
        let mut t = SlotTable::for_counts(&[4], &[1 << 20]);
        for (i, (&cache, store)) in caches
            .iter()
            .zip([Store::Device, Store::Zero, Store::Zswap].iter().cycle())
            .enumerate()
        {
            for (j, &vpage) in vpages.iter().enumerate() {
                let s = Slot {
                    mm: u32::MAX - i as u32,
                    vpage,
                    store: *store,
                    cache,
                };
                // Dense and hashed offsets alike.
                for offset in [(i * 3 + j) as u64 + 1, u64::MAX >> 8] {
                    let e = SwapEntry { dev: 0, offset };
                    t.insert(e, s);
                    assert_eq!(t.get(&e), Some(s));
                    for &c in &caches {
                        t.set_cache(&e, c);
                        assert_eq!(t.get(&e), Some(Slot { cache: c, ..s }));
                    }
                    assert_eq!(t.remove(&e).map(|r| r.vpage), Some(vpage));
                    assert_eq!(t.get(&e), None);
                    // A vacant slot stays vacant.
                    t.set_cache(&e, Cache::No);
                    assert_eq!(t.get(&e), None);
                    assert!(!t.contains_key(&e));
                }
            }
        }
    }

    /// `folio_check_references()` on a mapped page: referenced once, it is
    /// spared (PG_referenced) and scans clean next; referenced again with
    /// PG_referenced, it is activated.
    #[test]
    fn a_mapped_page_is_spared_once_then_activated_if_referenced_again() {
        let mut t = SlotTable::for_counts(&[4], &[1 << 20]);
        let e = SwapEntry { dev: 0, offset: 1 };
        let mapped = |spared| Cache::Mapped {
            gen: 1,
            referenced: true,
            spared,
            dirty: false,
            active: false,
        };
        t.insert(
            e,
            Slot {
                mm: 1,
                vpage: 7,
                store: Store::Device,
                cache: mapped(false),
            },
        );
        let mut s = t.current(&e, 1, false).expect("current");
        assert_eq!(s.scan(), Scan::Referenced { spared: false });
        s.spare(2);
        assert_eq!(s.scan(), Scan::Clean { ra: false });
        let kept = t.get(&e).expect("slot").cache;
        assert_eq!(
            kept,
            Cache::Mapped {
                gen: 2,
                referenced: false,
                spared: true,
                dirty: false,
                active: false,
            }
        );
        t.set_cache(&e, mapped(true));
        let s = t.current(&e, 1, false).expect("current");
        assert_eq!(s.scan(), Scan::Referenced { spared: true });
    }
}
