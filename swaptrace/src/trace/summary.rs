//! What a recording saw, per metric: counts summed over records, by the
//! recorder as it goes and by `info` over a trace file.

use super::{OutKind, ReadKind, Record, Syscall};
use serde::Serialize;
use std::collections::BTreeMap;

/// What a recording saw, per metric.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    pub swap_outs: u64,
    pub swap_out_pages: u64,
    pub swap_out_io: u64,
    pub swap_out_zero: u64,
    pub swap_out_zswap: u64,
    pub swap_out_unknown: u64,
    pub swap_out_no_vma: u64,
    pub faults: u64,
    pub faults_major: u64,
    /// Faults whose entry was found at a recorded swap-out.
    pub faults_joined: u64,
    /// Pages read by I/O inside faults, and outside them.
    pub fault_pages_read: u64,
    pub fault_zero_reads: u64,
    pub fault_zswap_loads: u64,
    /// Of those, read in faults whose entry is not known (not replayable):
    /// shared memory's, whose swap-outs have no owner.
    pub fault_reads_unjoined: u64,
    pub other_reads_io: u64,
    pub other_reads_zero: u64,
    pub other_reads_zswap: u64,
    /// Reads outside faults of unknown kind (exact probe, before 6.13).
    pub other_reads_unknown: u64,
    pub zswap_writebacks: u64,
    pub reclaim_direct: u64,
    pub reclaim_memcg: u64,
    pub khugepaged_swapins: u64,
    pub swapoff_calls: u64,
    pub ra_windows: u64,
    pub cache_lookups: u64,
    pub cache_hits: u64,
    pub cache_ra_hits: u64,
    pub free_batches: u64,
    /// MM_SWAPENTS updates of exiting address spaces (exit zap batches).
    pub zaps: u64,
    pub khugepaged_scans: u64,
    pub collapses: u64,
    /// Collapses with status 1 (`SCAN_SUCCEED` in every kernel so far).
    pub collapses_ok: u64,
    pub freed_entries: u64,
    pub zswap_stores: u64,
    pub zswap_stores_rejected: u64,
    pub zswap_loads: u64,
    pub zswap_loads_missed: u64,
    pub lost: BTreeMap<String, u64>,
}

impl Summary {
    pub fn pswpin(&self) -> u64 {
        self.fault_pages_read + self.other_reads_io
    }

    pub fn swpin_zero(&self) -> u64 {
        self.fault_zero_reads + self.other_reads_zero
    }

    /// Pages read from swap, of every kind, in faults and outside them.
    pub fn pages_read(&self) -> u64 {
        self.fault_pages_read
            + self.fault_zero_reads
            + self.fault_zswap_loads
            + self.other_reads_io
            + self.other_reads_zero
            + self.other_reads_zswap
            + self.other_reads_unknown
    }

    /// Adds the counts of one record (also used to summarise a trace file).
    pub fn add(&mut self, r: &Record) {
        match r {
            Record::SwapOut { mm, nr, how, .. } => {
                self.swap_outs += 1;
                self.swap_out_pages += *nr as u64;
                let n = *nr as u64;
                match how {
                    OutKind::Io => self.swap_out_io += n,
                    OutKind::Zero => self.swap_out_zero += n,
                    OutKind::Zswap => self.swap_out_zswap += n,
                    OutKind::Unknown => self.swap_out_unknown += n,
                }
                if *mm == 0 {
                    self.swap_out_no_vma += 1;
                }
            }
            Record::SwapFault {
                entry,
                major,
                pages_read,
                zero_reads,
                zswap_loads,
                ..
            } => {
                self.faults += 1;
                self.faults_major += *major as u64;
                self.faults_joined += entry.is_some() as u64;
                self.fault_pages_read += *pages_read as u64;
                self.fault_zero_reads += *zero_reads as u64;
                self.fault_zswap_loads += *zswap_loads as u64;
                if entry.is_none() {
                    self.fault_reads_unjoined +=
                        *pages_read as u64 + *zero_reads as u64 + *zswap_loads as u64;
                }
            }
            Record::SwapRead { how, nr, .. } | Record::WillNeed { how, nr, .. } => {
                let n = *nr as u64;
                match how {
                    ReadKind::Io => self.other_reads_io += n,
                    ReadKind::Zero => self.other_reads_zero += n,
                    ReadKind::Zswap => self.other_reads_zswap += n,
                    ReadKind::Unknown => self.other_reads_unknown += n,
                }
            }
            Record::ZswapWriteback { nr, .. } => self.zswap_writebacks += *nr as u64,
            Record::Reclaim {
                begin: true, memcg, ..
            } => {
                if *memcg {
                    self.reclaim_memcg += 1
                } else {
                    self.reclaim_direct += 1
                }
            }
            Record::KhugepagedSwapin { .. } => self.khugepaged_swapins += 1,
            Record::Syscall {
                call: Syscall::Swapoff,
                ret: None,
                ..
            } => self.swapoff_calls += 1,
            Record::RaWindow { .. } => self.ra_windows += 1,
            Record::CacheLookup { hit, ra_hit, .. } => {
                self.cache_lookups += 1;
                self.cache_hits += *hit as u64;
                self.cache_ra_hits += *ra_hit as u64;
            }
            Record::Zap { .. } => self.zaps += 1,
            Record::KhugepagedScan { .. } => self.khugepaged_scans += 1,
            Record::Collapse { status, .. } => {
                self.collapses += 1;
                self.collapses_ok += (*status == 1) as u64;
            }
            Record::FreeBatch { entries, .. } => {
                self.free_batches += 1;
                self.freed_entries += entries.len() as u64;
            }
            Record::ZswapOp { load: true, ok, .. } => {
                self.zswap_loads += 1;
                self.zswap_loads_missed += !*ok as u64;
            }
            Record::ZswapOp {
                load: false, ok, ..
            } => {
                self.zswap_stores += 1;
                self.zswap_stores_rejected += !*ok as u64;
            }
            Record::Lost { what, count, .. } => {
                *self.lost.entry(what.clone()).or_default() += count
            }
            _ => {}
        }
    }

    pub fn lost_total(&self) -> u64 {
        self.lost.values().sum()
    }
}

/// What of the kernel's swap-ins a trace's records hold for a replay: the
/// pages they read ([`Summary::pages_read`]) but in faults of no known
/// entry, against pswpin + swpin_zero + zswpin over the recording. Short
/// where reads went by paths the recorder does not follow: shared memory
/// (`shmem_swapin_folio()`, no swap PTE to join the swap-out by), pages
/// `mremap(MREMAP_FIXED)` moved after their swap-out (a move to an address
/// the kernel chose is recorded), or tasks outside the recording.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReadCoverage {
    pub recorded: u64,
    pub kernel: u64,
    /// Swap-out records, and those with no process owner: shmem's folios
    /// leave their file before the write (`shmem_writeout()`).
    pub swap_outs: u64,
    pub swap_outs_unowned: u64,
}

/// Below this share of the kernel's reads, a replay's errors against the
/// kernel's counters measure the recording, not the model.
const COVERAGE_MIN: f64 = 0.9;
/// Fewer kernel reads than this are not worth a warning.
const COVERAGE_PAGES_MIN: u64 = 100;

impl ReadCoverage {
    /// `delta` gives a vmstat counter's change over the recording; None
    /// without pswpin.
    pub fn of(s: &Summary, delta: impl Fn(&str) -> Option<i64>) -> Option<ReadCoverage> {
        // Older kernels lack swpin_zero; pswpin they all have.
        delta("pswpin")?;
        let kernel: i64 = ["pswpin", "swpin_zero", "zswpin"]
            .iter()
            .filter_map(|c| delta(c))
            .sum();
        Some(ReadCoverage {
            recorded: s.pages_read() - s.fault_reads_unjoined.min(s.pages_read()),
            kernel: kernel.max(0) as u64,
            swap_outs: s.swap_outs,
            swap_outs_unowned: s.swap_out_no_vma,
        })
    }

    /// As `info --json` and `replay --json` show it (`reads_recorded`).
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "recorded": self.recorded,
            "kernel": self.kernel,
            "pct": self.pct(),
            "short": self.is_short(),
            "swap_outs": self.swap_outs,
            "swap_outs_unowned": self.swap_outs_unowned,
        })
    }

    /// Recorded reads in % of the kernel's (None when it read nothing).
    pub fn pct(&self) -> Option<f64> {
        (self.kernel > 0).then(|| self.recorded as f64 * 100.0 / self.kernel as f64)
    }

    /// Under 90% of at least 100 pages the kernel read.
    pub fn is_short(&self) -> bool {
        self.kernel >= COVERAGE_PAGES_MIN
            && (self.recorded as f64) < COVERAGE_MIN * self.kernel as f64
    }

    /// What a short coverage means, for under a table; None when not short.
    pub fn note(&self) -> Option<String> {
        if !self.is_short() {
            return None;
        }
        let unowned = if self.swap_outs_unowned * 10 > self.swap_outs {
            format!(
                " {} of {} swap-outs had no process owner, as shared memory's do.",
                self.swap_outs_unowned, self.swap_outs
            )
        } else {
            String::new()
        };
        Some(format!(
            "the trace's records read {} of the {} pages the kernel read from swap ({:.1}%), \
             counting no fault whose swap entry is unknown. The rest went by paths the \
             recorder does not follow: shared memory (shmem and \
             tmpfs: MAP_SHARED anonymous mappings, /dev/shm, memfd, SysV shm, read by \
             shmem_swapin_folio()), pages that mremap() moved to an address of the \
             caller's choosing (MREMAP_FIXED) after their swap-out, or tasks outside \
             the recording.{unowned} A replay models \
             only what was recorded: its errors against the kernel's counters measure the \
             recording here, not the policy.",
            self.recorded,
            self.kernel,
            self.pct().unwrap_or(0.0)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(pairs: &'static [(&'static str, i64)]) -> impl Fn(&str) -> Option<i64> {
        move |c| pairs.iter().find(|(n, _)| *n == c).map(|(_, v)| *v)
    }

    #[test]
    fn reads_of_every_kind_against_the_kernels_three_counters() {
        let s = Summary {
            fault_pages_read: 800,
            fault_zero_reads: 50,
            fault_zswap_loads: 40,
            other_reads_io: 10,
            ..Summary::default()
        };
        let d = delta(&[("pswpin", 850), ("swpin_zero", 50), ("zswpin", 100)]);
        let c = ReadCoverage::of(&s, d).expect("pswpin present");
        assert_eq!((c.recorded, c.kernel), (900, 1000));
        assert_eq!(c.pct(), Some(90.0));
        assert!(!c.is_short() && c.note().is_none(), "90% is enough");
        // A kernel without swpin_zero: the others still sum.
        let c = ReadCoverage::of(&s, delta(&[("pswpin", 950)])).expect("pswpin");
        assert_eq!(c.kernel, 950);
        assert!(ReadCoverage::of(&s, delta(&[("zswpin", 5)])).is_none());
    }

    #[test]
    fn shared_memory_reads_make_a_note_naming_unowned_swap_outs() {
        let s = Summary {
            fault_pages_read: 1781,
            swap_outs: 68359,
            swap_out_no_vma: 68300,
            ..Summary::default()
        };
        let c = ReadCoverage::of(&s, delta(&[("pswpin", 51985)])).expect("pswpin");
        assert!(c.is_short());
        // Shared memory's faults recorded, with no entry: not counted.
        let mut with_faults = s.clone();
        with_faults.add(&Record::SwapFault {
            ts: 1,
            dur_ns: 1,
            tid: 1,
            mm: 1,
            addr: 0x1000,
            entry: None,
            major: true,
            pages_read: 50_000,
            zero_reads: 0,
            zswap_loads: 0,
            write: false,
        });
        assert_eq!(with_faults.pages_read(), 51781);
        let c2 = ReadCoverage::of(&with_faults, delta(&[("pswpin", 51985)])).expect("pswpin");
        assert_eq!(c2.recorded, c.recorded);
        let n = c.note().expect("a note");
        assert!(
            n.contains("1781 of the 51985 pages") && n.contains("(3.4%)"),
            "{n}"
        );
        assert!(
            n.contains("68300 of 68359 swap-outs had no process owner"),
            "{n}"
        );
        // Owned swap-outs: the note does not blame them.
        let owned = Summary {
            swap_out_no_vma: 3,
            ..s
        };
        let n = ReadCoverage::of(&owned, delta(&[("pswpin", 51985)])).and_then(|c| c.note());
        assert!(n.is_some_and(|n| !n.contains("no process owner")));
        // A few dozen pages are not worth a warning.
        let tiny = Summary {
            fault_pages_read: 1,
            ..Summary::default()
        };
        let c = ReadCoverage::of(&tiny, delta(&[("pswpin", 99)])).expect("pswpin");
        assert!(!c.is_short());
    }
}
