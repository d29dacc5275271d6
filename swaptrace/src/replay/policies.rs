//! Swap readahead policies, each a port of the kernel code it names.

use super::engine::{FaultCtx, SwapView};
use super::ReplayError;
use crate::trace::SwapEntry;
use std::collections::HashMap;

/// What a policy decides: the pages a swap-cache miss reads.
pub trait Policy: Send {
    fn name(&self) -> String;
    /// Pushes the swap entries to read around a miss (the faulting entry is
    /// read anyway) and returns the window (`swapin_nr_pages()` result).
    fn readahead(&mut self, f: &FaultCtx, view: &SwapView, out: &mut Vec<SwapEntry>) -> u32;
    /// A swap-cache hit; `readahead` when the page had PG_readahead.
    fn on_hit(&mut self, _f: &FaultCtx, _readahead: bool) {}
}

pub const POLICY_NAMES: &[&str] = &["cluster", "vma", "none", "fixed:N"];

/// A policy by name (`cluster`, `vma`, `none`, `fixed:N`) for a trace
/// recorded with `page_cluster`.
pub fn policy_by_name(name: &str, page_cluster: u32) -> Result<Box<dyn Policy>, ReplayError> {
    let bad = |why: &str| ReplayError::BadParam(name.to_string(), why.to_string());
    match name {
        "cluster" => Ok(Box::new(Cluster::new(page_cluster))),
        "vma" => Ok(Box::new(Vma::new(page_cluster))),
        "none" => Ok(Box::new(Fixed { pages: 1 })),
        _ => match name.strip_prefix("fixed:") {
            Some(n) => {
                let pages: u32 = n.parse().map_err(|_| bad("N must be a number"))?;
                if pages == 0 || !pages.is_power_of_two() || pages > 1024 {
                    return Err(bad("N must be a power of two from 1 to 1024"));
                }
                Ok(Box::new(Fixed { pages }))
            }
            None => Err(ReplayError::UnknownPolicy(name.to_string())),
        },
    }
}

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
fn aligned_cluster(f: &FaultCtx, pages: u32, view: &SwapView, out: &mut Vec<SwapEntry>) {
    let mask = pages as u64 - 1;
    if mask == 0 {
        return;
    }
    let start = (f.entry.offset & !mask).max(1);
    let end = (f.entry.offset | mask).min(view.dev_max(f.entry.dev));
    for offset in start..=end {
        let e = SwapEntry {
            dev: f.entry.dev,
            offset,
        };
        if view.allocated(e) {
            out.push(e);
        }
    }
}

/// `swap_cluster_readahead()` with `swapin_nr_pages()`: a window grown by
/// readahead hits (the global `swapin_readahead_hits`), aligned on swap offsets.
pub struct Cluster {
    page_cluster: u32,
    prev_offset: u64,
    last_readahead_pages: u32,
    hits: u32,
}

impl Cluster {
    pub fn new(page_cluster: u32) -> Cluster {
        Cluster {
            page_cluster,
            prev_offset: 0,
            last_readahead_pages: 0,
            hits: 0,
        }
    }
}

impl Policy for Cluster {
    fn name(&self) -> String {
        "cluster".into()
    }

    fn readahead(&mut self, f: &FaultCtx, view: &SwapView, out: &mut Vec<SwapEntry>) -> u32 {
        // swapin_nr_pages()
        let max_pages = 1u32 << self.page_cluster.min(10);
        let pages = if max_pages <= 1 {
            1
        } else {
            let hits = std::mem::take(&mut self.hits);
            let pages = swapin_nr_pages(
                self.prev_offset,
                f.entry.offset,
                hits,
                max_pages,
                self.last_readahead_pages,
            );
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

const SWAP_RA_ORDER_CEILING: u32 = 5;
const SWAP_RA_HITS_MAX: u32 = 0x3f;
/// Pages per PMD with 4 KiB pages.
const PMD_PAGES: u64 = 512;

/// `vma->swap_readahead_info`: last fault address (page), window, hits.
#[derive(Clone, Copy, Default)]
struct RaInfo {
    addr: u64,
    win: u32,
    hits: u32,
}

/// `swap_vma_readahead()` with `swap_vma_ra_win()`: a window on virtual
/// addresses, kept per VMA (here per address space: the trace has no VMA
/// bounds) and clamped to the PMD of the fault.
pub struct Vma {
    page_cluster: u32,
    info: HashMap<u32, RaInfo>,
}

impl Vma {
    pub fn new(page_cluster: u32) -> Vma {
        Vma {
            page_cluster,
            info: HashMap::new(),
        }
    }
}

impl Policy for Vma {
    fn name(&self) -> String {
        "vma".into()
    }

    fn readahead(&mut self, f: &FaultCtx, view: &SwapView, out: &mut Vec<SwapEntry>) -> u32 {
        let max_win = 1u32 << self.page_cluster.min(SWAP_RA_ORDER_CEILING);
        if max_win == 1 {
            return 1;
        }
        let st = self.info.entry(f.mm).or_default();
        let (faddr, prev) = (f.vpage, st.addr);
        let win = swapin_nr_pages(prev, faddr, st.hits, max_win, st.win);
        *st = RaInfo {
            addr: faddr,
            win,
            hits: 0,
        };
        if win == 1 {
            return 1;
        }
        let w = win as u64;
        let left = if faddr == prev.wrapping_add(1) {
            faddr
        } else if prev == faddr.wrapping_add(1) {
            (faddr + 1).saturating_sub(w)
        } else {
            faddr.saturating_sub((w - 1) / 2)
        };
        let pmd = faddr & !(PMD_PAGES - 1);
        let start = left.max(pmd);
        let end = (left + w).min(pmd + PMD_PAGES);
        for page in start..end {
            if let Some(e) = view.swapped_at(f.mm, page) {
                out.push(e);
            }
        }
        win
    }

    fn on_hit(&mut self, f: &FaultCtx, readahead: bool) {
        // swap_update_readahead(): every hit moves the VMA's last address.
        let st = self.info.entry(f.mm).or_default();
        if readahead {
            st.hits = (st.hits + 1).min(SWAP_RA_HITS_MAX);
        }
        st.addr = f.vpage;
    }
}

/// A fixed, aligned window (`none` is `fixed:1`): the baseline.
pub struct Fixed {
    pages: u32,
}

impl Policy for Fixed {
    fn name(&self) -> String {
        if self.pages == 1 {
            "none".into()
        } else {
            format!("fixed:{}", self.pages)
        }
    }

    fn readahead(&mut self, f: &FaultCtx, view: &SwapView, out: &mut Vec<SwapEntry>) -> u32 {
        aligned_cluster(f, self.pages, view, out);
        self.pages
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
