//! A trace's khugepaged scans, stalls (reclaim begins) and inferred
//! sleeps, and the recording kernel's own outcome.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use super::{
    KhpError, PressureSignal, DEFAULT_MAX_PTES_SWAP, DEFAULT_SCAN_SLEEP_MS, HPAGE_PMD_NR, NS_PER_MS,
};
use crate::trace::{Header, Loaded, Record};

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

/// What a scan's kernel status allows, by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScanClass {
    Succeeded,
    ExceedSwap,
    LackReferenced,
    /// The kernel swapped pages in for this scan (`__collapse_huge_page_swapin()`)
    /// and then the collapse failed (page_locked, not_suitable_page_count…
    /// from `__collapse_huge_page_isolate()`, or the swap-in itself).
    SwapinFailed,
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
    /// Pages of the kernel's swap-in for this scan (the same task's
    /// `mm_collapse_huge_page_swapin` since its previous scan), if any.
    pub swapped_in: Option<u32>,
    /// The PMD's address; 0 unknown.
    pub pmd: u64,
    /// Swapped-out PTEs of the PMD followed through the trace ([`SwapPtes`]).
    pub swap_ptes: Option<Tracked>,
}

/// A scan's PMD as [`SwapPtes`] followed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Tracked {
    /// Swapped-out PTEs.
    pub swap_ptes: u32,
    /// The PTE the scan stopped at: its `unmapped`-th swapped-out one.
    pub stop: Option<u32>,
}

impl KhpScan {
    /// Young PTEs of the whole PMD: where the kernel stopped at its limit
    /// (a lower bound), those seen, and the rest's present PTEs young in
    /// the same proportion.
    pub fn referenced_whole(&self) -> u32 {
        let (
            ScanClass::ExceedSwap,
            Some(Tracked {
                swap_ptes,
                stop: Some(stop),
            }),
        ) = (self.class, self.swap_ptes)
        else {
            return self.referenced;
        };
        let seen = stop + 1;
        let present_seen = seen.saturating_sub(self.unmapped + self.none_or_zero);
        if present_seen == 0 {
            return self.referenced;
        }
        let rest = HPAGE_PMD_NR.saturating_sub(seen);
        let none_rest = u64::from(self.none_or_zero) * u64::from(rest) / u64::from(seen);
        let present_rest = u64::from(rest)
            .saturating_sub(u64::from(swap_ptes.saturating_sub(self.unmapped)) + none_rest);
        let young =
            present_rest * u64::from(self.referenced.min(present_seen)) / u64::from(present_seen);
        self.referenced + young as u32
    }

    /// The PMD, when the trace names it.
    pub fn pmd_key(&self) -> Option<(u32, u64)> {
        (self.pmd != 0).then_some((self.mm, self.pmd))
    }
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
    /// Scans whose swap-in was followed by a failed collapse.
    pub failed_after_swapin: u64,
    /// PMDs swapped in (a swap-in of a PMD the trace does not name counts
    /// as one): the swap-ins less the retries of a PMD.
    pub swapin_pmds: u64,
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

/// The header's status names, else 6.18's.
fn status_names_of(header: &Header) -> BTreeMap<i32, String> {
    if header.thp_scan_status.is_empty() {
        default_status_names()
    } else {
        header.thp_scan_status.clone()
    }
}

impl KhpInput {
    /// `t`'s scans; the swap PTEs of their PMDs from `tracked` (by the
    /// scan's ts and tid) where `t` holds only the khugepaged records.
    pub fn from_loaded(
        t: &Loaded,
        tracked: Option<&HashMap<(u64, u32), Tracked>>,
    ) -> Result<KhpInput, KhpError> {
        let mut input = match tracked {
            Some(m) => KhpInput::from_records_tracked(&t.records, &t.header, m)?,
            None => KhpInput::from_records(&t.records, &t.header)?,
        };
        if !t.problems.is_empty() {
            input.notes.push(format!(
                "{} bad or truncated chunks were skipped",
                t.problems.len()
            ));
        }
        Ok(input)
    }

    /// The scans of `records`, their PMDs' swap PTEs followed through them.
    pub fn from_records(records: &[Record], header: &Header) -> Result<KhpInput, KhpError> {
        let mut tracker = SwapPtes::new(header);
        records.iter().for_each(|r| tracker.see(r));
        KhpInput::from_records_tracked(records, header, &tracker.at_scan)
    }

    pub fn from_records_tracked(
        records: &[Record],
        header: &Header,
        tracked: &HashMap<(u64, u32), Tracked>,
    ) -> Result<KhpInput, KhpError> {
        let mut notes = Vec::new();
        if header.thp_scan_status.is_empty() {
            notes.push("no status names in the header: 6.18 numbering assumed".to_string());
        }
        let status_names = status_names_of(header);
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
        let mut swapins = Vec::new();
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
                    pmd,
                } => {
                    t_min = t_min.min(*ts);
                    scans.push(KhpScan {
                        pmd: *pmd,
                        swap_ptes: None,
                        ts: *ts,
                        tid: *tid,
                        mm: *mm,
                        referenced: *referenced,
                        none_or_zero: *none_or_zero,
                        unmapped: *unmapped,
                        status: *status,
                        class: class_of(*status),
                        swapped_in: None,
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
                Record::KhugepagedSwapin {
                    ts,
                    tid,
                    swapped_in,
                    ..
                } => {
                    t_min = t_min.min(*ts);
                    swapins.push((*ts, *tid, *swapped_in));
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
        for s in &mut scans {
            s.swap_ptes = tracked.get(&(s.ts, s.tid)).copied();
        }
        scans.sort_by_key(|s| s.ts);
        stalls.sort_by_key(|s| s.ts);
        kernel.swapin_events.sort_by_key(|e| e.0);
        kernel.failed_after_swapin = match_swapins(&mut scans, swapins);
        kernel.swapin_pmds = distinct_pmds(scans.iter().filter(|s| s.swapped_in > Some(0)));
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
    pub(super) fn walk(&self, gap_ns: u64) -> (Vec<(u64, u64)>, Vec<KhpSleep>) {
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
    pub(super) fn stall_times(&self, signal: PressureSignal) -> Vec<u64> {
        self.stalls
            .iter()
            .filter(|s| signal == PressureSignal::Any || !s.memcg)
            .map(|s| s.ts)
            .collect()
    }

    pub(super) fn tasks(&self) -> usize {
        let mut t: Vec<u32> = self.scans.iter().map(|s| s.tid).collect();
        t.sort_unstable();
        t.dedup();
        t.len()
    }
}

/// Gives each scan the swap-in its task recorded since its previous scan:
/// `mm_collapse_huge_page_swapin` fires inside `collapse_huge_page()`,
/// before the scan's own tracepoint. A scan that swapped in and did not
/// collapse becomes [`ScanClass::SwapinFailed`]; returns how many did.
fn match_swapins(scans: &mut [KhpScan], mut swapins: Vec<(u64, u32, u32)>) -> u64 {
    swapins.sort_by_key(|e| e.0);
    let mut pending: HashMap<u32, u32> = HashMap::new();
    let mut next = swapins.into_iter().peekable();
    let mut failed = 0;
    for s in scans.iter_mut() {
        while let Some((_, tid, pages)) = next.next_if(|e| e.0 <= s.ts) {
            *pending.entry(tid).or_default() += pages;
        }
        s.swapped_in = pending.remove(&s.tid);
        if s.swapped_in.is_some() && matches!(s.class, ScanClass::LackReferenced | ScanClass::Other)
        {
            s.class = ScanClass::SwapinFailed;
            failed += 1;
        }
    }
    failed
}

/// PMDs among `scans`: each named one once, each unnamed one apiece.
pub(super) fn distinct_pmds<'a>(scans: impl Iterator<Item = &'a KhpScan>) -> u64 {
    let mut seen = HashSet::new();
    scans
        .filter(|s| s.pmd_key().is_none_or(|k| seen.insert(k)))
        .count() as u64
}

/// Whether a stall lies in `(a, b]`.
pub(super) fn stall_in(stalls: &[u64], a: u64, b: u64) -> bool {
    let i = stalls.partition_point(|&t| t <= a);
    stalls.get(i).is_some_and(|&t| t <= b)
}

/// Swapped-out PTEs per PMD, followed through the trace's swap-outs, swap
/// faults, unmaps and zaps: the count at each scan that names its PMD,
/// for scans the kernel stopped at exceed_swap_pte (whose `unmapped` is
/// only a lower bound). Pages swapped out before the trace are not known.
#[derive(Debug, Default)]
pub struct SwapPtes {
    pmds: HashMap<(u32, u64), [u64; 8]>,
    /// Tasks with a khugepaged swap-in since their last scan.
    swapped_in: HashSet<u32>,
    /// The PMD at each scan, by (ts, tid).
    pub at_scan: HashMap<(u64, u32), Tracked>,
    /// The `succeeded` status code.
    succeeded: Option<i32>,
}

const PAGE: u64 = 4096;

impl SwapPtes {
    pub fn new(header: &Header) -> SwapPtes {
        SwapPtes {
            succeeded: status_names_of(header)
                .iter()
                .find(|(_, n)| ScanClass::from_name(n) == ScanClass::Succeeded)
                .map(|(&c, _)| c),
            ..SwapPtes::default()
        }
    }

    fn key(mm: u32, addr: u64) -> (u32, u64) {
        (mm, addr & !(super::HPAGE_PMD_BYTES - 1))
    }

    fn bit(addr: u64) -> (usize, u64) {
        let i = (addr / PAGE) % u64::from(HPAGE_PMD_NR);
        ((i / 64) as usize, 1 << (i % 64))
    }

    /// Clears `[start, end)` of `mm`: PMD by PMD where the range spans
    /// few, else through the PMDs held.
    fn clear(&mut self, mm: u32, start: u64, end: u64) {
        let hp = super::HPAGE_PMD_BYTES;
        if end.saturating_sub(start) / hp <= 1024 {
            let first = start & !(hp - 1);
            for pmd in (first..end).step_by(hp as usize) {
                self.clear_in((mm, pmd), start, end);
            }
        } else {
            let keys: Vec<(u32, u64)> = self
                .pmds
                .keys()
                .filter(|&&(m, a)| m == mm && a < end && a + hp > start)
                .copied()
                .collect();
            for k in keys {
                self.clear_in(k, start, end);
            }
        }
    }

    /// Clears what of `[start, end)` lies in PMD `k`; forgets it emptied.
    fn clear_in(&mut self, k: (u32, u64), start: u64, end: u64) {
        let Some(bits) = self.pmds.get_mut(&k) else {
            return;
        };
        let (lo, hi) = (start.max(k.1), end.min(k.1 + super::HPAGE_PMD_BYTES));
        for a in (lo..hi).step_by(PAGE as usize) {
            let (w, b) = SwapPtes::bit(a);
            bits[w] &= !b;
        }
        if bits.iter().all(|&w| w == 0) {
            self.pmds.remove(&k);
        }
    }

    /// Follows one record, in trace order.
    pub fn see(&mut self, r: &Record) {
        match *r {
            Record::SwapOut { mm, vaddr, nr, .. } if mm != 0 => {
                for i in 0..u64::from(nr.min(HPAGE_PMD_NR)) {
                    let a = vaddr + i * PAGE;
                    let (w, b) = SwapPtes::bit(a);
                    self.pmds.entry(SwapPtes::key(mm, a)).or_default()[w] |= b;
                }
            }
            Record::SwapFault { mm, addr, .. } => self.clear(mm, addr, addr + PAGE),
            Record::Unmapped { mm, start, end, .. } | Record::Zapped { mm, start, end, .. } => {
                self.clear(mm, start, end)
            }
            Record::Moved { mm, from, len, .. } => self.clear(mm, from, from.saturating_add(len)),
            Record::KhugepagedSwapin {
                tid, swapped_in, ..
            } if swapped_in > 0 => {
                self.swapped_in.insert(tid);
            }
            Record::KhugepagedScan {
                ts,
                tid,
                mm,
                status,
                pmd,
                unmapped,
                ..
            } => {
                let swapped_in = self.swapped_in.remove(&tid);
                if pmd == 0 {
                    return;
                }
                let k = SwapPtes::key(mm, pmd);
                let bits = self.pmds.get(&k).copied().unwrap_or_default();
                // The `unmapped`-th set bit.
                let stop = (unmapped as usize).checked_sub(1).and_then(|n| {
                    (0..HPAGE_PMD_NR)
                        .filter(|&i| bits[(i / 64) as usize] & (1 << (i % 64)) != 0)
                        .nth(n)
                });
                let swap_ptes = bits.iter().map(|w| w.count_ones()).sum();
                self.at_scan.insert((ts, tid), Tracked { swap_ptes, stop });
                // Swapped in for this scan, or now huge: none left.
                if swapped_in || Some(status) == self.succeeded {
                    self.pmds.remove(&k);
                }
            }
            _ => {}
        }
    }
}
