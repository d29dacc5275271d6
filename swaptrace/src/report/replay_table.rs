//! The readahead policy comparison table of `swaptrace replay`, as the patch threads print theirs.

use crate::replay::{CostSource, DeviceModel, IoCost, Metrics};
use crate::trace::Loaded;
use serde_json::json;
use std::fmt::Write;

/// The recording kernel's own counters over the trace.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct KernelCounts {
    pub pswpin: i64,
    pub pgmajfault: i64,
    pub swap_ra: i64,
    pub swap_ra_hit: i64,
}

/// None for traces without vmstat figures (synthetic, or cut short).
pub fn kernel_counts(t: &Loaded) -> Option<KernelCounts> {
    let f = t.footer.as_ref()?;
    if t.header.vmstat_start.is_empty() || f.vmstat_end.is_empty() {
        return None;
    }
    let d = |k: &str| t.vmstat_delta(k).unwrap_or(0);
    Some(KernelCounts {
        pswpin: d("pswpin"),
        pgmajfault: d("pgmajfault"),
        swap_ra: d("swap_ra"),
        swap_ra_hit: d("swap_ra_hit"),
    })
}

fn err(model: u64, kernel: i64) -> Option<f64> {
    (kernel > 0).then(|| (model as f64 - kernel as f64) * 100.0 / kernel as f64)
}

/// Per counter, the replayed value's error against the kernel's, in %.
pub fn fidelity(m: &Metrics, k: &KernelCounts) -> [(&'static str, u64, i64, Option<f64>); 4] {
    [
        ("pswpin", m.pswpin, k.pswpin, err(m.pswpin, k.pswpin)),
        (
            "pgmajfault",
            m.pgmajfault,
            k.pgmajfault,
            err(m.pgmajfault, k.pgmajfault),
        ),
        ("swap_ra", m.swap_ra, k.swap_ra, err(m.swap_ra, k.swap_ra)),
        (
            "swap_ra_hit",
            m.swap_ra_hit,
            k.swap_ra_hit,
            err(m.swap_ra_hit, k.swap_ra_hit),
        ),
    ]
}

/// A replayed policy's windows: all, during swapoff, or outside it.
pub fn replayed_windows(
    m: &Metrics,
    during: super::During,
) -> std::collections::BTreeMap<u64, u64> {
    let so = m.swapoff.as_ref().map(|s| &s.windows);
    m.windows
        .iter()
        .map(|(&w, &n)| {
            let inside = so.and_then(|s| s.get(&w)).copied().unwrap_or(0);
            let n = match during {
                super::During::All => n,
                super::During::Swapoff => inside,
                super::During::NotSwapoff => n - inside,
            };
            (w as u64, n)
        })
        .filter(|&(_, n)| n > 0)
        .collect()
}

/// The most frequent window (the larger one on a tie).
pub fn mode<W: Copy + Ord>(windows: &std::collections::BTreeMap<W, u64>) -> Option<W> {
    windows
        .iter()
        .max_by_key(|&(w, n)| (*n, *w))
        .map(|(&w, _)| w)
}

pub fn replay_text(
    results: &[Metrics],
    kernel: Option<&KernelCounts>,
    kernel_policy: &str,
    device: &DeviceModel,
    cost: &IoCost,
) -> String {
    let width = results
        .iter()
        .map(|m| m.policy.len())
        .chain([14, kernel_policy.len() + 8])
        .max()
        .unwrap_or(14);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<width$} {:>9} {:>10} {:>9} {:>11} {:>8} {:>8} {:>9} {:>9} {:>11}",
        "POLICY",
        "PSWPIN",
        "PGMAJFAULT",
        "SWAP_RA",
        "SWAP_RA_HIT",
        "ACCURACY",
        "COVERAGE",
        "POLLUTION",
        "IO_REQS",
        "MODEL_IO_MS"
    );
    if let Some(k) = kernel {
        let _ = writeln!(
            o,
            "{:<width$} {:>9} {:>10} {:>9} {:>11} {:>8} {:>8} {:>9} {:>9} {:>11}",
            format!("kernel({kernel_policy})"),
            k.pswpin,
            k.pgmajfault,
            k.swap_ra,
            k.swap_ra_hit,
            "-",
            "-",
            "-",
            "-",
            "-"
        );
    }
    for m in results {
        let _ = writeln!(
            o,
            "{:<width$} {:>9} {:>10} {:>9} {:>11} {:>7.1}% {:>7.1}% {:>9} {:>9} {:>11.1}",
            m.policy,
            m.pswpin,
            m.pgmajfault,
            m.swap_ra,
            m.swap_ra_hit,
            m.accuracy() * 100.0,
            m.coverage() * 100.0,
            m.pollution,
            m.io_requests,
            device.time_ms(m.io_requests, m.pswpin)
        );
    }
    o += &io_model_text(results, kernel_policy, device, cost);
    if results.iter().any(|m| m.swapoff.is_some()) {
        let _ = writeln!(o, "\nswapoff (try_to_unuse):");
        let _ = writeln!(
            o,
            "{:<width$} {:>9} {:>9} {:>9} {:>11} {:>9} {:>8} {:>9} {:>11}",
            "POLICY",
            "PTES",
            "PSWPIN",
            "SWAP_RA",
            "SWAP_RA_HIT",
            "WINDOWS",
            "MODE",
            "IO_REQS",
            "MODEL_IO_MS"
        );
        for m in results {
            let Some(s) = &m.swapoff else { continue };
            let _ = writeln!(
                o,
                "{:<width$} {:>9} {:>9} {:>9} {:>11} {:>9} {:>8} {:>9} {:>11.1}",
                m.policy,
                s.ptes,
                s.pswpin,
                s.swap_ra,
                s.swap_ra_hit,
                s.windows.values().sum::<u64>(),
                mode(&s.windows)
                    .map(|w| w.to_string())
                    .unwrap_or_else(|| "-".into()),
                s.io_requests,
                device.time_ms(s.io_requests, s.pswpin)
            );
        }
        // A window chosen but nothing read ahead: say why rather than let
        // MODE 8 beside SWAP_RA 0 read as a bug.
        let idle: Vec<&str> = results
            .iter()
            .filter(|m| {
                m.swapoff
                    .as_ref()
                    .is_some_and(|s| s.swap_ra == 0 && mode(&s.windows).is_some_and(|w| w > 1))
            })
            .map(|m| m.policy.as_str())
            .collect();
        if !idle.is_empty() {
            let _ = writeln!(
                o,
                "MODE is the window a policy allowed, SWAP_RA the pages it read ahead. {} \
                 allowed a window but read none ahead: the oracle reads only pages a \
                 later fault wants, and swapoff's reads are not faults.",
                idle.join(", ")
            );
        }
    }
    if let Some(note) = layout_note(results) {
        let _ = writeln!(o, "\n{note}");
    }
    if let (Some(k), Some(m)) = (kernel, results.iter().find(|m| m.policy == kernel_policy)) {
        let _ = writeln!(
            o,
            "\nfidelity of `{kernel_policy}` (the policy the kernel ran):"
        );
        for (name, model, kern, e) in fidelity(m, k) {
            let e = e.map(|e| format!("{e:+.2}%")).unwrap_or_else(|| "-".into());
            let _ = writeln!(
                o,
                "  {name:<12} replayed {model:>9}  kernel {kern:>9}  error {e}"
            );
        }
    }
    o
}

/// The share of faults from which a trace's layout is noted as the
/// recorded run's ([`layout_note`]).
pub(super) const LAYOUT_SHARE: f64 = 0.01;

/// Read faults whose slot the kernel freed, and their share of all faults
/// (the most any policy's replay saw: they follow the same trace).
pub(super) fn freed_at_read(results: &[Metrics]) -> Option<(u64, f64)> {
    let m = results.iter().max_by_key(|m| m.slots_freed_at_read)?;
    let share = m.slots_freed_at_read as f64 / m.faults.max(1) as f64;
    Some((m.slots_freed_at_read, share))
}

/// Where the kernel freed the slots of 1% of the faults or more, the swap
/// layout is the recorded run's own: say so before a policy that reads by
/// swap offset is compared on it.
fn layout_note(results: &[Metrics]) -> Option<String> {
    let (n, share) = freed_at_read(results).filter(|&(_, s)| s >= LAYOUT_SHARE)?;
    Some(format!(
        "swap layout: the kernel freed the slot of {n} read faults ({:.1}% of faults; \
         should_try_to_free_swap(): swap more than half full, or mlock), and reclaim \
         wrote those pages again in the recorded run's order. Policies that read by \
         swap offset (cluster, fixed:N, leap) replay on that layout, where a run of \
         their own would have made another: predictions of them from another policy's \
         trace are less sure (docs/fidelity.md: cluster from VMA traces +11% pswpin).",
        share * 100.0
    ))
}

pub fn replay_json(
    results: &[Metrics],
    kernel: Option<&KernelCounts>,
    kernel_policy: &str,
    device: &DeviceModel,
    cost: &IoCost,
) -> serde_json::Value {
    json!({
        "kernel_policy": kernel_policy,
        "kernel": kernel,
        "device": device,
        "io_model": cost,
        "slots_freed_at_read": freed_at_read(results).map(|(n, share)| json!({
            "faults": n,
            "share": share,
            "note": layout_note(results),
        })),
        "policies": results.iter().map(|m| json!({
            "metrics": m,
            "accuracy": m.accuracy(),
            "coverage": m.coverage(),
            "timeliness_us": m.timeliness_us(),
            "io_ms": device.time_ms(m.io_requests, m.pswpin),
            "swapoff_io_ms": m.swapoff.as_ref().map(|s| device.time_ms(s.io_requests, s.pswpin)),
            "fidelity": kernel.filter(|_| m.policy == kernel_policy).map(|k| fidelity(m, k)
                .iter().map(|(n, a, b, e)| json!({"counter": n, "replayed": a, "kernel": b, "error_pct": e}))
                .collect::<Vec<_>>()),
        })).collect::<Vec<_>>(),
    })
}

/// A time in ms, to 4 decimals below 1 ms.
fn ms(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

/// The lines under the table: where MODEL_IO_MS's figures come from, and
/// what the recorded faults took, so the model is read beside a measurement.
pub fn io_model_text(
    results: &[Metrics],
    kernel_policy: &str,
    device: &DeviceModel,
    cost: &IoCost,
) -> String {
    let per =
        |req: f64, page: f64| format!("{} ms per request + {} ms per page", ms(req), ms(page));
    let mut line = per(device.request_us / 1000.0, device.page_us / 1000.0);
    if cost.overridden {
        line += ", as --param request-us/page-us set them";
    }
    let what = match &cost.model {
        CostSource::Fit(f) => {
            let fit = format!(
                "{} faults in {} read sizes, R² {}, median |residual| {} ms",
                f.faults,
                f.sizes,
                f.r2.map(|r| format!("{r:.3}"))
                    .unwrap_or_else(|| "-".into()),
                ms(f.residual_ms)
            );
            let fit = if cost.overridden {
                format!("{}; {fit}", per(f.request_ms, f.page_ms))
            } else {
                fit
            };
            format!(
                "fitted to this trace's major faults (median duration per read size, least \
                 squares): {line} (fit: {fit}; --device picks a preset instead)"
            )
        }
        CostSource::Preset => format!(
            "the `{}` preset's round figures: {line} (without --device: a fit to this \
             trace's major faults)",
            device.name
        ),
        CostSource::Fallback { why } => format!(
            "the `{}` preset's round figures: {line}. No fit to this trace's faults: {why}",
            device.name
        ),
    };
    let m = &cost.measured;
    let span = m
        .trace_ms
        .map(|t| format!(" in a {:.2} s trace", t / 1000.0))
        .unwrap_or_default();
    let kernel = results
        .iter()
        .find(|r| r.policy == kernel_policy)
        .map(|r| {
            format!(
                "; `{kernel_policy}` (the kernel's policy) models {} ms",
                ms(device.time_ms(r.io_requests, r.pswpin))
            )
        })
        .unwrap_or_default();
    format!(
        "MODEL_IO_MS: a model, not a measurement: {what}\n\
         measured: {} major faults took {} ms in all (sum of their durations; \
         threads overlap){span}{kernel}\n",
        m.major_faults,
        ms(m.major_fault_ms)
    )
}

/// Where a column of windows comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Recorded by an exact probe (`swapin_nr_pages()` return).
    Live,
    /// Derived from tracepoints: the pages read per major fault, i.e. the
    /// window less the pages already cached.
    LiveDerived,
    /// A policy replayed over the trace's faults: a model.
    Replayed,
}

/// One column of `hist --metric ra-window --policy`.
pub struct WindowColumn {
    pub name: String,
    pub origin: Origin,
    pub counts: std::collections::BTreeMap<u64, u64>,
}

/// Window histograms of several sources (live, policies) side by side,
/// argdist style: one row per window, one column per source, and a line
/// saying which columns are live and which are replayed.
pub fn window_columns_text(cols: &[WindowColumn]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{}", crate::stats::RA_WINDOW_TITLE);
    let mut values: Vec<u64> = cols.iter().flat_map(|c| c.counts.keys().copied()).collect();
    values.sort_unstable();
    values.dedup();
    let w = cols
        .iter()
        .map(|c| c.name.len())
        .chain([12])
        .max()
        .unwrap_or(12);
    let _ = write!(o, "\t{:<16}", "EVENT");
    for c in cols {
        let _ = write!(o, " {:>w$}", c.name);
    }
    let _ = writeln!(o);
    for v in values {
        let _ = write!(o, "\t{:<16}", format!("$retval = {v}"));
        for c in cols {
            let _ = write!(o, " {:>w$}", c.counts.get(&v).copied().unwrap_or(0));
        }
        let _ = writeln!(o);
    }
    let _ = write!(o, "\t{:<16}", "total");
    for c in cols {
        let _ = write!(o, " {:>w$}", c.counts.values().sum::<u64>());
    }
    let _ = writeln!(o);
    let names = |f: &dyn Fn(Origin) -> bool| {
        let v: Vec<&str> = cols
            .iter()
            .filter(|c| f(c.origin))
            .map(|c| c.name.as_str())
            .collect();
        v.join(", ")
    };
    let live = match cols.iter().find(|c| c.origin != Origin::Replayed) {
        Some(c) if c.origin == Origin::Live => format!("{} (exact probe)", c.name),
        Some(c) => format!("{} (pages read per major fault, from tracepoints)", c.name),
        None => "none (the trace has neither windows nor major faults)".into(),
    };
    let replayed = names(&|o| o == Origin::Replayed);
    let replayed = if replayed.is_empty() {
        "none".into()
    } else {
        format!("{replayed} (models run over this trace)")
    };
    let _ = writeln!(o, "live: {live}; replayed: {replayed}");
    o
}

pub fn window_columns_json(cols: &[WindowColumn]) -> serde_json::Value {
    json!({
        "title": "swapin_nr_pages() return",
        "sources": cols.iter().map(|c| json!({
            "source": c.name,
            "counts": c.counts.iter().map(|(v, n)| json!({"value": v, "count": n})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, origin: Origin) -> WindowColumn {
        WindowColumn {
            name: name.into(),
            origin,
            counts: [(1, 2), (8, 3)].into_iter().collect(),
        }
    }

    #[test]
    fn window_columns_say_which_are_live_and_which_replayed() {
        let t = window_columns_text(&[col("live", Origin::Live), col("cluster", Origin::Replayed)]);
        assert!(
            t.ends_with(
                "live: live (exact probe); replayed: cluster (models run over this trace)\n"
            ),
            "{t}"
        );
        let t = window_columns_text(&[
            col("pages-read", Origin::LiveDerived),
            col("cluster", Origin::Replayed),
            col("a-very-long-policy-name", Origin::Replayed),
        ]);
        assert!(
            t.contains("live: pages-read (pages read per major fault"),
            "{t}"
        );
        assert!(
            t.contains("replayed: cluster, a-very-long-policy-name"),
            "{t}"
        );
        // A long name widens every column: the header and rows line up.
        let lens: Vec<usize> = t.lines().skip(1).take(4).map(str::len).collect();
        assert!(lens.windows(2).all(|w| w[0] == w[1]), "{t}");
        let t = window_columns_text(&[col("vma", Origin::Replayed)]);
        assert!(t.contains("live: none"), "{t}");
    }

    /// The layout note appears from 1% of faults on, with the most any
    /// policy saw, in the table and the JSON.
    #[test]
    fn a_layout_the_recorded_run_made_is_noted_from_1_percent() {
        let m = |policy: &str, freed| Metrics {
            policy: policy.into(),
            faults: 1000,
            slots_freed_at_read: freed,
            ..Metrics::default()
        };
        let dev = crate::replay::DEVICES[0];
        let cost = IoCost {
            model: CostSource::Preset,
            overridden: false,
            measured: Default::default(),
        };
        let text = |r: &[Metrics]| replay_text(r, None, "vma", &dev, &cost);
        assert!(!text(&[m("vma", 9), m("cluster", 8)]).contains("swap layout"));
        let t = text(&[m("vma", 12), m("cluster", 10)]);
        assert!(
            t.contains("freed the slot of 12 read faults (1.2% of faults"),
            "{t}"
        );
        let j = replay_json(&[m("vma", 12)], None, "vma", &dev, &cost);
        assert_eq!(j["slots_freed_at_read"]["faults"], 12);
        assert!(j["slots_freed_at_read"]["note"].is_string());
        let j = replay_json(&[m("vma", 9)], None, "vma", &dev, &cost);
        assert!(j["slots_freed_at_read"]["note"].is_null());
    }
}
