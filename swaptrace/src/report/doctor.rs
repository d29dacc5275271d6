//! `swaptrace doctor`: per metric, the backend and attach point this kernel
//! allows, or why none.

use crate::probe::{KernelFacts, MetricPlan, Trial};
use serde_json::json;
use std::fmt::Write;

fn trial(t: &Trial) -> String {
    match t {
        Trial::Allowed => "allowed".into(),
        Trial::Refused(e) => format!("refused: {e}"),
        Trial::NotTried(e) => format!("not tried: {e}"),
    }
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
        "metrics": plans,
    })
}

pub fn doctor_text(k: &KernelFacts, plans: &[MetricPlan]) -> String {
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
    let _ = writeln!(o, "fentry    {}\n", trial(&k.fentry));
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
