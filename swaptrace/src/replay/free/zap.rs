//! Swap entries freed by zapping page tables (`Record::Zap`), per address
//! space (`zap_pte_range()`, at exit or munmap): what a trace without the
//! free-batch probes shows of the time spent freeing swap entries.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::trace::Record;

/// The zap batches of one address space.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ZapSpan {
    pub mm: u32,
    pub batches: u64,
    /// Batches inside `exit_mmap()`.
    pub exiting: u64,
    /// MM_SWAPENTS at the first batch and after the last (approximate).
    pub first_left: Option<i64>,
    pub last_left: Option<i64>,
    /// From the first batch to the last, ns.
    pub span_ns: u64,
    /// Time between consecutive batches, µs: each is one PTE table's zap.
    pub intervals_us: Vec<u64>,
}

impl ZapSpan {
    /// Entries freed from the first batch to the last (the first batch's own
    /// entries are not seen: the count before it is unknown).
    pub fn freed(&self) -> Option<i64> {
        Some(self.first_left? - self.last_left?)
    }
}

/// Zap spans per address space, in mm order.
pub fn zap_spans(records: &[Record]) -> Vec<ZapSpan> {
    let mut z = ZapAcc::default();
    records.iter().for_each(|r| z.add(r));
    z.finish()
}

/// [`zap_spans`] fed a record at a time: per address space its span so far
/// and the times of its first and last batch.
#[derive(Default)]
pub struct ZapAcc {
    by_mm: BTreeMap<u32, (ZapSpan, u64, u64)>,
}

impl ZapAcc {
    /// Takes `r` if it is a zap.
    pub fn add(&mut self, r: &Record) {
        let Record::Zap {
            ts,
            mm,
            swap_ents,
            exiting,
            ..
        } = *r
        else {
            return;
        };
        let (s, first, last) = self.by_mm.entry(mm).or_insert_with(|| {
            (
                ZapSpan {
                    mm,
                    first_left: swap_ents,
                    ..ZapSpan::default()
                },
                ts,
                ts,
            )
        });
        if s.batches > 0 {
            s.intervals_us.push(ts.saturating_sub(*last) / 1000);
        }
        s.batches += 1;
        s.exiting += exiting as u64;
        s.last_left = swap_ents.or(s.last_left);
        *last = ts;
        s.span_ns = ts.saturating_sub(*first);
    }

    /// The spans, in mm order.
    pub fn finish(self) -> Vec<ZapSpan> {
        self.by_mm.into_values().map(|(s, _, _)| s).collect()
    }
}
