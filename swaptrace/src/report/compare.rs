//! `swaptrace compare A B`: two traces side by side, as a patch description
//! shows them (the five threads of docs/extending.md): counter deltas with the change in %, the
//! readahead window table in argdist form, latency percentiles.

use super::metric_hist::{histogram, During, HistMetric};
use crate::trace::{Loaded, Record};
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write;

/// vmstat counters compared, with what they mean.
pub const COMPARED: &[(&str, &str)] = &[
    ("pswpin", "pages read from swap"),
    ("pswpout", "pages written to swap"),
    ("pgmajfault", "major faults"),
    ("swap_ra", "readahead pages"),
    ("swap_ra_hit", "readahead hits"),
    ("swpin_zero", "zero pages read"),
    ("zswpin", "zswap loads"),
    ("zswpout", "zswap stores"),
    ("zswpwb", "zswap writebacks"),
    ("thp_collapse_alloc", "huge page collapses"),
    ("allocstall_normal", "direct reclaim stalls"),
];

/// Latency percentiles compared, by metric name.
const LATENCIES: [(HistMetric, &str); 3] = [
    (HistMetric::FaultLatency, "fault-latency"),
    (HistMetric::FreeLatency, "free-latency"),
    (HistMetric::ZapInterval, "zap-interval"),
];

/// Every name `compare`'s `metrics` may hold.
pub fn compare_metric_names() -> Vec<&'static str> {
    let mut v = vec!["runtime"];
    v.extend(COMPARED.iter().map(|&(k, _)| k));
    v.extend(["khugepaged-swapin", "ra-window"]);
    v.extend(LATENCIES.iter().map(|&(_, n)| n));
    v
}

/// One compared figure: A, B and B's change from A in %.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    pub metric: String,
    pub what: String,
    pub a: f64,
    pub b: f64,
    pub change_pct: Option<f64>,
}

fn row(metric: &str, what: &str, a: f64, b: f64) -> Row {
    Row {
        metric: metric.into(),
        what: what.into(),
        a,
        b,
        change_pct: (a != 0.0).then(|| (b - a) * 100.0 / a),
    }
}

fn vm_delta(t: &Loaded, k: &str) -> Option<f64> {
    t.vmstat_delta(k).map(|d| d.max(0) as f64)
}

fn duration_s(t: &Loaded) -> Option<f64> {
    let end = t.footer.as_ref()?.monotonic_end_ns;
    (end > t.header.monotonic_start_ns).then(|| (end - t.header.monotonic_start_ns) as f64 / 1e9)
}

fn count(t: &Loaded, f: impl Fn(&Record) -> u64) -> f64 {
    t.records.iter().map(f).sum::<u64>() as f64
}

/// A latency's title and its (percentile, A, B) rows.
pub type LatencyRows = (String, Vec<(f64, u64, u64)>);

/// The comparison of two traces, restricted to `metrics` when not empty.
pub struct Comparison {
    pub labels: (String, String),
    pub rows: Vec<Row>,
    /// Readahead windows (value -> count) of each, when both have them.
    pub windows: Option<(BTreeMap<u64, u64>, BTreeMap<u64, u64>)>,
    /// (title, [(percentile, a, b)]) for latencies both traces have.
    pub latencies: Vec<LatencyRows>,
}

pub fn compare(a: &Loaded, b: &Loaded, labels: (String, String), metrics: &[String]) -> Comparison {
    let want = |m: &str| metrics.is_empty() || metrics.iter().any(|x| x == m);
    let mut rows = Vec::new();
    if want("runtime") {
        if let (Some(x), Some(y)) = (duration_s(a), duration_s(b)) {
            rows.push(row("runtime", "run time of the trace, s", x, y));
        }
    }
    for &(k, what) in COMPARED {
        if want(k) {
            if let (Some(x), Some(y)) = (vm_delta(a, k), vm_delta(b, k)) {
                rows.push(row(k, what, x, y));
            }
        }
    }
    let khp = |r: &Record| match r {
        Record::KhugepagedSwapin { swapped_in, .. } => *swapped_in as u64,
        _ => 0,
    };
    if want("khugepaged-swapin") && (count(a, khp) > 0.0 || count(b, khp) > 0.0) {
        rows.push(row(
            "khugepaged-swapin",
            "pages swapped in by khugepaged",
            count(a, khp),
            count(b, khp),
        ));
    }
    let windows = if want("ra-window") {
        let w = |t: &Loaded| {
            histogram(t, HistMetric::RaWindow, During::All)
                .ok()
                .and_then(|h| h.count)
                .map(|c| c.counts)
        };
        w(a).zip(w(b))
    } else {
        None
    };
    let mut latencies = Vec::new();
    for (m, name) in LATENCIES {
        if !want(name) {
            continue;
        }
        if let (Ok(x), Ok(y)) = (histogram(a, m, During::All), histogram(b, m, During::All)) {
            let p = x
                .percentiles
                .iter()
                .zip(&y.percentiles)
                .map(|(p, q)| (p.0, p.1, q.1))
                .collect();
            latencies.push((format!("{} (µs)", x.title), p));
        }
    }
    Comparison {
        labels,
        rows,
        windows,
        latencies,
    }
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

impl Comparison {
    /// Plain fixed-width text that reads well pasted into an email.
    pub fn text(&self) -> String {
        let (la, lb) = &self.labels;
        let mut o = String::new();
        let _ = writeln!(o, "{:<22} {:>14} {:>14} {:>9}", "METRIC", la, lb, "CHANGE");
        for r in &self.rows {
            let ch = r
                .change_pct
                .map_or_else(|| "-".to_string(), |c| format!("{c:+.1}%"));
            let _ = writeln!(
                o,
                "{:<22} {:>14} {:>14} {:>9}",
                r.metric,
                num(r.a),
                num(r.b),
                ch
            );
        }
        if let Some((wa, wb)) = &self.windows {
            let _ = writeln!(o, "\n{}", crate::stats::RA_WINDOW_TITLE);
            let _ = writeln!(o, "\t{:<16} {:>10} {:>10}", "EVENT", la, lb);
            let mut keys: Vec<u64> = wa.keys().chain(wb.keys()).copied().collect();
            keys.sort_unstable();
            keys.dedup();
            for k in keys {
                let _ = writeln!(
                    o,
                    "\t{:<16} {:>10} {:>10}",
                    format!("$retval = {k}"),
                    wa.get(&k).copied().unwrap_or(0),
                    wb.get(&k).copied().unwrap_or(0)
                );
            }
        }
        for (title, p) in &self.latencies {
            let _ = writeln!(o, "\n{title}");
            let _ = writeln!(o, "\t{:<8} {:>10} {:>10}", "", la, lb);
            for (q, x, y) in p {
                let name = if *q >= 100.0 {
                    "max".to_string()
                } else {
                    format!("p{q}")
                };
                let _ = writeln!(o, "\t{name:<8} {x:>10} {y:>10}");
            }
        }
        o
    }

    pub fn json(&self) -> serde_json::Value {
        json!({
            "labels": [self.labels.0, self.labels.1],
            "metrics": self.rows,
            "ra_window": self.windows.as_ref().map(|(a, b)| json!({
                "a": a.iter().map(|(v, n)| json!({"value": v, "count": n})).collect::<Vec<_>>(),
                "b": b.iter().map(|(v, n)| json!({"value": v, "count": n})).collect::<Vec<_>>(),
            })),
            "latencies": self.latencies.iter().map(|(t, p)| json!({
                "title": t,
                "percentiles": p.iter().map(|(q, a, b)| json!({"percentile": q, "a": a, "b": b})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }
}
