//! The counters a readahead replay gives per policy, named after the
//! kernel's vmstat events they model.

use serde::Serialize;
use std::collections::BTreeMap;

/// The replayed counters of one policy.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Metrics {
    pub policy: String,
    pub faults: u64,
    /// Swap-cache misses (PGMAJFAULT).
    pub pgmajfault: u64,
    /// Pages read with I/O (PSWPIN).
    pub pswpin: u64,
    /// Zero-filled pages "read" without I/O (SWPIN_ZERO).
    pub swpin_zero: u64,
    /// Pages loaded from zswap without I/O (ZSWPIN).
    pub zswpin: u64,
    /// Readahead pages read (SWAP_RA).
    pub swap_ra: u64,
    /// Faults on readahead pages (SWAP_RA_HIT).
    pub swap_ra_hit: u64,
    /// Of `swap_ra_hit`, faults on a folio whose write's I/O had not ended:
    /// its PG_reclaim is PG_readahead, and the kernel counts them too.
    pub writeback_hits: u64,
    /// Readahead pages evicted unused.
    pub pollution: u64,
    /// Sum of readahead-to-first-use times, ns.
    pub timeliness_ns: u64,
    /// Read requests: runs of contiguous offsets read by one miss.
    pub io_requests: u64,
    /// Read faults whose slot the kernel freed (`should_try_to_free_swap()`:
    /// swap more than half full, or mlock), seen when the slot went to
    /// another page or the page to another slot. The swap layout is then
    /// the reclaim order of the recorded policy's run.
    pub slots_freed_at_read: u64,
    /// Readahead window per miss (argdist style: window -> count).
    pub windows: BTreeMap<u32, u64>,
    /// What the swapoff walks did (included in the totals above).
    pub swapoff: Option<SwapoffMetrics>,
}

/// Swap-ins by `try_to_unuse()`: no faults, so no PGMAJFAULT.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SwapoffMetrics {
    /// Swap PTEs walked (`unuse_pte_range()` iterations that swapped in).
    pub ptes: u64,
    pub pswpin: u64,
    pub swpin_zero: u64,
    pub zswpin: u64,
    pub swap_ra: u64,
    pub swap_ra_hit: u64,
    pub io_requests: u64,
    pub windows: BTreeMap<u32, u64>,
}

impl Metrics {
    /// Faults on pages read ahead (`swap_ra_hit` less the writeback hits).
    fn readahead_hits(&self) -> u64 {
        self.swap_ra_hit.saturating_sub(self.writeback_hits)
    }

    /// Used readahead / readahead.
    pub fn accuracy(&self) -> f64 {
        ratio(self.readahead_hits(), self.swap_ra)
    }

    /// Swap-ins served by readahead / swap-ins (faults and swapoff's PTEs).
    pub fn coverage(&self) -> f64 {
        let ptes = self.swapoff.as_ref().map_or(0, |s| s.ptes);
        ratio(self.readahead_hits(), self.faults + ptes)
    }

    /// Mean time from readahead to first use, µs.
    pub fn timeliness_us(&self) -> f64 {
        ratio(self.timeliness_ns, self.readahead_hits()) / 1000.0
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}
