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
/// All zero (`Default`) is a VMA that never swapped in.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
struct RaInfo {
    addr: u64,
    win: u32,
    hits: u32,
}

impl RaInfo {
    /// `GET_SWAP_RA_VAL()`: a `swap_readahead_info` of 0 reads as 4 hits
    /// ("initial readahead hits is 4 to start up with a small window").
    fn get(self) -> RaInfo {
        if self == RaInfo::default() {
            RaInfo { hits: 4, ..self }
        } else {
            self
        }
    }
}

/// The pages `[start, end)` that `swap_vma_ra_win()` (6.x) reads around
/// fault page `faddr`, given the previous fault page `prev` and window
/// `win` > 1: the right end comes from the unclamped left (`right = left +
/// win`), then left is clamped at 0 (`(long)left < 0`), and both are cut
/// to the fault's PMD (the VMA bounds are not in the trace).
fn ra_range(faddr: u64, prev: u64, win: u32) -> (u64, u64) {
    let w = win as u64;
    // Unsigned, wrapping as the kernel's unsigned long does.
    let left = if faddr == prev.wrapping_add(1) {
        faddr
    } else if prev == faddr.wrapping_add(1) {
        faddr.wrapping_sub(w).wrapping_add(1)
    } else {
        faddr.wrapping_sub((w - 1) / 2)
    };
    let right = left.wrapping_add(w);
    let left = if (left as i64) < 0 { 0 } else { left };
    let pmd = faddr & !(PMD_PAGES - 1);
    (left.max(pmd), right.min(pmd + PMD_PAGES))
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
        let ra = st.get();
        let (faddr, prev) = (f.vpage, ra.addr);
        let win = swapin_nr_pages(prev, faddr, ra.hits, max_win, ra.win);
        *st = RaInfo {
            addr: faddr,
            win,
            hits: 0,
        };
        if win == 1 {
            return 1;
        }
        let (start, end) = ra_range(faddr, prev, win);
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
        let mut ra = st.get();
        if readahead {
            ra.hits = (ra.hits + 1).min(SWAP_RA_HITS_MAX);
        }
        ra.addr = f.vpage;
        *st = ra;
    }
}

#[cfg(test)]
mod tests {
    use super::{ra_range, RaInfo};

    #[test]
    fn window_near_address_0_ends_where_the_unclamped_left_puts_it() {
        // swap_vma_ra_win(), random case: left = faddr - (win - 1) / 2,
        // right = left + win, then left < 0 -> 0.
        // faddr 1, win 8: left = 1 - 3 = -2, right = -2 + 8 = 6 -> [0, 6).
        assert_eq!(ra_range(1, 100, 8), (0, 6));
        // faddr 0, win 4: left = 0 - 1 = -1, right = 3 -> [0, 3).
        assert_eq!(ra_range(0, 100, 4), (0, 3));
        // Backwards (prev == faddr + 1): left = faddr - win + 1.
        // faddr 2, win 8: left = 2 - 8 + 1 = -5, right = 3 -> [0, 3).
        assert_eq!(ra_range(2, 3, 8), (0, 3));
        // Forwards (faddr == prev + 1): left = faddr = 1, right = 9.
        assert_eq!(ra_range(1, 0, 8), (1, 9));
    }

    #[test]
    fn window_away_from_0_is_centred_and_cut_to_the_pmd() {
        // faddr 1000, win 8: left = 997, right = 1005 (PMD 512..1024).
        assert_eq!(ra_range(1000, 0, 8), (997, 1005));
        // faddr 513, win 8: left = 510, right = 518; PMD start 512.
        assert_eq!(ra_range(513, 0, 8), (512, 518));
        // faddr 1022, win 8, forwards: left = 1022, right = 1030; PMD end 1024.
        assert_eq!(ra_range(1022, 1021, 8), (1022, 1024));
    }

    #[test]
    fn a_fresh_vma_reads_as_4_hits() {
        // GET_SWAP_RA_VAL(): swap_readahead_info 0 -> 4 (addr 0, win 0, hits 4).
        let fresh = RaInfo::default().get();
        assert_eq!(
            fresh,
            RaInfo {
                addr: 0,
                win: 0,
                hits: 4
            }
        );
        // Any other value reads as stored, 0 hits included.
        let used = RaInfo {
            addr: 7,
            win: 2,
            hits: 0,
        };
        assert_eq!(used.get(), used);
    }
}
