//! The pool model: zswap's LRU, its limit writeback (`shrink_worker()`)
//! and its dynamic shrinker (`zswap_shrinker_count()` /
//! `zswap_shrinker_scan()` under `do_shrink_slab()`), and the replay of
//! one policy over the events.

use std::collections::HashMap;

use super::{
    input::LiveIn, ZswapEvent, ZswapInput, ZswapMetrics, ZswapParams, ZswapPolicy,
    DEFAULT_COMPRESSION_RATIO, DEF_PRIORITY,
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
    fn pool_pages(&self) -> u64 {
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
        self.writeback(i, why);
        Some(true)
    }

    /// `shrink_worker()`, run at once rather than queued: one entry per
    /// `shrink_memcg()` down to the accept threshold; 6.12 counts a rotation
    /// as a failure and stops after `MAX_RECLAIM_RETRIES`.
    fn shrink_worker(&mut self) {
        self.m.shrink_worker_runs += 1;
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
        if let Some(Slot::Pool(i)) = self.slots.remove(&entry) {
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
            self.shrink_worker();
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
            Some(&Slot::OnDisk(at)) => self.pagein.saturating_sub(at) > self.resident,
            _ => false,
        }
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
            Some(Slot::Pool(i)) => {
                self.lru.remove(i);
                self.m.zswap_hits += 1;
                self.pagein += 1;
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

    /// The kernel freed the page of `entry`: one read from disk is out of
    /// memory now, its slot readable again.
    fn freed(&mut self, entry: SwapEntry) {
        if let Some(s @ Slot::OnDisk(_)) = self.slots.get_mut(&entry) {
            *s = Slot::Dropped;
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
        let nr_backing = self.pool_pages();
        let mut nr_freeable = nr_stored;
        match self.policy {
            ZswapPolicy::NoShrinker => return 0,
            ZswapPolicy::Shrinker => nr_freeable = nr_freeable.saturating_sub(self.nr_protected),
            ZswapPolicy::ShrinkerSecondChance => {}
            ZswapPolicy::DiskSwapinTracking => {
                // Consume disk swap-ins up to the LRU size; the rest remains.
                let used = nr_freeable.min(self.nr_disk_swapins);
                self.nr_disk_swapins -= used;
                nr_freeable -= used;
            }
        }
        // Scale by the memory saving: compressed pages per stored page.
        mult_frac(nr_freeable, nr_backing, nr_stored)
    }

    /// `zswap_shrinker_scan()`: None is `SHRINK_STOP`.
    pub(super) fn shrinker_scan(&mut self, nr_to_scan: u64) -> Option<u64> {
        if self.policy == ZswapPolicy::Shrinker
            && self.nr_protected >= self.lru.len.wrapping_sub(nr_to_scan)
        {
            // 6.8: do not shrink into the protected region.
            return None;
        }
        let mut freed = 0;
        for _ in 0..nr_to_scan {
            match self.walk_one(Why::Shrinker) {
                None => break,
                Some(w) => freed += w as u64,
            }
        }
        (freed > 0).then_some(freed)
    }

    /// `do_shrink_slab()` for the zswap shrinker at `self.priority`, with
    /// its deferred work carried across episodes.
    fn do_shrink_slab(&mut self) {
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

/// Time buckets over `[t0, t0 + span]`.
struct Series {
    t0: u64,
    span: u64,
    rows: Vec<(f64, u64, u64, u64)>,
    last: usize,
}

impl Series {
    fn new(t0: u64, t1: u64, buckets: usize) -> Series {
        let span = t1.saturating_sub(t0);
        let n = if span == 0 { 1 } else { buckets.max(1) };
        let rows = (0..n)
            .map(|b| {
                let t = (b as u128 * (span as u128 + 1) / n as u128) as f64 / 1e9;
                (t, 0, 0, 0)
            })
            .collect();
        Series {
            t0,
            span,
            rows,
            last: 0,
        }
    }

    fn bucket(&self, now: u64) -> usize {
        let off = now.saturating_sub(self.t0).min(self.span) as u128;
        let b = off * self.rows.len() as u128 / (self.span as u128 + 1);
        (b as usize).min(self.rows.len() - 1)
    }

    /// Moves to `now`'s bucket, carrying `pool` through skipped ones.
    fn advance(&mut self, now: u64, pool: u64) -> usize {
        let b = self.bucket(now);
        while self.last < b {
            self.rows[self.last].1 = pool;
            self.last += 1;
        }
        b
    }
}

/// What a replay needs of the whole trace before its first event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Span {
    /// [`ZswapInput::memory_figure`].
    pub(super) memory_figure: u64,
    pub(super) has_reclaim: bool,
    /// The earliest and latest event (0, 0 without events).
    pub(super) t0: u64,
    pub(super) t1: u64,
    /// [`ZswapInput::resident_pages`].
    pub(super) resident_pages: Option<u64>,
}

impl Span {
    pub(super) fn of(input: &ZswapInput) -> Span {
        Span {
            memory_figure: input.memory_figure(),
            has_reclaim: input.has_reclaim,
            resident_pages: input.resident_pages,
            t0: input.events.iter().map(|e| e.ts()).min().unwrap_or(0),
            t1: input.events.iter().map(|e| e.ts()).max().unwrap_or(0),
        }
    }
}

/// One policy's replay, fed an event at a time ([`step`](Self::step)).
pub(super) struct Replayer {
    sim: Sim,
    series: Series,
    span: Span,
    interval: u64,
    now: u64,
    pool: u64,
    area: f64,
    outs: u64,
}

impl Replayer {
    pub(super) fn new(span: Span, policy: ZswapPolicy, p: &ZswapParams) -> Replayer {
        let max_pages = p.pool_limit_for(span.memory_figure);
        // zswap_accept_thr_pages()
        let thr_pages =
            (max_pages as u128 * p.accept_threshold_percent.min(100) as u128 / 100) as u64;
        let ratio = if p.compression_ratio.is_finite() && p.compression_ratio >= 1.0 {
            p.compression_ratio
        } else {
            DEFAULT_COMPRESSION_RATIO
        };
        let interval = p.shrinker_interval.max(1);
        // Unknown: a page read from disk stays until its next fault.
        let resident = p.resident_pages.or(span.resident_pages).unwrap_or(u64::MAX);
        let sim = Sim {
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
            m: ZswapMetrics {
                policy: policy.name().to_string(),
                pool_limit_pages: max_pages,
                accept_threshold_pages: thr_pages,
                compression_ratio: ratio,
                shrinker_priority: p.shrinker_priority.min(DEF_PRIORITY),
                resident_pages: (resident != u64::MAX).then_some(resident),
                pressure: if span.has_reclaim {
                    "reclaim".to_string()
                } else {
                    format!("every {interval} swap-outs")
                },
                ..ZswapMetrics::default()
            },
        };
        Replayer {
            sim,
            series: Series::new(span.t0, span.t1, p.buckets),
            span,
            interval,
            now: span.t0,
            pool: 0,
            area: 0.0,
            outs: 0,
        }
    }

    /// The next event, in trace order.
    pub(super) fn step(&mut self, ev: &ZswapEvent) {
        let policy = self.sim.policy;
        let sim = &mut self.sim;
        let ts = ev.ts().max(self.now);
        self.area += self.pool as f64 * (ts - self.now) as f64;
        self.now = ts;
        let b = self.series.advance(self.now, self.pool);
        match *ev {
            ZswapEvent::Out { entry, how, .. } => {
                self.outs += 1;
                if !self.span.has_reclaim
                    && policy.dynamic()
                    && self.outs.is_multiple_of(self.interval)
                {
                    sim.do_shrink_slab();
                }
                sim.store(entry, how);
            }
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
                    if e != entry && !sim.holds(e) {
                        continue;
                    }
                    let got = sim.load(e, e == entry && write);
                    tally(&mut self.series.rows[b], got);
                    if e == entry {
                        let a = &mut sim.m.agreement;
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
                if sim.holds(entry) {
                    tally(&mut self.series.rows[b], sim.load(entry, false));
                }
            }
            ZswapEvent::CacheHit { entry, write, .. } => sim.cache_hit(entry, write),
            ZswapEvent::Freed { entry, .. } => sim.freed(entry),
            ZswapEvent::Reclaim { begin: true, .. } if policy.dynamic() => sim.do_shrink_slab(),
            ZswapEvent::Reclaim { .. } => {}
        }
        self.pool = sim.pool_pages();
        sim.m.peak_pool_pages = sim.m.peak_pool_pages.max(self.pool);
        self.series.rows[b].1 = self.pool;
    }

    /// The metrics, once every event went through [`step`](Self::step).
    pub(super) fn finish(self) -> ZswapMetrics {
        let Replayer {
            sim,
            mut series,
            span: Span { t0, t1, .. },
            pool,
            area,
            ..
        } = self;
        let last = series.rows.len();
        series.advance(t1, pool);
        for r in &mut series.rows[series.last..last] {
            r.1 = pool;
        }
        let mut m = sim.m;
        m.end_pool_pages = pool;
        m.mean_pool_pages = if t1 > t0 {
            area / (t1 - t0) as f64
        } else {
            pool as f64
        };
        m.series = series.rows;
        m
    }
}

/// A load into its time bucket: disk swap-ins, zswap hits.
fn tally(row: &mut (f64, u64, u64, u64), got: Option<bool>) {
    match got {
        Some(true) => row.3 += 1,
        Some(false) => row.2 += 1,
        None => {}
    }
}

/// One policy over a whole input: [`Replayer`] fed its events.
pub(super) fn replay_one(input: &ZswapInput, policy: ZswapPolicy, p: &ZswapParams) -> ZswapMetrics {
    let mut r = Replayer::new(Span::of(input), policy, p);
    for ev in &input.events {
        r.step(ev);
    }
    r.finish()
}
