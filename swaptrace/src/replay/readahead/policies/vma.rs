//! VMA-based readahead: `swap_vma_readahead()` with `swap_vma_ra_win()`
//! (mm/swap_state.c), the 4.14 default on non-rotational swap.

use super::cluster::swapin_nr_pages;
use crate::replay::readahead::input::SwapoffMode;
use crate::replay::readahead::pages::PMD_PAGES;
use crate::replay::readahead::policy::{FaultCtx, Policy, PolicyArgs};
use crate::replay::readahead::space::{MixHasher, SwapView};
use crate::trace::SwapEntry;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::hash::BuildHasherDefault;

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

    /// `swap_update_readahead()` after a swap-cache lookup found page
    /// `addr`'s folio (a hit, or a retried fault's own): every lookup moves
    /// the last address, and one that found PG_readahead counts a hit.
    fn looked_up(self, addr: u64, readahead: bool) -> RaInfo {
        let ra = self.get();
        let hits = if readahead {
            (ra.hits + 1).min(SWAP_RA_HITS_MAX)
        } else {
            ra.hits
        };
        RaInfo { addr, hits, ..ra }
    }
}

/// The pages `[start, end)` that `swap_vma_ra_win()` (6.x) reads around
/// fault page `faddr`, given the previous fault page `prev` and window
/// `win` > 1: the right end comes from the unclamped left (`right = left +
/// win`), then left is clamped at 0 (`(long)left < 0`), and both are cut
/// to the fault's PMD and VMA (`vma`, pages; everything when unknown).
pub fn ra_range(faddr: u64, prev: u64, win: u32, vma: (u64, u64)) -> (u64, u64) {
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
    (
        left.max(pmd).max(vma.0),
        right.min(pmd + PMD_PAGES).min(vma.1),
    )
}

/// Where a fault's readahead state lives: its VMA (`vma->swap_readahead_info`),
/// or the whole address space where the trace has no VMA bounds.
type Key = (u32, u64);

/// Every page, when the VMA is not known.
const NO_VMA: (u64, u64) = (0, u64::MAX);

/// `swap_vma_readahead()` with `swap_vma_ra_win()`: a window on virtual
/// addresses, kept per VMA and clamped to the fault's PMD and VMA (per
/// address space and the PMD only where the trace has no VMA bounds).
pub struct Vma {
    name: String,
    swapoff: SwapoffMode,
    page_cluster: u32,
    info: HashMap<Key, RaInfo, BuildHasherDefault<MixHasher>>,
    /// Each address space's VMAs: start page -> end page.
    vmas: HashMap<u32, BTreeMap<u64, u64>, BuildHasherDefault<MixHasher>>,
    /// The VMA found last, with its address space (faults stay in one VMA
    /// for long runs).
    last: Option<(u32, u64, u64)>,
    /// Faults waiting for their folio's read, by when they retry, with
    /// their address space and page: the retry finds its VMA again, and its
    /// `swap_update_readahead()` sets that VMA's address.
    retries: BinaryHeap<Reverse<(u64, u32, u64)>>,
}

impl Vma {
    pub fn new(page_cluster: u32) -> Vma {
        Vma {
            name: "vma".into(),
            swapoff: SwapoffMode::LookupStats,
            page_cluster,
            info: HashMap::default(),
            vmas: HashMap::default(),
            last: None,
            retries: BinaryHeap::new(),
        }
    }

    /// The VMA holding page `vpage` of `mm`: (key, bounds).
    fn vma_of(&mut self, mm: u32, vpage: u64) -> (Key, (u64, u64)) {
        if let Some((m, s, e)) = self.last {
            if m == mm && s <= vpage && vpage < e {
                return ((mm, s), (s, e));
            }
        }
        let found = self
            .vmas
            .get(&mm)
            .and_then(|m| m.range(..=vpage).next_back())
            .filter(|&(_, &e)| vpage < e)
            .map(|(&s, &e)| (s, e));
        match found {
            Some((s, e)) => {
                self.last = Some((mm, s, e));
                ((mm, s), (s, e))
            }
            None => ((mm, u64::MAX), NO_VMA),
        }
    }

    /// Applies the retries due by `ts`, in time order.
    fn settle(&mut self, ts: u64) {
        while let Some(&Reverse((at, mm, page))) = self.retries.peek() {
            if at > ts {
                break;
            }
            self.retries.pop();
            // The VMA may have changed meanwhile (split, merged, moved).
            let (key, _) = self.vma_of(mm, page);
            if let Some(st) = self.info.get_mut(&key) {
                *st = st.looked_up(page, false);
            }
        }
    }

    /// Forgets `mm`'s VMAs that overlap pages `[start, end)`; their bounds.
    fn remove_vmas(&mut self, mm: u32, start: u64, end: u64) -> Vec<(u64, u64)> {
        self.last = None;
        let Some(m) = self.vmas.get_mut(&mm) else {
            return Vec::new();
        };
        let gone: Vec<(u64, u64)> = m
            .range(..end)
            .filter(|&(_, &e)| e > start)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, _) in &gone {
            m.remove(s);
        }
        gone
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
        self.settle(f.ts);
        let (key, bounds) = self.vma_of(f.mm, f.vpage);
        if f.retry > 0 {
            self.retries.push(Reverse((f.retry, f.mm, f.vpage)));
        }
        let st = self.info.entry(key).or_default();
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
        let (start, end) = ra_range(faddr, prev, win, bounds);
        for page in start..end {
            if let Some(e) = view.swapped_at(f.mm, page) {
                out.push(e);
            }
        }
        win
    }

    fn on_vma(&mut self, mm: u32, start: u64, end: u64) {
        // A VMA that changed (split, merged, grown) replaces those it
        // overlaps, and keeps swap_readahead_info: vma_expand() grows the
        // VMA in place, __split_vma() copies it (vm_area_dup()). It takes
        // that of the one it overlaps most.
        // The parts of those outside it are VMAs still (the other side of
        // a split), with their copy.
        let gone = self.remove_vmas(mm, start, end);
        let overlap = |&(s, e): &(u64, u64)| e.min(end) - s.max(start);
        let kept = gone
            .iter()
            .filter(|g| self.info.contains_key(&(mm, g.0)))
            .max_by_key(|g| overlap(g))
            .and_then(|g| self.info.get(&(mm, g.0)).copied());
        let vmas = self.vmas.entry(mm).or_default();
        for &(s, e) in &gone {
            let info = self.info.remove(&(mm, s));
            for (a, b) in [(s, start), (end, e)] {
                if a < b {
                    vmas.insert(a, b);
                    if let Some(i) = info {
                        self.info.insert((mm, a), i);
                    }
                }
            }
        }
        if let Some(ra) = kept {
            self.info.insert((mm, start), ra);
        }
        vmas.insert(start, end);
    }

    fn on_unmap(&mut self, mm: u32, start: u64, end: u64) {
        // A new VMA there starts with swap_readahead_info 0.
        for (s, _) in self.remove_vmas(mm, start, end) {
            self.info.remove(&(mm, s));
        }
    }

    fn on_move(&mut self, mm: u32, from: u64, to: u64, len: u64) {
        // move_vma() copies the VMA (copy_vma(), vm_area_dup()), and with it
        // swap_readahead_info, old address included; a part left in place
        // keeps it too (__split_vma()).
        let end = from.saturating_add(len);
        for (s, e) in self.remove_vmas(mm, from, end) {
            let info = self.info.remove(&(mm, s));
            let moved = (s.max(from) - from + to, e.min(end) - from + to);
            let left = (s < from).then_some((s, from));
            let right = (e > end).then_some((end, e));
            for (a, b) in [Some(moved), left, right].into_iter().flatten() {
                self.vmas.entry(mm).or_default().insert(a, b);
                if let Some(i) = info {
                    self.info.insert((mm, a), i);
                }
            }
        }
    }

    fn on_hit(&mut self, f: &FaultCtx, readahead: bool) {
        self.settle(f.ts);
        let (key, _) = self.vma_of(f.mm, f.vpage);
        let st = self.info.entry(key).or_default();
        *st = st.looked_up(f.vpage, readahead);
    }
}

#[cfg(test)]
mod tests {
    use super::{ra_range, RaInfo, Vma, NO_VMA};
    use crate::replay::readahead::pages::PageTable;
    use crate::replay::readahead::policy::{FaultCtx, Policy};
    use crate::replay::readahead::space::{SlotTable, SwapView};
    use crate::trace::SwapEntry;

    #[test]
    fn window_near_address_0_ends_where_the_unclamped_left_puts_it() {
        // swap_vma_ra_win(), random case: left = faddr - (win - 1) / 2,
        // right = left + win, then left < 0 -> 0.
        // faddr 1, win 8: left = 1 - 3 = -2, right = -2 + 8 = 6 -> [0, 6).
        assert_eq!(ra_range(1, 100, 8, NO_VMA), (0, 6));
        // faddr 0, win 4: left = 0 - 1 = -1, right = 3 -> [0, 3).
        assert_eq!(ra_range(0, 100, 4, NO_VMA), (0, 3));
        // Backwards (prev == faddr + 1): left = faddr - win + 1.
        // faddr 2, win 8: left = 2 - 8 + 1 = -5, right = 3 -> [0, 3).
        assert_eq!(ra_range(2, 3, 8, NO_VMA), (0, 3));
        // Forwards (faddr == prev + 1): left = faddr = 1, right = 9.
        assert_eq!(ra_range(1, 0, 8, NO_VMA), (1, 9));
    }

    #[test]
    fn window_away_from_0_is_centred_and_cut_to_the_pmd() {
        // faddr 1000, win 8: left = 997, right = 1005 (PMD 512..1024).
        assert_eq!(ra_range(1000, 0, 8, NO_VMA), (997, 1005));
        // faddr 513, win 8: left = 510, right = 518; PMD start 512.
        assert_eq!(ra_range(513, 0, 8, NO_VMA), (512, 518));
        // faddr 1022, win 8, forwards: left = 1022, right = 1030; PMD end 1024.
        assert_eq!(ra_range(1022, 1021, 8, NO_VMA), (1022, 1024));
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

    #[test]
    fn the_window_is_cut_to_the_vma() {
        // faddr 1000, win 8 in VMA [998, 1003): [997, 1005) -> [998, 1003).
        assert_eq!(ra_range(1000, 0, 8, (998, 1003)), (998, 1003));
    }

    fn fault(mm: u32, vpage: u64) -> FaultCtx {
        FaultCtx {
            ts: 0,
            mm,
            vpage,
            entry: SwapEntry { dev: 0, offset: 0 },
            retry: 0,
            kernel_read: 0,
        }
    }

    /// A fault of address space 1 at `ts` whose read ends at `retry` (0: none).
    fn at(ts: u64, vpage: u64, retry: u64) -> FaultCtx {
        FaultCtx {
            ts,
            retry,
            ..fault(1, vpage)
        }
    }

    /// The windows `p` gives faults on `pages` of address space 1, with
    /// nothing swapped out.
    fn windows(p: &mut Vma, pages: impl IntoIterator<Item = u64>) -> Vec<u32> {
        windows_of(p, pages.into_iter().map(|page| fault(1, page)))
    }

    /// The windows `p` gives `faults`, with nothing swapped out.
    fn windows_of(p: &mut Vma, faults: impl IntoIterator<Item = FaultCtx>) -> Vec<u32> {
        let (slots, table) = (SlotTable::default(), PageTable::default());
        let view = SwapView {
            slots: &slots,
            pages: &table,
            dev_max: &[],
        };
        let mut out = Vec::new();
        faults
            .into_iter()
            .map(|f| p.readahead(&f, &view, &mut out))
            .collect()
    }

    /// A VMA at pages 0x1000..0x2000 whose random faults brought the window
    /// down to 1 (8, 4, 2, 1), then `then` done to it; all its windows.
    fn after_random(then: impl FnOnce(&mut Vma) -> Vec<u32>) -> Vec<u32> {
        let mut p = Vma::new(3);
        p.on_vma(1, 0x1000, 0x2000);
        let mut wins = windows(&mut p, [0x1100, 0x1500, 0x1300, 0x1700]);
        wins.extend(then(&mut p));
        wins
    }

    /// Faults alternating between two VMAs of one address space keep
    /// each VMA's sequential run (the kernel's `swap_readahead_info` is
    /// per VMA); without VMA bounds they share one state and look random.
    #[test]
    fn each_vma_keeps_its_own_readahead_state() {
        let run = |bounds: bool| {
            let mut p = Vma::new(3);
            if bounds {
                p.on_vma(1, 0x1000, 0x2000);
                p.on_vma(1, 0x8000, 0x9000);
            }
            let faults = (0..4).flat_map(|i| [0x1000 + 16 + i, 0x8000 + 16 + i]);
            windows(&mut p, faults)
        };
        let with = run(true);
        let without = run(false);
        println!("with VMAs {with:?}, without {without:?}");
        assert_ne!(with, without);
        // Per VMA: the same sequence in both VMAs.
        assert!(with.chunks(2).all(|w| w[0] == w[1]), "{with:?}");
    }

    /// A VMA grown downward (a new mapping merged below it, as a heap of
    /// mmap()ed arenas grows) keeps its swap_readahead_info: a sequential
    /// run across the merge keeps its window. A VMA mapped anew (after an
    /// unmap) starts from 0, whose 4 hits give a window of 8 at once.
    #[test]
    fn a_grown_vma_keeps_its_readahead_state() {
        let run = |unmap: bool| {
            after_random(|p| {
                if unmap {
                    p.on_unmap(1, 0x1000, 0x2000);
                }
                p.on_vma(1, 0x0800, 0x2000);
                windows(p, [0x1900])
            })
        };
        assert_eq!(run(false), [8, 4, 2, 1, 1]);
        assert_eq!(run(true), [8, 4, 2, 1, 8]);
    }

    /// Two threads fault in one VMA: A misses on a page and waits for its
    /// read while B misses far away. A's retry (`folio_lock_or_retry()`,
    /// then `swap_update_readahead()`) puts A's address back, so A's next
    /// page is adjacent: `__swapin_nr_pages()` gives 2, not 1.
    #[test]
    fn a_retried_fault_puts_its_address_back() {
        // A at 10, read done at `retry`; B at 50; A's next page at 150.
        let run = |retry: u64| {
            after_random(|p| {
                windows_of(
                    p,
                    [at(10, 0x1a00, retry), at(50, 0x1800, 0), at(150, 0x1a01, 0)],
                )
            })
        };
        // prev 0x1a00 (A's retry at 100): adjacent, 0 hits -> 2.
        assert_eq!(run(100), [8, 4, 2, 1, 1, 1, 2]);
        // No retry: prev is B's 0x1800, far -> 1 (prev_win 1 / 2 = 0).
        assert_eq!(run(0), [8, 4, 2, 1, 1, 1, 1]);
        // A retry after A's next fault changes nothing before it.
        assert_eq!(run(200), [8, 4, 2, 1, 1, 1, 1]);
    }

    /// A's retry finds its VMA again: the VMA grew downward while A waited
    /// (its key, the start, changed), and A's address goes back all the same.
    #[test]
    fn a_retry_finds_its_vma_changed_meanwhile() {
        let run = |grow: bool| {
            after_random(|p| {
                let mut w = windows_of(p, [at(10, 0x1a00, 100), at(50, 0x1800, 0)]);
                if grow {
                    p.on_vma(1, 0x0800, 0x2000);
                }
                w.extend(windows_of(p, [at(150, 0x1a01, 0)]));
                w
            })
        };
        assert_eq!(run(false), [8, 4, 2, 1, 1, 1, 2]);
        assert_eq!(run(true), [8, 4, 2, 1, 1, 1, 2]);
    }

    /// A VMA that changed replaces the one it overlaps.
    #[test]
    fn a_changed_vma_replaces_the_old_bounds() {
        let mut p = Vma::new(3);
        p.on_vma(1, 0x1000, 0x2000);
        p.on_vma(1, 0x1000, 0x1800);
        p.on_vma(1, 0x1800, 0x2000);
        assert_eq!(p.vma_of(1, 0x1900).1, (0x1800, 0x2000));
        assert_eq!(p.vma_of(1, 0x1100).1, (0x1000, 0x1800));
        assert_eq!(p.vma_of(1, 0x3000).1, NO_VMA);
        assert_eq!(p.vma_of(2, 0x1100).1, NO_VMA, "another mm");
    }

    /// A VMA split (`__split_vma()`, by mprotect() or madvise() of part of
    /// it) leaves two, each with a copy of swap_readahead_info
    /// (`vm_area_dup()`): a swap-out names the upper one, and the lower one
    /// is still a VMA whose window follows its random faults (1), not a
    /// fresh state (8).
    #[test]
    fn a_split_vma_leaves_both_halves_their_state() {
        let wins = after_random(|p| {
            p.on_vma(1, 0x1800, 0x2000);
            assert_eq!(p.vma_of(1, 0x1100).1, (0x1000, 0x1800));
            windows(p, [0x1100, 0x1a00])
        });
        assert_eq!(wins, [8, 4, 2, 1, 1, 1]);
    }
}
