//! `swaptrace compare A B` (or `A1 A2 … -- B1 B2 …`): two traces, or two
//! groups of repeated runs, side by side as a patch description shows them
//! (the five threads of docs/extending.md): the knobs that differ, counter
//! deltas with the change in % (mean ± stddev over runs, as `perf stat -r`
//! prints), the readahead window table in argdist form, latency percentiles.

use super::metric_hist::{During, HistBuilder, HistMetric, HistOut, Swapoffs};
use crate::stats::Percentiles;
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

/// Latency percentiles compared, by metric name. fault-latency is split
/// into major faults and swap-cache hits (minor faults), whose costs differ
/// by orders of magnitude.
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

/// One compared figure: the mean of A's and of B's runs, their sample
/// standard deviations (None for a single run), and B's change from A in %
/// with its spread (the two relative deviations added in quadrature).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    pub metric: String,
    pub what: String,
    /// "s" for runtime, empty for counts.
    pub unit: &'static str,
    pub a: f64,
    pub b: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a_stddev: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_stddev: Option<f64>,
    pub change_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_spread_pct: Option<f64>,
}

/// Mean and sample standard deviation (None below two values).
pub(crate) fn mean_sd(v: &[f64]) -> (f64, Option<f64>) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n.max(1.0);
    let sd = (v.len() > 1)
        .then(|| (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt());
    (mean, sd)
}

fn row(metric: &str, what: &str, unit: &'static str, xs: &[f64], ys: &[f64]) -> Row {
    let ((a, a_sd), (b, b_sd)) = (mean_sd(xs), mean_sd(ys));
    let change_pct = (a != 0.0).then(|| (b - a) * 100.0 / a);
    let change_spread_pct = match (a_sd, b_sd) {
        (None, None) => None,
        _ if a == 0.0 || b == 0.0 => None,
        _ => {
            let ra = a_sd.unwrap_or(0.0) / a;
            let rb = b_sd.unwrap_or(0.0) / b;
            Some((b / a).abs() * (ra * ra + rb * rb).sqrt() * 100.0)
        }
    };
    Row {
        metric: metric.into(),
        what: what.into(),
        unit,
        a,
        b,
        a_stddev: a_sd,
        b_stddev: b_sd,
        change_pct,
        change_spread_pct,
    }
}

fn vm_delta(t: &Loaded, k: &str) -> Option<f64> {
    t.vmstat_delta(k).map(|d| d.max(0) as f64)
}

fn duration_s(t: &Loaded) -> Option<f64> {
    let end = t.footer.as_ref()?.monotonic_end_ns;
    (end > t.header.monotonic_start_ns).then(|| (end - t.header.monotonic_start_ns) as f64 / 1e9)
}

/// A latency's title and its (percentile, A, B) rows.
pub type LatencyRows = (String, Vec<(f64, u64, u64)>);

/// A recording setting of each side: (knob, A, B). With repeated runs a
/// side whose runs disagree shows every value, joined by " | ".
pub type Knob = (String, String, String);

/// The comparison of two traces (or groups of runs), restricted to
/// `metrics` when not empty.
pub struct Comparison {
    pub labels: (String, String),
    /// Runs on each side.
    pub runs: (usize, usize),
    pub knobs: Vec<Knob>,
    pub rows: Vec<Row>,
    /// Readahead windows (value -> count, summed over the runs) of each,
    /// when both have them, and where they come from.
    pub windows: Option<(BTreeMap<u64, u64>, BTreeMap<u64, u64>)>,
    pub windows_source: String,
    /// (title, [(percentile, a, b)]) for latencies both sides have, the
    /// runs of a side pooled.
    pub latencies: Vec<LatencyRows>,
}

/// Reads one knob of a trace.
type Getter = Box<dyn Fn(&Loaded) -> String>;

/// One text row: metric, A, B, change.
type Cells = (String, String, String, String);

/// The knobs a reader needs to trust an A/B: readahead, swap devices and
/// the memory limit replay and the kernel worked under.
fn knobs(a: &[&Loaded], b: &[&Loaded]) -> Vec<Knob> {
    let side = |ts: &[&Loaded], f: &dyn Fn(&Loaded) -> String| {
        let mut v: Vec<String> = Vec::new();
        for x in ts.iter().map(|t| f(t)) {
            if !v.contains(&x) {
                v.push(x);
            }
        }
        v.join(" | ")
    };
    let opt = |v: Option<String>| v.unwrap_or_else(|| "?".into());
    let getters: [(&str, Getter); 5] = [
        ("kernel", Box::new(|t| t.header.kernel_release.clone())),
        (
            "page-cluster",
            Box::new(move |t| opt(t.header.readahead.page_cluster.map(|v| v.to_string()))),
        ),
        (
            "vma_ra_enabled",
            Box::new(move |t| opt(t.header.readahead.vma_ra_enabled.map(|v| v.to_string()))),
        ),
        (
            "swap devices",
            Box::new(|t| {
                let v: Vec<String> = t
                    .header
                    .swap_devices
                    .iter()
                    .map(|d| {
                        let rot = match d.rotational {
                            Some(true) => ", rotational",
                            Some(false) => ", non-rotational",
                            None => "",
                        };
                        let sync = if d.synchronous == Some(true) {
                            ", synchronous"
                        } else {
                            ""
                        };
                        format!("{} ({} MiB{rot}{sync})", d.path.display(), d.size_kib >> 10)
                    })
                    .collect();
                if v.is_empty() {
                    "none".into()
                } else {
                    v.join(", ")
                }
            }),
        ),
        (
            "memory limit",
            Box::new(|t| match t.header.memory_limit_bytes {
                Some(b) => format!("{} MiB", b >> 20),
                None => "none".into(),
            }),
        ),
    ];
    getters
        .iter()
        .map(|(k, f)| (k.to_string(), side(a, f), side(b, f)))
        .collect()
}

/// The metrics whose histograms `compare` reads.
const HISTS: [HistMetric; 4] = [
    HistMetric::RaWindow,
    HistMetric::PagesRead,
    HistMetric::FreeLatency,
    HistMetric::ZapInterval,
];

/// What `compare` reads of one trace's records, built batch by batch
/// (memory does not grow with the trace).
pub struct CompareBuilder {
    khp_swapins: u64,
    hists: Vec<HistBuilder>,
    /// Swap fault latencies (µs): major faults, swap-cache hits.
    faults: [Percentiles; 2],
}

impl Default for CompareBuilder {
    fn default() -> Self {
        let none = Swapoffs::default();
        CompareBuilder {
            khp_swapins: 0,
            hists: HISTS
                .into_iter()
                .map(|m| HistBuilder::new(m, During::All, &none))
                .collect(),
            faults: Default::default(),
        }
    }
}

impl CompareBuilder {
    /// The next records, in trace order.
    pub fn add(&mut self, records: &[Record]) {
        for b in &mut self.hists {
            b.add(records);
        }
        for r in records {
            match r {
                Record::KhugepagedSwapin { swapped_in, .. } => {
                    self.khp_swapins += *swapped_in as u64
                }
                Record::SwapFault { dur_ns, major, .. } => {
                    self.faults[usize::from(!*major)].add(u64::from(*dur_ns) / 1000)
                }
                _ => {}
            }
        }
    }

    /// `t`: the trace's header and footer (its records are not read).
    pub fn finish(self, t: Loaded) -> CompareInput {
        CompareInput {
            t,
            khp_swapins: self.khp_swapins,
            hists: self
                .hists
                .into_iter()
                .map(|b| (b.metric(), b.finish().ok()))
                .collect(),
            faults: self.faults,
        }
    }
}

/// One trace as `compare` reads it ([`CompareBuilder`]).
pub struct CompareInput {
    /// Header and footer; records are not kept.
    pub t: Loaded,
    khp_swapins: u64,
    hists: Vec<(HistMetric, Option<HistOut>)>,
    faults: [Percentiles; 2],
}

impl CompareInput {
    /// A trace held whole.
    pub fn of(t: &Loaded) -> CompareInput {
        let mut b = CompareBuilder::default();
        b.add(&t.records);
        b.finish(Loaded {
            header: t.header.clone(),
            records: Vec::new(),
            footer: t.footer.clone(),
            problems: Vec::new(),
            skipped: t.skipped,
            chunks: Vec::new(),
        })
    }

    fn hist(&self, m: HistMetric) -> Option<&HistOut> {
        self.hists.iter().find(|h| h.0 == m)?.1.as_ref()
    }
}

/// Two traces held whole.
pub fn compare(a: &Loaded, b: &Loaded, labels: (String, String), metrics: &[String]) -> Comparison {
    let (a, b) = (CompareInput::of(a), CompareInput::of(b));
    compare_runs(&[&a], &[&b], labels, metrics)
}

/// `compare` over repeated runs: counters as mean ± stddev per side.
pub fn compare_runs(
    a: &[&CompareInput],
    b: &[&CompareInput],
    labels: (String, String),
    metrics: &[String],
) -> Comparison {
    let want = |m: &str| metrics.is_empty() || metrics.iter().any(|x| x == m);
    let all = |ts: &[&CompareInput], f: &dyn Fn(&Loaded) -> Option<f64>| -> Option<Vec<f64>> {
        ts.iter().map(|t| f(&t.t)).collect()
    };
    let mut rows = Vec::new();
    if want("runtime") {
        if let (Some(x), Some(y)) = (all(a, &duration_s), all(b, &duration_s)) {
            rows.push(row("runtime", "run time of the trace", "s", &x, &y));
        }
    }
    for &(k, what) in COMPARED {
        if want(k) {
            let f = |t: &Loaded| vm_delta(t, k);
            if let (Some(x), Some(y)) = (all(a, &f), all(b, &f)) {
                rows.push(row(k, what, "", &x, &y));
            }
        }
    }
    let khp =
        |ts: &[&CompareInput]| -> Vec<f64> { ts.iter().map(|t| t.khp_swapins as f64).collect() };
    if want("khugepaged-swapin") {
        let (x, y) = (khp(a), khp(b));
        if x.iter().chain(&y).any(|&v| v > 0.0) {
            rows.push(row(
                "khugepaged-swapin",
                "pages swapped in by khugepaged",
                "",
                &x,
                &y,
            ));
        }
    }
    // The live window: probed swapin_nr_pages() returns, else (tracepoint
    // traces) the pages read per major fault.
    let mut windows_source = String::new();
    let windows = if want("ra-window") {
        let sum = |ts: &[&CompareInput], m| -> Option<BTreeMap<u64, u64>> {
            let mut out: BTreeMap<u64, u64> = BTreeMap::new();
            for t in ts {
                let c = t.hist(m)?.count.as_ref()?;
                for (k, v) in &c.counts {
                    *out.entry(*k).or_default() += v;
                }
            }
            Some(out)
        };
        let probed = sum(a, HistMetric::RaWindow).zip(sum(b, HistMetric::RaWindow));
        if probed.is_some() {
            windows_source = "live: swapin_nr_pages() return, probed".into();
            probed
        } else {
            windows_source = "live: pages read per major fault (tracepoints)".into();
            sum(a, HistMetric::PagesRead).zip(sum(b, HistMetric::PagesRead))
        }
    } else {
        None
    };
    // A side's runs pooled.
    let pooled = |ts: &[&CompareInput], i: usize| -> Percentiles {
        let mut p = Percentiles::new();
        for t in ts {
            p.merge(&t.faults[i]);
        }
        p
    };
    let mut latencies = Vec::new();
    for (m, name) in LATENCIES {
        if !want(name) {
            continue;
        }
        if m == HistMetric::FaultLatency {
            for (i, what) in [(0, "major faults"), (1, "swap-cache hits (minor faults)")] {
                let (x, y) = (pooled(a, i), pooled(b, i));
                if !x.is_empty() && !y.is_empty() {
                    let ((p, _), (q, _)) = (x.get(), y.get());
                    let rows = p.iter().zip(&q).map(|(p, q)| (p.0, p.1, q.1)).collect();
                    latencies.push((format!("swap-in fault latency, {what} (µs)"), rows));
                }
            }
            continue;
        }
        // Each run's percentiles, averaged over a side's runs.
        let side = |ts: &[&CompareInput]| -> Option<(String, Vec<(f64, u64)>)> {
            let hs: Vec<&HistOut> = ts.iter().map(|t| t.hist(m)).collect::<Option<_>>()?;
            let first = hs.first()?;
            let p = first
                .percentiles
                .iter()
                .enumerate()
                .map(|(i, &(q, _))| {
                    let sum: u64 = hs
                        .iter()
                        .filter_map(|h| h.percentiles.get(i))
                        .map(|p| p.1)
                        .sum();
                    (q, sum / hs.len() as u64)
                })
                .collect();
            Some((first.title.clone(), p))
        };
        if let (Some((title, x)), Some((_, y))) = (side(a), side(b)) {
            let runs = if a.len() > 1 || b.len() > 1 {
                ", mean of the runs' percentiles"
            } else {
                ""
            };
            let p = x.iter().zip(&y).map(|(p, q)| (p.0, p.1, q.1)).collect();
            latencies.push((format!("{title} (µs{runs})"), p));
        }
    }
    Comparison {
        labels,
        runs: (a.len(), b.len()),
        knobs: knobs(
            &a.iter().map(|t| &t.t).collect::<Vec<_>>(),
            &b.iter().map(|t| &t.t).collect::<Vec<_>>(),
        ),
        rows,
        windows,
        windows_source,
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

/// A mean with its stddev, "1234 ± 5.6" (the mean alone for one run).
fn mean_text(v: f64, sd: Option<f64>) -> String {
    match sd {
        Some(sd) => format!("{} ± {}", num(v), num((sd * 100.0).round() / 100.0)),
        None => num(v),
    }
}

impl Comparison {
    /// Plain fixed-width text that reads well pasted into an email.
    pub fn text(&self) -> String {
        let (la, lb) = &self.labels;
        let mut o = String::new();
        let repeated = self.runs.0 > 1 || self.runs.1 > 1;
        if repeated {
            let _ = writeln!(
                o,
                "runs: {la} {}, {lb} {}; figures are mean ± sample stddev, \
                 the change's spread adds both relative stddevs in quadrature\n",
                self.runs.0, self.runs.1
            );
        }
        // The knobs, those that differ marked.
        let kw = self
            .knobs
            .iter()
            .map(|k| k.1.len())
            .chain([la.len()])
            .max()
            .unwrap_or(0);
        let _ = writeln!(o, "  {:<16} {:<kw$}  {}", "KNOB", la, lb);
        let mut differ = false;
        for (k, x, y) in &self.knobs {
            let mark = if x != y { '*' } else { ' ' };
            differ |= x != y;
            let _ = writeln!(o, "{mark} {k:<16} {x:<kw$}  {y}");
        }
        if differ {
            let _ = writeln!(o, "(* differs between {la} and {lb})");
        }
        let _ = writeln!(o);
        let cells: Vec<Cells> = self
            .rows
            .iter()
            .map(|r| {
                let name = if r.unit.is_empty() {
                    r.metric.clone()
                } else {
                    format!("{} ({})", r.metric, r.unit)
                };
                let ch = match (r.change_pct, r.change_spread_pct) {
                    (Some(c), Some(sp)) => format!("{c:+.1}% ± {sp:.1}%"),
                    (Some(c), None) => format!("{c:+.1}%"),
                    _ => "-".to_string(),
                };
                (
                    name,
                    mean_text(r.a, r.a_stddev),
                    mean_text(r.b, r.b_stddev),
                    ch,
                )
            })
            .collect();
        let w = |f: &dyn Fn(&Cells) -> usize, min: usize| {
            cells.iter().map(f).max().unwrap_or(0).max(min)
        };
        let (w0, w1, w2, w3) = (
            w(&|c| c.0.len(), 22),
            w(&|c| c.1.chars().count(), la.len().max(14)),
            w(&|c| c.2.chars().count(), lb.len().max(14)),
            w(&|c| c.3.chars().count(), 9),
        );
        let _ = writeln!(
            o,
            "{:<w0$} {:>w1$} {:>w2$} {:>w3$}",
            "METRIC", la, lb, "CHANGE"
        );
        for (n, a, b, c) in &cells {
            let _ = writeln!(o, "{n:<w0$} {a:>w1$} {b:>w2$} {c:>w3$}");
        }
        if let Some((wa, wb)) = &self.windows {
            let _ = writeln!(o, "\n{}", crate::stats::RA_WINDOW_TITLE);
            let _ = writeln!(o, "  ({})", self.windows_source);
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
            "runs": [self.runs.0, self.runs.1],
            "knobs": self.knobs.iter().map(|(k, a, b)| json!({
                "knob": k, "a": a, "b": b, "differs": a != b,
            })).collect::<Vec<_>>(),
            "metrics": self.rows,
            "ra_window": self.windows.as_ref().map(|(a, b)| json!({
                "source": self.windows_source,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_spread_as_perf_stat_prints_them() {
        let (m, sd) = mean_sd(&[1.0, 2.0, 3.0]);
        assert_eq!(m, 2.0);
        assert_eq!(sd, Some(1.0));
        assert_eq!(mean_sd(&[5.0]).1, None);
        let r = row("x", "", "", &[10.0, 10.0], &[20.0, 20.0]);
        assert_eq!(r.change_pct, Some(100.0));
        assert_eq!(r.change_spread_pct, Some(0.0));
        let r = row("x", "", "", &[9.0, 11.0], &[10.0]);
        // A's relative sd is sqrt(2)/10; B has none: spread = 1.0 × 14.14%.
        let sp = r.change_spread_pct.unwrap_or(0.0);
        assert!((sp - 14.142).abs() < 0.01, "{sp}");
    }
}
