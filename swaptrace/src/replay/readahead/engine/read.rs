//! A fault's page in the replay: a swap-cache hit, or a miss that reads
//! the policy's window (`swapin_readahead()`) or the page alone, and the
//! counters of its reads.

use super::Model;
use crate::replay::readahead::input::Store;
use crate::replay::readahead::pages::PMD_PAGES;
use crate::replay::readahead::policy::{FaultCtx, Policy};
use crate::replay::readahead::space::{pack, Cache, SwapView};
use crate::trace::SwapEntry;

/// Pages a miss brought in without device I/O, by counter.
#[derive(Default)]
struct Reads {
    zero: u64,
    zswap: u64,
}

impl Reads {
    /// `swap_read_folio()`: the zeromap (SWPIN_ZERO), else `zswap_load()`
    /// (ZSWPIN), else a device read (PSWPIN, queued in `io`).
    fn add(&mut self, store: Store, e: SwapEntry, io: &mut Vec<SwapEntry>) {
        match store {
            Store::Zero => self.zero += 1,
            Store::Zswap => self.zswap += 1,
            Store::Device | Store::WrittenBack => io.push(e),
        }
    }
}

impl Model<'_> {
    /// `swap_cache_get_folio()` found the page; `swap_update_readahead()`
    /// accounts a hit on a readahead page (`ra`, read at `ra_ts`).
    /// `spared`: the folio's PG_referenced, kept where it stayed mapped.
    pub(super) fn cache_hit(
        &mut self,
        f: &FaultCtx,
        (ra, ra_ts): (bool, u64),
        policy: &mut dyn Policy,
        dirty: bool,
        spared: bool,
    ) {
        self.map(f.entry, dirty, spared);
        if ra {
            self.m.swap_ra_hit += 1;
            self.so.swap_ra_hit += self.in_swapoff as u64;
            self.m.timeliness_ns += f.ts.saturating_sub(ra_ts);
        }
        policy.on_hit(f, ra);
    }

    /// `do_swap_page()` on a SWP_SYNCHRONOUS_IO device (zram, pmem) with
    /// `__swap_count() == 1` (one page table holds the entry): the page
    /// alone, read past the swap cache (no readahead, no policy, no retry:
    /// the read is done when it returns), and its slot freed.
    pub(super) fn read_alone(&mut self, e: SwapEntry, store: Store) {
        let mut read = Reads::default();
        let mut io = std::mem::take(&mut self.io);
        io.clear();
        read.add(store, e, &mut io);
        self.resident += 1;
        self.map(e, true, false);
        self.count_reads(0, &read, io);
    }

    /// `swapin_readahead()`: the policy's window around `f`, read into the
    /// swap cache, and the faulting page mapped (read too unless cached).
    pub(super) fn read_around(
        &mut self,
        f: &FaultCtx,
        policy: &mut dyn Policy,
        scratch: &mut Vec<SwapEntry>,
        dirty: bool,
    ) {
        scratch.clear();
        let view = SwapView {
            slots: &self.slots,
            pages: &self.pages,
            dev_max: &self.input.dev_max,
        };
        let window = policy.readahead(f, &view, scratch);
        if self.in_swapoff {
            *self.so.windows.entry(window).or_default() += 1;
        }
        match self.small_windows.get_mut(window as usize) {
            Some(n) => *n += 1,
            None => *self.m.windows.entry(window).or_default() += 1,
        }
        let mut io = std::mem::take(&mut self.io);
        io.clear();
        let mut ra = 0;
        let mut read = Reads::default();
        // The fault's own reclaim ran at the window's first allocation: the
        // slots it filled below that were free when the walk passed them.
        let mut allocated = self.fault_reclaimed.is_empty();
        for &e in scratch.iter() {
            if e == f.entry {
                if !allocated {
                    allocated = self.slots.get(&e).is_some_and(|s| !s.cache.resident());
                }
                continue;
            }
            if !allocated && self.fault_reclaimed.contains(&e) {
                continue;
            }
            // __read_swap_cache_async(): only allocated slots not in the cache.
            let Some(mut s) = self.slots.slot_mut(&e) else {
                continue;
            };
            if s.resident() {
                continue;
            }
            allocated = true;
            let gen = self.lists.push(false, pack(e));
            s.set(Cache::Unused {
                ra: true,
                ts: f.ts,
                gen,
                kept: false,
                writing: false,
            });
            // In memory now: its PTE (if swapped) stays a swap entry until faulted.
            read.add(s.store(), e, &mut io);
            if self.input.pressure {
                self.fault_ra.push(e);
            }
            ra += 1;
            self.resident += 1;
        }
        // The faulting page itself.
        if let Some(s) = self.slots.get(&f.entry) {
            if !s.cache.resident() {
                read.add(s.store, f.entry, &mut io);
                self.resident += 1;
            }
        }
        self.map(f.entry, dirty, false);
        self.count_reads(ra, &read, io);
    }

    /// `madvise(MADV_WILLNEED)` (`swapin_walk_pmd_entry()`) read `read`
    /// pages: the next swap PTEs of the call's range whose slot is not in
    /// the swap cache, in ascending order, each alone
    /// (`read_swap_cache_async()`: no readahead, not marked as read ahead),
    /// and mapped none. The walk goes on from the call's last read (from
    /// the range's start for a new call: `call` is (tid, mm, start, end)).
    pub(super) fn willneed(&mut self, ts: u64, call: (u32, u32, u64, u64), read: u32) {
        let (_, mm, start, end) = call;
        let mut p = match self.willneed {
            (c, next) if c == call => next,
            _ => start,
        };
        let mut io = std::mem::take(&mut self.io);
        io.clear();
        let mut reads = Reads::default();
        let mut n = 0;
        while n < read {
            let Some(q) = self.pages.next_leaf(mm, p, end) else {
                p = end;
                break;
            };
            p = q;
            let leaf_end = end.min((q / PMD_PAGES + 1) * PMD_PAGES);
            while p < leaf_end && n < read {
                if let Some(e) = self.pages.get(&(mm, p)) {
                    if let Some(mut s) = self.slots.slot_mut(&e).filter(|s| !s.resident()) {
                        let gen = self.lists.push(false, pack(e));
                        s.set(Cache::Unused {
                            ra: false,
                            ts,
                            gen,
                            kept: false,
                            writing: false,
                        });
                        reads.add(s.store(), e, &mut io);
                        self.resident += 1;
                        n += 1;
                    }
                }
                p += 1;
            }
        }
        self.willneed = (call, p);
        self.count_reads(0, &reads, io);
        if self.input.pressure {
            self.debt += i64::from(n) - i64::from(read);
        }
        self.evict(0);
    }

    /// The counters of one miss's reads: `ra` pages read ahead, the zero
    /// and zswap ones in `read`, the device's in `io` (kept for reuse).
    fn count_reads(&mut self, ra: u64, read: &Reads, mut io: Vec<SwapEntry>) {
        // One request per run of contiguous offsets (the plugged reads merge).
        io.sort_unstable();
        let requests = io
            .iter()
            .enumerate()
            .filter(|&(i, e)| i == 0 || io[i - 1].dev != e.dev || io[i - 1].offset + 1 != e.offset)
            .count() as u64;
        let pswpin = io.len() as u64;
        self.m.swap_ra += ra;
        self.m.swpin_zero += read.zero;
        self.m.zswpin += read.zswap;
        self.m.pswpin += pswpin;
        self.m.io_requests += requests;
        if self.in_swapoff {
            self.so.swap_ra += ra;
            self.so.swpin_zero += read.zero;
            self.so.zswpin += read.zswap;
            self.so.pswpin += pswpin;
            self.so.io_requests += requests;
        }
        self.io = io;
    }
}
