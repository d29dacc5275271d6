//! A fault's own reclaim, moved before its reads.

use super::{Event, InputBuilder};
use crate::trace::SwapEntry;

/// Events [`InputBuilder::own_reclaim_first`] looks back over, at most.
const OWN_RECLAIM_LOOKBACK: usize = 1 << 16;

impl InputBuilder {
    /// The swap-outs a fault's own reclaim made (its task's, while it ran:
    /// the allocations of its readahead reclaimed), and the frees of their
    /// folios, go before the fault's reads: stamped with its start, as the
    /// recorder stamps the frees of folios written before it. Reclaim runs
    /// at the window's first allocation (`swap_cluster_readahead()`,
    /// `__read_swap_cache_async()`), and a slot it filled and freed in the
    /// window is read. `out` holds them: a fault is recorded at its end.
    pub(super) fn own_reclaim_first(&mut self, tid: u32, start: u64, dur: u32, out: &mut [Event]) {
        let end = start.saturating_add(u64::from(dur));
        let during = |ts: u64| ts > start && ts <= end;
        // A task faults once at a time: its earlier swap-outs are done with.
        let Some(outs) = self.recent_outs.remove(&tid) else {
            return;
        };
        let mut own: Vec<SwapEntry> = Vec::new();
        for (ts, entry, nr) in outs {
            if during(ts) && entry.folio_fits(nr) {
                own.extend(entry.folio(u64::from(nr)));
            }
        }
        if own.is_empty() {
            return;
        }
        own.sort_unstable();
        // A slot another task's fault freed meanwhile (a write fault), which
        // this reclaim then filled: its swap-out stays after that fault.
        let mut faulted: Vec<(SwapEntry, u64)> = out
            .iter()
            .rev()
            .take(OWN_RECLAIM_LOOKBACK)
            .filter_map(|e| match *e {
                Event::Fault { ts, entry, .. }
                    if ts > start && own.binary_search(&entry).is_ok() =>
                {
                    Some((entry, ts))
                }
                _ => None,
            })
            .collect();
        faulted.sort_unstable();
        let after_fault = |ts: u64, e: &SwapEntry| {
            let i = faulted.partition_point(|&(f, _)| f < *e);
            faulted[i..]
                .iter()
                .take_while(|&&(f, _)| f == *e)
                .any(|&(_, t)| t < ts)
        };
        let mine = |ts: u64, e: &SwapEntry| {
            during(ts) && own.binary_search(e).is_ok() && !after_fault(ts, e)
        };
        let mut outs = own.len();
        for e in out.iter_mut().rev().take(OWN_RECLAIM_LOOKBACK) {
            if outs == 0 {
                break;
            }
            match e {
                Event::Out {
                    ts,
                    entry,
                    in_fault,
                    ..
                } if mine(*ts, entry) => {
                    *ts = start;
                    *in_fault = true;
                    outs -= 1;
                }
                Event::Rewritten { ts, entry } if mine(*ts, entry) => {
                    *ts = start;
                    outs -= 1;
                }
                Event::Freed { ts, entry } if mine(*ts, entry) => *ts = start,
                _ => {}
            }
        }
    }
}
