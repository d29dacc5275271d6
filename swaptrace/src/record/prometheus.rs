//! What `top` counts, kept as running totals and rendered in the Prometheus
//! text exposition format (version 0.0.4) or OpenMetrics 1.0.0: counters
//! `swaptrace_*_total` and histograms, labelled by host and cgroup.
//! Rendering is a pure function of [`Metrics`]; `metrics_server` serves it.

use crate::stats::CountTable;
use crate::trace::Summary;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Buckets (pages) of the readahead window and of pages read per fault:
/// powers of two up to the largest window swap_vma_readahead() reads
/// (SWAP_RA_ORDER_CEILING, 64 pages) and beyond for cluster readahead.
pub const PAGES_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];

/// Buckets (seconds) of the latency of one batch of freed swap entries.
pub const FREE_LATENCY_BUCKETS: &[f64] = &[
    1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 1e-2, 0.1,
];

/// `Content-Type` of the 0.0.4 text format.
pub const CONTENT_TYPE_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
/// `Content-Type` of OpenMetrics 1.0.0.
pub const CONTENT_TYPE_OPENMETRICS: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Which exposition format to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Prometheus text format 0.0.4.
    Text,
    /// OpenMetrics 1.0.0 (ends with `# EOF`).
    OpenMetrics,
}

impl Format {
    /// OpenMetrics when the scraper's `Accept` header asks for it.
    pub fn negotiate(accept: Option<&str>) -> Format {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Format::OpenMetrics,
            _ => Format::Text,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => CONTENT_TYPE_TEXT,
            Format::OpenMetrics => CONTENT_TYPE_OPENMETRICS,
        }
    }
}

/// A cumulative histogram with fixed upper bounds (`le`), as Prometheus has it.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    bounds: Vec<f64>,
    /// Per bucket, not cumulative; the last one is +Inf.
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    /// Bounds must rise; NaN and repeated bounds are dropped.
    pub fn new(bounds: &[f64]) -> Histogram {
        let mut b: Vec<f64> = bounds.iter().copied().filter(|x| x.is_finite()).collect();
        b.sort_by(f64::total_cmp);
        b.dedup();
        Histogram {
            counts: vec![0; b.len() + 1],
            bounds: b,
            sum: 0.0,
            count: 0,
        }
    }

    /// `n` observations of `v`.
    pub fn observe_n(&mut self, v: f64, n: u64) {
        if n == 0 || v.is_nan() {
            return;
        }
        let i = self.bounds.partition_point(|&b| b < v);
        self.counts[i] += n;
        self.sum += v * n as f64;
        self.count += n;
    }

    pub fn observe(&mut self, v: f64) {
        self.observe_n(v, 1);
    }

    /// Adds another histogram's observations; with other bounds, each of
    /// its buckets counts at its upper bound (its sum is kept exactly).
    pub fn merge(&mut self, o: &Histogram) {
        if o.bounds == self.bounds {
            for (a, b) in self.counts.iter_mut().zip(&o.counts) {
                *a += b;
            }
        } else {
            for (i, &n) in o.counts.iter().enumerate() {
                let at = o.bounds.get(i).copied().unwrap_or(f64::INFINITY);
                let j = self.bounds.partition_point(|&b| b < at);
                self.counts[j] += n;
            }
        }
        self.sum += o.sum;
        self.count += o.count;
    }

    /// Adds a table of exact values, each `scale` times its key.
    pub fn add_counts(&mut self, t: &CountTable, scale: f64) {
        for (&v, &n) in &t.counts {
            self.observe_n(v as f64 * scale, n);
        }
    }

    /// (upper bound, observations at or below it); the last is +Inf and
    /// equals `count`.
    pub fn cumulative(&self) -> Vec<(f64, u64)> {
        let mut acc = 0;
        self.counts
            .iter()
            .enumerate()
            .map(|(i, n)| {
                acc += n;
                (self.bounds.get(i).copied().unwrap_or(f64::INFINITY), acc)
            })
            .collect()
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn sum(&self) -> f64 {
        self.sum
    }
}

/// An extra label (name, value) of one sample of a counter, if any.
type Extra = Option<(&'static str, &'static str)>;

/// One counter: its name without `_total`, help, and how it is read from
/// an interval's summary.
struct CounterDef {
    name: &'static str,
    help: &'static str,
    /// (extra label, value) pairs; None: no extra label.
    values: fn(&Summary) -> Vec<(Extra, u64)>,
}

const COUNTERS: &[CounterDef] = &[
    CounterDef {
        name: "swaptrace_faults",
        help: "Swap-in page faults (do_swap_page), major and minor.",
        values: |s| vec![(None, s.faults)],
    },
    CounterDef {
        name: "swaptrace_major_faults",
        help: "Swap-in page faults that waited for a read (VM_FAULT_MAJOR).",
        values: |s| vec![(None, s.faults_major)],
    },
    CounterDef {
        name: "swaptrace_pages_read",
        help: "Pages read from swap by I/O, in faults and outside them (pswpin).",
        values: |s| vec![(None, s.pswpin())],
    },
    CounterDef {
        name: "swaptrace_swap_out_pages",
        help: "Pages swapped out, by where they went.",
        values: |s| {
            vec![
                (Some(("how", "io")), s.swap_out_io),
                (Some(("how", "zero")), s.swap_out_zero),
                (Some(("how", "zswap")), s.swap_out_zswap),
                (Some(("how", "unknown")), s.swap_out_unknown),
            ]
        },
    },
    CounterDef {
        name: "swaptrace_reclaim",
        help: "Reclaim runs begun, direct (try_to_free_pages) or memcg (try_to_free_mem_cgroup_pages).",
        values: |s| {
            vec![
                (Some(("kind", "direct")), s.reclaim_direct),
                (Some(("kind", "memcg")), s.reclaim_memcg),
            ]
        },
    },
    CounterDef {
        name: "swaptrace_khugepaged_swapins",
        help: "Swap-ins by khugepaged before a collapse (__collapse_huge_page_swapin).",
        values: |s| vec![(None, s.khugepaged_swapins)],
    },
    CounterDef {
        name: "swaptrace_zswap_stores",
        help: "Pages stored in zswap (zswap_store).",
        values: |s| vec![(None, s.zswap_stores.max(s.swap_out_zswap))],
    },
    CounterDef {
        name: "swaptrace_zswap_loads",
        help: "Pages loaded from zswap (zswap_load).",
        values: |s| vec![(None, s.zswap_loads.max(s.fault_zswap_loads))],
    },
    CounterDef {
        name: "swaptrace_zswap_writebacks",
        help: "Pages written back from zswap to the swap device.",
        values: |s| vec![(None, s.zswap_writebacks)],
    },
];

/// Running totals of every interval `top` has shown, for one host and cgroup.
#[derive(Clone, Debug)]
pub struct Metrics {
    host: String,
    cgroup: String,
    /// Per counter, per extra label value.
    counters: Vec<Vec<u64>>,
    /// Lost events by the kind of record they would have been.
    lost: BTreeMap<String, u64>,
    ra_window: Histogram,
    pages_read: Histogram,
    free_latency: Histogram,
    /// Intervals added: 0 until the probes are attached and counting.
    intervals: u64,
}

impl Metrics {
    /// Every reason in `lost_reasons` is exposed from the start, at 0.
    pub fn new<'a>(
        host: &str,
        cgroup: &str,
        lost_reasons: impl IntoIterator<Item = &'a str>,
    ) -> Metrics {
        let zero = Summary::default();
        Metrics {
            host: host.to_string(),
            cgroup: cgroup.to_string(),
            counters: COUNTERS
                .iter()
                .map(|c| vec![0; (c.values)(&zero).len()])
                .collect(),
            lost: lost_reasons
                .into_iter()
                .map(|r| (r.to_string(), 0))
                .collect(),
            ra_window: Histogram::new(PAGES_BUCKETS),
            pages_read: Histogram::new(PAGES_BUCKETS),
            free_latency: Histogram::new(FREE_LATENCY_BUCKETS),
            intervals: 0,
        }
    }

    /// One interval: its summary, readahead windows and pages read per
    /// major fault (pages), free-batch latencies (seconds) and lost events.
    pub fn add_interval(
        &mut self,
        summary: &Summary,
        ra_window: &CountTable,
        pages_read: &CountTable,
        free_latency_s: &Histogram,
        lost: &BTreeMap<String, u64>,
    ) {
        for (acc, c) in self.counters.iter_mut().zip(COUNTERS) {
            for (a, (_, v)) in acc.iter_mut().zip((c.values)(summary)) {
                *a += v;
            }
        }
        for (k, n) in lost {
            *self.lost.entry(k.clone()).or_default() += n;
        }
        self.ra_window.add_counts(ra_window, 1.0);
        self.pages_read.add_counts(pages_read, 1.0);
        self.free_latency.merge(free_latency_s);
        self.intervals += 1;
    }

    /// The exposition: HELP and TYPE for every family, then its samples.
    pub fn render(&self, format: Format) -> String {
        let om = format == Format::OpenMetrics;
        let base = [
            ("host", self.host.as_str()),
            ("cgroup", self.cgroup.as_str()),
        ];
        let mut o = String::new();
        family(
            &mut o,
            "swaptrace_intervals",
            "counter",
            "Intervals counted (0 until the probes are attached).",
            om,
        );
        sample(
            &mut o,
            "swaptrace_intervals_total",
            &base,
            &self.intervals.to_string(),
        );
        for (c, acc) in COUNTERS.iter().zip(&self.counters) {
            family(&mut o, c.name, "counter", c.help, om);
            for ((extra, _), v) in (c.values)(&Summary::default()).iter().zip(acc) {
                let mut l = base.to_vec();
                l.extend(extra.iter().copied());
                sample(&mut o, &format!("{}_total", c.name), &l, &v.to_string());
            }
        }
        family(
            &mut o,
            "swaptrace_lost_events",
            "counter",
            "Events the probes dropped (ring buffer full), by the record they would have been.",
            om,
        );
        for (reason, v) in &self.lost {
            let mut l = base.to_vec();
            l.push(("reason", reason));
            sample(&mut o, "swaptrace_lost_events_total", &l, &v.to_string());
        }
        let hists = [
            (
                "swaptrace_readahead_window_pages",
                "Swap readahead window per swap-in fault (swapin_nr_pages / last_readahead_pages), pages.",
                &self.ra_window,
            ),
            (
                "swaptrace_pages_read_per_fault",
                "Pages read by I/O per major swap-in fault.",
                &self.pages_read,
            ),
            (
                "swaptrace_free_batch_latency_seconds",
                "Latency of one batch of freed swap entries (swapcache_free_entries), seconds.",
                &self.free_latency,
            ),
        ];
        for (name, help, h) in hists {
            family(&mut o, name, "histogram", help, om);
            for (le, n) in h.cumulative() {
                let le = number(le);
                let mut l = base.to_vec();
                l.push(("le", &le));
                sample(&mut o, &format!("{name}_bucket"), &l, &n.to_string());
            }
            sample(&mut o, &format!("{name}_sum"), &base, &number(h.sum()));
            sample(
                &mut o,
                &format!("{name}_count"),
                &base,
                &h.count().to_string(),
            );
        }
        if om {
            o.push_str("# EOF\n");
        }
        o
    }
}

/// HELP and TYPE of a family. OpenMetrics names a counter family without
/// its `_total` suffix; the text format names it as its samples.
fn family(o: &mut String, name: &str, kind: &str, help: &str, om: bool) {
    let fam = if om || kind != "counter" {
        name.to_string()
    } else {
        format!("{name}_total")
    };
    let _ = writeln!(o, "# HELP {fam} {}", escape_help(help));
    let _ = writeln!(o, "# TYPE {fam} {kind}");
}

fn sample(o: &mut String, name: &str, labels: &[(&str, &str)], value: &str) {
    let l: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
        .collect();
    let _ = writeln!(o, "{name}{{{}}} {value}", l.join(","));
}

/// A label value: backslash, double quote and line feed escaped.
pub fn escape_label(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

/// HELP text: backslash and line feed escaped.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A float as Prometheus writes it: `+Inf`, `-Inf`, `NaN`, else Rust's
/// shortest round-trip form.
fn number(v: f64) -> String {
    if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else if v.is_nan() {
        "NaN".into()
    } else {
        format!("{v}")
    }
}

/// This host's name (`/proc/sys/kernel/hostname`), "unknown" if unreadable.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests;
