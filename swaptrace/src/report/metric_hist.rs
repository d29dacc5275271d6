//! `swaptrace hist`: one metric of a trace as an argdist count table or a
//! funclatency log2 histogram with percentiles, human and JSON.

use crate::stats::{CountTable, Log2Hist, Percentiles, RA_WINDOW_TITLE};
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
/// has (one more pass, so only on that error path).
pub fn histogram_explained(
    t: &Loaded,
    metric: HistMetric,
    during: During,
) -> Result<HistOut, HistError> {
    let spans = Swapoffs::of(&t.records);
    let mut b = HistBuilder::new(metric, during, &spans);
    b.add(&t.records);
    b.finish().map_err(|e| {
        let mut all = HistBuilder::all(during, &spans);
        for b in &mut all {
            b.add(&t.records);
        }
        explain(e, metric, &all)
    })
}

/// `Empty` explained with the metrics `all` (from [`HistBuilder::all`],
/// fed the whole trace) found: a stand-in, or what the trace has.
pub fn explain(e: HistError, metric: HistMetric, all: &[HistBuilder]) -> HistError {
    let HistError::Empty(what) = e else {
        return e;
    };
    let has: Vec<HistMetric> = all
        .iter()
        .filter(|b| b.metric != metric && !b.is_empty())
        .map(|b| b.metric)
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
    HistError::Missing {
        what,
        metric: metric.name(),
        hint,
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

/// Tids inside a swapoff call, as (tid, from, to) intervals: what
/// `--during` needs, from the records [`Swapoffs::reads`] keeps.
#[derive(Clone, Debug, Default)]
pub struct Swapoffs(Vec<(u32, u64, u64)>);

impl Swapoffs {
    /// The records the spans are made of: swapoff calls.
    pub fn reads(r: &Record) -> bool {
        matches!(
            r,
            Record::Syscall {
                call: Syscall::Swapoff,
                ..
            }
        )
    }

    pub fn of(records: &[Record]) -> Swapoffs {
        let mut open: HashMap<u32, u64> = HashMap::new();
        let mut spans = Vec::new();
        for r in records {
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
        Swapoffs(spans)
    }

    fn keeps(&self, during: During, tid: u32, ts: u64) -> bool {
        if during == During::All {
            return true;
        }
        let inside = self
            .0
            .iter()
            .any(|&(s, a, b)| s == tid && ts >= a && ts <= b);
        inside == (during == During::Swapoff)
    }
}

/// One metric's histogram built batch by batch: memory holds the counts
/// and an HDR histogram, not the values.
pub struct HistBuilder {
    metric: HistMetric,
    during: During,
    spans: Swapoffs,
    count: CountTable,
    log2: Log2Hist,
    pcts: Percentiles,
    /// zap-interval: each address space's last zap.
    last_zap: HashMap<u32, u64>,
}

impl HistBuilder {
    /// `spans` matter only when `during` is not `All`.
    pub fn new(metric: HistMetric, during: During, spans: &Swapoffs) -> HistBuilder {
        let expr = match metric {
            HistMetric::RaWindow => "$retval",
            _ => "pages_read",
        };
        HistBuilder {
            metric,
            during,
            spans: spans.clone(),
            count: CountTable::new(expr),
            log2: Log2Hist::new("usecs"),
            pcts: Percentiles::new(),
            last_zap: HashMap::new(),
        }
    }

    /// A builder per metric (for [`explain`]).
    pub fn all(during: During, spans: &Swapoffs) -> Vec<HistBuilder> {
        ALL_METRICS
            .into_iter()
            .map(|m| HistBuilder::new(m, during, spans))
            .collect()
    }

    pub fn metric(&self) -> HistMetric {
        self.metric
    }

    /// No event counted yet.
    pub fn is_empty(&self) -> bool {
        self.count.counts.is_empty() && self.pcts.is_empty()
    }

    /// The next records, in trace order.
    pub fn add(&mut self, records: &[Record]) {
        let HistBuilder {
            metric,
            during,
            spans,
            count,
            log2,
            pcts,
            last_zap,
        } = self;
        let keep = |tid: u32, ts: u64| spans.keeps(*during, tid, ts);
        let mut value = |v: u64| {
            log2.add(v);
            pcts.add(v);
        };
        for r in records {
            match (*metric, r) {
                (
                    HistMetric::RaWindow,
                    Record::RaWindow {
                        ts, tid, window, ..
                    },
                ) if keep(*tid, *ts) => count.add(*window as u64, 1),
                (
                    HistMetric::PagesRead,
                    Record::SwapFault {
                        ts,
                        tid,
                        major: true,
                        pages_read,
                        ..
                    },
                ) if keep(*tid, *ts) => count.add(*pages_read as u64, 1),
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
                ) if keep(*tid, *ts) => value(*dur_ns as u64 / 1000),
                // As `zap_spans`' intervals: every zap, whatever `during`.
                (HistMetric::ZapInterval, Record::Zap { ts, mm, .. }) => {
                    if let Some(last) = last_zap.insert(*mm, *ts) {
                        value(ts.saturating_sub(last) / 1000);
                    }
                }
                _ => {}
            }
        }
    }

    pub fn finish(self) -> Result<HistOut, HistError> {
        if self.is_empty() {
            return Err(HistError::Empty(match self.metric {
                HistMetric::RaWindow => names::RA_WINDOW,
                HistMetric::PagesRead => "major swap_fault",
                HistMetric::FaultLatency => names::SWAP_FAULT,
                HistMetric::FreeLatency => names::FREE_BATCH,
                HistMetric::ZapInterval => names::ZAP,
            }));
        }
        let counted = |title: &str, source| HistOut {
            title: title.into(),
            source,
            count: Some(self.count.clone()),
            log2: None,
            percentiles: Vec::new(),
            max: 0,
        };
        let (title, source) = match self.metric {
            HistMetric::RaWindow => {
                return Ok(counted(
                    RA_WINDOW_TITLE,
                    "ra_window records (swapin_nr_pages result)",
                ))
            }
            HistMetric::PagesRead => {
                return Ok(counted(
                    "pages read by I/O per major swap fault",
                    "swap_fault records (PSWPIN in the faulting task)",
                ))
            }
            HistMetric::ZapInterval => (
                "time between zap batches (a PTE table of swap entries freed)",
                "zap records (rss_stat MM_SWAPENTS outside faults)",
            ),
            HistMetric::FaultLatency => ("swap-in fault latency", "swap_fault records"),
            HistMetric::FreeLatency => (
                "free batch latency (swapcache_free_entries, or per-cluster swap_entries_free / __swap_cluster_free_entries)",
                "free_batch records",
            ),
        };
        let (percentiles, max) = self.pcts.get();
        Ok(HistOut {
            title: title.into(),
            source,
            count: None,
            log2: Some(self.log2),
            percentiles,
            max,
        })
    }
}

/// One metric of a trace held whole ([`HistBuilder`] over all its records).
pub fn histogram(t: &Loaded, metric: HistMetric, during: During) -> Result<HistOut, HistError> {
    let mut b = HistBuilder::new(metric, during, &Swapoffs::of(&t.records));
    b.add(&t.records);
    b.finish()
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
