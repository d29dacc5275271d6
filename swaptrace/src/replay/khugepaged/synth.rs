//! A synthetic khugepaged trace for the tests.

use super::{
    default_status_names, DEFAULT_MAX_PTES_SWAP, DEFAULT_SCAN_SLEEP_MS, HPAGE_PMD_NR, NS_PER_MS,
};
use crate::trace::{Header, Record};
use crate::workload::SplitMix64;

/// 6.18's `enum scan_result` codes the synthetic kernel records.
pub(super) const ST_SUCCEEDED: i32 = 1;
pub(super) const ST_EXCEED_NONE: i32 = 5;
pub(super) const ST_EXCEED_SWAP: i32 = 6;
pub(super) const ST_LACK_REFERENCED: i32 = 11;
pub(super) const ST_PAGE_LOCKED: i32 = 16;

/// A synthetic khugepaged run: alternating phases (the first without
/// pressure) of passes of PMD scans, each pass followed by a sleep.
/// Statuses are what 6.18 (`referenced-half`) would record.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct KhpSynth {
    pub(crate) phases: u32,
    pub(crate) passes_per_phase: u32,
    /// PMDs per pass (`pages_to_scan / HPAGE_PMD_NR`).
    pub(crate) pmds_per_pass: u32,
    /// Time between scans within a pass.
    pub(crate) scan_gap_us: u64,
    /// `scan_sleep_millisecs`.
    pub(crate) sleep_ms: u64,
    /// Pressure phases: one stall in the middle of the sleep before each pass.
    pub(crate) stalls_in_sleeps: bool,
    /// Pressure phases: a stall every this many µs through each pass and
    /// from one period before it (0: none).
    pub(crate) stall_period_us: u64,
    /// Stalls are memcg-limit reclaim rather than direct.
    pub(crate) memcg: bool,
    pub(crate) max_ptes_swap: u32,
    /// One in N collapses with swap PTEs swaps in, then fails page_locked
    /// in `__collapse_huge_page_isolate()`; as many scans fail page_locked
    /// before any swap-in (0: none).
    pub(crate) locked_one_in: u64,
    pub(crate) seed: u64,
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
            locked_one_in: 0,
            seed: 1,
        }
    }
}

impl KhpSynth {
    /// A header with the THP settings and 6.18's status names.
    pub(crate) fn header(&self) -> Header {
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
pub(crate) fn synth_khugepaged(s: &KhpSynth) -> Vec<Record> {
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
                let locked = s.locked_one_in > 0 && rng.below(s.locked_one_in) == 0;
                let (unmapped, mut status) = if rng.below(16) == 0 {
                    (want.min(limit), ST_EXCEED_NONE)
                } else if locked && rng.below(2) == 0 {
                    (want.min(limit), ST_PAGE_LOCKED)
                } else if want > limit {
                    (limit + 1, ST_EXCEED_SWAP)
                } else if referenced == 0 || (want > 0 && referenced < HPAGE_PMD_NR / 2) {
                    (want, ST_LACK_REFERENCED)
                } else {
                    (want, ST_SUCCEEDED)
                };
                // collapse_huge_page(): swap in, then isolate.
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
                        if locked {
                            status = ST_PAGE_LOCKED;
                        }
                    }
                    out.push(Record::Collapse {
                        ts: t.saturating_sub(1000),
                        tid,
                        mm,
                        isolated: status == ST_SUCCEEDED,
                        status,
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
                    pmd: 0,
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
