//! VMA-based readahead: `swap_vma_readahead()` with `swap_vma_ra_win()`
//! (mm/swap_state.c), the 4.14 default on non-rotational swap.

use super::cluster::swapin_nr_pages;
use crate::replay::readahead::input::SwapoffMode;
use crate::replay::readahead::policy::{FaultCtx, Policy, PolicyArgs};
use crate::replay::readahead::space::{SwapView, PMD_PAGES};
use crate::trace::SwapEntry;
use std::collections::HashMap;

const SWAP_RA_ORDER_CEILING: u32 = 5;
const SWAP_RA_HITS_MAX: u32 = 0x3f;

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

    /// `vma` and its swapoff variants.
    pub fn make(a: &PolicyArgs) -> Result<Box<dyn Policy>, String> {
        Ok(Box::new(Vma {
            name: a.name.to_string(),
            swapoff: a.swapoff,
            ..Vma::new(a.input.page_cluster)
        }))
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
