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
    /// `Empty`, with the metrics the trace does have (`histogram_explained`).
    #[error("the trace has no {what} events, so no --metric {metric}{hint}")]
    Missing {
        what: &'static str,
        metric: &'static str,
        hint: String,
    },
}

impl HistMetric {
    /// The name `--metric` takes.
    pub fn name(self) -> &'static str {
        match self {
            HistMetric::RaWindow => "ra-window",
            HistMetric::PagesRead => "pages-read",
            HistMetric::FaultLatency => "fault-latency",
            HistMetric::FreeLatency => "free-latency",
            HistMetric::ZapInterval => "zap-interval",
        }
    }

    /// What stands in for this metric on a trace recorded with tracepoints
    /// only, and why.
    fn stand_in(self) -> Option<(HistMetric, &'static str)> {
        match self {
            HistMetric::RaWindow => Some((
                HistMetric::PagesRead,
                "without an exact probe the live window is the pages read per major fault",
            )),
            HistMetric::FreeLatency => Some((
                HistMetric::ZapInterval,
                "without a free probe, swap entries freed at exit or munmap are seen as zap batches",
            )),
            _ => None,
        }
    }
}

const ALL_METRICS: [HistMetric; 5] = [
    HistMetric::RaWindow,
    HistMetric::PagesRead,
    HistMetric::FaultLatency,
    HistMetric::FreeLatency,
    HistMetric::ZapInterval,
];

/// `histogram`, but a metric the trace lacks is answered with the metrics it
/// has (one more pass per metric, so only on that error path).
pub fn histogram_explained(
    t: &Loaded,
    metric: HistMetric,
    during: During,
) -> Result<HistOut, HistError> {
    match histogram(t, metric, during) {
        Err(HistError::Empty(what)) => {
            let has: Vec<HistMetric> = ALL_METRICS
                .into_iter()
                .filter(|&m| m != metric && histogram(t, m, during).is_ok())
                .collect();
            let mut hint = String::new();
            if let Some((alt, why)) = metric.stand_in() {
                if has.contains(&alt) {
                    let _ = write!(hint, "; {why}: use --metric {}", alt.name());
                } else {
                    let _ = write!(hint, "; {why} (--metric {}), none here either", alt.name());
                }
            }
            if has.is_empty() {
                hint.push_str("; the trace has none of the metrics `hist` draws");
            } else {
                let names: Vec<&str> = has.iter().map(|m| m.name()).collect();
                let _ = write!(hint, "; the trace has: {}", names.join(", "));
            }
            Err(HistError::Missing {
                what,
                metric: metric.name(),
                hint,
            })
        }
        other => other,
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn names_are_the_ones_clap_takes() {
        assert_eq!(ALL_METRICS.len(), HistMetric::value_variants().len());
        for m in ALL_METRICS {
            let v = m.to_possible_value().unwrap();
            assert_eq!(v.get_name(), m.name());
        }
    }

    fn loaded(records: Vec<Record>) -> Loaded {
        Loaded {
            header: crate::trace::Header::default(),
            records,
            footer: None,
            problems: Vec::new(),
            skipped: 0,
            chunks: Vec::new(),
        }
    }

    #[test]
    fn a_missing_metric_names_its_stand_in_and_what_the_trace_has() {
        let zap = |ts| Record::Zap {
            ts,
            tid: 1,
            mm: 3,
            swap_ents: Some(10),
            exiting: true,
        };
        let t = loaded(vec![zap(1_000), zap(9_000)]);
        let Err(e) = histogram_explained(&t, HistMetric::FreeLatency, During::All) else {
            panic!("a trace of zaps has no free latency");
        };
        let msg = e.to_string();
        assert!(msg.contains("--metric free-latency"), "{msg}");
        assert!(msg.contains("use --metric zap-interval"), "{msg}");
        assert!(msg.ends_with("the trace has: zap-interval"), "{msg}");
        let Err(e) = histogram_explained(&loaded(Vec::new()), HistMetric::RaWindow, During::All)
        else {
            panic!("an empty trace has no windows");
        };
        let msg = e.to_string();
        assert!(
            msg.contains("(--metric pages-read), none here either"),
            "{msg}"
        );
        assert!(msg.contains("none of the metrics"), "{msg}");
        // The plain call stays cheap and unexplained.
        assert!(matches!(
            histogram(&t, HistMetric::FreeLatency, During::All),
            Err(HistError::Empty(_))
        ));
    }
}
