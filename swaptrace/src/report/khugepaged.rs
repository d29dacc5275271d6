//! `replay --family khugepaged`: the recorded scans and stalls, a row per
//! policy next to a `kernel` row, the refusals, and the footprint samples.

use std::fmt::Write as _;

use serde_json::json;

use super::footprint_text;
use crate::replay::khugepaged::{KhpLive, KhpMetrics, KhpReplay, PressureSignal};

/// The text of a [`KhpReplay`]: [`khp_text`], then the footprint table.
pub fn khp_replay_text(r: &KhpReplay) -> String {
    khp_text(&r.live, &r.metrics) + &footprint_text(&r.footprint)
}

/// The JSON of a [`KhpReplay`]: [`khp_json`] with the footprint samples.
pub fn khp_replay_json(r: &KhpReplay) -> serde_json::Value {
    let mut v = khp_json(&r.live, &r.metrics);
    v["footprint"] = json!(r.footprint);
    v
}

/// Fixed-width table: one row per policy and a `kernel` row.
pub fn khp_text(live: &KhpLive, metrics: &[KhpMetrics]) -> String {
    let mut s = String::new();
    let p = &live.params;
    let _ = writeln!(
        s,
        "recorded: {} khugepaged scans ({} with swap PTEs) by {} tasks, {} inferred sleeps (gaps > {} ms)",
        live.scans, live.swap_scans, live.tasks, live.sleeps, live.sleep_gap_ms
    );
    let _ = writeln!(
        s,
        "stalls: {} direct + {} memcg reclaim begins (pressure={}); max_ptes_swap {}, scan_sleep_millisecs {}",
        live.stalls_direct,
        live.stalls_memcg,
        match p.pressure {
            PressureSignal::Direct => "direct",
            PressureSignal::Any => "any",
        },
        live.max_ptes_swap,
        live.scan_sleep_ms
    );
    let mut by: Vec<(&String, &u64)> = live.scans_by_status.iter().collect();
    by.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let by: Vec<String> = by.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let _ = writeln!(s, "scans by status: {}", by.join(", "));
    let _ = writeln!(
        s,
        "model: {} us per page + {} us per swap-in (presets unless overridden); \
         under pressure = a stall within {} ms before",
        p.page_us, p.request_us, p.pressure_window_ms
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<20} {:>9} {:>9} {:>8} {:>8} {:>10} {:>11} {:>9} {:>11}",
        "POLICY",
        "ATTEMPTS",
        "SWAP_ATT",
        "SWAPINS",
        "PMDS_IN",
        "PAGES_IN",
        "UNDER_PRESS",
        "COLLAPSES",
        "IO_MS"
    );
    for m in metrics {
        let _ = writeln!(
            s,
            "{:<20} {:>9} {:>9} {:>8} {:>8} {:>10} {:>11} {:>9} {:>11.1}",
            m.policy,
            m.attempts,
            m.swap_attempts,
            m.swapins,
            m.swapin_pmds,
            m.pages_in,
            m.pages_under_pressure,
            m.collapses,
            m.io_ms
        );
    }
    let k = &live.kernel;
    let collapses = if k.collapse_records > 0 {
        k.collapses_succeeded.to_string()
    } else {
        "-".into()
    };
    let _ = writeln!(
        s,
        "{:<20} {:>9} {:>9} {:>8} {:>8} {:>10} {:>11} {:>9} {:>11.1}",
        "kernel",
        live.scans,
        live.swap_scans,
        k.swapins,
        k.swapin_pmds,
        k.swapin_pages,
        live.pages_under_pressure,
        collapses,
        live.io_ms
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<20} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>9} {:>10}",
        "POLICY",
        "R_LIMIT",
        "R_REFD",
        "R_STALL",
        "BLOCKED",
        "TRUNC",
        "SWAPIN_FAIL",
        "SKIPPED",
        "HUGE_MIB"
    );
    for m in metrics {
        let _ = writeln!(
            s,
            "{:<20} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>9} {:>10}",
            m.policy,
            m.refused_limit,
            m.refused_referenced,
            m.refused_pressure,
            m.blocked,
            m.truncated_swapins,
            m.failed_after_swapin,
            m.rescans_skipped,
            m.huge_bytes >> 20
        );
    }
    let _ = writeln!(
        s,
        "{:<20} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>9} {:>10}",
        "kernel",
        "-",
        "-",
        "-",
        "-",
        "-",
        k.failed_after_swapin,
        "-",
        live.huge_bytes >> 20
    );
    let _ = writeln!(
        s,
        "SWAPIN_FAIL: swap-ins after which the collapse failed (the kernel comes back to the PMD); \
         PMDS_IN: PMDs swapped in (a PMD the trace does not name counts per swap-in); \
         SKIPPED: the kernel's scans of a PMD the policy had already collapsed"
    );
    if !live.notes.is_empty() {
        let _ = writeln!(s);
        for n in &live.notes {
            let _ = writeln!(s, "note: {n}");
        }
    }
    s
}

pub fn khp_json(live: &KhpLive, metrics: &[KhpMetrics]) -> serde_json::Value {
    json!({
        "live": serde_json::to_value(live).unwrap_or(serde_json::Value::Null),
        "policies": serde_json::to_value(metrics).unwrap_or(serde_json::Value::Null),
    })
}

/// The bracketed choice of a sysfs selector ("always [madvise] never").
fn selected(v: &str) -> Option<&str> {
    let a = v.find('[')?;
    let b = v[a..].find(']')? + a;
    Some(&v[a + 1..b])
}

/// Why a trace has no khugepaged scans, from the THP settings its header
/// recorded (in place of the generic "only with always or madvise").
pub fn khp_no_scans_text(t: &crate::trace::Loaded) -> String {
    let thp = &t.header.thp;
    let head = "the trace has no khugepaged scans (tracepoint huge_memory:mm_khugepaged_scan_pmd)";
    let sleep = thp
        .get("khugepaged/scan_sleep_millisecs")
        .map_or_else(String::new, |v| {
            format!(" (it sleeps scan_sleep_millisecs = {v} ms between passes)")
        });
    match thp.get("enabled").and_then(|v| selected(v)) {
        Some("never") => format!(
            "{head}: transparent_hugepage/enabled was `never` when it was recorded, so \
             khugepaged did not run; record with `always` or `madvise`"
        ),
        Some("madvise") => format!(
            "{head}, although transparent_hugepage/enabled was `madvise` when it was \
             recorded: khugepaged then scans only regions given MADV_HUGEPAGE, and it \
             scanned none of the traced tasks' memory during the recording{sleep}; or \
             the tracepoint was not attached: see `swaptrace doctor`"
        ),
        Some(mode) => format!(
            "{head}, although transparent_hugepage/enabled was `{mode}` when it was \
             recorded: khugepaged scanned none of the traced tasks' memory during the \
             recording{sleep}; or the tracepoint was not attached: see `swaptrace doctor`"
        ),
        None => format!(
            "{head}; the trace did not record the THP settings. khugepaged runs only \
             with transparent_hugepage/enabled = always or madvise, see `swaptrace doctor`"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::khugepaged::{
        replay_khugepaged, synth_khugepaged, KhpInput, KhpParams, KhpPolicy, KhpSynth,
    };
    use crate::trace::Footprint;

    #[test]
    fn khp_reports() {
        let s = KhpSynth {
            stall_period_us: 2000,
            ..KhpSynth::default()
        };
        let inp = KhpInput::from_records(&synth_khugepaged(&s), &s.header()).expect("scans");
        let params = KhpParams::default();
        let live = KhpLive::from_input(&inp, &params);
        let m = replay_khugepaged(&inp, &KhpPolicy::defaults(), &params);
        let t = khp_text(&live, &m);
        for col in [
            "ATTEMPTS",
            "SWAP_ATT",
            "SWAPINS",
            "PAGES_IN",
            "UNDER_PRESS",
            "COLLAPSES",
            "IO_MS",
            "allocstall-at-sleep",
            "kernel ",
            "presets",
        ] {
            assert!(t.contains(col), "{col} in\n{t}");
        }
        let j = khp_json(&live, &m);
        assert_eq!(j["policies"].as_array().map(|a| a.len()), Some(4));
        assert_eq!(j["policies"][0]["policy"], "always");
        assert_eq!(j["live"]["kernel"]["swapins"], live.kernel.swapins);
        assert_eq!(j["live"]["params"]["pressure"], "any");

        let footprint = vec![Footprint {
            pid: 42,
            anonymous_kib: 4096,
            anon_huge_kib: 2048,
            ..Footprint::default()
        }];
        let r = KhpReplay {
            live,
            metrics: m,
            footprint,
        };
        let rt = khp_replay_text(&r);
        assert!(rt.starts_with(&t) && rt.contains("footprint (smaps_rollup)"));
        let rj = khp_replay_json(&r);
        assert_eq!(rj["footprint"][0]["pid"], 42);
        assert_eq!(rj["policies"], j["policies"]);
        let none = KhpReplay {
            footprint: Vec::new(),
            ..r
        };
        assert_eq!(khp_replay_text(&none), t);
        assert_eq!(khp_replay_json(&none)["footprint"], json!([]));
    }
}
#[cfg(test)]
mod no_scans_tests {
    use super::*;

    #[test]
    fn no_scans_names_the_recorded_thp_mode() {
        let mut t = crate::trace::Loaded {
            header: Default::default(),
            records: Vec::new(),
            footer: None,
            problems: Vec::new(),
            skipped: 0,
            chunks: Vec::new(),
        };
        t.header
            .thp
            .insert("enabled".into(), "always [madvise] never".into());
        let m = khp_no_scans_text(&t);
        assert!(
            m.contains("was `madvise`") && m.contains("MADV_HUGEPAGE"),
            "{m}"
        );
        assert!(!m.contains("only with"), "{m}");
        t.header
            .thp
            .insert("enabled".into(), "always madvise [never]".into());
        assert!(khp_no_scans_text(&t).contains("did not run"));
        t.header.thp.clear();
        assert!(khp_no_scans_text(&t).contains("did not record the THP settings"));
    }
}
