//! Replaying a trace's swap-outs and swap-ins through models of zswap
//! (mm/zswap.c, 6.8 to 6.12): a compressed pool in front of the swap device,
//! its limit writeback (`shrink_worker()`) and its dynamic shrinker
//! (`zswap_shrinker_count()` / `zswap_shrinker_scan()`), in the three ways
//! the kernel protected recently stored entries from it (seed 003):
//!
//! - `shrinker` (6.8): `nr_zswap_protected`, grown by stores and swap-ins,
//!   halved once above a quarter of the LRU, subtracted from the LRU size;
//! - `shrinker-second-chance` (6.12 without the swap-in counter): a
//!   `referenced` bit set at store, cleared (and the entry rotated) by the
//!   first walk that meets it;
//! - `disk-swapin-tracking` (6.12): second chance, and `nr_disk_swapins`
//!   (swap-ins that missed zswap) consumed from the freeable count.
//!
//! `no-shrinker` keeps only the limit writeback, in plain LRU order (6.8).
//!
//! Simplifications, where the trace lacks what the kernel uses:
//! - one pool, one memcg, one node; writeback always succeeds; every page
//!   compresses by the same ratio (no store is rejected as incompressible),
//!   large folios are stored page by page;
//! - the model decides store/reject itself: the recorded `OutKind` is used
//!   only for zero-filled pages, which never enter the pool;
//! - `shrink_worker()` runs at once, not from a workqueue;
//! - each pressure episode (a recorded reclaim begin, else every N swap-out
//!   pages) is one `do_shrink_slab()` at a fixed priority (the trace has no
//!   reclaim priority), deferred work carried between episodes;
//! - readahead is not replayed: a swap-cache hit drops the page's entry
//!   without counting a load;
//! - swap-ins of entries swapped out before the trace feed no counter.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::json;

use crate::trace::{Loaded, OutKind, Record, SwapEntry};
use crate::workload::SplitMix64;

/// `zswap.max_pool_percent` default.
pub const DEFAULT_MAX_POOL_PERCENT: u32 = 20;
/// `zswap.accept_threshold_percent` default.
pub const DEFAULT_ACCEPT_THR_PERCENT: u32 = 90;
pub const DEFAULT_COMPRESSION_RATIO: f64 = 3.0;
/// Swap-out pages per pressure episode when the trace has no reclaim records.
pub const DEFAULT_SHRINKER_INTERVAL: u64 = 1024;
/// Reclaim priority of the modelled `do_shrink_slab()` call per episode
/// (scan = count >> priority × 4 / seeks). Reclaim starts at 12 and goes
/// lower when short; 10 came closest to the writebacks of a recorded
/// Debian 6.12 run (`cargo xtask guest-test`, scenario zswap).
pub const DEFAULT_SHRINKER_PRIORITY: u32 = 10;
/// `DEF_PRIORITY`: the lowest pressure reclaim starts at.
pub const DEF_PRIORITY: u32 = 12;
pub const DEFAULT_BUCKETS: usize = 100;
/// `SHRINK_BATCH`: zswap's shrinker sets no batch.
const SHRINK_BATCH: u64 = 128;
/// `DEFAULT_SEEKS`: zswap's shrinker `seeks`.
const DEFAULT_SEEKS: u64 = 2;
/// Largest swap-out folio taken from a record, in pages.
const MAX_FOLIO_PAGES: u32 = 1 << 13;
/// `MAX_RECLAIM_RETRIES`: failed attempts before `shrink_worker()` gives up.
const MAX_RECLAIM_RETRIES: u32 = 16;

pub const ZSWAP_POLICY_NAMES: [&str; 4] = [
    "no-shrinker",
    "shrinker",
    "shrinker-second-chance",
    "disk-swapin-tracking",
];

const PARAM_NAMES: &str =
    "pool-pages, max-pool-percent, ratio, accept-threshold, shrinker-interval, priority, buckets";

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ZswapError {
    #[error("the trace has no swap-outs to replay through zswap (a swap-in is replayed only after the swap-out of its entry)")]
    NothingToReplay,
    #[error("unknown zswap policy `{0}` (known: {names})", names = ZSWAP_POLICY_NAMES.join(", "))]
    UnknownPolicy(String),
    #[error("bad zswap parameter `{0}`: {1}")]
    BadParam(String, String),
}

/// Where the recording kernel found a swapped-in page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LiveIn {
    Zswap,
    Disk,
    Zero,
    /// No read counted (e.g. a major fault that waited on another task's read).
    Other,
}

/// One page-level event of the replay, in trace order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZswapEvent {
    /// One page swapped out; `how` is what the recording kernel did with it.
    Out {
        ts: u64,
        entry: SwapEntry,
        how: OutKind,
    },
    /// A swap-in that read the page (not a swap-cache hit), with the
    /// readahead window read around it (`swap_cluster_readahead()`'s
    /// aligned block of `window` offsets; 1 = the page alone).
    In {
        ts: u64,
        entry: SwapEntry,
        live: LiveIn,
        window: u32,
    },
    /// A minor fault without reads: the page was still in the swap cache.
    CacheHit { ts: u64, entry: SwapEntry },
    /// Direct or memcg reclaim began (`begin`) or ended.
    Reclaim { ts: u64, begin: bool },
}

impl ZswapEvent {
    pub fn ts(&self) -> u64 {
        match *self {
            ZswapEvent::Out { ts, .. }
            | ZswapEvent::In { ts, .. }
            | ZswapEvent::CacheHit { ts, .. }
            | ZswapEvent::Reclaim { ts, .. } => ts,
        }
    }
}

/// The recording kernel's own counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ZswapLive {
    /// Swap-out pages, and how they went.
    pub swap_outs: u64,
    pub zswap_stores: u64,
    pub disk_swap_outs: u64,
    pub zero_swap_outs: u64,
    pub unknown_swap_outs: u64,
    pub swap_faults: u64,
    pub faults_without_entry: u64,
    pub cache_hits: u64,
    /// Sum of `zswap_loads` over faults.
    pub zswap_loads: u64,
    /// Faults that read from disk and loaded nothing from zswap.
    pub disk_swapins: u64,
    pub disk_pages_read: u64,
    /// Sum of `ZswapWriteback.nr`.
    pub writebacks: u64,
    /// `ZswapOp` records (exact probes only).
    pub zswap_ops: u64,
    pub store_ok: u64,
    pub store_rejected: u64,
    pub load_found: u64,
    pub load_missed: u64,
    pub reclaim_episodes: u64,
    pub lost: u64,
    pub duration_s: f64,
    /// vmstat deltas over the recording, when header and footer have them.
    pub zswpout: Option<u64>,
    pub zswpin: Option<u64>,
    pub zswpwb: Option<u64>,
    pub pswpin: Option<u64>,
    pub pswpout: Option<u64>,
}

/// A trace's zswap-relevant events, one per page.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ZswapInput {
    pub events: Vec<ZswapEvent>,
    pub page_size: u64,
    /// The memory figure the pool limit is a share of: all of RAM (as
    /// `totalram_pages()`), in pages; None for a bare record slice.
    pub memory_pages: Option<u64>,
    /// Distinct swap entries swapped out: stands in for memory when
    /// `memory_pages` is unknown.
    pub distinct_out_pages: u64,
    /// Whether any `Reclaim { begin: true }` was recorded.
    pub has_reclaim: bool,
    pub live: ZswapLive,
}

impl ZswapInput {
    /// Events from `records`; `page_size` 0 is taken as 4096.
    pub fn from_records(records: &[Record], page_size: u64) -> Result<ZswapInput, ZswapError> {
        let mut input = ZswapInput {
            page_size: if page_size == 0 { 4096 } else { page_size },
            ..ZswapInput::default()
        };
        let live = &mut input.live;
        let mut distinct: HashSet<SwapEntry> = HashSet::new();
        let mut windows: HashMap<SwapEntry, u32> = HashMap::new();
        let (mut t_min, mut t_max) = (u64::MAX, 0u64);
        for r in records {
            match r {
                Record::SwapOut {
                    ts, entry, nr, how, ..
                } => {
                    // nr 0 as 1; at most a PMD folio of 64 KiB pages.
                    let nr = (*nr).clamp(1, MAX_FOLIO_PAGES) as u64;
                    live.swap_outs += nr;
                    *match how {
                        OutKind::Zswap => &mut live.zswap_stores,
                        OutKind::Io => &mut live.disk_swap_outs,
                        OutKind::Zero => &mut live.zero_swap_outs,
                        OutKind::Unknown => &mut live.unknown_swap_outs,
                    } += nr;
                    for i in 0..nr {
                        let e = SwapEntry {
                            dev: entry.dev,
                            offset: entry.offset.wrapping_add(i),
                        };
                        distinct.insert(e);
                        input.events.push(ZswapEvent::Out {
                            ts: *ts,
                            entry: e,
                            how: *how,
                        });
                    }
                }
                Record::SwapFault {
                    ts,
                    entry,
                    major,
                    pages_read,
                    zero_reads,
                    zswap_loads,
                    ..
                } => {
                    live.swap_faults += 1;
                    live.zswap_loads += *zswap_loads as u64;
                    live.disk_pages_read += *pages_read as u64;
                    if *pages_read > 0 && *zswap_loads == 0 {
                        live.disk_swapins += 1;
                    }
                    let no_reads = *pages_read == 0 && *zero_reads == 0 && *zswap_loads == 0;
                    if !*major && no_reads {
                        live.cache_hits += 1;
                    }
                    let Some(entry) = *entry else {
                        live.faults_without_entry += 1;
                        continue;
                    };
                    // The window: recorded by the exact probes, else the
                    // pages this fault read, rounded up to a power of two.
                    let reads = pages_read + zero_reads + zswap_loads;
                    let window = windows
                        .remove(&entry)
                        .unwrap_or_else(|| reads.max(1).next_power_of_two());
                    input.events.push(if !*major && no_reads {
                        ZswapEvent::CacheHit { ts: *ts, entry }
                    } else {
                        let live = if *zswap_loads > 0 {
                            LiveIn::Zswap
                        } else if *pages_read > 0 {
                            LiveIn::Disk
                        } else if *zero_reads > 0 {
                            LiveIn::Zero
                        } else {
                            LiveIn::Other
                        };
                        ZswapEvent::In {
                            ts: *ts,
                            entry,
                            live,
                            window,
                        }
                    });
                }
                Record::RaWindow { entry, window, .. } => {
                    windows.insert(*entry, *window);
                }
                Record::Reclaim { ts, begin, .. } => {
                    if *begin {
                        live.reclaim_episodes += 1;
                        input.has_reclaim = true;
                    }
                    input.events.push(ZswapEvent::Reclaim {
                        ts: *ts,
                        begin: *begin,
                    });
                }
                Record::ZswapWriteback { ts, nr, .. } => {
                    live.writebacks += *nr as u64;
                    (t_min, t_max) = (t_min.min(*ts), t_max.max(*ts));
                }
                Record::ZswapOp { ts, load, ok, .. } => {
                    live.zswap_ops += 1;
                    *match (*load, *ok) {
                        (false, true) => &mut live.store_ok,
                        (false, false) => &mut live.store_rejected,
                        (true, true) => &mut live.load_found,
                        (true, false) => &mut live.load_missed,
                    } += 1;
                    (t_min, t_max) = (t_min.min(*ts), t_max.max(*ts));
                }
                Record::Lost { count, .. } => live.lost += count,
                _ => {}
            }
        }
        for e in &input.events {
            (t_min, t_max) = (t_min.min(e.ts()), t_max.max(e.ts()));
        }
        if t_max > t_min {
            input.live.duration_s = (t_max - t_min) as f64 / 1e9;
        }
        input.distinct_out_pages = distinct.len() as u64;
        if input.distinct_out_pages == 0 {
            return Err(ZswapError::NothingToReplay);
        }
        Ok(input)
    }

    /// Events of a loaded trace, with its memory figure and vmstat deltas.
    pub fn from_loaded(t: &Loaded) -> Result<ZswapInput, ZswapError> {
        let mut input = ZswapInput::from_records(&t.records, t.header.page_size)?;
        let h = &t.header;
        // `zswap_max_pages()`: max_pool_percent of all of RAM
        // (`totalram_pages()`), whatever the cgroup's limit.
        if h.mem_total_kib > 0 {
            input.memory_pages = Some(h.mem_total_kib * 1024 / h.page_size.max(1));
        }
        let d = |k: &str| t.vmstat_delta(k).map(|d| d.max(0) as u64);
        let live = &mut input.live;
        live.zswpout = d("zswpout");
        live.zswpin = d("zswpin");
        live.zswpwb = d("zswpwb");
        live.pswpin = d("pswpin");
        live.pswpout = d("pswpout");
        Ok(input)
    }

    /// Pages of memory the pool limit is a percentage of.
    pub fn memory_figure(&self) -> u64 {
        self.memory_pages.unwrap_or(self.distinct_out_pages)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ZswapPolicy {
    /// Only the limit writeback (`shrink_worker()`), plain LRU order.
    NoShrinker,
    /// 6.8: dynamic shrinker with `nr_zswap_protected`.
    Shrinker,
    /// 6.12's second chance, without `nr_disk_swapins`.
    ShrinkerSecondChance,
    /// 6.12: second chance and `nr_disk_swapins`.
    DiskSwapinTracking,
}

impl ZswapPolicy {
    pub fn from_name(name: &str) -> Result<ZswapPolicy, ZswapError> {
        match name.trim() {
            "no-shrinker" => Ok(ZswapPolicy::NoShrinker),
            "shrinker" => Ok(ZswapPolicy::Shrinker),
            "shrinker-second-chance" => Ok(ZswapPolicy::ShrinkerSecondChance),
            "disk-swapin-tracking" => Ok(ZswapPolicy::DiskSwapinTracking),
            _ => Err(ZswapError::UnknownPolicy(name.to_string())),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            ZswapPolicy::NoShrinker => "no-shrinker",
            ZswapPolicy::Shrinker => "shrinker",
            ZswapPolicy::ShrinkerSecondChance => "shrinker-second-chance",
            ZswapPolicy::DiskSwapinTracking => "disk-swapin-tracking",
        }
    }

    /// All four, oldest first.
    pub fn all() -> Vec<ZswapPolicy> {
        vec![
            ZswapPolicy::NoShrinker,
            ZswapPolicy::Shrinker,
            ZswapPolicy::ShrinkerSecondChance,
            ZswapPolicy::DiskSwapinTracking,
        ]
    }

    /// Policies from a list of names, or all of them when the list is empty.
    pub fn parse_list(names: &[&str]) -> Result<Vec<ZswapPolicy>, ZswapError> {
        if names.is_empty() {
            return Ok(ZswapPolicy::all());
        }
        names.iter().map(|n| ZswapPolicy::from_name(n)).collect()
    }

    fn dynamic(self) -> bool {
        self != ZswapPolicy::NoShrinker
    }

    fn second_chance(self) -> bool {
        matches!(
            self,
            ZswapPolicy::ShrinkerSecondChance | ZswapPolicy::DiskSwapinTracking
        )
    }
}

impl std::str::FromStr for ZswapPolicy {
    type Err = ZswapError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ZswapPolicy::from_name(s)
    }
}

impl std::fmt::Display for ZswapPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Model parameters; `set("key=value")` parses one.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ZswapParams {
    /// Pool limit in pages of compressed data; None: `max_pool_percent` of
    /// the memory figure.
    pub pool_pages: Option<u64>,
    pub max_pool_percent: u32,
    /// Uncompressed / compressed size, the same for every page.
    pub compression_ratio: f64,
    pub accept_threshold_percent: u32,
    /// Without reclaim records: one pressure episode per this many swap-out pages.
    pub shrinker_interval: u64,
    /// `do_shrink_slab()` priority of each episode (0 to 12).
    pub shrinker_priority: u32,
    /// Buckets of the time series.
    pub buckets: usize,
}

impl Default for ZswapParams {
    fn default() -> Self {
        ZswapParams {
            pool_pages: None,
            max_pool_percent: DEFAULT_MAX_POOL_PERCENT,
            compression_ratio: DEFAULT_COMPRESSION_RATIO,
            accept_threshold_percent: DEFAULT_ACCEPT_THR_PERCENT,
            shrinker_interval: DEFAULT_SHRINKER_INTERVAL,
            shrinker_priority: DEFAULT_SHRINKER_PRIORITY,
            buckets: DEFAULT_BUCKETS,
        }
    }
}

impl ZswapParams {
    /// Parses `key=value`: pool-pages (a number or `auto`), max-pool-percent
    /// (1-100), ratio (1-1000), accept-threshold (0-100), shrinker-interval
    /// (>= 1), priority (0-12), buckets (1-100000).
    /// The defaults, with what the recording says: zswap's
    /// max_pool_percent and accept_threshold_percent (header) and the
    /// compression ratio the pool had at its fullest (footer samples).
    pub fn from_trace(t: &Loaded) -> ZswapParams {
        let mut p = ZswapParams::default();
        for (knob, key) in [
            ("max_pool_percent", "max-pool-percent"),
            ("accept_threshold_percent", "accept-threshold"),
        ] {
            if let Some(v) = t.header.zswap.get(knob) {
                let _ = p.set(&format!("{key}={v}"));
            }
        }
        let fullest = t
            .footer
            .as_ref()
            .and_then(|f| f.zswap_pool.iter().max_by_key(|s| s.stored_kib));
        if let Some(s) = fullest.filter(|s| s.pool_kib > 0) {
            p.compression_ratio = (s.stored_kib as f64 / s.pool_kib as f64).clamp(1.0, 1000.0);
        }
        p
    }

    pub fn set(&mut self, spec: &str) -> Result<(), ZswapError> {
        let bad = |why: String| ZswapError::BadParam(spec.to_string(), why);
        let Some((key, value)) = spec.split_once('=') else {
            return Err(bad(format!("expected key=value (keys: {PARAM_NAMES})")));
        };
        let (key, value) = (key.trim(), value.trim());
        let int = |lo: u64, hi: u64| -> Result<u64, ZswapError> {
            super::parse_in(value, lo, hi)
                .ok_or_else(|| bad(format!("expected an integer from {lo} to {hi}")))
        };
        match key {
            "pool-pages" => {
                self.pool_pages = if value == "auto" {
                    None
                } else {
                    Some(int(0, u64::MAX >> 1)?)
                }
            }
            "max-pool-percent" => self.max_pool_percent = int(1, 100)? as u32,
            "ratio" | "compression-ratio" => {
                let r: f64 = value
                    .parse()
                    .map_err(|_| bad("expected a number from 1 to 1000".into()))?;
                if !r.is_finite() || !(1.0..=1000.0).contains(&r) {
                    return Err(bad("expected a number from 1 to 1000".into()));
                }
                self.compression_ratio = r;
            }
            "accept-threshold" => self.accept_threshold_percent = int(0, 100)? as u32,
            "shrinker-interval" => self.shrinker_interval = int(1, u64::MAX >> 1)?,
            "priority" => self.shrinker_priority = int(0, DEF_PRIORITY as u64)? as u32,
            "buckets" => self.buckets = int(1, 100_000)? as usize,
            _ => return Err(bad(format!("unknown key (keys: {PARAM_NAMES})"))),
        }
        Ok(())
    }

    /// Defaults overridden by each `key=value`.
    pub fn parse(specs: &[&str]) -> Result<ZswapParams, ZswapError> {
        let mut p = ZswapParams::default();
        for s in specs {
            p.set(s)?;
        }
        Ok(p)
    }

    /// Pool limit in pages (`zswap_max_pages()`).
    pub fn pool_limit_pages(&self, input: &ZswapInput) -> u64 {
        self.pool_pages.unwrap_or_else(|| {
            (input.memory_figure() as u128 * self.max_pool_percent.min(100) as u128 / 100) as u64
        })
    }
}

/// One policy's replay.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ZswapMetrics {
    pub policy: String,
    pub pool_limit_pages: u64,
    pub accept_threshold_pages: u64,
    pub compression_ratio: f64,
    pub shrinker_priority: u32,
    /// `reclaim` (each recorded reclaim) or `every N swap-outs`.
    pub pressure: String,
    pub swap_outs: u64,
    pub zero_pages: u64,
    pub stores_accepted: u64,
    pub stores_rejected: u64,
    /// Entries dropped because their slot was swapped out again.
    pub invalidated: u64,
    /// Swap-ins replayed (swap-cache hits excluded).
    pub swap_ins: u64,
    pub zswap_hits: u64,
    pub disk_swapins: u64,
    /// Of `disk_swapins`: the entry had been written back / never stored.
    pub disk_swapins_written_back: u64,
    pub disk_swapins_not_stored: u64,
    pub zero_swapins: u64,
    /// Swap-ins of entries whose swap-out is not in the trace.
    pub untracked_swapins: u64,
    pub cache_hits: u64,
    /// Entries dropped at a swap-cache hit (read ahead or not yet reclaimed).
    pub cache_hit_drops: u64,
    pub writebacks: u64,
    pub writebacks_limit: u64,
    pub writebacks_shrinker: u64,
    /// Second-chance rotations.
    pub rotations: u64,
    pub pressure_episodes: u64,
    pub shrink_worker_runs: u64,
    /// Pool size in pages of compressed data.
    pub peak_pool_pages: u64,
    pub mean_pool_pages: f64,
    pub end_pool_pages: u64,
    pub peak_stored_pages: u64,
    /// `(t_sec, pool_pages, disk_swapins, zswap_hits)` per bucket: the pool at
    /// the bucket's end, swap-ins within it.
    pub series: Vec<(f64, u64, u64, u64)>,
}

const NIL: usize = usize::MAX;

#[derive(Clone, Copy)]
struct Node {
    entry: SwapEntry,
    prev: usize,
    next: usize,
    referenced: bool,
}

/// The zswap `list_lru`: `oldest` is where `list_lru_walk` starts.
struct Lru {
    nodes: Vec<Node>,
    free: Vec<usize>,
    oldest: usize,
    newest: usize,
    len: u64,
}

impl Lru {
    fn new() -> Lru {
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
enum Slot {
    Pool(usize),
    WrittenBack,
    Rejected,
    Zero,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Why {
    Limit,
    Shrinker,
}

struct Sim {
    policy: ZswapPolicy,
    ratio: f64,
    max_pages: u64,
    thr_pages: u64,
    priority: u32,
    lru: Lru,
    slots: HashMap<SwapEntry, Slot>,
    reached_full: bool,
    nr_protected: u64,
    nr_disk_swapins: u64,
    nr_deferred: u64,
    m: ZswapMetrics,
}

/// `mult_frac(x, n, d)`.
fn mult_frac(x: u64, n: u64, d: u64) -> u64 {
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
    fn store(&mut self, entry: SwapEntry, how: OutKind) {
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

    /// `zswap_load()` (exclusive) and, on a miss, `zswap_folio_swapin()`.
    /// Whether readahead would read `entry`: a slot still swapped out.
    fn holds(&self, entry: SwapEntry) -> bool {
        matches!(
            self.slots.get(&entry),
            Some(Slot::Pool(_) | Slot::WrittenBack | Slot::Rejected)
        )
    }

    fn load(&mut self, entry: SwapEntry) -> Option<bool> {
        self.m.swap_ins += 1;
        if self.policy == ZswapPolicy::Shrinker {
            // 6.8 calls zswap_folio_swapin() for every swap-in read.
            self.nr_protected += 1;
        }
        let hit = match self.slots.remove(&entry) {
            Some(Slot::Pool(i)) => {
                self.lru.remove(i);
                self.m.zswap_hits += 1;
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
            Some(Slot::Zero) => {
                self.m.zero_swapins += 1;
                return None;
            }
            None => {
                self.m.untracked_swapins += 1;
                return None;
            }
        };
        self.m.disk_swapins += 1;
        if self.policy == ZswapPolicy::DiskSwapinTracking {
            self.nr_disk_swapins += 1;
        }
        Some(hit)
    }

    fn cache_hit(&mut self, entry: SwapEntry) {
        self.m.cache_hits += 1;
        if let Some(Slot::Pool(i)) = self.slots.remove(&entry) {
            self.lru.remove(i);
            self.m.cache_hit_drops += 1;
        }
    }

    /// `zswap_shrinker_count()`.
    fn shrinker_count(&mut self) -> u64 {
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
    fn shrinker_scan(&mut self, nr_to_scan: u64) -> Option<u64> {
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

fn replay_one(input: &ZswapInput, policy: ZswapPolicy, p: &ZswapParams) -> ZswapMetrics {
    let max_pages = p.pool_limit_pages(input);
    // zswap_accept_thr_pages()
    let thr_pages = (max_pages as u128 * p.accept_threshold_percent.min(100) as u128 / 100) as u64;
    let ratio = if p.compression_ratio.is_finite() && p.compression_ratio >= 1.0 {
        p.compression_ratio
    } else {
        DEFAULT_COMPRESSION_RATIO
    };
    let interval = p.shrinker_interval.max(1);
    let mut sim = Sim {
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
        m: ZswapMetrics {
            policy: policy.name().to_string(),
            pool_limit_pages: max_pages,
            accept_threshold_pages: thr_pages,
            compression_ratio: ratio,
            shrinker_priority: p.shrinker_priority.min(DEF_PRIORITY),
            pressure: if input.has_reclaim {
                "reclaim".to_string()
            } else {
                format!("every {interval} swap-outs")
            },
            ..ZswapMetrics::default()
        },
    };
    let t0 = input.events.iter().map(|e| e.ts()).min().unwrap_or(0);
    let t1 = input.events.iter().map(|e| e.ts()).max().unwrap_or(0);
    let mut series = Series::new(t0, t1, p.buckets);
    let (mut now, mut pool, mut area, mut outs) = (t0, 0u64, 0f64, 0u64);
    for ev in &input.events {
        let ts = ev.ts().max(now);
        area += pool as f64 * (ts - now) as f64;
        now = ts;
        let b = series.advance(now, pool);
        match *ev {
            ZswapEvent::Out { entry, how, .. } => {
                outs += 1;
                if !input.has_reclaim && policy.dynamic() && outs % interval == 0 {
                    sim.do_shrink_slab();
                }
                sim.store(entry, how);
            }
            ZswapEvent::In { entry, window, .. } => {
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
                    match sim.load(e) {
                        Some(true) => series.rows[b].3 += 1,
                        Some(false) => series.rows[b].2 += 1,
                        None => {}
                    }
                }
            }
            ZswapEvent::CacheHit { entry, .. } => sim.cache_hit(entry),
            ZswapEvent::Reclaim { begin: true, .. } if policy.dynamic() => sim.do_shrink_slab(),
            ZswapEvent::Reclaim { .. } => {}
        }
        pool = sim.pool_pages();
        sim.m.peak_pool_pages = sim.m.peak_pool_pages.max(pool);
        series.rows[b].1 = pool;
    }
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

/// Replays each policy over the same input, in parallel.
pub fn replay_zswap(
    input: &ZswapInput,
    policies: &[ZswapPolicy],
    params: &ZswapParams,
) -> Vec<ZswapMetrics> {
    std::thread::scope(|s| {
        let handles: Vec<_> = policies
            .iter()
            .map(|&pol| s.spawn(move || replay_one(input, pol, params)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// Fixed-width table: a `live` row with the trace's counts, then a row per policy.
pub fn zswap_text(live: &ZswapLive, metrics: &[ZswapMetrics]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "recorded: {} swap-out pages ({} to zswap, {} to disk, {} zero-filled), {} swap faults ({} swap-cache hits, {} without a swap entry), {} reclaim episodes, {:.1} s",
        live.swap_outs,
        live.zswap_stores,
        live.disk_swap_outs,
        live.zero_swap_outs,
        live.swap_faults,
        live.cache_hits,
        live.faults_without_entry,
        live.reclaim_episodes,
        live.duration_s
    );
    let _ = writeln!(
        s,
        "vmstat deltas: zswpout {} zswpin {} zswpwb {} pswpin {} pswpout {}",
        opt(live.zswpout),
        opt(live.zswpin),
        opt(live.zswpwb),
        opt(live.pswpin),
        opt(live.pswpout)
    );
    if live.zswap_ops > 0 {
        let _ = writeln!(
            s,
            "zswap probes: stores {} accepted / {} rejected, loads {} found / {} missed",
            live.store_ok, live.store_rejected, live.load_found, live.load_missed
        );
    }
    if live.lost > 0 {
        let _ = writeln!(
            s,
            "warning: {} events lost by the probes; the replay misses them",
            live.lost
        );
    }
    if let Some(m) = metrics.first() {
        let _ = writeln!(
            s,
            "model: pool limit {} pages, accept threshold {} pages, compression ratio {}, shrinker at priority {} on {}",
            m.pool_limit_pages, m.accept_threshold_pages, m.compression_ratio, m.shrinker_priority, m.pressure
        );
        let _ = writeln!(
            s,
            "not replayed: {} swap-ins of entries swapped out before the trace, {} swap-cache hits",
            m.untracked_swapins, m.cache_hits
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<24} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>11}",
        "POLICY",
        "STORED",
        "REJECTED",
        "ZSWAP_HITS",
        "DISK_IN",
        "WRITEBACK",
        "PEAK_POOL",
        "MEAN_POOL"
    );
    // The exact probes see each store and load; the counters only those
    // that succeeded.
    let (stored, rejected, hits, disk) = if live.zswap_ops > 0 {
        let disk = live.pswpin.unwrap_or(live.load_missed);
        (live.store_ok, live.store_rejected, live.load_found, disk)
    } else {
        let disk = live.pswpin.unwrap_or(live.disk_pages_read);
        (
            live.zswap_stores,
            live.disk_swap_outs,
            live.zswap_loads,
            disk,
        )
    };
    let _ = writeln!(
        s,
        "{:<24} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>11}",
        "live", stored, rejected, hits, disk, live.writebacks, "-", "-"
    );
    for m in metrics {
        let _ = writeln!(
            s,
            "{:<24} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>11.1}",
            m.policy,
            m.stores_accepted,
            m.stores_rejected,
            m.zswap_hits,
            m.disk_swapins,
            m.writebacks,
            m.peak_pool_pages,
            m.mean_pool_pages
        );
    }
    s
}

pub fn zswap_json(live: &ZswapLive, metrics: &[ZswapMetrics]) -> serde_json::Value {
    let vmstat: BTreeMap<&str, Option<u64>> = [
        ("zswpout", live.zswpout),
        ("zswpin", live.zswpin),
        ("zswpwb", live.zswpwb),
        ("pswpin", live.pswpin),
        ("pswpout", live.pswpout),
    ]
    .into_iter()
    .collect();
    json!({
        "live": live,
        "vmstat": vmstat,
        "policies": metrics,
    })
}

/// A synthetic trace: `cold` pages swapped out once and never touched, then
/// `rounds` rounds of a `hot` set swapped out and faulted back in (shuffled),
/// every `chunk` swap-outs inside a `Reclaim` begin/end pair. The recorded
/// side says every page went to zswap and came back from it.
pub fn synth_zswap(cold: usize, hot: usize, rounds: usize, chunk: usize, seed: u64) -> Vec<Record> {
    let mut g = Synth {
        out: vec![
            Record::Task {
                tid: SYNTH_TID,
                pid: SYNTH_TID,
                comm: "synth-zswap".into(),
            },
            Record::AddressSpace {
                mm: 1,
                pid: SYNTH_TID,
            },
        ],
        ts: 1_000_000,
        next_offset: 1,
        slots: vec![0; cold + hot],
        chunk: chunk.max(1),
    };
    let mut rng = SplitMix64::new(seed);
    let cold_pages: Vec<usize> = (0..cold).collect();
    g.swap_out(&cold_pages);
    let mut hot_pages: Vec<usize> = (cold..cold + hot).collect();
    for _ in 0..rounds {
        g.swap_out(&hot_pages);
        rng.shuffle(&mut hot_pages);
        for &page in &hot_pages {
            let ts = g.tick(5_000);
            let offset = g.slots[page];
            g.out.push(Record::SwapFault {
                ts,
                dur_ns: 3_000,
                tid: SYNTH_TID,
                mm: 1,
                addr: synth_addr(page),
                entry: Some(SwapEntry { dev: 0, offset }),
                major: true,
                pages_read: 0,
                zero_reads: 0,
                zswap_loads: 1,
            });
        }
    }
    g.out
}

const SYNTH_TID: u32 = 1000;

fn synth_addr(page: usize) -> u64 {
    0x7f00_0000_0000 + page as u64 * 4096
}

struct Synth {
    out: Vec<Record>,
    ts: u64,
    next_offset: u64,
    /// Each page's current swap offset.
    slots: Vec<u64>,
    chunk: usize,
}

impl Synth {
    fn tick(&mut self, step: u64) -> u64 {
        self.ts += step;
        self.ts
    }

    fn reclaim(&mut self, begin: bool, nr_reclaimed: u64) {
        let ts = self.tick(1_000);
        self.out.push(Record::Reclaim {
            ts,
            tid: SYNTH_TID,
            begin,
            memcg: true,
            nr_reclaimed,
        });
    }

    /// Swaps `pages` out to fresh slots, `chunk` per reclaim episode.
    fn swap_out(&mut self, pages: &[usize]) {
        for c in pages.chunks(self.chunk) {
            self.reclaim(true, 0);
            for &page in c {
                let ts = self.tick(2_000);
                let entry = SwapEntry {
                    dev: 0,
                    offset: self.next_offset,
                };
                self.next_offset += 1;
                self.slots[page] = entry.offset;
                self.out.push(Record::SwapOut {
                    ts,
                    tid: SYNTH_TID,
                    mm: 1,
                    vaddr: synth_addr(page),
                    entry,
                    nr: 1,
                    how: OutKind::Zswap,
                });
            }
            self.reclaim(false, c.len() as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(offset: u64) -> SwapEntry {
        SwapEntry { dev: 0, offset }
    }

    fn out(ts: u64, offset: u64, how: OutKind) -> Record {
        Record::SwapOut {
            ts,
            tid: 1,
            mm: 1,
            vaddr: offset * 4096,
            entry: e(offset),
            nr: 1,
            how,
        }
    }

    fn fault(ts: u64, offset: u64) -> Record {
        Record::SwapFault {
            ts,
            dur_ns: 1000,
            tid: 1,
            mm: 1,
            addr: offset * 4096,
            entry: Some(e(offset)),
            major: true,
            pages_read: 0,
            zero_reads: 0,
            zswap_loads: 1,
        }
    }

    fn params(specs: &[&str]) -> ZswapParams {
        ZswapParams::parse(specs).expect("params")
    }

    fn run(records: &[Record], p: &ZswapParams) -> Vec<ZswapMetrics> {
        let input = ZswapInput::from_records(records, 4096).expect("input");
        replay_zswap(&input, &ZswapPolicy::all(), p)
    }

    #[test]
    fn big_pool_no_writeback_all_hits() {
        // No pressure (reclaim records dropped, interval past the trace).
        let recs: Vec<Record> = synth_zswap(500, 300, 4, 64, 1)
            .into_iter()
            .filter(|r| !matches!(r, Record::Reclaim { .. }))
            .collect();
        for m in run(
            &recs,
            &params(&["pool-pages=100000", "shrinker-interval=5000"]),
        ) {
            assert_eq!(m.pressure_episodes, 0);
            assert_eq!(m.writebacks, 0, "{}", m.policy);
            assert_eq!(m.stores_rejected, 0);
            assert_eq!(m.stores_accepted, 500 + 300 * 4);
            assert_eq!(m.zswap_hits, 300 * 4);
            assert_eq!(m.disk_swapins, 0);
            assert_eq!(m.swap_ins, 1200);
            // The cold set stays: 500 pages at ratio 3.
            assert_eq!(m.end_pool_pages, 167);
            assert!(m.peak_pool_pages >= 267 && m.peak_pool_pages <= 268);
            assert_eq!(m.series.len(), 100);
            let (disk, hits) = m.series.iter().fold((0, 0), |(d, h), r| (d + r.2, h + r.3));
            assert_eq!((disk, hits), (0, 1200));
            assert!(m.series.windows(2).all(|w| w[0].0 < w[1].0));
            assert_eq!(m.series.last().map(|r| r.1), Some(167));
        }
    }

    #[test]
    fn tiny_pool_rejects_and_writes_back() {
        // 60 pages stored at ratio 1 in a 20-page pool, then all faulted in.
        let mut recs: Vec<Record> = (1..=60).map(|o| out(o * 10, o, OutKind::Zswap)).collect();
        recs.extend((1..=60).map(|o| fault(1000 + o, o)));
        let m = run(&recs, &params(&["pool-pages=20", "ratio=1"]));
        let ns = &m[0];
        assert_eq!(ns.policy, "no-shrinker");
        assert_eq!(ns.accept_threshold_pages, 18);
        assert!(ns.stores_rejected > 0);
        assert!(ns.writebacks > 0);
        assert_eq!(ns.writebacks, ns.writebacks_limit);
        assert!(ns.peak_pool_pages <= 20);
        assert_eq!(ns.stores_accepted + ns.stores_rejected, 60);
        assert_eq!(ns.zswap_hits + ns.disk_swapins, 60);
        assert_eq!(
            ns.disk_swapins,
            ns.disk_swapins_written_back + ns.disk_swapins_not_stored
        );
        assert_eq!(ns.disk_swapins_written_back, ns.writebacks);
        // Hand-worked: stores 1-20 fill it; from 21 on every third store
        // finds it full, is rejected, and the worker writes back two (to 18).
        assert_eq!(ns.stores_rejected, 14);
        assert_eq!(ns.writebacks, 28);
        assert_eq!(ns.zswap_hits, 18);
        assert_eq!(ns.end_pool_pages, 0);
        // A zero-page pool rejects everything.
        let z = run(&recs, &params(&["pool-pages=0"]));
        assert!(z
            .iter()
            .all(|m| m.stores_accepted == 0 && m.disk_swapins == 60));
    }

    #[test]
    fn second_chance_fewer_disk_swapins_and_cold_written_back() {
        let recs = synth_zswap(4000, 2000, 10, 256, 7);
        // Priority 1: an episode scans the whole count (a harder shrinker).
        let m = run(&recs, &params(&["pool-pages=1000000", "priority=1"]));
        let by = |n: &str| m.iter().find(|m| m.policy == n).expect("policy");
        let (ns, sh, sc, dt) = (
            by("no-shrinker"),
            by("shrinker"),
            by("shrinker-second-chance"),
            by("disk-swapin-tracking"),
        );
        assert_eq!(ns.writebacks, 0);
        assert!(sh.disk_swapins > 0);
        assert!(sc.disk_swapins < sh.disk_swapins, "{sc:?} {sh:?}");
        assert!(dt.disk_swapins <= sc.disk_swapins, "{dt:?} {sc:?}");
        for x in [sh, sc, dt] {
            assert_eq!(x.writebacks, x.writebacks_shrinker);
            assert!(x.pressure_episodes > 0);
            // Writebacks of pages never swapped in again: the cold set.
            let cold_wb = x.writebacks - x.disk_swapins_written_back;
            assert!(cold_wb >= 2000, "{}: {cold_wb}", x.policy);
            assert!(x.mean_pool_pages < ns.mean_pool_pages);
        }
        assert!(sc.rotations > 0 && sh.rotations == 0);
    }

    #[test]
    fn interval_pressure_without_reclaim_records() {
        let recs: Vec<Record> = synth_zswap(3000, 0, 0, 100, 1)
            .into_iter()
            .filter(|r| !matches!(r, Record::Reclaim { .. }))
            .collect();
        let input = ZswapInput::from_records(&recs, 4096).expect("input");
        assert!(!input.has_reclaim);
        let m = replay_zswap(
            &input,
            &[ZswapPolicy::Shrinker, ZswapPolicy::NoShrinker],
            &params(&["pool-pages=100000", "shrinker-interval=500", "priority=1"]),
        );
        assert_eq!(m[0].pressure_episodes, 6);
        assert_eq!(m[0].pressure, "every 500 swap-outs");
        assert!(m[0].writebacks > 0);
        assert_eq!(m[1].pressure_episodes, 0);
        assert_eq!(m[1].writebacks, 0);
    }

    #[test]
    fn invalidation_cache_hits_zero_and_untracked() {
        let recs = vec![
            out(1, 1, OutKind::Zswap),
            out(2, 1, OutKind::Io), // slot reused: stale entry dropped
            out(3, 2, OutKind::Zero),
            out(4, 3, OutKind::Zswap),
            Record::SwapFault {
                ts: 5,
                dur_ns: 1,
                tid: 1,
                mm: 1,
                addr: 0,
                entry: Some(e(3)),
                major: false,
                pages_read: 0,
                zero_reads: 0,
                zswap_loads: 0,
            },
            fault(6, 2),
            fault(7, 9),
            fault(8, 1),
            Record::SwapFault {
                ts: 9,
                dur_ns: 1,
                tid: 1,
                mm: 1,
                addr: 0,
                entry: None,
                major: true,
                pages_read: 1,
                zero_reads: 0,
                zswap_loads: 0,
            },
        ];
        let input = ZswapInput::from_records(&recs, 0).expect("input");
        assert_eq!(input.page_size, 4096);
        assert_eq!(input.distinct_out_pages, 3);
        assert_eq!(input.live.faults_without_entry, 1);
        assert_eq!(input.live.cache_hits, 1);
        assert_eq!(input.live.disk_swapins, 1);
        for m in replay_zswap(&input, &ZswapPolicy::all(), &params(&["pool-pages=100"])) {
            assert_eq!(m.swap_outs, 4);
            assert_eq!(m.invalidated, 1);
            assert_eq!(m.zero_pages, 1);
            assert_eq!(m.stores_accepted, 3);
            assert_eq!(m.cache_hits, 1);
            assert_eq!(m.cache_hit_drops, 1);
            assert_eq!(m.zero_swapins, 1);
            assert_eq!(m.untracked_swapins, 1);
            assert_eq!(m.zswap_hits, 1);
            assert_eq!(m.end_pool_pages, 0);
        }
    }

    #[test]
    fn multi_page_swap_out_is_one_event_per_page() {
        let recs = vec![Record::SwapOut {
            ts: 1,
            tid: 1,
            mm: 1,
            vaddr: 0,
            entry: e(100),
            nr: 4,
            how: OutKind::Zswap,
        }];
        let input = ZswapInput::from_records(&recs, 4096).expect("input");
        assert_eq!(input.events.len(), 4);
        assert_eq!(input.live.zswap_stores, 4);
        assert_eq!(input.memory_figure(), 4);
        // 20% of 4 pages: nothing fits.
        let m = replay_zswap(&input, &[ZswapPolicy::NoShrinker], &ZswapParams::default());
        assert_eq!(m[0].pool_limit_pages, 0);
        assert_eq!(m[0].stores_rejected, 4);
    }

    #[test]
    fn shrinker_count_ports() {
        assert_eq!(mult_frac(10, 1, 3), 3);
        assert_eq!(mult_frac(7, 2, 3), 4);
        assert_eq!(mult_frac(5, 5, 0), 0);
        let mut sim = Sim {
            policy: ZswapPolicy::DiskSwapinTracking,
            ratio: 2.0,
            max_pages: 1000,
            thr_pages: 900,
            priority: 1,
            lru: Lru::new(),
            slots: HashMap::new(),
            reached_full: false,
            nr_protected: 0,
            nr_disk_swapins: 30,
            nr_deferred: 0,
            m: ZswapMetrics::default(),
        };
        assert_eq!(sim.shrinker_count(), 0);
        assert_eq!(sim.nr_disk_swapins, 30);
        for o in 0..100 {
            sim.store(e(o), OutKind::Zswap);
        }
        // (100 - 30) * 50 / 100.
        assert_eq!(sim.shrinker_count(), 35);
        assert_eq!(sim.nr_disk_swapins, 0);
        sim.nr_disk_swapins = 150;
        assert_eq!(sim.shrinker_count(), 0);
        assert_eq!(sim.nr_disk_swapins, 50);
        // Second chance: a walk over fresh entries only rotates: SHRINK_STOP.
        assert_eq!(sim.shrinker_scan(100), None);
        assert_eq!(sim.m.rotations, 100);
        assert_eq!(sim.shrinker_scan(10), Some(10));
        assert_eq!(sim.lru.len, 90);
        // 6.8 protection decays by half past a quarter of the LRU.
        sim.policy = ZswapPolicy::Shrinker;
        sim.nr_protected = 22;
        sim.store(e(500), OutKind::Zswap);
        assert_eq!(sim.nr_protected, 11);
        sim.store(e(501), OutKind::Zswap);
        assert_eq!(sim.nr_protected, 12);
        assert_eq!(sim.shrinker_count(), mult_frac(92 - 12, 46, 92));
        sim.nr_protected = 90;
        assert_eq!(sim.shrinker_scan(10), None);
    }

    #[test]
    fn names_and_params() {
        for p in ZswapPolicy::all() {
            assert_eq!(p.name().parse::<ZswapPolicy>(), Ok(p));
            assert_eq!(p.to_string(), p.name());
        }
        assert_eq!(
            ZswapPolicy::parse_list(&[" shrinker "]),
            Ok(vec![ZswapPolicy::Shrinker])
        );
        assert_eq!(ZswapPolicy::parse_list(&[]).map(|v| v.len()), Ok(4));
        for bad in ["", "lru", "Shrinker", "shrinker-6.8"] {
            assert!(matches!(
                ZswapPolicy::from_name(bad),
                Err(ZswapError::UnknownPolicy(_))
            ));
        }
        let p = params(&[
            "pool-pages=5000",
            "ratio=2.5",
            "accept-threshold=80",
            "shrinker-interval=64",
            "priority=12",
            "buckets=10",
            "max-pool-percent=50",
        ]);
        assert_eq!(p.pool_pages, Some(5000));
        assert_eq!(p.compression_ratio, 2.5);
        assert_eq!(p.accept_threshold_percent, 80);
        assert_eq!(p.shrinker_interval, 64);
        assert_eq!(p.shrinker_priority, 12);
        assert_eq!(p.buckets, 10);
        assert_eq!(p.max_pool_percent, 50);
        assert_eq!(
            params(&["pool-pages=9", "pool-pages=auto"]).pool_pages,
            None
        );
        for bad in [
            "pool-pages",
            "pool-pages=",
            "pool-pages=-1",
            "pool-pages=1e3",
            "pool-pages=99999999999999999999999",
            "ratio=0.5",
            "ratio=nan",
            "ratio=inf",
            "ratio=x",
            "accept-threshold=101",
            "shrinker-interval=0",
            "priority=13",
            "buckets=0",
            "max-pool-percent=0",
            "colour=blue",
            "=3",
        ] {
            assert!(
                matches!(ZswapParams::parse(&[bad]), Err(ZswapError::BadParam(..))),
                "{bad}"
            );
        }
    }

    #[test]
    fn empty_traces_are_errors() {
        assert_eq!(
            ZswapInput::from_records(&[], 4096),
            Err(ZswapError::NothingToReplay)
        );
        // Faults alone: nothing entered the pool.
        assert_eq!(
            ZswapInput::from_records(&[fault(1, 1)], 4096),
            Err(ZswapError::NothingToReplay)
        );
        assert!(ZswapError::NothingToReplay
            .to_string()
            .contains("swap-outs"));
    }

    #[test]
    fn reports_and_determinism() {
        let recs = synth_zswap(1000, 500, 3, 128, 3);
        let input = ZswapInput::from_records(&recs, 4096).expect("input");
        let p = params(&["pool-pages=200", "buckets=20"]);
        let a = replay_zswap(&input, &ZswapPolicy::all(), &p);
        let b = replay_zswap(&input, &ZswapPolicy::all(), &p);
        assert_eq!(a, b);
        assert!(a.iter().all(|m| m.series.len() == 20));
        assert_eq!(input.live.zswap_stores, 1000 + 1500);
        assert_eq!(input.live.zswap_loads, 1500);
        assert_eq!(input.live.reclaim_episodes, (1000 / 128 + 1) + 3 * 4);
        let t = zswap_text(&input.live, &a);
        assert!(t.contains("POLICY"));
        assert!(t.contains("DISK_IN"));
        assert!(t.lines().any(|l| l.starts_with("live ")));
        assert!(t.lines().any(|l| l.starts_with("disk-swapin-tracking ")));
        let j = zswap_json(&input.live, &a);
        assert_eq!(j["live"]["zswap_stores"], 2500);
        assert_eq!(j["policies"].as_array().map(|v| v.len()), Some(4));
        assert_eq!(j["policies"][1]["policy"], "shrinker");
        assert_eq!(j["policies"][0]["series"][0][0], 0.0);
        assert!(j["vmstat"]["zswpin"].is_null());
    }

    #[test]
    fn from_loaded_memory_and_vmstat() {
        use crate::trace::{Footer, Header};
        let header = Header {
            page_size: 4096,
            mem_total_kib: 4 * 1024 * 1024,
            memory_limit_bytes: Some(1 << 30),
            vmstat_start: BTreeMap::from([("zswpin".into(), 10), ("pswpin".into(), 5)]),
            ..Header::default()
        };
        let footer = Footer {
            vmstat_end: BTreeMap::from([("zswpin".into(), 110), ("pswpin".into(), 4)]),
            ..Footer::default()
        };
        let t = Loaded {
            header,
            records: synth_zswap(10, 10, 1, 4, 1),
            footer: Some(footer),
            problems: Vec::new(),
            skipped: 0,
            chunks: Vec::new(),
        };
        let input = ZswapInput::from_loaded(&t).expect("input");
        // All 4 GiB of memory (max_pool_percent is of RAM), not the cgroup's 1 GiB.
        assert_eq!(input.memory_pages, Some(1_048_576));
        assert_eq!(
            ZswapParams::default().pool_limit_pages(&input),
            1_048_576 / 5
        );
        assert_eq!(input.live.zswpin, Some(100));
        assert_eq!(input.live.pswpin, Some(0));
        assert_eq!(input.live.zswpwb, None);
        let t = zswap_text(&input.live, &[]);
        assert!(t.contains("zswpin 100") && t.contains("zswpwb -"));
    }
}
