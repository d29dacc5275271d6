//! Replaying khugepaged's collapse attempts (one per
//! `huge_memory:mm_khugepaged_scan_pmd` record) through the kernel's rules
//! for swapping pages in to collapse a PMD (mm/khugepaged.c, seed 004):
//!
//! - `always` (before 4.7): `__collapse_huge_page_swapin()` whenever the
//!   scan passed with `unmapped <= max_ptes_swap`;
//! - `allocstall-per-pmd` (seed 004 as posted): only if ALLOCSTALL did not
//!   move between its snapshot before scanning the PMD and the check in
//!   `collapse_huge_page()`;
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
//!   `exceed_swap_pte` scans the counts are lower bounds and the checks past
//!   that PTE are taken as passed (`truncated_swapins` counts such swap-ins);
//! - a status other than succeeded, exceed_swap_pte and lack_referenced_page
//!   (no_referenced_page before 4.8) is a failure unrelated to swap: no
//!   policy collapses that PMD;
//! - every policy needs a young PTE (the scan's `if (referenced)`, since
//!   4.5) unless the kernel's own status was succeeded (e.g. MADV_COLLAPSE);
//! - 4 KiB pages: `HPAGE_PMD_NR` = 512, huge pages of 2 MiB.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::json;

use crate::trace::{Header, Loaded, Record};
use crate::workload::SplitMix64;

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

pub const KHP_POLICY_NAMES: [&str; 5] = [
    "always",
    "allocstall-per-pmd",
    "allocstall-at-sleep",
    "referenced-half",
    "max-ptes-swap:N",
];

const PARAM_NAMES: &str = "pressure, pressure-window-ms, page-us, request-us, sleep-gap-ms";

/// `enum scan_result` names of 6.18 (`SCAN_STATUS` in
/// include/trace/events/huge_memory.h), used when the header has none.
const STATUS_6_18: [&str; 18] = [
    "failed",
    "succeeded",
    "pmd_null",
    "pmd_none",
    "page_pmd_mapped",
    "exceed_none_pte",
    "exceed_swap_pte",
    "exceed_shared_pte",
    "pte_non_present",
    "pte_uffd_wp",
    "pte_mapped_hugepage",
    "lack_referenced_page",
    "page_null",
    "scan_aborted",
    "not_suitable_page_count",
    "page_not_in_lru",
    "page_locked",
    "page_not_anon",
];
const ST_SUCCEEDED: i32 = 1;
const ST_EXCEED_NONE: i32 = 5;
const ST_EXCEED_SWAP: i32 = 6;
const ST_LACK_REFERENCED: i32 = 11;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KhpError {
    #[error(
        "the trace has no khugepaged scans (tracepoint huge_memory:mm_khugepaged_scan_pmd); \
         khugepaged runs only with transparent_hugepage/enabled = always or madvise, \
         see `swaptrace doctor`"
    )]
    NoScans,
    #[error("unknown khugepaged policy `{0}` (known: {names})", names = KHP_POLICY_NAMES.join(", "))]
    UnknownPolicy(String),
    #[error("bad khugepaged policy `{0}`: N must be an integer from 0 to {HPAGE_PMD_NR}")]
    BadPolicyParam(String),
    #[error("bad khugepaged parameter `{0}`: {1}")]
    BadParam(String, String),
}

/// What a scan's kernel status allows, by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScanClass {
    Succeeded,
    ExceedSwap,
    LackReferenced,
    /// A failure unrelated to swap (exceed_none_pte, pmd_null, vma checks…).
    Other,
}

impl ScanClass {
    pub fn from_name(name: &str) -> ScanClass {
        match name.trim().to_ascii_lowercase().as_str() {
            "succeeded" | "scan_succeed" => ScanClass::Succeeded,
            "exceed_swap_pte" | "scan_exceed_swap_pte" => ScanClass::ExceedSwap,
            "lack_referenced_page"
            | "no_referenced_page"
            | "scan_lack_referenced_page"
            | "scan_no_referenced_page" => ScanClass::LackReferenced,
            _ => ScanClass::Other,
        }
    }
}

/// One recorded scan of a PMD.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KhpScan {
    pub ts: u64,
    pub tid: u32,
    pub mm: u32,
    pub referenced: u32,
    pub none_or_zero: u32,
    pub unmapped: u32,
    pub status: i32,
    pub class: ScanClass,
}

/// A reclaim begin: direct (`memcg == false`) or memcg-limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct KhpStall {
    pub ts: u64,
    pub memcg: bool,
}

/// An inferred sleep of a scanning task, from `start` (its last scan
/// before the gap) to `end` (its next scan).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct KhpSleep {
    pub tid: u32,
    pub start: u64,
    pub end: u64,
}

/// The recording kernel's own outcome.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct KhpKernel {
    /// `mm_collapse_huge_page_swapin` records.
    pub swapin_records: u64,
    /// Those that swapped pages in.
    pub swapins: u64,
    pub swapin_pages: u64,
    /// (ts, pages) of each swap-in, in time order.
    #[serde(skip)]
    pub swapin_events: Vec<(u64, u32)>,
    /// `mm_collapse_huge_page` records.
    pub collapse_records: u64,
    pub collapses_succeeded: u64,
}

/// A trace's khugepaged scans and pressure signal.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KhpInput {
    /// In time order.
    pub scans: Vec<KhpScan>,
    /// In time order.
    pub stalls: Vec<KhpStall>,
    /// Inferred with `sleep_gap_ns`.
    pub sleeps: Vec<KhpSleep>,
    pub sleep_gap_ns: u64,
    /// Earliest timestamp seen, less 1 ns.
    pub start_ts: u64,
    /// `khugepaged/max_ptes_swap` of the header, else the default.
    pub max_ptes_swap: u32,
    pub scan_sleep_ms: u64,
    /// Names of the status codes (the header's, else 6.18's).
    pub status_names: BTreeMap<i32, String>,
    pub kernel: KhpKernel,
    /// Caveats found while reading the trace.
    pub notes: Vec<String>,
}

fn header_u64(h: &Header, key: &str, notes: &mut Vec<String>) -> Option<u64> {
    let v = h.thp.get(key)?;
    match v.trim().parse::<u64>() {
        Ok(n) => Some(n),
        Err(_) => {
            notes.push(format!(
                "header thp `{key}` = `{v}` is not a number: default used"
            ));
            None
        }
    }
}

/// Default status names: 6.18's `enum scan_result`.
pub fn default_status_names() -> BTreeMap<i32, String> {
    STATUS_6_18
        .iter()
        .enumerate()
        .map(|(i, n)| (i as i32, n.to_string()))
        .collect()
}

impl KhpInput {
    pub fn from_loaded(t: &Loaded) -> Result<KhpInput, KhpError> {
        let mut input = KhpInput::from_records(&t.records, &t.header)?;
        if !t.problems.is_empty() {
            input.notes.push(format!(
                "{} bad or truncated chunks were skipped",
                t.problems.len()
            ));
        }
        Ok(input)
    }

    pub fn from_records(records: &[Record], header: &Header) -> Result<KhpInput, KhpError> {
        let mut notes = Vec::new();
        let status_names = if header.thp_scan_status.is_empty() {
            notes.push("no status names in the header: 6.18 numbering assumed".to_string());
            default_status_names()
        } else {
            header.thp_scan_status.clone()
        };
        let max_ptes_swap = header_u64(header, "khugepaged/max_ptes_swap", &mut notes)
            .map(|n| n.min(HPAGE_PMD_NR as u64) as u32)
            .unwrap_or(DEFAULT_MAX_PTES_SWAP);
        let scan_sleep_ms = header_u64(header, "khugepaged/scan_sleep_millisecs", &mut notes)
            .unwrap_or(DEFAULT_SCAN_SLEEP_MS);
        if header.page_size != 0 && header.page_size != 4096 {
            notes.push(format!(
                "page size {} B: the model assumes 4 KiB pages (HPAGE_PMD_NR 512)",
                header.page_size
            ));
        }
        let class_of = |status: i32| {
            status_names
                .get(&status)
                .map_or(ScanClass::Other, |n| ScanClass::from_name(n))
        };
        let succeeded = |status: i32| class_of(status) == ScanClass::Succeeded;

        let mut scans = Vec::new();
        let mut stalls = Vec::new();
        let mut kernel = KhpKernel::default();
        let mut t_min = u64::MAX;
        for r in records {
            match r {
                Record::KhugepagedScan {
                    ts,
                    tid,
                    mm,
                    referenced,
                    none_or_zero,
                    unmapped,
                    status,
                } => {
                    t_min = t_min.min(*ts);
                    scans.push(KhpScan {
                        ts: *ts,
                        tid: *tid,
                        mm: *mm,
                        referenced: *referenced,
                        none_or_zero: *none_or_zero,
                        unmapped: *unmapped,
                        status: *status,
                        class: class_of(*status),
                    });
                }
                Record::Reclaim {
                    ts,
                    begin: true,
                    memcg,
                    ..
                } => {
                    t_min = t_min.min(*ts);
                    stalls.push(KhpStall {
                        ts: *ts,
                        memcg: *memcg,
                    });
                }
                Record::KhugepagedSwapin { ts, swapped_in, .. } => {
                    t_min = t_min.min(*ts);
                    kernel.swapin_records += 1;
                    if *swapped_in > 0 {
                        kernel.swapins += 1;
                        kernel.swapin_pages += *swapped_in as u64;
                        kernel.swapin_events.push((*ts, *swapped_in));
                    }
                }
                Record::Collapse { ts, status, .. } => {
                    t_min = t_min.min(*ts);
                    kernel.collapse_records += 1;
                    kernel.collapses_succeeded += succeeded(*status) as u64;
                }
                Record::Lost { what, count, .. }
                    if *count > 0
                        && matches!(
                            what.as_str(),
                            "khugepaged_scan" | "khugepaged_swapin" | "collapse" | "reclaim"
                        ) =>
                {
                    notes.push(format!("{count} {what} events were lost"));
                }
                _ => {}
            }
        }
        if scans.is_empty() {
            return Err(KhpError::NoScans);
        }
        scans.sort_by_key(|s| s.ts);
        stalls.sort_by_key(|s| s.ts);
        kernel.swapin_events.sort_by_key(|e| e.0);
        let mut input = KhpInput {
            scans,
            stalls,
            sleeps: Vec::new(),
            sleep_gap_ns: (scan_sleep_ms / 2).saturating_mul(NS_PER_MS),
            start_ts: t_min.saturating_sub(1),
            max_ptes_swap,
            scan_sleep_ms,
            status_names,
            kernel,
            notes,
        };
        input.sleeps = input.walk(input.sleep_gap_ns).1;
        Ok(input)
    }

    /// The name of a status code (`status_N` when unknown).
    pub fn status_name(&self, status: i32) -> String {
        self.status_names
            .get(&status)
            .cloned()
            .unwrap_or_else(|| format!("status_{status}"))
    }

    /// Per scan: the start of its PMD's window (the same task's previous
    /// scan) and of its sleep window (the task's last inferred sleep); and
    /// the sleeps, for gaps longer than `gap_ns`.
    fn walk(&self, gap_ns: u64) -> (Vec<(u64, u64)>, Vec<KhpSleep>) {
        let mut last: HashMap<u32, (u64, u64)> = HashMap::new();
        let mut sleeps = Vec::new();
        let windows = self
            .scans
            .iter()
            .map(|s| {
                let (prev, sleep) = match last.get(&s.tid) {
                    None => (self.start_ts, self.start_ts),
                    Some(&(prev, _)) if s.ts.saturating_sub(prev) > gap_ns => {
                        sleeps.push(KhpSleep {
                            tid: s.tid,
                            start: prev,
                            end: s.ts,
                        });
                        (prev, prev)
                    }
                    Some(&w) => w,
                };
                last.insert(s.tid, (s.ts, sleep));
                (prev, sleep)
            })
            .collect();
        (windows, sleeps)
    }

    /// Stall times counted by `signal`, in time order.
    fn stall_times(&self, signal: PressureSignal) -> Vec<u64> {
        self.stalls
            .iter()
            .filter(|s| signal == PressureSignal::Any || !s.memcg)
            .map(|s| s.ts)
            .collect()
    }

    fn tasks(&self) -> usize {
        let mut t: Vec<u32> = self.scans.iter().map(|s| s.tid).collect();
        t.sort_unstable();
        t.dedup();
        t.len()
    }
}

/// Whether a stall lies in `(a, b]`.
fn stall_in(stalls: &[u64], a: u64, b: u64) -> bool {
    let i = stalls.partition_point(|&t| t <= a);
    stalls.get(i).is_some_and(|&t| t <= b)
}

/// Policy names as accepted by [`KhpPolicy::from_name`] (`N` stands for a number).
pub fn khp_policy_names() -> &'static [&'static str] {
    &KHP_POLICY_NAMES
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KhpPolicy {
    /// Before 4.7: swap in whenever `unmapped <= max_ptes_swap`.
    Always,
    /// Seed 004 as posted: no stall since the PMD's scan began.
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
}

impl Default for KhpParams {
    fn default() -> Self {
        KhpParams {
            pressure: PressureSignal::Any,
            pressure_window_ms: DEFAULT_PRESSURE_WINDOW_MS,
            page_us: DEFAULT_PAGE_US,
            request_us: DEFAULT_REQUEST_US,
            sleep_gap_ms: None,
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
            return Err(bad(format!("expected key=value (keys: {PARAM_NAMES})")));
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
            _ => return Err(bad(format!("unknown key (keys: {PARAM_NAMES})"))),
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
        _ => input.max_ptes_swap,
    };
    let mut m = KhpMetrics {
        policy: policy.name(),
        max_ptes_swap: limit,
        page_us: p.page_us,
        request_us: p.request_us,
        ..KhpMetrics::default()
    };
    let w = p.window_ns();
    for (s, &(pmd_start, sleep_start)) in input.scans.iter().zip(windows) {
        m.attempts += 1;
        let passed = s.class != ScanClass::Other;
        m.blocked += u64::from(!passed);
        // hpage_collapse_scan_pmd(): `if (referenced)` (MADV_COLLAPSE skips it).
        let young = s.referenced > 0 || s.class == ScanClass::Succeeded;
        if s.unmapped == 0 {
            m.collapses += (passed && young) as u64;
            continue;
        }
        m.swap_attempts += 1;
        if !passed {
            continue;
        }
        // The scan's `++unmapped <= khugepaged_max_ptes_swap`.
        if s.unmapped > limit {
            m.refused_limit += 1;
            continue;
        }
        let young = match policy {
            // 4.8+: `unmapped && referenced < HPAGE_PMD_NR / 2` → SCAN_LACK_REFERENCED_PAGE.
            KhpPolicy::ReferencedHalf => s.referenced >= HPAGE_PMD_NR / 2,
            _ => young,
        };
        if !young {
            m.refused_referenced += 1;
            continue;
        }
        // collapse_huge_page(): `allocstall == curr_allocstall`.
        let stalled = match policy {
            KhpPolicy::AllocstallPerPmd => stall_in(stalls, pmd_start, s.ts),
            KhpPolicy::AllocstallAtSleep => stall_in(stalls, sleep_start, s.ts),
            _ => false,
        };
        if stalled {
            m.refused_pressure += 1;
            continue;
        }
        m.swapins += 1;
        m.pages_in += s.unmapped as u64;
        if stall_in(stalls, s.ts.saturating_sub(w), s.ts) {
            m.swapins_under_pressure += 1;
            m.pages_under_pressure += s.unmapped as u64;
        }
        m.truncated_swapins += (s.class == ScanClass::ExceedSwap) as u64;
        m.collapses += 1;
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

/// Fixed-width table: one row per policy and a `kernel` row.
pub fn khp_text(live: &KhpLive, metrics: &[KhpMetrics]) -> String {
    let mut s = String::new();
    let p = &live.params;
    let _ = writeln!(
        s,
        "recorded: {} khugepaged scans ({} with swap PTEs) by {} tasks, {} inferred sleeps (gaps > {} ms)",
        live.scans, live.swap_scans, live.tasks, live.sleeps, live.sleep_gap_ms
    );
    let _ = writeln!(
        s,
        "stalls: {} direct + {} memcg reclaim begins (pressure={}); max_ptes_swap {}, scan_sleep_millisecs {}",
        live.stalls_direct,
        live.stalls_memcg,
        match p.pressure {
            PressureSignal::Direct => "direct",
            PressureSignal::Any => "any",
        },
        live.max_ptes_swap,
        live.scan_sleep_ms
    );
    let mut by: Vec<(&String, &u64)> = live.scans_by_status.iter().collect();
    by.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let by: Vec<String> = by.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let _ = writeln!(s, "scans by status: {}", by.join(", "));
    let _ = writeln!(
        s,
        "model: {} us per page + {} us per swap-in (presets unless overridden); \
         under pressure = a stall within {} ms before",
        p.page_us, p.request_us, p.pressure_window_ms
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<20} {:>9} {:>9} {:>8} {:>10} {:>11} {:>9} {:>11}",
        "POLICY",
        "ATTEMPTS",
        "SWAP_ATT",
        "SWAPINS",
        "PAGES_IN",
        "UNDER_PRESS",
        "COLLAPSES",
        "IO_MS"
    );
    for m in metrics {
        let _ = writeln!(
            s,
            "{:<20} {:>9} {:>9} {:>8} {:>10} {:>11} {:>9} {:>11.1}",
            m.policy,
            m.attempts,
            m.swap_attempts,
            m.swapins,
            m.pages_in,
            m.pages_under_pressure,
            m.collapses,
            m.io_ms
        );
    }
    let k = &live.kernel;
    let collapses = if k.collapse_records > 0 {
        k.collapses_succeeded.to_string()
    } else {
        "-".into()
    };
    let _ = writeln!(
        s,
        "{:<20} {:>9} {:>9} {:>8} {:>10} {:>11} {:>9} {:>11.1}",
        "kernel",
        live.scans,
        live.swap_scans,
        k.swapins,
        k.swapin_pages,
        live.pages_under_pressure,
        collapses,
        live.io_ms
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<20} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
        "POLICY", "R_LIMIT", "R_REFD", "R_STALL", "BLOCKED", "TRUNC", "HUGE_MIB"
    );
    for m in metrics {
        let _ = writeln!(
            s,
            "{:<20} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
            m.policy,
            m.refused_limit,
            m.refused_referenced,
            m.refused_pressure,
            m.blocked,
            m.truncated_swapins,
            m.huge_bytes >> 20
        );
    }
    if !live.notes.is_empty() {
        let _ = writeln!(s);
        for n in &live.notes {
            let _ = writeln!(s, "note: {n}");
        }
    }
    s
}

pub fn khp_json(live: &KhpLive, metrics: &[KhpMetrics]) -> serde_json::Value {
    json!({
        "live": serde_json::to_value(live).unwrap_or(serde_json::Value::Null),
        "policies": serde_json::to_value(metrics).unwrap_or(serde_json::Value::Null),
    })
}

/// A synthetic khugepaged run: alternating phases (the first without
/// pressure) of passes of PMD scans, each pass followed by a sleep.
/// Statuses are what 6.18 (`referenced-half`) would record.
#[derive(Clone, Debug, PartialEq)]
pub struct KhpSynth {
    pub phases: u32,
    pub passes_per_phase: u32,
    /// PMDs per pass (`pages_to_scan / HPAGE_PMD_NR`).
    pub pmds_per_pass: u32,
    /// Time between scans within a pass.
    pub scan_gap_us: u64,
    /// `scan_sleep_millisecs`.
    pub sleep_ms: u64,
    /// Pressure phases: one stall in the middle of the sleep before each pass.
    pub stalls_in_sleeps: bool,
    /// Pressure phases: a stall every this many µs through each pass and
    /// from one period before it (0: none).
    pub stall_period_us: u64,
    /// Stalls are memcg-limit reclaim rather than direct.
    pub memcg: bool,
    pub max_ptes_swap: u32,
    pub seed: u64,
}

impl Default for KhpSynth {
    fn default() -> Self {
        KhpSynth {
            phases: 4,
            passes_per_phase: 3,
            pmds_per_pass: 8,
            scan_gap_us: 5000,
            sleep_ms: DEFAULT_SCAN_SLEEP_MS,
            stalls_in_sleeps: true,
            stall_period_us: 0,
            memcg: false,
            max_ptes_swap: DEFAULT_MAX_PTES_SWAP,
            seed: 1,
        }
    }
}

impl KhpSynth {
    /// A header with the THP settings and 6.18's status names.
    pub fn header(&self) -> Header {
        let thp = [
            ("enabled", "[always] madvise never".to_string()),
            ("khugepaged/max_ptes_swap", self.max_ptes_swap.to_string()),
            ("khugepaged/max_ptes_none", (HPAGE_PMD_NR - 1).to_string()),
            ("khugepaged/scan_sleep_millisecs", self.sleep_ms.to_string()),
            (
                "khugepaged/pages_to_scan",
                (self.pmds_per_pass as u64 * HPAGE_PMD_NR as u64).to_string(),
            ),
        ];
        Header {
            kernel_release: "synthetic".into(),
            page_size: 4096,
            thp: thp.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            thp_scan_status: default_status_names(),
            ..Header::default()
        }
    }
}

fn synth_ts(r: &Record) -> u64 {
    match r {
        Record::KhugepagedScan { ts, .. }
        | Record::KhugepagedSwapin { ts, .. }
        | Record::Collapse { ts, .. }
        | Record::Reclaim { ts, .. } => *ts,
        _ => 0,
    }
}

/// Records of a [`KhpSynth`] run, in time order.
pub fn synth_khugepaged(s: &KhpSynth) -> Vec<Record> {
    let mut rng = SplitMix64::new(s.seed);
    let (tid, mm) = (77, 1);
    let gap = s.scan_gap_us.max(1).saturating_mul(1000);
    let sleep = s.sleep_ms.saturating_mul(NS_PER_MS);
    let limit = s.max_ptes_swap.min(HPAGE_PMD_NR);
    let mut out = vec![
        Record::Task {
            tid,
            pid: 2,
            comm: "khugepaged".into(),
        },
        Record::Task {
            tid: 1000,
            pid: 1000,
            comm: "synth-khp".into(),
        },
    ];
    let stall = |out: &mut Vec<Record>, ts: u64| {
        for (begin, ts) in [(true, ts), (false, ts + 1000)] {
            out.push(Record::Reclaim {
                ts,
                tid: 1000,
                begin,
                memcg: s.memcg,
                nr_reclaimed: if begin { 0 } else { 32 },
            });
        }
    };
    let mut t = 1_000_000_000u64;
    for phase in 0..s.phases {
        let pressure = phase % 2 == 1;
        for _ in 0..s.passes_per_phase {
            let pass_start = t;
            if pressure && s.stalls_in_sleeps {
                stall(&mut out, pass_start.saturating_sub(sleep / 2));
            }
            for _ in 0..s.pmds_per_pass {
                let referenced = rng.below(HPAGE_PMD_NR as u64 + 1) as u32;
                let want = if rng.below(8) == 0 {
                    0
                } else {
                    1 + rng.below(limit as u64 + 16) as u32
                };
                let none_or_zero = rng.below(32) as u32;
                // hpage_collapse_scan_pmd() of 6.18.
                let (unmapped, status) = if rng.below(16) == 0 {
                    (want.min(limit), ST_EXCEED_NONE)
                } else if want > limit {
                    (limit + 1, ST_EXCEED_SWAP)
                } else if referenced == 0 || (want > 0 && referenced < HPAGE_PMD_NR / 2) {
                    (want, ST_LACK_REFERENCED)
                } else {
                    (want, ST_SUCCEEDED)
                };
                if status == ST_SUCCEEDED {
                    if unmapped > 0 {
                        out.push(Record::KhugepagedSwapin {
                            ts: t.saturating_sub(2000),
                            tid,
                            mm,
                            swapped_in: unmapped,
                            referenced,
                            ret: ST_SUCCEEDED,
                        });
                    }
                    out.push(Record::Collapse {
                        ts: t.saturating_sub(1000),
                        tid,
                        mm,
                        isolated: true,
                        status: ST_SUCCEEDED,
                    });
                }
                out.push(Record::KhugepagedScan {
                    ts: t,
                    tid,
                    mm,
                    referenced,
                    none_or_zero,
                    unmapped,
                    status,
                });
                t += gap;
            }
            let pass_end = t - gap;
            if pressure && s.stall_period_us > 0 {
                let period = s.stall_period_us.saturating_mul(1000);
                let mut st = pass_start.saturating_sub(period);
                while st < pass_end {
                    stall(&mut out, st);
                    st += period;
                }
            }
            t = pass_end + sleep;
        }
    }
    out.sort_by_key(synth_ts);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(s: &KhpSynth) -> KhpInput {
        KhpInput::from_records(&synth_khugepaged(s), &s.header()).expect("scans")
    }

    fn run(input: &KhpInput, names: &[&str], params: &[&str]) -> Vec<KhpMetrics> {
        let pols = KhpPolicy::parse_list(names).expect("policies");
        replay_khugepaged(input, &pols, &KhpParams::parse(params).expect("params"))
    }

    fn scan(ts: u64, referenced: u32, unmapped: u32, status: i32) -> Record {
        Record::KhugepagedScan {
            ts,
            tid: 5,
            mm: 1,
            referenced,
            none_or_zero: 0,
            unmapped,
            status,
        }
    }

    fn stall(ts: u64, memcg: bool) -> Record {
        Record::Reclaim {
            ts,
            tid: 9,
            begin: true,
            memcg,
            nr_reclaimed: 0,
        }
    }

    const MS: u64 = NS_PER_MS;

    #[test]
    fn always_swaps_in_everything_under_the_limit() {
        let s = KhpSynth::default();
        let inp = input(&s);
        let m = &run(&inp, &["always"], &[])[0];
        let eligible: Vec<&KhpScan> = inp
            .scans
            .iter()
            .filter(|x| {
                x.unmapped > 0
                    && x.unmapped <= 64
                    && x.referenced > 0
                    && x.class != ScanClass::Other
            })
            .collect();
        assert!(eligible.len() > 20);
        assert_eq!(m.swapins, eligible.len() as u64);
        assert_eq!(
            m.pages_in,
            eligible.iter().map(|x| x.unmapped as u64).sum::<u64>()
        );
        assert_eq!(m.max_ptes_swap, 64);
        assert_eq!(m.refused_pressure, 0);
        assert_eq!(m.truncated_swapins, 0);
        assert_eq!(m.attempts, inp.scans.len() as u64);
        assert_eq!(
            m.swap_attempts,
            inp.scans.iter().filter(|x| x.unmapped > 0).count() as u64
        );
        assert!(m.refused_limit > 0);
        assert_eq!(
            m.swapins + m.refused_limit + m.refused_referenced + m.refused_pressure,
            m.swap_attempts
                - inp
                    .scans
                    .iter()
                    .filter(|x| x.unmapped > 0 && x.class == ScanClass::Other)
                    .count() as u64
        );
        assert_eq!(m.huge_bytes, m.collapses * 2 * 1024 * 1024);
        assert!(
            (m.io_ms - (m.pages_in as f64 * 30.0 + m.swapins as f64 * 100.0) / 1000.0).abs() < 1e-9
        );
    }

    #[test]
    fn referenced_half_refuses_few_young_ptes() {
        let recs = [
            scan(10, 255, 10, ST_LACK_REFERENCED),
            scan(20, 256, 10, ST_SUCCEEDED),
            scan(30, 100, 0, ST_SUCCEEDED),
            scan(40, 0, 0, ST_LACK_REFERENCED),
            scan(50, 1, 64, ST_LACK_REFERENCED),
        ];
        let inp = KhpInput::from_records(&recs, &Header::default()).expect("scans");
        let m = run(&inp, &["referenced-half", "always"], &[]);
        assert_eq!((m[0].swapins, m[0].pages_in), (1, 10));
        assert_eq!(m[0].refused_referenced, 2);
        assert_eq!(m[0].collapses, 2);
        assert_eq!((m[1].swapins, m[1].pages_in), (3, 84));
        assert_eq!(m[1].collapses, 4);

        let inp = input(&KhpSynth::default());
        let m = run(&inp, &["referenced-half", "always"], &[]);
        assert!(m[0].swapins < m[1].swapins);
        // The synthetic kernel is 6.18: referenced-half is what it did.
        assert_eq!(m[0].swapins, inp.kernel.swapins);
        assert_eq!(m[0].pages_in, inp.kernel.swapin_pages);
        assert_eq!(m[0].collapses, inp.kernel.collapses_succeeded);
    }

    #[test]
    fn per_pmd_swaps_in_more_than_at_sleep_when_stalls_fall_in_sleeps() {
        let s = KhpSynth::default();
        let inp = input(&s);
        assert_eq!(inp.sleeps.len() as u32, s.phases * s.passes_per_phase - 1);
        let m = run(
            &inp,
            &["always", "allocstall-per-pmd", "allocstall-at-sleep"],
            &[],
        );
        let (a, pmd, sleep) = (&m[0], &m[1], &m[2]);
        assert!(pmd.swapins > sleep.swapins, "{pmd:?} {sleep:?}");
        assert!(sleep.refused_pressure > pmd.refused_pressure);
        // Per PMD, only the first scan of a pass can see the stall.
        assert!(pmd.refused_pressure <= (s.phases / 2 * s.passes_per_phase) as u64);
        for x in [pmd, sleep] {
            assert_eq!(x.swapins + x.refused_pressure, a.swapins);
        }
        // No stall at all: both as `always`.
        let calm = input(&KhpSynth {
            stalls_in_sleeps: false,
            ..KhpSynth::default()
        });
        let m = run(
            &calm,
            &["always", "allocstall-per-pmd", "allocstall-at-sleep"],
            &[],
        );
        assert_eq!(m[1].swapins, m[0].swapins);
        assert_eq!(m[2].swapins, m[0].swapins);
        // A gap threshold above the sleeps: no sleep seen, at-sleep refuses all after the first stall.
        let m = run(&inp, &["allocstall-at-sleep"], &["sleep-gap-ms=60000"]);
        assert!(m[0].swapins < sleep.swapins);
    }

    #[test]
    fn dense_stalls_leave_no_swapin_under_pressure() {
        let s = KhpSynth {
            stalls_in_sleeps: false,
            stall_period_us: 2000,
            ..KhpSynth::default()
        };
        let inp = input(&s);
        let m = run(
            &inp,
            &["always", "allocstall-per-pmd", "allocstall-at-sleep"],
            &[],
        );
        assert!(m[0].pages_under_pressure > 0);
        for x in &m[1..] {
            assert_eq!(x.pages_under_pressure, 0, "{}", x.policy);
            assert_eq!(x.swapins_under_pressure, 0, "{}", x.policy);
            assert_eq!(x.swapins + x.refused_pressure, m[0].swapins);
            assert_eq!(x.refused_pressure, m[0].swapins_under_pressure);
        }
        // The same stalls as memcg reclaim: ignored with pressure=direct.
        let inp = input(&KhpSynth { memcg: true, ..s });
        let any = run(&inp, &["always", "allocstall-at-sleep"], &[]);
        let direct = run(
            &inp,
            &["always", "allocstall-at-sleep"],
            &["pressure=direct"],
        );
        assert!(any[1].swapins < any[0].swapins);
        assert_eq!(direct[1].swapins, direct[0].swapins);
        assert_eq!(direct[0].pages_under_pressure, 0);
    }

    #[test]
    fn per_pmd_window_starts_at_previous_scan() {
        let recs = [
            scan(100 * MS, 300, 8, ST_SUCCEEDED),
            stall(101 * MS, false),
            scan(102 * MS, 300, 8, ST_SUCCEEDED),
            scan(104 * MS, 300, 8, ST_SUCCEEDED),
            // A sleep (gap > 5 s), with a stall inside it.
            stall(3000 * MS, false),
            scan(10_104 * MS, 300, 8, ST_SUCCEEDED),
            scan(10_106 * MS, 300, 8, ST_SUCCEEDED),
        ];
        let inp = KhpInput::from_records(&recs, &Header::default()).expect("scans");
        assert_eq!(inp.sleeps.len(), 1);
        assert_eq!(inp.sleeps[0].start, 104 * MS);
        let m = run(&inp, &["allocstall-per-pmd", "allocstall-at-sleep"], &[]);
        // Per PMD: scans 2 and 4 refused; at sleep: all but the first.
        assert_eq!(m[0].swapins, 3);
        assert_eq!(m[1].swapins, 1);
        let m = run(&inp, &["always"], &["pressure-window-ms=5"]);
        assert_eq!(m[0].swapins_under_pressure, 2);
    }

    #[test]
    fn max_ptes_swap_n() {
        let inp = input(&KhpSynth::default());
        let m = run(
            &inp,
            &["max-ptes-swap:0", "max-ptes-swap:512", "always"],
            &[],
        );
        assert_eq!((m[0].swapins, m[0].pages_in), (0, 0));
        assert_eq!(m[0].max_ptes_swap, 0);
        assert_eq!(m[0].refused_referenced, 0);
        assert!(m[0].refused_limit > 0);
        assert!(m[0].collapses > 0);
        assert!(m[1].swapins > m[2].swapins);
        assert!(m[1].truncated_swapins > 0);
        assert_eq!(m[1].swapins, m[2].swapins + m[1].truncated_swapins);
    }

    #[test]
    fn status_names_come_from_the_header() {
        let h = Header {
            thp_scan_status: BTreeMap::from([
                (0, "failed".to_string()),
                (3, "succeeded".to_string()),
                (9, "exceed_swap_pte".to_string()),
                (4, "no_referenced_page".to_string()),
            ]),
            thp: BTreeMap::from([("khugepaged/max_ptes_swap".to_string(), "100".to_string())]),
            ..Header::default()
        };
        let recs = [
            scan(10, 300, 80, 9),
            scan(20, 300, 0, 3),
            scan(30, 300, 10, 6),
            scan(40, 10, 10, 4),
        ];
        let inp = KhpInput::from_records(&recs, &h).expect("scans");
        assert_eq!(inp.max_ptes_swap, 100);
        assert_eq!(inp.status_name(9), "exceed_swap_pte");
        assert_eq!(inp.status_name(6), "status_6");
        let m = run(&inp, &["always"], &[]);
        // 9 → exceed_swap_pte (80 <= 100), 4 → no_referenced_page, 6 unknown → blocked.
        assert_eq!((m[0].swapins, m[0].pages_in), (2, 90));
        assert_eq!(m[0].blocked, 1);
        assert_eq!(m[0].collapses, 3);
        // Without the map, 6.18's: 9 is pte_uffd_wp, 6 exceed_swap_pte.
        let inp = KhpInput::from_records(&recs, &Header::default()).expect("scans");
        assert_eq!(inp.max_ptes_swap, 64);
        let m = run(&inp, &["always"], &[]);
        assert_eq!((m[0].swapins, m[0].pages_in), (1, 10));
        assert_eq!(m[0].blocked, 3);
        assert!(inp.notes.iter().any(|n| n.contains("6.18")));
        let live = KhpLive::from_input(&inp, &KhpParams::default());
        assert_eq!(live.scans_by_status.get("pte_uffd_wp"), Some(&1));
        assert_eq!(live.scans_by_status.get("page_pmd_mapped"), Some(&1));
    }

    #[test]
    fn junk_policies_and_params_are_rejected() {
        for bad in ["", "fifo", "Always", "max-ptes-swap", "referenced"] {
            assert!(
                matches!(KhpPolicy::from_name(bad), Err(KhpError::UnknownPolicy(_))),
                "{bad}"
            );
        }
        for bad in [
            "max-ptes-swap:",
            "max-ptes-swap:513",
            "max-ptes-swap:-1",
            "max-ptes-swap:+1",
            "max-ptes-swap:x",
            "max-ptes-swap:99999999999",
        ] {
            assert_eq!(
                KhpPolicy::from_name(bad),
                Err(KhpError::BadPolicyParam(bad.into())),
                "{bad}"
            );
        }
        assert_eq!(
            KhpPolicy::from_name("max-ptes-swap:512"),
            Ok(KhpPolicy::MaxPtesSwap(512))
        );
        for p in KhpPolicy::defaults()
            .into_iter()
            .chain([KhpPolicy::MaxPtesSwap(0)])
        {
            assert_eq!(p.name().parse::<KhpPolicy>(), Ok(p));
        }
        assert_eq!(KhpPolicy::parse_list(&[]), Ok(KhpPolicy::defaults()));
        for bad in [
            "pressure=some",
            "pressure",
            "page-us=-1",
            "page-us=nan",
            "request-us=inf",
            "pressure-window-ms=x",
            "pressure-window-ms=-5",
            "pressure-window-ms=1e3",
            "sleep-gap-ms=soon",
            "foo=1",
            "",
        ] {
            assert!(
                matches!(KhpParams::parse(&[bad]), Err(KhpError::BadParam(..))),
                "{bad}"
            );
        }
        let p = KhpParams::parse(&[
            "pressure=direct",
            "pressure-window-ms=0",
            "page-us=2.5",
            "request-us=0",
            "sleep-gap-ms=7",
        ])
        .expect("params");
        assert_eq!(p.pressure, PressureSignal::Direct);
        assert_eq!(
            (p.pressure_window_ms, p.page_us, p.request_us),
            (0, 2.5, 0.0)
        );
        assert_eq!(p.sleep_gap_ms, Some(7));
        let p = KhpParams::parse(&["sleep-gap-ms=7", "sleep-gap-ms=auto"]).expect("params");
        assert_eq!(p.sleep_gap_ms, None);
    }

    #[test]
    fn no_scans_is_an_error() {
        let recs = [
            stall(5, false),
            Record::KhugepagedSwapin {
                ts: 1,
                tid: 1,
                mm: 1,
                swapped_in: 3,
                referenced: 9,
                ret: 1,
            },
        ];
        let e = KhpInput::from_records(&recs, &Header::default()).unwrap_err();
        assert_eq!(e, KhpError::NoScans);
        assert!(e.to_string().contains("mm_khugepaged_scan_pmd"));
        assert_eq!(
            KhpInput::from_records(&[], &Header::default()),
            Err(KhpError::NoScans)
        );
    }

    #[test]
    fn bad_header_values_fall_back() {
        let h = Header {
            thp: BTreeMap::from([
                ("khugepaged/max_ptes_swap".to_string(), "lots".to_string()),
                (
                    "khugepaged/scan_sleep_millisecs".to_string(),
                    "0".to_string(),
                ),
            ]),
            ..Header::default()
        };
        let inp = KhpInput::from_records(&[scan(1, 1, 1, 1), scan(2, 1, 1, 1)], &h).expect("scans");
        assert_eq!(inp.max_ptes_swap, 64);
        assert_eq!(inp.scan_sleep_ms, 0);
        assert_eq!(inp.sleeps.len(), 1);
        assert!(inp.notes.iter().any(|n| n.contains("lots")));
    }

    #[test]
    fn live_side_and_reports() {
        let s = KhpSynth {
            stall_period_us: 2000,
            ..KhpSynth::default()
        };
        let inp = input(&s);
        let params = KhpParams::default();
        let live = KhpLive::from_input(&inp, &params);
        assert_eq!(live.scans, inp.scans.len() as u64);
        assert_eq!(live.tasks, 1);
        assert!(live.kernel.swapins > 0);
        assert_eq!(live.kernel.swapins, live.kernel.swapin_records);
        assert!(live.pages_under_pressure > 0);
        assert_eq!(live.stalls_memcg, 0);
        assert!(live.stalls_direct > 0);
        assert_eq!(live.sleep_gap_ms, 5000.0);
        assert_eq!(
            live.scans_by_status.values().sum::<u64>(),
            inp.scans.len() as u64
        );
        assert!(live.scans_by_status.contains_key("lack_referenced_page"));
        let m = replay_khugepaged(&inp, &KhpPolicy::defaults(), &params);
        let t = khp_text(&live, &m);
        for col in [
            "ATTEMPTS",
            "SWAP_ATT",
            "SWAPINS",
            "PAGES_IN",
            "UNDER_PRESS",
            "COLLAPSES",
            "IO_MS",
            "allocstall-at-sleep",
            "kernel ",
            "presets",
        ] {
            assert!(t.contains(col), "{col} in\n{t}");
        }
        let j = khp_json(&live, &m);
        assert_eq!(j["policies"].as_array().map(|a| a.len()), Some(4));
        assert_eq!(j["policies"][0]["policy"], "always");
        assert_eq!(j["live"]["kernel"]["swapins"], live.kernel.swapins);
        assert_eq!(j["live"]["params"]["pressure"], "any");
    }
}
