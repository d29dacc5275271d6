//! `swaptrace doctor`: per metric, the backend and attach point this kernel
//! allows, or why none.

use crate::probe::{KernelFacts, MetricPlan, Preempt, Trial};
use serde_json::json;
use std::fmt::Write;

fn trial(t: &Trial) -> String {
    match t {
        Trial::Allowed => "allowed".into(),
        Trial::Refused(e) => format!("refused: {e}"),
        Trial::NotTried(e) => format!("not tried: {e}"),
    }
}

/// The preemption model, and what it costs the probes.
fn preempt(k: &KernelFacts) -> String {
    match &k.preempt {
        Ok(p) if p.preempts_programs() => format!(
            "{} ({}): {}; `record` attaches its programs twice against it (`--twins`), \
             and counts the calls both runs skipped",
            p.mode,
            p.source,
            Preempt::SKIPS
        ),
        Ok(p) => format!(
            "{} ({}): programs run to the end unpreempted",
            p.mode, p.source
        ),
        Err(e) => e.clone(),
    }
}

/// DAMON's running schemes: swap-outs besides reclaim, or a reordered LRU.
fn damon(k: &KernelFacts) -> String {
    let Some(schemes) = &k.damon else {
        return "no DAMON sysfs interface".into();
    };
    let moving: Vec<String> = schemes
        .iter()
        .filter(|s| s.moves_swap())
        .map(|s| s.text())
        .collect();
    if moving.is_empty() {
        return "no scheme running that swaps out or reorders memory".into();
    }
    format!(
        "{}: its swap-outs pass the tracepoint of reclaim's (`mm_vmscan_write_folio`), and a replay takes them as recorded \
         (it does not model the scheme)",
        moving.join("; ")
    )
}

/// The kernel range a row was seen to work on.
fn seen(s: Option<(&str, &str)>) -> String {
    match s {
        Some((a, b)) if a == b => format!("seen working on {a}"),
        Some((a, b)) => format!("seen working on {a} to {b}"),
        None => "not seen working yet".into(),
    }
}

pub fn doctor_json(k: &KernelFacts, plans: &[MetricPlan]) -> serde_json::Value {
    json!({
        "kernel": k.release,
        "btf": k.btf.as_ref().map(|b| b.len()).map_err(|e| e.clone()).is_ok(),
        "btf_error": k.btf.as_ref().err(),
        "kallsyms_text_symbols": k.text_symbols.len(),
        "kallsyms_data_symbols": k.data_symbols.len(),
        "kprobes": k.kprobes.as_ref().err().map_or("available".to_string(), |e| e.clone()),
        "fentry": trial(&k.fentry),
        "preempt": k.preempt.as_ref().ok(),
        "preempt_error": k.preempt.as_ref().err(),
        "damon": k.damon,
        "metrics": plans,
    })
}

/// The kernel's facts, then per metric its backend and attach point: one
/// line each with each reason once (as a footnote) by default, every refused
/// candidate with its reasons under `verbose` (as bpftrace `--info` does).
pub fn doctor_text(k: &KernelFacts, plans: &[MetricPlan], verbose: bool) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "kernel    {}", k.release);
    let _ = writeln!(
        o,
        "BTF       {}",
        match &k.btf {
            Ok(b) => format!("{} types", b.len()),
            Err(e) => format!("missing: {e}"),
        }
    );
    let _ = writeln!(
        o,
        "kallsyms  {} text symbols, {} data symbols{}",
        k.text_symbols.len(),
        k.data_symbols.len(),
        if k.data_symbols.is_empty() {
            " (no KALLSYMS_ALL)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        o,
        "kprobes   {}",
        k.kprobes.as_ref().err().map_or("available", |e| e.as_str())
    );
    let _ = writeln!(o, "fentry    {}", trial(&k.fentry));
    let _ = writeln!(o, "preempt   {}", preempt(k));
    let _ = writeln!(o, "damon     {}\n", damon(k));
    if !verbose {
        o.push_str(&compact_table(plans));
        return o;
    }
    let _ = writeln!(o, "{:<18} {:<11} ATTACH POINT", "METRIC", "BACKEND");
    for p in plans {
        match &p.chosen {
            Some(c) => {
                let _ = writeln!(
                    o,
                    "{:<18} {:<11} {}",
                    p.metric,
                    c.backend.to_string(),
                    c.attach
                );
                if !c.note.is_empty() {
                    let _ = writeln!(o, "{:<30} ({})", "", c.note);
                }
                let _ = writeln!(o, "{:<30} {}", "", seen(c.seen));
            }
            None => {
                let _ = writeln!(o, "{:<18} {:<11} NOT AVAILABLE", p.metric, "-");
            }
        }
        for r in p.rejected.iter().filter(|r| !r.why_not.is_empty()) {
            let _ = writeln!(
                o,
                "{:<30} not {} [{}]: {}",
                "",
                r.attach,
                seen(r.seen),
                r.why_not.join("; ")
            );
        }
    }
    o
}

/// One line per metric: the attach point, or footnote marks for why none;
/// each distinct reason is printed once under the table.
fn compact_table(plans: &[MetricPlan]) -> String {
    let mut o = String::new();
    let mut reasons: Vec<&str> = Vec::new();
    let mut passed_over = 0;
    let _ = writeln!(
        o,
        "{:<18} {:<11} ATTACH POINT / WHY NONE",
        "METRIC", "BACKEND"
    );
    for p in plans {
        let refused = p.rejected.iter().filter(|r| !r.why_not.is_empty());
        match &p.chosen {
            Some(c) => {
                passed_over += refused.count();
                let _ = writeln!(
                    o,
                    "{:<18} {:<11} {}",
                    p.metric,
                    c.backend.to_string(),
                    c.attach
                );
            }
            None => {
                let mut marks = Vec::new();
                for why in refused.flat_map(|r| r.why_not.iter()) {
                    let i = match reasons.iter().position(|r| r == why) {
                        Some(i) => i,
                        None => {
                            reasons.push(why);
                            reasons.len() - 1
                        }
                    };
                    if !marks.contains(&(i + 1)) {
                        marks.push(i + 1);
                    }
                }
                let marks: Vec<String> = marks.iter().map(|i| format!("[{i}]")).collect();
                let _ = writeln!(
                    o,
                    "{:<18} {:<11} not available {}",
                    p.metric,
                    "-",
                    marks.join("")
                );
            }
        }
    }
    for (i, r) in reasons.iter().enumerate() {
        let _ = writeln!(o, "[{}] {r}", i + 1);
    }
    if passed_over > 0 {
        let _ = writeln!(
            o,
            "{passed_over} preferred probes were not usable here; --verbose says which and why"
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{Backend, Choice};

    fn choice(backend: Backend, attach: &'static str, why_not: &[&str]) -> Choice {
        Choice {
            backend,
            attach,
            progs: &[],
            why_not: why_not.iter().map(|w| w.to_string()).collect(),
            note: "",
            seen: None,
            silences: &[],
        }
    }

    #[test]
    fn compact_table_gives_one_line_per_metric_and_each_reason_once() {
        let eperm = "fentry refused: EPERM";
        let plans = vec![
            MetricPlan {
                metric: "swap-out",
                what: "",
                chosen: Some(choice(Backend::Tracepoint, "vmscan:x", &[])),
                rejected: vec![choice(Backend::Fentry, "fentry a", &[eperm])],
            },
            MetricPlan {
                metric: "free-latency",
                what: "",
                chosen: None,
                rejected: vec![
                    choice(Backend::Fentry, "fentry b", &[eperm, "b inlined"]),
                    choice(Backend::Kprobe, "kprobe b", &["no kprobe PMU"]),
                ],
            },
            MetricPlan {
                metric: "zswap",
                what: "",
                chosen: None,
                rejected: vec![choice(Backend::Fentry, "fentry c", &[eperm])],
            },
        ];
        let t = compact_table(&plans);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 1 + 3 + 3 + 1, "{t}");
        assert!(lines[1].ends_with("vmscan:x"), "{t}");
        assert!(lines[2].ends_with("not available [1][2][3]"), "{t}");
        assert!(lines[3].ends_with("not available [1]"), "{t}");
        assert_eq!(t.matches(eperm).count(), 1, "{t}");
        assert_eq!(lines[4], format!("[1] {eperm}"));
        assert!(lines[7].starts_with("1 preferred probes"), "{t}");
    }
}
