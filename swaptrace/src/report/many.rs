//! Replays of many traces: one row per (trace, policy), naming the host,
//! kernel and recording time, as a table, JSON or Parquet (one column per
//! figure; docs/parquet.md "Replays of many hosts").

use crate::replay::Replayed;
use crate::trace::{utc, Loaded};
use serde_json::{Map, Value};
use std::fmt::Write as _;
use std::path::Path;

/// The columns every row has, before the family's figures.
pub const ROW_KEYS: &[&str] = &[
    "trace",
    "host",
    "kernel",
    "recorded_at",
    "family",
    "policy",
    "kernel_policy",
];

/// One (trace, policy): the keys of [`ROW_KEYS`], then the policy's
/// scalar figures as `replay --json` gives them (a readahead policy's
/// `metrics` flattened into the row).
pub type PolicyRow = Map<String, Value>;

fn scalars(into: &mut PolicyRow, obj: &Map<String, Value>) {
    for (k, v) in obj {
        if matches!(v, Value::Number(_) | Value::Bool(_) | Value::String(_)) && k != "policy" {
            into.insert(k.clone(), v.clone());
        }
    }
}

/// The rows of one trace's replay.
pub fn policy_rows(t: &Loaded, path: &Path, family: &str, r: &Replayed) -> Vec<PolicyRow> {
    let json = super::replayed_json(t, r);
    let kernel_policy = json.get("kernel_policy").cloned().unwrap_or(Value::Null);
    let policies = json.get("policies").and_then(Value::as_array);
    let mut rows = Vec::new();
    for p in policies.into_iter().flatten() {
        let Some(obj) = p.as_object() else { continue };
        let metrics = obj.get("metrics").and_then(Value::as_object);
        let name = obj
            .get("policy")
            .or_else(|| metrics.and_then(|m| m.get("policy")))
            .cloned()
            .unwrap_or(Value::Null);
        let mut row = PolicyRow::new();
        row.insert("trace".into(), path.display().to_string().into());
        row.insert("host".into(), t.header.host(path).into());
        row.insert("kernel".into(), t.header.kernel_release.clone().into());
        row.insert("recorded_at".into(), utc(t.header.realtime_start_ns).into());
        row.insert("family".into(), family.into());
        row.insert("policy".into(), name);
        row.insert("kernel_policy".into(), kernel_policy.clone());
        scalars(&mut row, obj);
        if let Some(m) = metrics {
            scalars(&mut row, m);
        }
        rows.push(row);
    }
    rows
}

/// The figures the table shows for a family (JSON and Parquet have all).
fn table_keys(family: &str) -> &'static [&'static str] {
    match family {
        "readahead" => &["pgmajfault", "pswpin", "accuracy", "coverage", "io_ms"],
        "free" => &["batches", "entries", "locks", "model_ns"],
        "zswap" => &["peak_pool_pages", "disk_swapins", "compression_ratio"],
        "khugepaged" => &["collapses", "swapins", "pages_in", "io_ms"],
        _ => &[],
    }
}

fn cell(v: Option<&Value>) -> String {
    match v {
        Some(Value::Number(n)) if n.is_f64() => {
            format!("{:.3}", n.as_f64().unwrap_or(f64::NAN))
        }
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "-".into(),
        Some(v) => v.to_string(),
    }
}

/// The rows as a table, columns aligned to their widest cell.
pub fn rows_text(family: &str, rows: &[PolicyRow]) -> String {
    let mut head: Vec<String> = ["HOST", "KERNEL", "RECORDED_AT", "POLICY"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let keys = table_keys(family);
    head.extend(keys.iter().map(|k| k.to_uppercase()));
    let mut cells: Vec<Vec<String>> = vec![head];
    for r in rows {
        let mut line: Vec<String> = ["host", "kernel", "recorded_at", "policy"]
            .iter()
            .map(|k| cell(r.get(*k)))
            .collect();
        line.extend(keys.iter().map(|k| cell(r.get(*k))));
        cells.push(line);
    }
    let cols = cells[0].len();
    let width: Vec<usize> = (0..cols)
        .map(|c| cells.iter().map(|l| l[c].len()).max().unwrap_or(0))
        .collect();
    let mut o = String::new();
    for line in &cells {
        for (c, s) in line.iter().enumerate() {
            // Names left, figures right.
            if c < 4 {
                let _ = write!(o, "{s:<w$}  ", w = width[c]);
            } else {
                let _ = write!(o, "{s:>w$}  ", w = width[c]);
            }
        }
        let end = o.trim_end().len();
        o.truncate(end);
        o.push('\n');
    }
    o
}

#[cfg(feature = "parquet")]
pub use super::many_parquet::{rows_parquet, RowsError};
