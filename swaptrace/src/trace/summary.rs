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
            }
            Record::SwapRead { how, nr, .. } => {
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
