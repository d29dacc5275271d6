//! The pages a recording holds swapped out, counted per region of each
//! address space: a zap or unmap of a wide range, and a GUP fault's search,
//! visit only the regions that hold some.

use std::collections::BTreeMap;

/// Pages per region: a PMD's worth of 4 KiB pages.
const REGION_SHIFT: u32 = 9;

/// (mm, region) -> pages swapped out there; regions holding none are absent.
#[derive(Debug, Default)]
pub(super) struct Regions(BTreeMap<(u32, u64), u32>);

impl Regions {
    /// Page `page` of `mm` is swapped out now (it was not).
    pub(super) fn add(&mut self, mm: u32, page: u64) {
        *self.0.entry((mm, page >> REGION_SHIFT)).or_default() += 1;
    }

    /// Page `page` of `mm` is swapped out no more (it was).
    pub(super) fn remove(&mut self, mm: u32, page: u64) {
        let k = (mm, page >> REGION_SHIFT);
        if let Some(n) = self.0.get_mut(&k) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.0.remove(&k);
            }
        }
    }

    /// The page ranges of `[first, end)` in `mm`'s regions that hold
    /// swapped-out pages, in ascending order.
    pub(super) fn spans(
        &self,
        mm: u32,
        first: u64,
        end: u64,
    ) -> impl Iterator<Item = (u64, u64)> + '_ {
        let (lo, hi) = (first >> REGION_SHIFT, end.saturating_sub(1) >> REGION_SHIFT);
        let regions = (first < end).then(|| self.0.range((mm, lo)..=(mm, hi)));
        regions.into_iter().flatten().map(move |(&(_, r), _)| {
            let start = r << REGION_SHIFT;
            (
                start.max(first),
                start.saturating_add(1 << REGION_SHIFT).min(end),
            )
        })
    }

    /// None of `mm`'s pages is swapped out (it exited).
    pub(super) fn clear(&mut self, mm: u32) {
        let keys: Vec<_> = self
            .0
            .range((mm, 0)..=(mm, u64::MAX))
            .map(|(&k, _)| k)
            .collect();
        for k in keys {
            self.0.remove(&k);
        }
    }

    /// The counts (tests).
    #[cfg(test)]
    pub(super) fn counts(&self) -> &BTreeMap<(u32, u64), u32> {
        &self.0
    }
}
