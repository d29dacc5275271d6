//! Swap readahead policies, each a port of the kernel code it names.

use super::engine::{Event, FaultCtx, ReplayInput, SwapView, SwapoffMode};
use super::ReplayError;
use crate::trace::SwapEntry;
use std::collections::{HashMap, VecDeque};

/// What a policy decides: the pages a swap-cache miss reads.
pub trait Policy: Send {
    fn name(&self) -> String;
    /// Pushes the swap entries to read around a miss (the faulting entry is
    /// read anyway) and returns the window (`swapin_nr_pages()` result).
    fn readahead(&mut self, f: &FaultCtx, view: &SwapView, out: &mut Vec<SwapEntry>) -> u32;
    /// A swap-cache hit; `readahead` when the page had PG_readahead.
    fn on_hit(&mut self, _f: &FaultCtx, _readahead: bool) {}
    /// What swapoff's `unuse_pte_range()` does with a page already in the
    /// swap cache (seed 000).
    fn swapoff_mode(&self) -> SwapoffMode {
        SwapoffMode::LookupStats
    }
}

pub const POLICY_NAMES: &[&str] = &[
    "cluster",
    "vma",
    "cluster-swapoff-fix",
    "vma-swapoff-fix",
    "cluster-no-swapoff-fix",
    "vma-no-swapoff-fix",
    "cluster-swapoff-nostats",
    "vma-swapoff-nostats",
    "none",
    "fixed:N",
    "leap",
    "oracle",
];

/// A policy by name (see [`POLICY_NAMES`]) for `input` (the oracle reads
/// its future). Plain `cluster` and `vma` do at swapoff what the recording
/// kernel does (`input.swapoff_mode`); the suffixes choose: `-no-swapoff-fix`
/// before 5.8, `-swapoff-fix` 5.8 to 6.17, `-swapoff-nostats` 6.18 on.
pub fn policy_by_name(name: &str, input: &ReplayInput) -> Result<Box<dyn Policy>, ReplayError> {
    let page_cluster = input.page_cluster;
    let bad = |why: &str| ReplayError::BadParam(name.to_string(), why.to_string());
    let (base, swapoff) = match name.split_once('-') {
        Some((base, "no-swapoff-fix")) => (base, SwapoffMode::Readahead),
        Some((base, "swapoff-fix")) => (base, SwapoffMode::LookupStats),
        Some((base, "swapoff-nostats")) => (base, SwapoffMode::LookupNoStats),
        _ => (name, input.swapoff_mode),
    };
    match base {
        "cluster" => Ok(Box::new(Cluster {
            name: name.to_string(),
            swapoff,
            ..Cluster::new(page_cluster)
        })),
        "vma" => Ok(Box::new(Vma {
            name: name.to_string(),
            swapoff,
            ..Vma::new(page_cluster)
        })),
        "none" => Ok(Box::new(Fixed { pages: 1 })),
        "leap" => Ok(Box::new(Leap::new(page_cluster))),
        "oracle" => Ok(Box::new(Oracle::new(input))),
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
    name: String,
    swapoff: SwapoffMode,
    page_cluster: u32,
    prev_offset: u64,
    last_readahead_pages: u32,
    hits: u32,
}

impl Cluster {
    pub fn new(page_cluster: u32) -> Cluster {
        Cluster {
            name: "cluster".into(),
            swapoff: SwapoffMode::LookupStats,
            page_cluster,
            prev_offset: 0,
            last_readahead_pages: 0,
            hits: 0,
        }
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
    name: String,
    swapoff: SwapoffMode,
    page_cluster: u32,
    info: HashMap<u32, RaInfo>,
}

impl Vma {
    pub fn new(page_cluster: u32) -> Vma {
        Vma {
            name: "vma".into(),
            swapoff: SwapoffMode::LookupStats,
            page_cluster,
            info: HashMap::new(),
        }
    }
}

impl Policy for Vma {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn swapoff_mode(&self) -> SwapoffMode {
        self.swapoff
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

/// Leap (USENIX ATC 2020): the majority trend of recent swap-offset deltas
/// (Boyer-Moore vote over the last 4, 8, 16, 32 faults) prefetches along the
/// trend; the window grows with prefetch hits; no trend falls back to
/// cluster readahead.
pub struct Leap {
    max_pages: u32,
    history: VecDeque<u64>,
    hits: u32,
    prev_win: u32,
    fallback: Cluster,
}

const LEAP_HISTORY: usize = 32;

impl Leap {
    pub fn new(page_cluster: u32) -> Leap {
        Leap {
            max_pages: 1 << page_cluster.min(10),
            history: VecDeque::with_capacity(LEAP_HISTORY + 1),
            hits: 0,
            prev_win: 0,
            fallback: Cluster::new(page_cluster),
        }
    }

    fn remember(&mut self, offset: u64) {
        self.history.push_back(offset);
        if self.history.len() > LEAP_HISTORY + 1 {
            self.history.pop_front();
        }
    }
}

/// The delta that is a strict majority among the last `w` deltas, for the
/// smallest w of 4, 8, 16, 32 that has one (Boyer-Moore majority vote).
pub fn majority_trend(history: &VecDeque<u64>) -> Option<i64> {
    let deltas: Vec<i64> = history
        .iter()
        .zip(history.iter().skip(1))
        .map(|(a, b)| b.wrapping_sub(*a) as i64)
        .collect();
    let mut w = 4;
    while w <= deltas.len() {
        let recent = &deltas[deltas.len() - w..];
        let (mut cand, mut count) = (0i64, 0usize);
        for &d in recent {
            if count == 0 {
                cand = d;
                count = 1;
            } else if d == cand {
                count += 1;
            } else {
                count -= 1;
            }
        }
        if cand != 0 && recent.iter().filter(|&&d| d == cand).count() > w / 2 {
            return Some(cand);
        }
        w *= 2;
    }
    None
}

impl Policy for Leap {
    fn name(&self) -> String {
        "leap".into()
    }

    fn readahead(&mut self, f: &FaultCtx, view: &SwapView, out: &mut Vec<SwapEntry>) -> u32 {
        self.remember(f.entry.offset);
        let Some(delta) = majority_trend(&self.history) else {
            self.hits = 0;
            return self.fallback.readahead(f, view, out);
        };
        // Window as __swapin_nr_pages() sizes it, a trend standing in for an
        // adjacent offset: hits + 2 rounded up, at least half the last window.
        let hits = std::mem::take(&mut self.hits);
        let mut win = hits + 2;
        if hits > 0 {
            win = win.next_power_of_two().max(4);
        }
        let win = win.min(self.max_pages).max(self.prev_win / 2).max(1);
        self.prev_win = win;
        for k in 1..win as i64 {
            let off = f.entry.offset as i64 + delta * k;
            if off <= 0 || off as u64 > view.dev_max(f.entry.dev) {
                break;
            }
            let e = SwapEntry {
                dev: f.entry.dev,
                offset: off as u64,
            };
            if view.allocated(e) {
                out.push(e);
            }
        }
        win
    }

    fn on_hit(&mut self, f: &FaultCtx, readahead: bool) {
        self.remember(f.entry.offset);
        if readahead {
            self.hits += 1;
        }
        self.fallback.on_hit(f, readahead);
    }
}

/// An upper bound with the same budget: each miss reads the pages of the
/// next faults, in fault order, up to the largest window. Its accuracy and
/// coverage bound those of every policy with that window.
pub struct Oracle {
    max_pages: u32,
    /// The entry of every fault, in order.
    seq: Vec<SwapEntry>,
    /// Index of the current fault in `seq`.
    now: usize,
}

impl Oracle {
    pub fn new(input: &ReplayInput) -> Oracle {
        let seq = input
            .events
            .iter()
            .filter_map(|ev| match *ev {
                Event::Fault { entry, .. } => Some(entry),
                Event::Out { .. } | Event::Swapoff { .. } => None,
            })
            .collect();
        Oracle {
            max_pages: 1 << input.page_cluster.min(10),
            seq,
            now: 0,
        }
    }
}

impl Policy for Oracle {
    fn name(&self) -> String {
        "oracle".into()
    }

    fn readahead(&mut self, f: &FaultCtx, view: &SwapView, out: &mut Vec<SwapEntry>) -> u32 {
        self.now += 1;
        let want = self.max_pages as usize - 1;
        for &e in self.seq.iter().skip(self.now).take(want * 4) {
            if out.len() == want {
                break;
            }
            if e != f.entry && view.allocated(e) && !out.contains(&e) {
                out.push(e);
            }
        }
        self.max_pages
    }

    fn on_hit(&mut self, _f: &FaultCtx, _readahead: bool) {
        self.now += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::{majority_trend, swapin_nr_pages};
    use std::collections::VecDeque;

    #[test]
    fn leap_finds_the_majority_delta() {
        let h: VecDeque<u64> = [10, 13, 16, 19, 22].into_iter().collect();
        assert_eq!(majority_trend(&h), Some(3));
        // Mostly +2 with noise: still +2 in the window of 8.
        let h: VecDeque<u64> = [0, 2, 4, 90, 92, 94, 96, 5, 98].into_iter().collect();
        assert_eq!(majority_trend(&h), Some(2));
        // Random: none.
        let h: VecDeque<u64> = [5, 90, 3, 44, 17, 8].into_iter().collect();
        assert_eq!(majority_trend(&h), None);
        // Too short to judge.
        let h: VecDeque<u64> = [1, 2, 3].into_iter().collect();
        assert_eq!(majority_trend(&h), None);
    }

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
