//! Cluster readahead: `swap_cluster_readahead()` with `__swapin_nr_pages()`
//! (mm/swap_state.c), the kernel's choice on rotational swap or with
//! `vma_ra_enabled` off.

use crate::replay::readahead::input::SwapoffMode;
use crate::replay::readahead::policy::{FaultCtx, Policy, PolicyArgs};
use crate::replay::readahead::space::SwapView;
use crate::trace::SwapEntry;
use std::ops::RangeInclusive;

/// Port of `__swapin_nr_pages()` (mm/swap_state.c).
pub fn swapin_nr_pages(
    prev_offset: u64,
    offset: u64,
    hits: u32,
    max_pages: u32,
    prev_win: u32,
) -> u32 {
    // "+ 2" works well on both sequential and random loads (kernel comment).
    let mut pages = hits + 2;
    if pages == 2 {
        // No hits to judge by: check for an adjacent offset instead.
        if offset != prev_offset.wrapping_add(1) && offset != prev_offset.wrapping_sub(1) {
            pages = 1;
        }
    } else {
        let mut roundup = 4;
        while roundup < pages {
            roundup <<= 1;
        }
        pages = roundup;
    }
    pages = pages.min(max_pages);
    // Don't shrink readahead too fast.
    pages.max(prev_win / 2)
}

/// Reads the `pages`-aligned cluster around the fault: the loop of
/// `swap_cluster_readahead()` (offset 0 is the swap header).
pub fn aligned_cluster(f: &FaultCtx, pages: u32, view: &SwapView, out: &mut Vec<SwapEntry>) {
    if pages == 1 {
        return;
    }
    for offset in cluster_span(f, pages, view) {
        let e = SwapEntry {
            dev: f.entry.dev,
            offset,
        };
        if view.allocated(e) {
            out.push(e);
        }
    }
}

/// The offsets of the `pages`-aligned cluster around `f`'s entry, without
/// offset 0 (the swap header) and those past the device's end.
fn cluster_span(f: &FaultCtx, pages: u32, view: &SwapView) -> RangeInclusive<u64> {
    let mask = pages as u64 - 1;
    let start = (f.entry.offset & !mask).max(1);
    let end = (f.entry.offset | mask).min(view.dev_max(f.entry.dev));
    start..=end
}

/// `swap_cluster_readahead()` with `swapin_nr_pages()`: a window grown by
/// readahead hits (the global `swapin_readahead_hits`), aligned on swap offsets.
pub struct Cluster {
    name: String,
    swapoff: SwapoffMode,
    page_cluster: u32,
    prev_offset: u64,
    last_readahead_pages: u32,
    hits: u32,
    /// A miss has been replayed: the state is the model's own.
    started: bool,
}

impl Cluster {
    pub fn new(page_cluster: u32) -> Cluster {
        Cluster {
            name: "cluster".into(),
            swapoff: SwapoffMode::LookupStats,
            page_cluster,
            prev_offset: 0,
            last_readahead_pages: 0,
            // swapin_readahead_hits = ATOMIC_INIT(4)
            hits: 4,
            started: false,
        }
    }

    /// The window of the first miss where the kernel's state is unknown:
    /// `swapin_readahead_hits`, `prev_offset` and `last_readahead_pages`
    /// are global and last from whatever swapped in before the recording
    /// (ATOMIC_INIT(4) only after boot). The window whose aligned cluster
    /// holds as many readable pages as the kernel read, the boot state's
    /// if it does, else the smallest; where none does, the boot state's.
    fn first_window(&self, f: &FaultCtx, view: &SwapView, max_pages: u32, boot: u32) -> u32 {
        let readable = |pages: u32| {
            cluster_span(f, pages, view)
                .filter(|&o| {
                    o == f.entry.offset
                        || view.readable(SwapEntry {
                            dev: f.entry.dev,
                            offset: o,
                        })
                })
                .count() as u32
        };
        if f.kernel_read == 0 || readable(boot) == f.kernel_read {
            return boot;
        }
        std::iter::successors(Some(1u32), |w| (*w < max_pages).then_some(w * 2))
            .find(|&w| readable(w) == f.kernel_read)
            .unwrap_or(boot)
    }

    /// `cluster` and its swapoff variants.
    pub fn make(a: &PolicyArgs) -> Result<Box<dyn Policy>, String> {
        Ok(Box::new(Cluster {
            name: a.name.to_string(),
            swapoff: a.swapoff,
            ..Cluster::new(a.input.page_cluster)
        }))
    }
}

impl Policy for Cluster {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn swapoff_mode(&self) -> SwapoffMode {
        self.swapoff
    }

    fn readahead(&mut self, f: &FaultCtx, view: &SwapView, out: &mut Vec<SwapEntry>) -> u32 {
        // swapin_nr_pages()
        let max_pages = 1u32 << self.page_cluster.min(10);
        let pages = if max_pages <= 1 {
            1
        } else {
            let hits = std::mem::take(&mut self.hits);
            let mut pages = swapin_nr_pages(
                self.prev_offset,
                f.entry.offset,
                hits,
                max_pages,
                self.last_readahead_pages,
            );
            let mut hits = hits;
            if !std::mem::replace(&mut self.started, true) {
                let boot = pages;
                pages = self.first_window(f, view, max_pages, boot);
                // Not the boot state: taken as no hits, as most windows are.
                if pages != boot {
                    hits = 0;
                }
            }
            if hits == 0 {
                self.prev_offset = f.entry.offset;
            }
            self.last_readahead_pages = pages;
            pages
        };
        aligned_cluster(f, pages, view, out);
        pages
    }

    fn on_hit(&mut self, _f: &FaultCtx, readahead: bool) {
        // swap_update_readahead(): without VMA readahead, hits are global.
        if readahead {
            self.hits += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::swapin_nr_pages;

    #[test]
    fn window_heuristic_as_in_the_kernel() {
        // No hits, adjacent offsets: 2 pages; not adjacent: 1.
        assert_eq!(swapin_nr_pages(10, 11, 0, 8, 0), 2);
        assert_eq!(swapin_nr_pages(10, 9, 0, 8, 0), 2);
        assert_eq!(swapin_nr_pages(10, 50, 0, 8, 0), 1);
        // Hits round up to powers of two from 4, capped by max_pages.
        assert_eq!(swapin_nr_pages(0, 50, 1, 8, 0), 4);
        assert_eq!(swapin_nr_pages(0, 50, 2, 8, 0), 4);
        assert_eq!(swapin_nr_pages(0, 50, 3, 8, 0), 8);
        assert_eq!(swapin_nr_pages(0, 50, 30, 8, 0), 8);
        assert_eq!(swapin_nr_pages(0, 50, 30, 32, 0), 32);
        // Don't shrink too fast: at least half the previous window.
        assert_eq!(swapin_nr_pages(10, 50, 0, 8, 8), 4);
        assert_eq!(swapin_nr_pages(10, 50, 0, 8, 4), 2);
        assert_eq!(swapin_nr_pages(10, 50, 0, 8, 2), 1);
    }
}
