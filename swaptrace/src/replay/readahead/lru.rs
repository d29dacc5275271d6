//! The two anon LRU lists reclaim walks (`shrink_lruvec()`), and when the
//! inactive one is low.

use std::collections::VecDeque;

/// An LRU position: the slot and the generation that made it current.
/// Packed to 12 bytes: the lists hold a stale item per move.
#[derive(Clone, Copy)]
#[repr(C, packed(4))]
pub(super) struct LruItem {
    pub(super) entry: u64,
    pub(super) gen: u32,
}

/// The two anon LRU lists and the generation that makes a slot's newest
/// item its current one (older items of it are stale, skipped).
#[derive(Default)]
pub(super) struct Lists {
    /// The inactive list: resident swap-backed pages, oldest first.
    pub(super) inactive: VecDeque<LruItem>,
    /// The active list: mapped pages reclaim found referenced.
    pub(super) active: VecDeque<LruItem>,
    gen: u32,
}

impl Lists {
    /// The next generation's item for the packed `entry`.
    #[inline(always)]
    fn item(&mut self, entry: u64) -> LruItem {
        self.gen = self.gen.wrapping_add(1);
        LruItem {
            entry,
            gen: self.gen,
        }
    }

    /// A new generation for the packed `entry`, at the tail of the active
    /// list or the inactive one.
    #[inline(always)]
    pub(super) fn push(&mut self, active: bool, entry: u64) -> u32 {
        let item = self.item(entry);
        if active {
            self.active.push_back(item);
        } else {
            self.inactive.push_back(item);
        }
        item.gen
    }

    /// A new generation for `entry` where reclaim looks first: the oldest
    /// end of the inactive list (`folio_rotate_reclaimable()`).
    pub(super) fn push_reclaim_first(&mut self, entry: u64) -> u32 {
        let item = self.item(entry);
        self.inactive.push_front(item);
        item.gen
    }
}

/// `inactive_is_low()` (mm/vmscan.c): the inactive list times
/// `int_sqrt(10 * GiB)` of both (1 below 1 GiB) is less than the active.
#[inline(always)]
pub(super) fn inactive_is_low(inactive: usize, active: usize) -> bool {
    let gb = (inactive + active) >> 18;
    let ratio = match RATIOS.get(gb) {
        Some(&r) => r as usize,
        None => (10 * gb).isqrt(),
    };
    inactive * ratio < active
}

/// `inactive_is_low()`'s ratio up to 64 GiB (reclaim asks on every page).
const RATIOS: [u8; 64] = {
    let mut r = [1u8; 64];
    let mut gb = 1;
    while gb < 64 {
        r[gb] = (10 * gb).isqrt() as u8;
        gb += 1;
    }
    r
};
