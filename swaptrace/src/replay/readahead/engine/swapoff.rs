//! Swapoff in the replay: `try_to_unuse()` walking a device's swap PTEs.

use super::Model;
use crate::replay::readahead::input::SwapoffMode;
use crate::replay::readahead::pages::{leaf_start, PMD_PAGES};
use crate::replay::readahead::policy::{FaultCtx, Policy};
use crate::replay::readahead::space::Cache;
use crate::trace::SwapEntry;

impl Model<'_> {
    /// `try_to_unuse()` for device `dev`: each address space's swap PTEs of
    /// that device in address order (`unuse_mm()` → `unuse_pte_range()`),
    /// address spaces in the order first seen (the kernel's mmlist). What a
    /// page already in the swap cache does: [`SwapoffMode`].
    pub(super) fn swapoff(
        &mut self,
        ts: u64,
        dev: u8,
        policy: &mut dyn Policy,
        scratch: &mut Vec<SwapEntry>,
    ) {
        let mode = policy.swapoff_mode();
        self.in_swapoff = true;
        for key in self.pages.leaf_keys() {
            for i in 0..PMD_PAGES {
                let Some(entry) = self.pages.leaf_entry(key, i) else {
                    break;
                };
                let Some(entry) = entry.filter(|e| e.dev == dev) else {
                    continue;
                };
                let (mm, first) = leaf_start(key);
                let vpage = first + i;
                let Some(slot) = self.slots.get(&entry) else {
                    continue;
                };
                // A present PTE (mapped), or a slot reused by another page.
                if (slot.mm, slot.vpage) != (mm, vpage)
                    || !matches!(slot.cache, Cache::No | Cache::Unused { .. })
                {
                    continue;
                }
                self.pages.remove(&(mm, vpage));
                let f = FaultCtx {
                    ts,
                    mm,
                    vpage,
                    entry,
                    retry: 0,
                    kernel_read: 0,
                };
                self.so.ptes += 1;
                match (slot.cache, mode) {
                    (Cache::No, _) | (_, SwapoffMode::Readahead) => {
                        self.read_around(&f, policy, scratch, false)
                    }
                    (Cache::Unused { ra, ts, .. }, SwapoffMode::LookupStats) => {
                        self.cache_hit(&f, (ra, ts), policy, false, false)
                    }
                    _ => {}
                }
                // Mapped again: anonymous memory, no longer the device's.
                self.drop_slot(entry);
                self.evict(0);
            }
        }
        // Whatever is left of the device (readahead never used) goes.
        let (resident, active) = self.slots.clear_dev(dev);
        self.resident -= resident;
        self.n_active -= active;
        self.in_swapoff = false;
    }
}
