//! `swaptrace hist`: one metric of a trace as an argdist count table or a
//! funclatency log2 histogram with percentiles, human and JSON.

use crate::stats::{percentiles, CountTable, Log2Hist, RA_WINDOW_TITLE};
use crate::trace::{Loaded, Record, Syscall};
use serde_json::json;
use std::collections::HashMap;
use std::fmt::Write;
use swaptrace_common::names;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HistMetric {
    /// Readahead window per swap-in readahead (`swapin_nr_pages()` return).
    RaWindow,
    /// Pages read by I/O per major swap fault.
    PagesRead,
    /// Swap-in fault latency, µs.
    FaultLatency,
    /// Free batch latency, µs: `swapcache_free_entries()`, or one cluster per call (6.15+).
    FreeLatency,
    /// Time between zap batches of an address space (a PTE table's swap
    /// entries freed at exit or munmap), µs: where no free probe attaches.
    ZapInterval,
}

/// Which events count, relative to swapoff runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum During {
    All,
    Swapoff,
    NotSwapoff,
}

#[derive(Debug, thiserror::Error)]
pub enum HistError {
    #[error("the trace has no {0} events (see `swaptrace info` for its metrics)")]
    Empty(&'static str),
}

pub struct HistOut {
    pub title: String,
    pub source: &'static str,
    pub count: Option<CountTable>,
    pub log2: Option<Log2Hist>,
    /// (percentile, value) pairs in the histogram's unit.
    pub percentiles: Vec<(f64, u64)>,
    pub max: u64,
}

/// Tids inside a swapoff call, as (tid, from, to) intervals.
fn swapoff_spans(t: &Loaded) -> Vec<(u32, u64, u64)> {
    let mut open: HashMap<u32, u64> = HashMap::new();
    let mut spans = Vec::new();
    for r in &t.records {
        if let Record::Syscall {
            ts,
            tid,
            call: Syscall::Swapoff,
            ret,
        } = r
        {
            match ret {
                None => {
                    open.insert(*tid, *ts);
                }
                Some(_) => {
                    if let Some(from) = open.remove(tid) {
                        spans.push((*tid, from, *ts));
                    }
                }
            }
        }
    }
    // A swapoff still running when recording stopped.
    spans.extend(open.into_iter().map(|(tid, from)| (tid, from, u64::MAX)));
    spans
}

pub fn histogram(t: &Loaded, metric: HistMetric, during: During) -> Result<HistOut, HistError> {
    let spans = swapoff_spans(t);
    let keep = |tid: u32, ts: u64| {
        let inside = spans
            .iter()
            .any(|&(s, a, b)| s == tid && ts >= a && ts <= b);
        match during {
            During::All => true,
            During::Swapoff => inside,
            During::NotSwapoff => !inside,
        }
    };
    match metric {
        HistMetric::RaWindow => {
            let mut c = CountTable::new("$retval");
            for r in &t.records {
                if let Record::RaWindow {
                    ts, tid, window, ..
                } = r
                {
                    if keep(*tid, *ts) {
                        c.add(*window as u64, 1);
                    }
                }
            }
            if c.total() == 0 {
                return Err(HistError::Empty(names::RA_WINDOW));
            }
            Ok(HistOut {
                title: RA_WINDOW_TITLE.into(),
                source: "ra_window records (swapin_nr_pages result)",
                count: Some(c),
                log2: None,
                percentiles: Vec::new(),
                max: 0,
            })
        }
        HistMetric::PagesRead => {
            let mut c = CountTable::new("pages_read");
            for r in &t.records {
                if let Record::SwapFault {
                    ts,
                    tid,
                    major: true,
                    pages_read,
                    ..
                } = r
                {
                    if keep(*tid, *ts) {
                        c.add(*pages_read as u64, 1);
                    }
                }
            }
            if c.total() == 0 {
                return Err(HistError::Empty("major swap_fault"));
            }
            Ok(HistOut {
                title: "pages read by I/O per major swap fault".into(),
                source: "swap_fault records (PSWPIN in the faulting task)",
                count: Some(c),
                log2: None,
                percentiles: Vec::new(),
                max: 0,
            })
        }
        HistMetric::ZapInterval => {
            let vals: Vec<u64> = crate::replay::free::zap_spans(&t.records)
                .into_iter()
                .flat_map(|s| s.intervals_us)
                .collect();
            if vals.is_empty() {
                return Err(HistError::Empty(names::ZAP));
            }
            Ok(latency_out(
                "time between zap batches (a PTE table of swap entries freed)",
                "zap records (rss_stat MM_SWAPENTS outside faults)",
                &vals,
            ))
        }
        HistMetric::FaultLatency | HistMetric::FreeLatency => {
            let (what, title, source) = if metric == HistMetric::FaultLatency {
                (
                    names::SWAP_FAULT,
                    "swap-in fault latency",
                    "swap_fault records",
                )
            } else {
                (
                    names::FREE_BATCH,
                    "free batch latency (swapcache_free_entries, or per-cluster swap_entries_free / __swap_cluster_free_entries)",
                    "free_batch records",
                )
            };
            let mut vals = Vec::new();
            for r in &t.records {
                match (metric, r) {
                    (
                        HistMetric::FaultLatency,
                        Record::SwapFault {
                            ts, tid, dur_ns, ..
                        },
                    )
                    | (
                        HistMetric::FreeLatency,
                        Record::FreeBatch {
                            ts,
                            tid,
                            lat_ns: dur_ns,
                            ..
                        },
                    ) if keep(*tid, *ts) => vals.push(*dur_ns as u64 / 1000),
                    _ => {}
                }
            }
            if vals.is_empty() {
                return Err(HistError::Empty(what));
            }
            Ok(latency_out(title, source, &vals))
        }
    }
}

/// A funclatency-style log2 histogram (µs) with percentiles.
fn latency_out(title: &str, source: &'static str, vals: &[u64]) -> HistOut {
    let mut h = Log2Hist::new("usecs");
    for &v in vals {
        h.add(v);
    }
    let (percentiles, max) = percentiles(vals);
    HistOut {
        title: title.into(),
        source,
        count: None,
        log2: Some(h),
        percentiles,
        max,
    }
}

impl HistOut {
    pub fn text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(o, "{}", self.title);
        if let Some(c) = &self.count {
            let _ = write!(o, "{c}");
            let _ = writeln!(o, "\ttotal {}", c.total());
        }
        if let Some(h) = &self.log2 {
            let _ = write!(o, "{h}");
            let p: Vec<String> = self
                .percentiles
                .iter()
                .map(|(q, v)| {
                    if *q >= 100.0 {
                        format!("max {v}")
                    } else {
                        format!("p{q} {v}")
                    }
                })
                .collect();
            let _ = writeln!(o, "usecs: {} (n = {})", p.join(", "), h.total());
        }
        o
    }

    pub fn json(&self) -> serde_json::Value {
        json!({
            "title": self.title,
            "source": self.source,
            "counts": self.count.as_ref().map(|c| c.counts.iter()
                .map(|(v, n)| json!({"value": v, "count": n})).collect::<Vec<_>>()),
            "log2": self.log2.as_ref().map(|h| h.to_json()),
            "percentiles": self.percentiles.iter()
                .map(|(q, v)| json!({"percentile": q, "value": v})).collect::<Vec<_>>(),
            "max": self.max,
        })
    }
}
