//! Replaying khugepaged's collapse attempts (one per
//! `huge_memory:mm_khugepaged_scan_pmd` record) through the kernel's rules
//! for swapping pages in to collapse a PMD (mm/khugepaged.c), among them
//! khugepaged swap-in gated on allocstall (4.7, reverted in 4.8):
//!
//! - `always` (before 4.7): `__collapse_huge_page_swapin()` whenever the
//!   scan passed with `unmapped <= max_ptes_swap`;
//! - `allocstall-per-pmd` (the allocstall gate as posted): only if
//!   ALLOCSTALL did not move between its snapshot before scanning the PMD
//!   and the check in `collapse_huge_page()`;
//! - `allocstall-at-sleep` (the review): the snapshot is taken when
//!   khugepaged goes to sleep (`khugepaged_wait_work()`);
//! - `referenced-half` (4.8+): `SCAN_LACK_REFERENCED_PAGE` unless at least
//!   `HPAGE_PMD_NR / 2` PTEs are young when any is swapped out;
//! - `max-ptes-swap:N`: only the swap PTE limit, at N.
//!
//! Simplifications, where the trace lacks what the kernel uses:
//! - each attempt is decided at its scan record's time (the tracepoint fires
//!   after any `collapse_huge_page()`), per recording task;
//! - a stall is a recorded reclaim begin; memcg-limit reclaim counts too
//!   unless `pressure=direct` (the kernel counts ALLOCSTALL only in direct
//!   reclaim, but a traced workload in a cgroup feels its limit instead);
//! - khugepaged's sleeps are inferred per task: a gap between consecutive
//!   scans longer than `sleep-gap-ms` (default: half of
//!   `scan_sleep_millisecs`) is a sleep, taken to start at the gap's start
//!   (the earlier scan). Before a task's first scan, the trace start stands
//!   for both its last sleep and its previous scan;
//! - the kernel stops scanning at the first PTE over a limit: for
//!   `exceed_swap_pte` scans the counts are lower bounds, the limit check is
//!   made on them and the young checks on the PTEs seen before the stop
//!   (`truncated_swapins` counts the swap-ins of such scans);
//! - a scan whose task recorded a swap-in since its previous scan swapped
//!   in for it; if its status is then a failure (page_locked… from
//!   `__collapse_huge_page_isolate()`), a policy that swaps in reads the
//!   same pages and collapses nothing (`failed_after_swapin`). The kernel
//!   comes back to that PMD; its later scans are replayed as recorded;
//! - a policy's swap-in reads the pages the kernel's did when it swapped
//!   in for that scan, else the scan's `unmapped`;
//! - any other status than succeeded, exceed_swap_pte and lack_referenced_page
//!   (no_referenced_page before 4.8) is a failure unrelated to swap: no
//!   policy collapses that PMD;
//! - every policy needs a young PTE (the scan's `if (referenced)`, since
//!   4.5) unless the kernel's own status was succeeded (e.g. MADV_COLLAPSE);
//! - 4 KiB pages: `HPAGE_PMD_NR` = 512, huge pages of 2 MiB.
//!
//! The trace's scans, stalls and inferred sleeps are in `input`.

mod input;
#[cfg(test)]
mod synth;

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use super::family::{known, ParamInfo, PolicyInfo, ReplayRequest, Uses};
use crate::trace::{Footprint, Loaded, Record, TraceStream};

pub use input::{
    default_status_names, KhpInput, KhpKernel, KhpScan, KhpSleep, KhpStall, ScanClass,
};
#[cfg(test)]
pub(crate) use synth::{synth_khugepaged, KhpSynth};

use input::stall_in;

/// PTEs per PMD with 4 KiB pages.
pub const HPAGE_PMD_NR: u32 = 512;
pub const HPAGE_PMD_BYTES: u64 = 2 << 20;
/// `khugepaged_max_ptes_swap` default (`HPAGE_PMD_NR / 8`).
pub const DEFAULT_MAX_PTES_SWAP: u32 = HPAGE_PMD_NR / 8;
/// `khugepaged_scan_sleep_millisecs` default.
pub const DEFAULT_SCAN_SLEEP_MS: u64 = 10_000;
pub const DEFAULT_PRESSURE_WINDOW_MS: u64 = 1000;
/// Modelled read cost presets (round figures, not measurements).
pub const DEFAULT_PAGE_US: f64 = 30.0;
pub const DEFAULT_REQUEST_US: f64 = 100.0;

const NS_PER_MS: u64 = 1_000_000;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KhpError {
    #[error(
        "the trace has no khugepaged scans (tracepoint huge_memory:mm_khugepaged_scan_pmd); \
         khugepaged runs only with transparent_hugepage/enabled = always or madvise, \
         see `swaptrace doctor`"
    )]
    NoScans,
    #[error("unknown khugepaged policy `{0}` (known: {names})", names = known(POLICIES, |p| p.name))]
    UnknownPolicy(String),
    #[error("bad khugepaged policy `{0}`: N must be an integer from 0 to {HPAGE_PMD_NR}")]
    BadPolicyParam(String),
    #[error("bad khugepaged parameter `{0}`: {1}")]
    BadParam(String, String),
    #[error(
        "the trace has more than {0} khugepaged records (scans, swap-ins, collapses, \
         reclaim, lost): the khugepaged replay sorts them in memory and stops there; \
         replay a shorter recording"
    )]
    TooManyRecords(usize),
}

/// The most records [`run_stream`] holds: the replay sorts its input by
/// time ([`KhpInput::from_records`]), so it is held whole, and a trace with
/// more is refused. khugepaged at its default pace (4096 pages per 10 s)
/// writes a few hundred scans an hour.
pub const RECORDS_MAX: usize = 1 << 20;

/// The policies of `--family khugepaged`, oldest first; the default set
/// is the four kernel rules and the limit alone at 512.
pub const POLICIES: &[PolicyInfo] = &[
    PolicyInfo {
        name: "always",
        help: "swap in whenever the scan passed with unmapped <= max_ptes_swap \
               (before 4.7)",
        default: true,
    },
    PolicyInfo {
        name: "allocstall-per-pmd",
        help: "khugepaged swap-in gated on allocstall (4.7, reverted in 4.8) as \
               posted: no stall since the PMD's scan began",
        default: true,
    },
    PolicyInfo {
        name: "allocstall-at-sleep",
        help: "the allocstall gate as reviewed: no stall since khugepaged last \
               went to sleep",
        default: true,
    },
    PolicyInfo {
        name: "referenced-half",
        help: "swap in only with at least half the PTEs (256) young (4.8 and later)",
        default: true,
    },
    PolicyInfo {
        name: "max-ptes-swap:512",
        help: "max-ptes-swap:N at 512: any swapped-out PTE may be swapped in",
        default: true,
    },
    PolicyInfo {
        name: "max-ptes-swap:N",
        help: "only the swap PTE limit, at N (0 to 512)",
        default: false,
    },
];

/// The `--param`s of `--family khugepaged`.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "pressure=direct|any",
        help: "the reclaim that counts as a stall \
               (default any: direct and memcg-limit)",
    },
    ParamInfo {
        name: "pressure-window-ms=N",
        help: "a swap-in is under pressure when a stall lies within N ms \
               before it (default 1000)",
    },
    ParamInfo {
        name: "page-us=F",
        help: "modelled read cost per page swapped in, µs (preset 30)",
    },
    ParamInfo {
        name: "request-us=F",
        help: "modelled read cost per swap-in, µs (preset 100)",
    },
    ParamInfo {
        name: "max-ptes-swap=N",
        help: "the swap PTE limit of every policy but max-ptes-swap:N \
               (default: the recording's khugepaged/max_ptes_swap)",
    },
    ParamInfo {
        name: "sleep-gap-ms=N",
        help: "N or auto: a gap between a task's scans longer than N ms is a \
               sleep (auto: half of scan_sleep_millisecs)",
    },
];

/// `--family khugepaged` reads neither `--memory-pages` nor `--device`.
pub const USES: Uses = Uses {
    memory_pages: false,
    device: false,
};

/// `pressure, pressure-window-ms, …`: the keys of [`PARAMS`].
fn param_names() -> String {
    known(PARAMS, |p| p.name.split('=').next().unwrap_or(p.name))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KhpPolicy {
    /// Before 4.7: swap in whenever `unmapped <= max_ptes_swap`.
    Always,
    /// khugepaged swap-in gated on allocstall (4.7, reverted in 4.8), as
    /// posted: no stall since the PMD's scan began.
    AllocstallPerPmd,
    /// The review: no stall since khugepaged last went to sleep.
    AllocstallAtSleep,
    /// 4.8+: at least `HPAGE_PMD_NR / 2` referenced PTEs.
    ReferencedHalf,
    /// Only the swap PTE limit, at N.
    MaxPtesSwap(u32),
}

impl KhpPolicy {
    pub fn from_name(name: &str) -> Result<KhpPolicy, KhpError> {
        let s = name.trim();
        match s {
            "always" => return Ok(KhpPolicy::Always),
            "allocstall-per-pmd" => return Ok(KhpPolicy::AllocstallPerPmd),
            "allocstall-at-sleep" => return Ok(KhpPolicy::AllocstallAtSleep),
            "referenced-half" => return Ok(KhpPolicy::ReferencedHalf),
            _ => {}
        }
        let Some(n) = s.strip_prefix("max-ptes-swap:") else {
            return Err(KhpError::UnknownPolicy(name.to_string()));
        };
        super::parse_in(n, 0, HPAGE_PMD_NR.into())
            .map(|n| KhpPolicy::MaxPtesSwap(n as u32))
            .ok_or_else(|| KhpError::BadPolicyParam(name.to_string()))
    }

    pub fn name(&self) -> String {
        match self {
            KhpPolicy::Always => "always".into(),
            KhpPolicy::AllocstallPerPmd => "allocstall-per-pmd".into(),
            KhpPolicy::AllocstallAtSleep => "allocstall-at-sleep".into(),
            KhpPolicy::ReferencedHalf => "referenced-half".into(),
            KhpPolicy::MaxPtesSwap(n) => format!("max-ptes-swap:{n}"),
        }
    }

    /// The four kernel rules, oldest first.
    pub fn defaults() -> Vec<KhpPolicy> {
        vec![
            KhpPolicy::Always,
            KhpPolicy::AllocstallPerPmd,
            KhpPolicy::AllocstallAtSleep,
            KhpPolicy::ReferencedHalf,
        ]
    }

    /// Policies from a list of names, or the defaults when the list is empty.
    pub fn parse_list(names: &[&str]) -> Result<Vec<KhpPolicy>, KhpError> {
        if names.is_empty() {
            return Ok(KhpPolicy::defaults());
        }
        names.iter().map(|n| KhpPolicy::from_name(n)).collect()
    }
}

impl std::str::FromStr for KhpPolicy {
    type Err = KhpError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        KhpPolicy::from_name(s)
    }
}

impl std::fmt::Display for KhpPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

/// Which reclaim counts as a stall.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PressureSignal {
    /// Direct reclaim only (what ALLOCSTALL counts).
    Direct,
    /// Direct and memcg-limit reclaim.
    Any,
}

/// Model parameters; `set("key=value")` parses one.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KhpParams {
    pub pressure: PressureSignal,
    /// A swap-in is under pressure when a stall lies this far before it.
    pub pressure_window_ms: u64,
    /// Read cost per page swapped in (preset).
    pub page_us: f64,
    /// Read cost per swap-in (preset).
    pub request_us: f64,
    /// Gap taken as a khugepaged sleep; None: half of `scan_sleep_millisecs`.
    pub sleep_gap_ms: Option<u64>,
    /// The swap PTE limit; None: the recording's.
    pub max_ptes_swap: Option<u32>,
}

impl Default for KhpParams {
    fn default() -> Self {
        KhpParams {
            pressure: PressureSignal::Any,
            pressure_window_ms: DEFAULT_PRESSURE_WINDOW_MS,
            page_us: DEFAULT_PAGE_US,
            request_us: DEFAULT_REQUEST_US,
            sleep_gap_ms: None,
            max_ptes_swap: None,
        }
    }
}

impl KhpParams {
    /// Parses `key=value`: pressure (`direct` or `any`), pressure-window-ms
    /// (0 to 1e9), page-us and request-us (finite, >= 0), sleep-gap-ms
    /// (0 to 1e9, or `auto`).
    pub fn set(&mut self, spec: &str) -> Result<(), KhpError> {
        let bad = |why: String| KhpError::BadParam(spec.to_string(), why);
        let Some((key, value)) = spec.split_once('=') else {
            return Err(bad(format!("expected key=value (keys: {})", param_names())));
        };
        let (key, value) = (key.trim(), value.trim());
        let ms = || -> Result<u64, KhpError> {
            super::parse_in(value, 0, 1_000_000_000)
                .ok_or_else(|| bad("expected an integer from 0 to 1000000000".into()))
        };
        let us = || -> Result<f64, KhpError> {
            let why = || bad("expected a finite number >= 0".into());
            let v: f64 = value.parse().map_err(|_| why())?;
            if !v.is_finite() || v < 0.0 {
                return Err(why());
            }
            Ok(v)
        };
        match key {
            "pressure" => {
                self.pressure = match value {
                    "direct" => PressureSignal::Direct,
                    "any" => PressureSignal::Any,
                    _ => return Err(bad("expected `direct` or `any`".into())),
                }
            }
            "pressure-window-ms" => self.pressure_window_ms = ms()?,
            "page-us" => self.page_us = us()?,
            "request-us" => self.request_us = us()?,
            "sleep-gap-ms" => self.sleep_gap_ms = if value == "auto" { None } else { Some(ms()?) },
            "max-ptes-swap" => {
                self.max_ptes_swap = Some(
                    super::parse_in(value, 0, HPAGE_PMD_NR.into()).ok_or_else(|| {
                        bad(format!("expected an integer from 0 to {HPAGE_PMD_NR}"))
                    })? as u32,
                )
            }
            _ => return Err(bad(format!("unknown key (keys: {})", param_names()))),
        }
        Ok(())
    }

    /// Defaults overridden by each `key=value`.
    pub fn parse(specs: &[&str]) -> Result<KhpParams, KhpError> {
        let mut p = KhpParams::default();
        for s in specs {
            p.set(s)?;
        }
        Ok(p)
    }

    fn gap_ns(&self, input: &KhpInput) -> u64 {
        self.sleep_gap_ms
            .map_or(input.sleep_gap_ns, |ms| ms.saturating_mul(NS_PER_MS))
    }

    fn window_ns(&self) -> u64 {
        self.pressure_window_ms.saturating_mul(NS_PER_MS)
    }

    /// Modelled read time of `requests` swap-ins of `pages` pages, ms.
    pub fn io_ms(&self, requests: u64, pages: u64) -> f64 {
        (requests as f64 * self.request_us + pages as f64 * self.page_us) / 1000.0
    }
}

/// One policy's replay.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct KhpMetrics {
    pub policy: String,
    /// The swap PTE limit applied.
    pub max_ptes_swap: u32,
    /// Scans (collapse attempts).
    pub attempts: u64,
    /// Attempts with swap PTEs.
    pub swap_attempts: u64,
    /// Attempts whose kernel status failed for reasons unrelated to swap.
    pub blocked: u64,
    /// Swap attempts refused: over the limit, too few young PTEs, a stall.
    pub refused_limit: u64,
    pub refused_referenced: u64,
    pub refused_pressure: u64,
    /// Swap-ins decided, and their pages (sum of `unmapped`).
    pub swapins: u64,
    pub pages_in: u64,
    /// Of those, with a stall within `pressure_window_ms` before.
    pub swapins_under_pressure: u64,
    pub pages_under_pressure: u64,
    /// Swap-ins of scans the kernel stopped at exceed_swap_pte (lower bounds).
    pub truncated_swapins: u64,
    /// Swap-ins whose collapse then failed, as the kernel's did.
    pub failed_after_swapin: u64,
    /// PMDs swapped in: the swap-ins less the retries of a PMD (a PMD
    /// the trace does not name counts per swap-in).
    pub swapin_pmds: u64,
    /// The kernel's scans of a PMD this policy had collapsed and the
    /// kernel had not yet: not replayed.
    pub rescans_skipped: u64,
    pub collapses: u64,
    pub huge_bytes: u64,
    pub io_ms: f64,
    pub page_us: f64,
    pub request_us: f64,
}

fn replay_one(
    input: &KhpInput,
    policy: KhpPolicy,
    p: &KhpParams,
    windows: &[(u64, u64)],
    stalls: &[u64],
) -> KhpMetrics {
    let limit = match policy {
        KhpPolicy::MaxPtesSwap(n) => n,
        _ => p.max_ptes_swap.unwrap_or(input.max_ptes_swap),
    };
    let mut m = KhpMetrics {
        policy: policy.name(),
        max_ptes_swap: limit,
        page_us: p.page_us,
        request_us: p.request_us,
        ..KhpMetrics::default()
    };
    let w = p.window_ns();
    // PMDs this policy collapsed where the kernel did not (yet): the
    // kernel scans them again, the policy's khugepaged finds them huge.
    let mut ahead = HashSet::new();
    // PMDs the kernel swapped in where this policy refused: their swap
    // PTEs as this policy last saw them, a floor for the kernel's later
    // scans (which count only what the kernel left out).
    let mut behind = HashMap::new();
    let refuse = |behind: &mut HashMap<_, _>, count: &mut u64, s: &KhpScan, unmapped: u32| {
        *count += 1;
        if let (Some(k), Some(_)) = (s.pmd_key(), s.swapped_in) {
            behind.insert(k, unmapped);
        }
    };
    let mut swapped = HashSet::new();
    let collapse = |m: &mut KhpMetrics, ahead: &mut HashSet<_>, s: &KhpScan| {
        m.collapses += 1;
        if s.class != ScanClass::Succeeded {
            ahead.extend(s.pmd_key());
        }
    };
    for (s, &(pmd_start, sleep_start)) in input.scans.iter().zip(windows) {
        if let Some(k) = s.pmd_key().filter(|k| ahead.contains(k)) {
            if s.class == ScanClass::Succeeded {
                ahead.remove(&k);
            }
            m.rescans_skipped += 1;
            continue;
        }
        m.attempts += 1;
        let passed = s.class != ScanClass::Other;
        m.blocked += u64::from(!passed);
        // hpage_collapse_scan_pmd(): `if (referenced)` (MADV_COLLAPSE skips it).
        let young = s.referenced > 0 || s.class == ScanClass::Succeeded;
        // Where the kernel stopped at its limit, the PTEs swapped out as
        // the trace followed them, if more; at least what this policy left.
        let floor = s
            .pmd_key()
            .and_then(|k| behind.get(&k).copied())
            .unwrap_or(0);
        let unmapped = match (s.class, s.swap_ptes) {
            (ScanClass::ExceedSwap, Some(t)) => t.swap_ptes.max(s.unmapped),
            _ => s.unmapped,
        }
        .max(floor);
        if unmapped == 0 {
            if passed && young {
                collapse(&mut m, &mut ahead, s);
            }
            continue;
        }
        m.swap_attempts += 1;
        if !passed {
            continue;
        }
        // The scan's `++unmapped <= khugepaged_max_ptes_swap`.
        if unmapped > limit {
            refuse(&mut behind, &mut m.refused_limit, s, unmapped);
            continue;
        }
        let young = match policy {
            // 4.8+: `unmapped && referenced < HPAGE_PMD_NR / 2` → SCAN_LACK_REFERENCED_PAGE.
            KhpPolicy::ReferencedHalf => s.referenced_whole() >= HPAGE_PMD_NR / 2,
            _ => young,
        };
        if !young {
            refuse(&mut behind, &mut m.refused_referenced, s, unmapped);
            continue;
        }
        // collapse_huge_page(): `allocstall == curr_allocstall`.
        let stalled = match policy {
            KhpPolicy::AllocstallPerPmd => stall_in(stalls, pmd_start, s.ts),
            KhpPolicy::AllocstallAtSleep => stall_in(stalls, sleep_start, s.ts),
            _ => false,
        };
        if stalled {
            refuse(&mut behind, &mut m.refused_pressure, s, unmapped);
            continue;
        }
        if let Some(k) = s.pmd_key() {
            behind.remove(&k);
        }
        // The kernel counts a swap-in that read nothing as none.
        let pages = match s.swapped_in {
            Some(n) if floor <= s.unmapped => n,
            _ => unmapped,
        };
        m.swapins += u64::from(pages > 0);
        m.swapin_pmds += u64::from(pages > 0 && s.pmd_key().is_none_or(|k| swapped.insert(k)));
        m.pages_in += pages as u64;
        if pages > 0 && stall_in(stalls, s.ts.saturating_sub(w), s.ts) {
            m.swapins_under_pressure += 1;
            m.pages_under_pressure += pages as u64;
        }
        m.truncated_swapins += (s.class == ScanClass::ExceedSwap) as u64;
        if s.class == ScanClass::SwapinFailed {
            m.failed_after_swapin += 1;
        } else {
            collapse(&mut m, &mut ahead, s);
        }
    }
    m.huge_bytes = m.collapses.saturating_mul(HPAGE_PMD_BYTES);
    m.io_ms = p.io_ms(m.swapins, m.pages_in);
    m
}

/// Replays every policy over the same input.
pub fn replay_khugepaged(
    input: &KhpInput,
    policies: &[KhpPolicy],
    params: &KhpParams,
) -> Vec<KhpMetrics> {
    let (windows, _) = input.walk(params.gap_ns(input));
    let stalls = input.stall_times(params.pressure);
    policies
        .iter()
        .map(|&pol| replay_one(input, pol, params, &windows, &stalls))
        .collect()
}

/// The recorded side: what the tracing kernel did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct KhpLive {
    pub scans: u64,
    pub swap_scans: u64,
    pub tasks: u64,
    pub scans_by_status: BTreeMap<String, u64>,
    pub kernel: KhpKernel,
    pub swapins_under_pressure: u64,
    pub pages_under_pressure: u64,
    pub huge_bytes: u64,
    pub io_ms: f64,
    pub stalls_direct: u64,
    pub stalls_memcg: u64,
    pub sleeps: u64,
    pub sleep_gap_ms: f64,
    pub max_ptes_swap: u32,
    pub scan_sleep_ms: u64,
    pub params: KhpParams,
    pub notes: Vec<String>,
}

impl KhpLive {
    pub fn from_input(input: &KhpInput, params: &KhpParams) -> KhpLive {
        let gap = params.gap_ns(input);
        let (_, sleeps) = input.walk(gap);
        let stalls = input.stall_times(params.pressure);
        let w = params.window_ns();
        let mut live = KhpLive {
            scans: input.scans.len() as u64,
            swap_scans: input.scans.iter().filter(|s| s.unmapped > 0).count() as u64,
            tasks: input.tasks() as u64,
            kernel: input.kernel.clone(),
            huge_bytes: input
                .kernel
                .collapses_succeeded
                .saturating_mul(HPAGE_PMD_BYTES),
            io_ms: params.io_ms(input.kernel.swapins, input.kernel.swapin_pages),
            stalls_memcg: input.stalls.iter().filter(|s| s.memcg).count() as u64,
            sleeps: sleeps.len() as u64,
            sleep_gap_ms: gap as f64 / NS_PER_MS as f64,
            max_ptes_swap: input.max_ptes_swap,
            scan_sleep_ms: input.scan_sleep_ms,
            params: params.clone(),
            notes: input.notes.clone(),
            ..KhpLive::default()
        };
        live.stalls_direct = input.stalls.len() as u64 - live.stalls_memcg;
        for s in &input.scans {
            *live
                .scans_by_status
                .entry(input.status_name(s.status))
                .or_default() += 1;
        }
        for &(ts, pages) in &input.kernel.swapin_events {
            if stall_in(&stalls, ts.saturating_sub(w), ts) {
                live.swapins_under_pressure += 1;
                live.pages_under_pressure += pages as u64;
            }
        }
        live
    }
}

/// What `replay --family khugepaged` shows.
#[derive(Clone, Debug, PartialEq)]
pub struct KhpReplay {
    pub live: KhpLive,
    pub metrics: Vec<KhpMetrics>,
    /// The footer's smaps_rollup samples (none without a footer).
    pub footprint: Vec<Footprint>,
}

/// [`run`] on a stream, holding only the records it reads, at most
/// `max` of them ([`RECORDS_MAX`]); `each` sees the stream after every
/// batch (progress).
pub fn run_stream(
    s: TraceStream,
    req: &ReplayRequest,
    max: usize,
    each: impl FnMut(&TraceStream),
) -> (Loaded, Result<KhpReplay, KhpError>) {
    let mut n = 0usize;
    let mut tracker = input::SwapPtes::new(s.header());
    let mut t = s.load_where(
        |r| {
            tracker.see(r);
            let read = reads(r);
            n += read as usize;
            read && n <= max
        },
        each,
    );
    if n > max {
        t.records = Vec::new();
        return (t, Err(KhpError::TooManyRecords(max)));
    }
    let r = run_tracked(&t, req, Some(&tracker.at_scan));
    (t, r)
}

/// The records [`run`] reads ([`KhpInput::from_records`]).
pub fn reads(r: &Record) -> bool {
    matches!(
        r,
        Record::KhugepagedScan { .. }
            | Record::Reclaim { .. }
            | Record::KhugepagedSwapin { .. }
            | Record::Collapse { .. }
            | Record::Lost { .. }
    )
}

/// `replay --family khugepaged`: the parameters from `--param`, the
/// policies asked for (default: [`POLICIES`] marked default) replayed on `t`.
pub fn run(t: &Loaded, req: &ReplayRequest) -> Result<KhpReplay, KhpError> {
    run_tracked(t, req, None)
}

/// [`run`], the swap PTEs of the scans' PMDs from `tracked` where `t`
/// holds only the khugepaged records ([`input::SwapPtes`]).
fn run_tracked(
    t: &Loaded,
    req: &ReplayRequest,
    tracked: Option<&HashMap<(u64, u32), input::Tracked>>,
) -> Result<KhpReplay, KhpError> {
    let specs: Vec<&str> = req.params.iter().map(String::as_str).collect();
    let params = KhpParams::parse(&specs)?;
    let names = req.names(POLICIES);
    let policies = KhpPolicy::parse_list(&names.iter().map(String::as_str).collect::<Vec<_>>())?;
    let input = KhpInput::from_loaded(t, tracked)?;
    Ok(KhpReplay {
        live: KhpLive::from_input(&input, &params),
        metrics: replay_khugepaged(&input, &policies, &params),
        footprint: t
            .footer
            .as_ref()
            .map(|f| f.footprint.clone())
            .unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests;
