//! Replaying a trace's swap-outs and swap-ins through models of zswap
//! (mm/zswap.c, 6.8 to 6.12): a compressed pool in front of the swap device,
//! its limit writeback (`shrink_worker()`) and its dynamic shrinker
//! (`zswap_shrinker_count()` / `zswap_shrinker_scan()`), in the three ways
//! the kernel protected recently stored entries from it:
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
//! The pool and its shrinker are in `sim`, what drives them in `replayer`,
//! the trace's events in `input`.
//!
//! Simplifications, where the trace lacks what the kernel uses:
//! - one pool, one memcg, one node; writeback always succeeds; every page
//!   compresses by the same ratio, large folios are stored page by page;
//! - the recorded `OutKind` tells zero-filled pages (never in the pool) and,
//!   where the recording had zswap on and it stored pages, the pages its
//!   `zswap_store()` refused: refused again unless the model's pool is at its limit (an
//!   incompressible page, a large folio before 6.13: the page's, not the
//!   policy's); the model decides the limit rejects itself;
//! - `shrink_worker()` runs at once, not from a workqueue;
//! - where the recording kernel's shrinker ran and its writebacks were
//!   recorded, its policy writes back as many entries at each (its own
//!   limit writebacks counted), and another policy walks as many entries
//!   as the kernel's walk took, times its freeable count over the
//!   kernel's; else each pressure episode (a recorded reclaim begin, else
//!   every N swap-out pages) is one `do_shrink_slab()` at a fixed priority
//!   (the trace has no reclaim priority), deferred work carried between
//!   episodes;
//! - a fault's readahead is the recorded window: an aligned block of swap
//!   offsets (`swap_cluster_readahead()`), or, where the recording kernel
//!   read ahead by VMA, the swap PTEs around the fault's address (cut to its
//!   PMD); a swap-cache hit drops the page's entry without counting a load;
//! - a page read from disk keeps its data in the slot (a read fault does
//!   not free it; a write fault does) and reclaim drops it clean, without a
//!   swap-out to record: it is resident until `resident-pages` more pages
//!   came in (as recorded: the median from a swap-in to the page's next
//!   swap-out), then readahead reads it from disk again;
//! - swap-ins of entries swapped out before the trace feed no counter.

mod input;
mod replayer;
mod sim;
mod stream;
#[cfg(test)]
mod synth;

use serde::Serialize;
use std::sync::mpsc::sync_channel;
use std::sync::Arc;

use super::family::{known, ParamInfo, PolicyInfo, ReplayRequest, Uses};
use crate::trace::{Footer, Header, Loaded, Record};

pub use input::{kernel_policy, LiveIn, ZswapEvent, ZswapInput, ZswapLive};
pub use stream::{run_streamed, scan, ZswapScanned};
#[cfg(test)]
pub(crate) use synth::synth_zswap;

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
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ZswapError {
    #[error("the trace has no swap-outs to replay through zswap (a swap-in is replayed only after the swap-out of its entry)")]
    NothingToReplay,
    #[error("unknown zswap policy `{0}` (known: {names})", names = known(POLICIES, |p| p.name))]
    UnknownPolicy(String),
    #[error("bad zswap parameter `{0}`: {1}")]
    BadParam(String, String),
    #[error("zswap policy `{0}` failed: it panicked ({1})")]
    PolicyPanicked(String, String),
}

/// The policies of `--family zswap`, oldest first; all in the default set.
pub const POLICIES: &[PolicyInfo] = &[
    PolicyInfo {
        name: "no-shrinker",
        help: "only the pool-limit writeback (shrink_worker()), in LRU order (6.8)",
        default: true,
    },
    PolicyInfo {
        name: "shrinker",
        help: "the dynamic shrinker, recent stores protected by nr_zswap_protected (6.8)",
        default: true,
    },
    PolicyInfo {
        name: "shrinker-second-chance",
        help: "the shrinker with a referenced bit giving each entry a second chance: \
               zswap shrinker second chance (6.12) without the disk swap-in count",
        default: true,
    },
    PolicyInfo {
        name: "disk-swapin-tracking",
        help: "second chance, and swap-ins that missed zswap taken off the freeable \
               count: zswap shrinker second chance and disk-swapin tracking (6.12)",
        default: true,
    },
];

/// The `--param`s of `--family zswap`.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "pool-pages=N",
        help: "N or auto: the pool limit, pages of compressed data \
               (auto: max-pool-percent of RAM)",
    },
    ParamInfo {
        name: "max-pool-percent=P",
        help: "1 to 100: zswap.max_pool_percent (default: the recording's, else 20)",
    },
    ParamInfo {
        name: "ratio=F",
        help: "1 to 1000: the compression ratio of every page \
               (default: the recorded pool's at its fullest, else 3)",
    },
    ParamInfo {
        name: "accept-threshold=P",
        help: "0 to 100: zswap.accept_threshold_percent (default: the recording's, else 90)",
    },
    ParamInfo {
        name: "shrinker-interval=N",
        help: "without reclaim records, one pressure episode per N swap-out pages \
               (default 1024)",
    },
    ParamInfo {
        name: "priority=N",
        help: "0 to 12: the reclaim priority of each shrinker call (default 10)",
    },
    ParamInfo {
        name: "buckets=N",
        help: "1 to 100000: buckets of the pool-size time series (default 100)",
    },
    ParamInfo {
        name: "writebacks=W",
        help: "follow or ignore: where the recording kernel's shrinker ran, run \
               each policy's at the recorded writebacks, as far as the kernel's \
               walked scaled by its own count (follow, the default), or once per \
               recorded reclaim at priority (ignore)",
    },
    ParamInfo {
        name: "refusals=R",
        help: "follow or ignore: a page the recording's zswap refused (stored \
               to disk while the pool had room and stored others: incompressible, \
               a large folio before 6.13) is refused by every policy (follow, the default), \
               or stored like any other (ignore)",
    },
    ParamInfo {
        name: "limit-reclaim=M",
        help: "one or threshold: at the pool limit the worker writes back one \
               entry, queued only while the pool is full (one, before 6.5), or \
               entries down to the accept threshold (threshold); default: the \
               recording kernel's",
    },
    ParamInfo {
        name: "loads=L",
        help: "exclusive or shared: a zswap load frees the entry (exclusive, 6.7+ \
               and `exclusive_loads`), or leaves it in the pool while the page is in \
               memory (shared: frontswap before 6.5); default: the recording kernel's",
    },
    ParamInfo {
        name: "resident-pages=N",
        help: "N or auto: pages read in while a page read from disk stays resident \
               before reclaim drops it clean (auto: as recorded)",
    },
];

/// `--family zswap` reads neither `--memory-pages` nor `--device`.
pub const USES: Uses = Uses {
    memory_pages: false,
    device: false,
};

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
    /// Pages read in while a page read from disk stays resident; None:
    /// as recorded (the median from a swap-in to the page's next swap-out).
    pub resident_pages: Option<u64>,
    /// Where the kernel's shrinker ran and writebacks were recorded, the
    /// shrinker runs at each recorded writeback (else at each reclaim).
    pub follow_writebacks: bool,
    /// Where the recording had zswap on, a swap-out it sent to disk is
    /// refused again (unless the model's pool is at its limit: a limit reject).
    pub follow_refusals: bool,
    /// `zswap_load()` frees the entry (6.7+); else it stays in the pool,
    /// and a clean page reclaimed later is dropped with its data there.
    pub exclusive_loads: bool,
    /// The pool-limit worker writes back one entry, queued only with the
    /// pool at its limit (before 6.5); else it shrinks to the threshold.
    pub limit_reclaim_one: bool,
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
            resident_pages: None,
            follow_writebacks: true,
            follow_refusals: true,
            exclusive_loads: true,
            limit_reclaim_one: false,
        }
    }
}

impl ZswapParams {
    /// The defaults, with what the recording says: zswap's
    /// max_pool_percent and accept_threshold_percent (header) and the
    /// compression ratio the pool had at its fullest (footer samples).
    pub fn from_trace(t: &Loaded) -> ZswapParams {
        ZswapParams::recorded(&t.header, t.footer.as_ref())
    }

    /// [`from_trace`](Self::from_trace) of a header and footer.
    pub fn recorded(h: &Header, footer: Option<&Footer>) -> ZswapParams {
        let mut p = ZswapParams::default();
        for (knob, key) in [
            ("max_pool_percent", "max-pool-percent"),
            ("accept_threshold_percent", "accept-threshold"),
        ] {
            if let Some(v) = h.zswap.get(knob) {
                let _ = p.set(&format!("{key}={v}"));
            }
        }
        let version = crate::trace::kernel_version(&h.kernel_release);
        p.exclusive_loads = exclusive_loads(version, h);
        p.limit_reclaim_one = version.0 > 0 && version < (6, 5);
        let fullest = footer.and_then(|f| f.zswap_pool.iter().max_by_key(|s| s.stored_kib));
        if let Some(s) = fullest.filter(|s| s.pool_kib > 0) {
            p.compression_ratio = (s.stored_kib as f64 / s.pool_kib as f64).clamp(1.0, 1000.0);
        }
        p
    }

    /// Parses `key=value`: pool-pages (a number or `auto`), max-pool-percent
    /// (1-100), ratio (1-1000), accept-threshold (0-100), shrinker-interval
    /// (>= 1), priority (0-12), buckets (1-100000).
    pub fn set(&mut self, spec: &str) -> Result<(), ZswapError> {
        let bad = |why: String| ZswapError::BadParam(spec.to_string(), why);
        let Some((key, value)) = spec.split_once('=') else {
            return Err(bad(format!("expected key=value (keys: {})", param_names())));
        };
        let (key, value) = (key.trim(), value.trim());
        // One of two words: true for `yes`.
        let either = |yes: &str, no: &str| match value {
            v if v == yes => Ok(true),
            v if v == no => Ok(false),
            _ => Err(bad(format!("expected {yes} or {no}"))),
        };
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
            "resident-pages" => {
                self.resident_pages = if value == "auto" {
                    None
                } else {
                    Some(int(0, u64::MAX >> 1)?)
                }
            }
            "writebacks" => self.follow_writebacks = either("follow", "ignore")?,
            "refusals" => self.follow_refusals = either("follow", "ignore")?,
            "limit-reclaim" => self.limit_reclaim_one = either("one", "threshold")?,
            "loads" => self.exclusive_loads = either("exclusive", "shared")?,
            _ => return Err(bad(format!("unknown key (keys: {})", param_names()))),
        }
        Ok(())
    }

    /// Pool limit in pages (`zswap_max_pages()`).
    pub fn pool_limit_pages(&self, input: &ZswapInput) -> u64 {
        self.pool_limit_for(input.memory_figure())
    }

    /// Pool limit in pages for a memory figure of `memory_pages`.
    pub fn pool_limit_for(&self, memory_pages: u64) -> u64 {
        self.pool_pages.unwrap_or_else(|| {
            (memory_pages as u128 * self.max_pool_percent.min(100) as u128 / 100) as u64
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
    /// Pages read in while a page read from disk stays resident (None: until
    /// its next fault).
    pub resident_pages: Option<u64>,
    /// `reclaim` (each recorded reclaim) or `every N swap-outs`.
    pub pressure: String,
    pub swap_outs: u64,
    pub zero_pages: u64,
    pub stores_accepted: u64,
    pub stores_rejected: u64,
    /// Of `stores_rejected`: refused as the recording's zswap refused them.
    pub stores_refused_as_recorded: u64,
    /// Entries dropped because their slot was swapped out again.
    pub invalidated: u64,
    /// Swap-ins replayed (swap-cache hits excluded).
    pub swap_ins: u64,
    pub zswap_hits: u64,
    pub disk_swapins: u64,
    /// Of `disk_swapins`: the entry had been written back / never stored.
    pub disk_swapins_written_back: u64,
    pub disk_swapins_not_stored: u64,
    /// Of `disk_swapins`: read from disk before, dropped clean since.
    pub disk_swapins_reread: u64,
    pub zero_swapins: u64,
    /// Swap-ins of entries whose swap-out is not in the trace.
    pub untracked_swapins: u64,
    pub cache_hits: u64,
    /// Entries dropped at a swap-cache hit (read ahead or not yet reclaimed).
    pub cache_hit_drops: u64,
    pub writebacks: u64,
    pub writebacks_limit: u64,
    pub writebacks_shrinker: u64,
    /// Writebacks that failed: the page was in memory (shared loads).
    pub writebacks_failed: u64,
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
    /// The faulting page's source, the recording's against the model's.
    pub agreement: Agreement,
}

/// Faults by where the recording kernel read the faulting page (zswap or
/// disk) and where the model did: what a wrong writeback choice shows as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Agreement {
    pub zswap_zswap: u64,
    pub zswap_disk: u64,
    pub disk_zswap: u64,
    pub disk_disk: u64,
    /// Recorded from zswap or disk, the model had no entry (zero or untracked).
    pub other: u64,
}

/// Whether the recording kernel's `zswap_load()` freed the entry: always
/// from 6.7, with the `exclusive_loads` knob on 6.5 and 6.6, never before
/// (frontswap kept it until the slot was freed).
fn exclusive_loads(version: (u32, u32), h: &Header) -> bool {
    match version {
        (0, _) => true,
        (1..=5, _) | (6, 0..=4) => false,
        (6, 5..=6) => h
            .zswap
            .get("exclusive_loads")
            .is_some_and(|v| v.trim() == "Y"),
        _ => true,
    }
}

/// `pool-pages, max-pool-percent, …`: the keys of [`PARAMS`].
fn param_names() -> String {
    known(PARAMS, |p| p.name.split('=').next().unwrap_or(p.name))
}

/// Replays each policy over the same input, in parallel; a policy that
/// panics is an error naming it.
pub fn replay_policies(
    input: &ZswapInput,
    policies: &[ZswapPolicy],
    params: &ZswapParams,
) -> Result<Vec<ZswapMetrics>, ZswapError> {
    par_map(policies, |pol| replayer::replay_one(input, pol, params))
}

/// `f` of each policy on its own thread, in order.
fn par_map<T: Send>(
    policies: &[ZswapPolicy],
    f: impl Fn(ZswapPolicy) -> T + Sync,
) -> Result<Vec<T>, ZswapError> {
    fan_out(policies, |pol, _| f(pol), |_| {})
}

/// Batches of events queued to each policy thread beyond the one it replays.
const CHANNEL_BATCHES: usize = 4;

/// A batch of events, shared by the policy threads.
type Batch = Arc<[ZswapEvent]>;

/// `f` of each policy on its own thread, in order, each reading the
/// batches `feed` sends (decoded once, shared) over a bounded channel. A
/// policy that panics is an error naming it.
fn fan_out<T: Send>(
    policies: &[ZswapPolicy],
    f: impl Fn(ZswapPolicy, &mut dyn Iterator<Item = Batch>) -> T + Sync,
    feed: impl FnOnce(&mut dyn FnMut(&[ZswapEvent])),
) -> Result<Vec<T>, ZswapError> {
    let f = &f;
    std::thread::scope(|s| {
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for &pol in policies {
            let (tx, rx) = sync_channel::<Batch>(CHANNEL_BATCHES);
            senders.push(tx);
            handles.push((pol, s.spawn(move || f(pol, &mut rx.into_iter()))));
        }
        feed(&mut |events| {
            if events.is_empty() {
                return;
            }
            let batch: Batch = events.into();
            for tx in &senders {
                // A thread that is gone panicked: its join says so.
                let _ = tx.send(batch.clone());
            }
        });
        drop(senders);
        handles
            .into_iter()
            .map(|(pol, h)| {
                h.join().map_err(|e| {
                    let why = e
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| e.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "no message".into());
                    ZswapError::PolicyPanicked(pol.name().to_string(), why)
                })
            })
            .collect()
    })
}

/// What `replay --family zswap` shows (and `plot --family zswap` draws).
#[derive(Clone, Debug, PartialEq)]
pub struct ZswapReplay {
    /// The recording kernel's own counts.
    pub live: ZswapLive,
    pub metrics: Vec<ZswapMetrics>,
    /// Swap-outs no kernel could make, skipped ([`ZswapInput::bad_records`]).
    pub bad_records: u64,
}

/// The records [`run`] reads ([`ZswapInput::from_records`]).
pub fn reads(r: &Record) -> bool {
    matches!(
        r,
        Record::SwapOut { .. }
            | Record::SwapFault { .. }
            | Record::RaWindow { .. }
            | Record::Reclaim { .. }
            | Record::ZswapWriteback { .. }
            | Record::ZswapOp { .. }
            | Record::Lost { .. }
            | Record::OutFreed { .. }
            | Record::Unmapped { .. }
            | Record::Zapped { .. }
            | Record::Moved { .. }
    )
}

/// `replay --family zswap`: the recording kernel's zswap settings and pool
/// compression ratio ([`ZswapParams::from_trace`]), overridden by
/// `--param`, then the policies asked for (default: all) replayed on `t`.
pub fn run(t: &Loaded, req: &ReplayRequest) -> Result<ZswapReplay, ZswapError> {
    let (params, policies) = asked(&t.header, t.footer.as_ref(), req)?;
    let input = ZswapInput::from_loaded(t)?;
    let metrics = replay_policies(&input, &policies, &params)?;
    Ok(ZswapReplay {
        live: input.live,
        metrics,
        bad_records: input.bad_records,
    })
}

/// The parameters (the recording's, then `--param`) and the policies `req` asks for.
fn asked(
    h: &Header,
    footer: Option<&Footer>,
    req: &ReplayRequest,
) -> Result<(ZswapParams, Vec<ZswapPolicy>), ZswapError> {
    let mut params = ZswapParams::recorded(h, footer);
    for p in req.params {
        params.set(p)?;
    }
    let names = req.names(POLICIES);
    let policies = ZswapPolicy::parse_list(&names.iter().map(String::as_str).collect::<Vec<_>>())?;
    Ok((params, policies))
}

#[cfg(test)]
mod frontswap_tests;
#[cfg(test)]
mod recorded_tests;
#[cfg(test)]
mod streamed_tests;
#[cfg(test)]
mod tests;
