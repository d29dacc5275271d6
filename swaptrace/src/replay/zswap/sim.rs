//! The pool model: zswap's LRU, its limit writeback (`shrink_worker()`)
//! and its dynamic shrinker (`zswap_shrinker_count()` /
//! `zswap_shrinker_scan()` under `do_shrink_slab()`), and what one event
//! does to it. What drives the shrinker is in `replayer`.

use std::collections::HashMap;

use super::replayer::{Pressure, Span};
use super::{
    input::LiveIn, ZswapEvent, ZswapMetrics, ZswapParams, ZswapPolicy, DEFAULT_COMPRESSION_RATIO,
    DEF_PRIORITY,
};
use crate::trace::{OutKind, SwapEntry};

/// `SHRINK_BATCH`: zswap's shrinker sets no batch.
const SHRINK_BATCH: u64 = 128;
/// `DEFAULT_SEEKS`: zswap's shrinker `seeks`.
const DEFAULT_SEEKS: u64 = 2;
/// `MAX_RECLAIM_RETRIES`: failed attempts before `shrink_worker()` gives up.
const MAX_RECLAIM_RETRIES: u32 = 16;

const NIL: usize = usize::MAX;

#[derive(Clone, Copy)]
struct Node {
    entry: SwapEntry,
    prev: usize,
    next: usize,
    referenced: bool,
}

/// The zswap `list_lru`: `oldest` is where `list_lru_walk` starts.
pub(super) struct Lru {
    nodes: Vec<Node>,
    free: Vec<usize>,
    oldest: usize,
    newest: usize,
    pub(super) len: u64,
}

impl Lru {
    pub(super) fn new() -> Lru {
        Lru {
            nodes: Vec::new(),
            free: Vec::new(),
            oldest: NIL,
            newest: NIL,
            len: 0,
        }
    }

    fn link_newest(&mut self, i: usize) {
        self.nodes[i].prev = self.newest;
        self.nodes[i].next = NIL;
        match self.newest {
            NIL => self.oldest = i,
            n => self.nodes[n].next = i,
        }
        self.newest = i;
    }

    fn unlink(&mut self, i: usize) {
        let Node { prev, next, .. } = self.nodes[i];
        match prev {
            NIL => self.oldest = next,
            p => self.nodes[p].next = next,
        }
        match next {
            NIL => self.newest = prev,
            n => self.nodes[n].prev = prev,
        }
    }

    fn push(&mut self, entry: SwapEntry, referenced: bool) -> usize {
        let node = Node {
            entry,
            prev: NIL,
            next: NIL,
            referenced,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i] = node;
                i
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        };
        self.link_newest(i);
        self.len += 1;
        i
    }

    fn remove(&mut self, i: usize) -> SwapEntry {
        self.unlink(i);
        self.free.push(i);
        self.len -= 1;
        self.nodes[i].entry
    }

    /// `LRU_ROTATE`.
    fn rotate(&mut self, i: usize) {
        self.unlink(i);
        self.link_newest(i);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Slot {
    Pool(usize),
    /// In the pool, and read in at this page-in count by a load that kept
    /// the entry (frontswap, before 6.5): while the page is in memory its
    /// writeback fails (`-EEXIST`: in the swap cache).
    PoolCached(usize, u64),
    WrittenBack,
    Rejected,
    Zero,
    /// Read from disk at this page-in count, its data still in the slot:
    /// a read fault keeps the slot, and reclaim drops the page clean.
    OnDisk(u64),
    /// Such a page the kernel freed (a recorded `out_freed`): out of
    /// memory, its data in the slot.
    Dropped,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Why {
    Limit,
    Shrinker,
}

pub(super) struct Sim {
    pub(super) policy: ZswapPolicy,
    pub(super) ratio: f64,
    pub(super) max_pages: u64,
    pub(super) thr_pages: u64,
    pub(super) priority: u32,
    pub(super) lru: Lru,
    pub(super) slots: HashMap<SwapEntry, Slot>,
    pub(super) reached_full: bool,
    pub(super) nr_protected: u64,
    pub(super) nr_disk_swapins: u64,
    pub(super) nr_deferred: u64,
    /// Pages read in so far, and how many more a page read from disk
    /// stays resident for (then it is dropped clean).
    pub(super) pagein: u64,
    pub(super) resident: u64,
    /// Recorded writebacks not yet matched, and the limit writebacks
    /// counted against them so far ([`write_back_recorded`](Self::write_back_recorded)).
    pub(super) owed: u64,
    pub(super) limit_paid: u64,
    /// The disk swap-ins the last count consumed (6.12).
    pub(super) discount: u64,
    /// Swap-outs recorded as I/O are refused ([`ZswapParams::follow_refusals`]).
    pub(super) refusals: bool,
    /// [`ZswapParams::exclusive_loads`].
    pub(super) exclusive: bool,
    /// [`ZswapParams::limit_reclaim_one`].
    pub(super) reclaim_one: bool,
    pub(super) m: ZswapMetrics,
}

/// `mult_frac(x, n, d)`.
pub(super) fn mult_frac(x: u64, n: u64, d: u64) -> u64 {
    if d == 0 {
        return 0;
    }
    let (q, r) = (x / d, x % d);
    q.saturating_mul(n)
        .saturating_add((r as u128 * n as u128 / d as u128) as u64)
}

impl Sim {
    /// `zswap_total_pages()`: stored pages at the compression ratio.
    pub(super) fn pool_pages(&self) -> u64 {
        (self.lru.len as f64 / self.ratio).ceil() as u64
    }

    /// `zswap_check_limits()` (6.12; 6.8's `zswap_is_full()` and
    /// `zswap_can_accept()` the same but for >= against >).
    fn check_limits(&mut self) -> bool {
        let cur = self.pool_pages();
        if cur >= self.max_pages {
            self.reached_full = true;
        } else if self.reached_full && cur <= self.thr_pages {
            self.reached_full = false;
        }
        !self.reached_full
    }

    /// Whether a store refused at the limit queues the worker: 6.5+ at
    /// every such refusal; before, only with the pool at its limit
    /// (`zswap_is_full()`), not while it waits to fall to the threshold.
    fn queues_worker(&self) -> bool {
        !self.reclaim_one || self.pool_pages() >= self.max_pages
    }

    fn writeback(&mut self, i: usize, why: Why) {
        let entry = self.lru.remove(i);
        self.slots.insert(entry, Slot::WrittenBack);
        self.m.writebacks += 1;
        match why {
            Why::Limit => self.m.writebacks_limit += 1,
            Why::Shrinker => self.m.writebacks_shrinker += 1,
        }
    }

    /// `shrink_memcg_cb()` on the oldest entry: rotates a referenced entry
    /// (6.12 second chance), else writes it back. None when the LRU is empty.
    fn walk_one(&mut self, why: Why) -> Option<bool> {
        let i = self.lru.oldest;
        if i == NIL {
            return None;
        }
        if self.policy.second_chance() && self.lru.nodes[i].referenced {
            self.lru.nodes[i].referenced = false;
            self.lru.rotate(i);
            self.m.rotations += 1;
            return Some(false);
        }
        if !self.exclusive && self.in_memory(self.lru.nodes[i].entry) {
            // zswap_writeback_entry(): the page is in the swap cache.
            self.lru.rotate(i);
            self.m.writebacks_failed += 1;
            return Some(false);
        }
        self.writeback(i, why);
        Some(true)
    }

    /// `shrink_worker()`, run at once rather than queued: one entry per
    /// `shrink_memcg()` down to the accept threshold; 6.12 counts a rotation
    /// as a failure and stops after `MAX_RECLAIM_RETRIES`.
    fn shrink_worker(&mut self) {
        self.m.shrink_worker_runs += 1;
        if self.reclaim_one {
            // Before 6.5: zpool_shrink() of one page, zbud_reclaim_page()
            // trying up to 8 entries.
            for _ in 0..8 {
                if self.walk_one(Why::Limit) != Some(false) {
                    break;
                }
            }
            return;
        }
        let mut failures = 0;
        loop {
            match self.walk_one(Why::Limit) {
                None => break,
                Some(true) => {}
                Some(false) => {
                    failures += 1;
                    if failures == MAX_RECLAIM_RETRIES {
                        break;
                    }
                }
            }
            if self.pool_pages() <= self.thr_pages {
                break;
            }
        }
    }

    /// `zswap_store()`: invalidates a stale entry of the slot, then stores
    /// or rejects (queueing the worker when the pool reached its limit).
    pub(super) fn store(&mut self, entry: SwapEntry, how: OutKind) {
        self.m.swap_outs += 1;
        if let Some(Slot::Pool(i) | Slot::PoolCached(i, _)) = self.slots.remove(&entry) {
            self.lru.remove(i);
            self.m.invalidated += 1;
        }
        if how == OutKind::Zero {
            // Same-filled pages never take pool space.
            self.m.zero_pages += 1;
            self.slots.insert(entry, Slot::Zero);
            return;
        }
        if !self.check_limits() {
            self.m.stores_rejected += 1;
            self.slots.insert(entry, Slot::Rejected);
            if self.queues_worker() {
                self.shrink_worker();
            }
            return;
        }
        if self.refusals && how == OutKind::Io {
            // zswap_store() refused it with room in the pool: the page's doing.
            self.m.stores_rejected += 1;
            self.m.stores_refused_as_recorded += 1;
            self.slots.insert(entry, Slot::Rejected);
            return;
        }
        self.m.stores_accepted += 1;
        let i = self.lru.push(entry, self.policy.second_chance());
        self.slots.insert(entry, Slot::Pool(i));
        self.m.peak_stored_pages = self.m.peak_stored_pages.max(self.lru.len);
        if self.policy == ZswapPolicy::Shrinker {
            // zswap_lru_add() (6.8): grow the protection, halve it once it
            // exceeds a quarter of the LRU.
            let old = self.nr_protected + 1;
            self.nr_protected = if old > self.lru.len / 4 { old / 2 } else { old };
        }
    }

    /// Whether readahead reads `entry`: it is in zswap or on disk, not in
    /// memory (a page read from disk is until `resident` more pages came in).
    fn holds(&self, entry: SwapEntry) -> bool {
        match self.slots.get(&entry) {
            Some(Slot::Pool(_) | Slot::WrittenBack | Slot::Rejected | Slot::Dropped) => true,
            Some(&Slot::OnDisk(at) | &Slot::PoolCached(_, at)) => !self.resident_since(at),
            _ => false,
        }
    }

    /// A page read in at page-in count `at` is still in memory.
    fn resident_since(&self, at: u64) -> bool {
        self.pagein.saturating_sub(at) <= self.resident
    }

    /// A pool entry whose page a shared load left in memory, still there.
    fn in_memory(&self, entry: SwapEntry) -> bool {
        matches!(self.slots.get(&entry), Some(&Slot::PoolCached(_, at)) if self.resident_since(at))
    }

    /// `swap_read_folio()` of `entry`: zswap_load() first (an exclusive
    /// load: the entry leaves the pool), else the disk, whose data stays
    /// in the slot unless the fault `frees` it (`should_try_to_free_swap()`:
    /// a write fault). Some(true) from zswap, Some(false) from disk.
    fn load(&mut self, entry: SwapEntry, frees: bool) -> Option<bool> {
        self.m.swap_ins += 1;
        if self.policy == ZswapPolicy::Shrinker {
            // 6.8 calls zswap_folio_swapin() for every swap-in read.
            self.nr_protected += 1;
        }
        let hit = match self.slots.remove(&entry) {
            Some(Slot::Pool(i) | Slot::PoolCached(i, _)) => {
                self.m.zswap_hits += 1;
                self.pagein += 1;
                if self.exclusive || frees {
                    self.lru.remove(i);
                } else {
                    // Before 6.5 the entry stays until the slot is freed.
                    self.slots.insert(entry, Slot::PoolCached(i, self.pagein));
                }
                return Some(true);
            }
            Some(Slot::WrittenBack) => {
                self.m.disk_swapins_written_back += 1;
                false
            }
            Some(Slot::Rejected) => {
                self.m.disk_swapins_not_stored += 1;
                false
            }
            Some(Slot::OnDisk(_) | Slot::Dropped) => {
                self.m.disk_swapins_reread += 1;
                false
            }
            Some(Slot::Zero) => {
                self.m.zero_swapins += 1;
                return None;
            }
            None => {
                self.m.untracked_swapins += 1;
                return None;
            }
        };
        self.pagein += 1;
        if !frees {
            self.slots.insert(entry, Slot::OnDisk(self.pagein));
        }
        self.m.disk_swapins += 1;
        if self.policy == ZswapPolicy::DiskSwapinTracking {
            self.nr_disk_swapins += 1;
        }
        Some(hit)
    }

    /// The kernel freed the page of `entry`: one read from disk, or kept in
    /// the pool by a shared load, is out of memory now, its slot readable again.
    fn freed(&mut self, entry: SwapEntry) {
        if let Some(s) = self.slots.get_mut(&entry) {
            *s = match *s {
                Slot::OnDisk(_) => Slot::Dropped,
                Slot::PoolCached(i, _) => Slot::Pool(i),
                other => other,
            };
        }
    }

    /// A fault that found the page in the swap cache: a pool entry is
    /// dropped; a page whose data is on disk is mapped, resident again,
    /// and a write fault frees its slot.
    fn cache_hit(&mut self, entry: SwapEntry, write: bool) {
        self.m.cache_hits += 1;
        match self.slots.remove(&entry) {
            Some(Slot::Pool(i)) => {
                self.lru.remove(i);
                self.m.cache_hit_drops += 1;
            }
            // Mapped again; a write fault frees the slot and its entry.
            Some(Slot::PoolCached(i, _)) if write => {
                self.lru.remove(i);
            }
            Some(Slot::PoolCached(i, _)) => {
                self.slots.insert(entry, Slot::PoolCached(i, self.pagein));
            }
            Some(Slot::WrittenBack | Slot::Rejected | Slot::OnDisk(_) | Slot::Dropped)
                if !write =>
            {
                self.slots.insert(entry, Slot::OnDisk(self.pagein));
            }
            Some(s @ Slot::Zero) if !write => {
                self.slots.insert(entry, s);
            }
            _ => {}
        }
    }

    /// `zswap_shrinker_count()`.
    pub(super) fn shrinker_count(&mut self) -> u64 {
        let nr_stored = self.lru.len;
        if nr_stored == 0 {
            return 0;
        }
        if self.policy == ZswapPolicy::DiskSwapinTracking {
            // Consume disk swap-ins up to the LRU size; the rest remains.
            self.discount = nr_stored.min(self.nr_disk_swapins);
            self.nr_disk_swapins -= self.discount;
        }
        // Scale by the memory saving: compressed pages per stored page.
        mult_frac(self.freeable(), self.pool_pages(), nr_stored)
    }

    /// [`shrinker_count`](Self::shrinker_count) in stored pages, as the
    /// last count took it (6.12: less the disk swap-ins it consumed).
    pub(super) fn freeable(&self) -> u64 {
        let n = self.lru.len;
        match self.policy {
            ZswapPolicy::NoShrinker => 0,
            ZswapPolicy::Shrinker => n.saturating_sub(self.nr_protected),
            ZswapPolicy::ShrinkerSecondChance => n,
            ZswapPolicy::DiskSwapinTracking => n - n.min(self.discount),
        }
    }

    /// The recording kernel wrote `nr` entries back: this model, being the
    /// kernel's policy, walks its LRU (rotating as the policy does) until
    /// it wrote back as many, less its own limit writebacks since the last
    /// call. Returns the entries walked and [`freeable`](Self::freeable)
    /// before the walk.
    pub(super) fn write_back_recorded(&mut self, nr: u64) -> (u64, u64) {
        let limit = self.m.writebacks_limit - self.limit_paid;
        self.limit_paid = self.m.writebacks_limit;
        self.owed = (self.owed + nr).saturating_sub(limit);
        let freeable = self.freeable();
        // Each entry is rotated at most once before it is written back.
        let most = 2 * self.lru.len;
        let mut walked = 0;
        while self.owed > 0 && walked < most {
            match self.walk_one(Why::Shrinker) {
                None => break,
                Some(w) => self.owed -= w as u64,
            }
            walked += 1;
        }
        (walked, freeable)
    }

    /// `nr` entries walked by `zswap_shrinker_scan()` calls of
    /// `SHRINK_BATCH`. A batch that only rotates ends one
    /// `do_shrink_slab()`, not the walk: the kernel's took several.
    pub(super) fn scan(&mut self, mut nr: u64) {
        while nr > 0 && self.lru.len > 0 {
            let batch = nr.min(SHRINK_BATCH);
            if self.protects(batch) {
                return;
            }
            self.walk(batch);
            nr -= batch;
        }
    }

    /// 6.8: a scan of `nr_to_scan` would shrink into the protected region.
    fn protects(&self, nr_to_scan: u64) -> bool {
        self.policy == ZswapPolicy::Shrinker
            && self.nr_protected >= self.lru.len.wrapping_sub(nr_to_scan)
    }

    /// Up to `n` entries walked from the oldest; the entries written back.
    fn walk(&mut self, n: u64) -> u64 {
        let mut freed = 0;
        for _ in 0..n {
            match self.walk_one(Why::Shrinker) {
                None => break,
                Some(w) => freed += w as u64,
            }
        }
        freed
    }

    /// `zswap_shrinker_scan()`: None is `SHRINK_STOP`.
    pub(super) fn shrinker_scan(&mut self, nr_to_scan: u64) -> Option<u64> {
        if self.protects(nr_to_scan) {
            return None;
        }
        let freed = self.walk(nr_to_scan);
        (freed > 0).then_some(freed)
    }

    /// `do_shrink_slab()` for the zswap shrinker at `self.priority`, with
    /// its deferred work carried across episodes.
    pub(super) fn do_shrink_slab(&mut self) {
        self.m.pressure_episodes += 1;
        let freeable = self.shrinker_count();
        if freeable == 0 {
            return;
        }
        let nr = std::mem::take(&mut self.nr_deferred);
        let delta = (freeable >> self.priority) * 4 / DEFAULT_SEEKS;
        let mut total_scan = ((nr >> self.priority) + delta).min(2 * freeable);
        let mut scanned = 0;
        while total_scan >= SHRINK_BATCH || total_scan >= freeable {
            let nr_to_scan = SHRINK_BATCH.min(total_scan);
            if self.shrinker_scan(nr_to_scan).is_none() {
                break;
            }
            total_scan -= nr_to_scan;
            scanned += nr_to_scan;
        }
        self.nr_deferred = (nr + delta).saturating_sub(scanned).min(2 * freeable);
    }
}

/// A time bucket: `(t_sec, pool_pages, disk_swapins, zswap_hits)`.
pub(super) type Row = (f64, u64, u64, u64);

impl Sim {
    pub(super) fn new(
        span: &Span,
        policy: ZswapPolicy,
        p: &ZswapParams,
        pressure: Pressure,
    ) -> Sim {
        let max_pages = p.pool_limit_for(span.memory_figure);
        // zswap_accept_thr_pages()
        let thr_pages =
            (max_pages as u128 * p.accept_threshold_percent.min(100) as u128 / 100) as u64;
        let ratio = if p.compression_ratio.is_finite() && p.compression_ratio >= 1.0 {
            p.compression_ratio
        } else {
            DEFAULT_COMPRESSION_RATIO
        };
        // Unknown: a page read from disk stays until its next fault.
        let resident = p.resident_pages.or(span.resident_pages).unwrap_or(u64::MAX);
        Sim {
            policy,
            ratio,
            max_pages,
            thr_pages,
            priority: p.shrinker_priority.min(DEF_PRIORITY),
            lru: Lru::new(),
            slots: HashMap::new(),
            reached_full: false,
            nr_protected: 0,
            nr_disk_swapins: 0,
            nr_deferred: 0,
            pagein: 0,
            resident,
            owed: 0,
            limit_paid: 0,
            discount: 0,
            // A zswap that stored nothing refused for its own reasons.
            refusals: p.follow_refusals && span.kernel_policy.is_some() && span.stored,
            exclusive: p.exclusive_loads,
            reclaim_one: p.limit_reclaim_one,
            m: ZswapMetrics {
                policy: policy.name().to_string(),
                pool_limit_pages: max_pages,
                accept_threshold_pages: thr_pages,
                compression_ratio: ratio,
                shrinker_priority: p.shrinker_priority.min(DEF_PRIORITY),
                resident_pages: (resident != u64::MAX).then_some(resident),
                pressure: pressure.describe(),
                ..ZswapMetrics::default()
            },
        }
    }

    /// One event's stores, loads and drops (not the shrinker's runs),
    /// its loads tallied into `row`.
    pub(super) fn apply(&mut self, ev: &ZswapEvent, row: &mut Row) {
        match *ev {
            ZswapEvent::Out { entry, how, .. } => self.store(entry, how),
            ZswapEvent::In {
                entry,
                window,
                live,
                write,
                ..
            } => {
                // The fault's page, then the rest of its readahead block:
                // each read goes through zswap_load() first.
                let w = u64::from(window.clamp(1, 1 << 10).next_power_of_two());
                let start = entry.offset & !(w - 1);
                let block = (start..start + w).filter(|&o| o != entry.offset && o > 0);
                let others = block.map(|offset| SwapEntry {
                    dev: entry.dev,
                    offset,
                });
                for e in std::iter::once(entry).chain(others) {
                    if e != entry && !self.holds(e) {
                        continue;
                    }
                    let got = self.load(e, e == entry && write);
                    tally(row, got);
                    if e == entry {
                        let a = &mut self.m.agreement;
                        match (live, got) {
                            (LiveIn::Zswap, Some(true)) => a.zswap_zswap += 1,
                            (LiveIn::Zswap, Some(false)) => a.zswap_disk += 1,
                            (LiveIn::Disk, Some(true)) => a.disk_zswap += 1,
                            (LiveIn::Disk, Some(false)) => a.disk_disk += 1,
                            (LiveIn::Zswap | LiveIn::Disk, None) => a.other += 1,
                            _ => {}
                        }
                    }
                }
            }
            ZswapEvent::Ahead { entry, .. } => {
                if self.holds(entry) {
                    tally(row, self.load(entry, false));
                }
            }
            ZswapEvent::CacheHit { entry, write, .. } => self.cache_hit(entry, write),
            ZswapEvent::Freed { entry, .. } => self.freed(entry),
            ZswapEvent::Reclaim { .. } | ZswapEvent::Writeback { .. } => {}
        }
    }
}

/// A load into its time bucket: disk swap-ins, zswap hits.
fn tally(row: &mut Row, got: Option<bool>) {
    match got {
        Some(true) => row.3 += 1,
        Some(false) => row.2 += 1,
        None => {}
    }
}
