//! The replay's reclaim: the kernel's two anon LRU lists, scanned when
//! memory is over capacity or the kernel's frees owe pages.

use super::{Model, PREFETCH_LRU};
use crate::replay::readahead::lru::{inactive_is_low, LruItem};
use crate::replay::readahead::space::{unpack, Cache, Scan};
use std::collections::VecDeque;

impl Model<'_> {
    /// Beyond capacity, reclaim as the kernel's two anon LRU lists
    /// (`shrink_lruvec()`): when the inactive list is low
    /// ([`inactive_is_low`]), the oldest active page
    /// is deactivated (`shrink_active_list()`: anon pages always are);
    /// else the oldest inactive page is scanned (`shrink_folio_list()`): a
    /// mapped page referenced since its fault goes round the inactive list
    /// once more, one referenced again is activated, an unused readahead
    /// page or an unreferenced one goes (not one read ahead from zswap where
    /// `pageout()` keeps it: [`ReplayInput::keeps_unmapped_dirty`]).
    /// Also `pay` pages of [`Model::debt`], at a kernel free: first with
    /// readahead pages the kernel has let go ([`Model::pay_with_suspect`]).
    pub(super) fn evict(&mut self, pay: i64) {
        let floor = (self.debt - pay).max(0);
        // Pages passed over as dirty readahead: past the list's length, only
        // they are left.
        let mut kept = 0;
        while self.resident > self.input.memory_pages || self.debt > floor {
            if self.debt > floor && self.pay_with_suspect() {
                continue;
            }
            if self.take_victim() {
                continue;
            }
            if inactive_is_low(self.resident - self.n_active, self.n_active) {
                self.deactivate();
                continue;
            }
            self.prefetch_ahead(&self.lists.inactive);
            let Some(item) = self.lists.inactive.pop_front() else {
                if self.n_active == 0 {
                    break;
                }
                self.deactivate();
                continue;
            };
            let Some(e) = unpack(item.entry) else {
                continue;
            };
            let Some(mut s) = self.slots.current(&e, item.gen, false) else {
                continue;
            };
            match s.scan() {
                Scan::Referenced { spared: false } => {
                    // folio_check_references(): the fault's one PTE
                    // reference earns PG_referenced and another trip
                    // around the inactive list (FOLIOREF_KEEP); the trace
                    // does not show a second access, which would activate.
                    s.spare(self.lists.push(false, item.entry));
                }
                Scan::Referenced { spared: true } => {
                    // Referenced again with PG_referenced set: activated.
                    s.move_to(true, self.lists.push(true, item.entry));
                    self.n_active += 1;
                }
                Scan::Dirty => {
                    // Written to a new slot, which the trace's swap-out names.
                    let page = s.page();
                    if self.pages.get(&page) == Some(e) {
                        self.pages.remove(&page);
                    }
                    self.drop_slot(e);
                    self.debt -= (self.debt > 0) as i64;
                }
                Scan::Clean { ra: true } if self.input.pageout_keeps(s.store()) => {
                    // Read ahead from zswap, whose load left it dirty, and
                    // never mapped: pageout() activates it, neither anon nor
                    // shmem. Back at the young end of the list.
                    s.move_to(false, self.lists.push(false, item.entry));
                    kept += 1;
                    if kept > self.lists.inactive.len() {
                        break;
                    }
                }
                Scan::Clean { ra } => {
                    self.m.pollution += ra as u64;
                    // Its PTE holds the swap entry again (the page table kept it).
                    s.set(Cache::No);
                    self.resident -= 1;
                    self.debt -= (self.debt > 0) as i64;
                }
            }
        }
    }

    /// The slot `PREFETCH_LRU` items down `list`, fetched ahead of its scan.
    #[inline(always)]
    fn prefetch_ahead(&self, list: &VecDeque<LruItem>) {
        if let Some(e) = list.get(PREFETCH_LRU).and_then(|n| unpack(n.entry)) {
            self.slots.prefetch(&e);
        }
    }

    /// The oldest active page goes to the inactive list, unreferenced.
    pub(super) fn deactivate(&mut self) {
        while let Some(item) = self.lists.active.pop_front() {
            self.prefetch_ahead(&self.lists.active);
            let Some(e) = unpack(item.entry) else {
                continue;
            };
            let Some(mut s) = self.slots.current(&e, item.gen, true) else {
                continue;
            };
            s.move_to(false, self.lists.push(false, item.entry));
            self.n_active -= 1;
            return;
        }
        // Only stale items were left: nothing is active.
        self.n_active = 0;
    }

    /// The kernel freed a page of the inactive list at generation `gen`:
    /// its scan had passed the pages before it. Those still referenced
    /// since their fault it spared (`folio_check_references()`,
    /// `FOLIOREF_KEEP`) to the list's young end, and so does the model, up
    /// to the first page the free says nothing of.
    pub(super) fn spare_passed(&mut self, gen: u32) {
        while let Some(&item) = self.lists.inactive.front() {
            // Older than `gen`, generations wrapping.
            if gen.wrapping_sub(item.gen) as i32 <= 0 {
                return;
            }
            let Some(e) = unpack(item.entry) else {
                self.lists.inactive.pop_front();
                continue;
            };
            let Some(mut s) = self.slots.current(&e, item.gen, false) else {
                self.lists.inactive.pop_front();
                continue;
            };
            if s.scan() != (Scan::Referenced { spared: false }) {
                return;
            }
            self.lists.inactive.pop_front();
            s.spare(self.lists.push(false, item.entry));
        }
    }

    /// The fault at `ts` read more pages than the kernel's: its readahead
    /// pages join the suspects (bounded by memory: the oldest are let go).
    pub(super) fn suspect(&mut self, ts: u64) {
        let cap = self.queue_cap();
        for &e in &self.fault_ra {
            if self.suspects.len() >= cap {
                self.suspects.pop_front();
            }
            self.suspects.push_back((ts, e));
        }
    }

    /// How many suspects, and victims, are kept: twice memory, within bounds.
    pub(super) fn queue_cap(&self) -> usize {
        self.input
            .memory_pages
            .saturating_mul(2)
            .clamp(1024, 1 << 20)
    }

    /// Reclaims the oldest folio still in the swap cache unused after its
    /// write: the end of its writeback moved it where reclaim looks first
    /// (`folio_rotate_reclaimable()`), before the mapped pages, whose next
    /// use the trace does not show while the kernel keeps them. Whether
    /// one was found.
    fn take_victim(&mut self) -> bool {
        while let Some((e, g)) = self.victims.pop_front() {
            let Some(s) = self.slots.get(&e) else {
                continue;
            };
            if let Cache::Unused { ra: false, gen, .. } = s.cache {
                if gen == g {
                    self.resident -= 1;
                    self.slots.set_cache(&e, Cache::No);
                    self.debt -= (self.debt > 0) as i64;
                    return true;
                }
            }
        }
        false
    }

    /// Pays one page of [`Model::debt`] with the oldest suspect readahead
    /// page still unused that was read before the kernel's newest freed
    /// unused one: the inactive list frees unused readahead pages in the
    /// order read (not referenced, no second chance), so the kernel no
    /// longer holds it, if it ever did. Not one read from zswap where
    /// `pageout()` keeps those ([`ReplayInput::keeps_unmapped_dirty`]).
    /// Whether one was found.
    fn pay_with_suspect(&mut self) -> bool {
        while let Some(&(t, e)) = self.suspects.front() {
            if t >= self.ra_horizon {
                return false;
            }
            self.suspects.pop_front();
            let Some(s) = self.slots.get(&e) else {
                continue;
            };
            if self.input.pageout_keeps(s.store) {
                continue;
            }
            if let Cache::Unused { ra: true, ts, .. } = s.cache {
                if ts == t {
                    self.m.pollution += 1;
                    self.resident -= 1;
                    self.slots.set_cache(&e, Cache::No);
                    self.debt -= 1;
                    return true;
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod lists {
    use super::inactive_is_low;

    #[test]
    fn inactive_is_low_as_the_kernel_sizes_it() {
        // Below 1 GiB the lists are kept even.
        assert!(inactive_is_low(99, 100));
        assert!(!inactive_is_low(100, 100));
        // 4 GiB (1,050,000 pages): int_sqrt(40) = 6, so the active list
        // may be 6 times larger.
        assert!(!inactive_is_low(150_000, 900_000));
        assert!(inactive_is_low(149_000, 901_000));
    }
}
