//! Checks what a guest wrote into `<kernel_dir>/out`: every scenario ran and
//! left its files, every trace is finalized, and the claims hold.

use super::claims::check_claims;
use super::verdict::Verdict;
use crate::cmd::capture;
use std::fs;
use std::path::Path;
use std::process::Command;

const SCENARIOS: &[&str] = &["doctor", "swapoff", "free", "both", "overhead"];

/// The files a scenario leaves besides its logs.
fn expected(scenario: &str) -> &'static [&'static str] {
    match scenario {
        "doctor" => &["doctor.json", "doctor.txt"],
        "swapoff" => &["swapoff.swt", "swapoff.time"],
        "free" => &["free.swt", "free.time"],
        "both" => &["fentry.swt", "kprobe.swt"],
        "overhead" => &[
            "faults.json",
            "dd.json",
            "swap.json",
            "faults-tp.json",
            "dd-tp.json",
            "swap-tp.json",
        ],
        _ => &[],
    }
}

/// Checks one kernel's run; `host` is the swaptrace that reads the traces
/// back (the static build, so the code that wrote them).
pub fn verify(kernel_dir: &Path, host: &Path) -> Verdict {
    let out = kernel_dir.join("out");
    let mut v = Verdict::default();
    for f in ["uname", "features", "kallsyms.txt"] {
        match fs::read_to_string(out.join(f)) {
            Ok(t) => v.check(true, format!("{f}: {}", t.trim().replace('\n', " | "))),
            Err(e) => v.fail(format!("out/{f}"), e),
        }
    }
    for sc in SCENARIOS {
        scenario(&mut v, &out, sc, host);
    }
    check_claims(&mut v, &out);
    v
}

/// A scenario's status, files and traces.
fn scenario(v: &mut Verdict, out: &Path, sc: &str, host: &Path) {
    let d = out.join(sc);
    let listing = match fs::read_dir(&d) {
        Ok(l) => l,
        Err(e) => return v.fail(format!("{sc}: out/{sc}/"), e),
    };
    let mut files: Vec<(String, u64)> = listing
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let len = e.metadata().ok()?.len();
            Some((e.file_name().to_string_lossy().into_owned(), len))
        })
        .collect();
    files.sort();
    let status = fs::read_to_string(d.join("status"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "missing".into());
    let elapsed = fs::read_to_string(d.join("elapsed")).unwrap_or_default();
    v.note(format!(
        "{sc}: status {status}, {} s; {}",
        elapsed.trim(),
        files
            .iter()
            .map(|(n, l)| format!("{n} {l}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let steps = if status == "0" {
        String::new()
    } else {
        let s = fs::read_to_string(d.join("steps.txt")).unwrap_or_default();
        format!("steps: {}", s.trim().replace('\n', ", "))
    };
    v.check_with(status == "0", format!("{sc}: status {status}"), steps);
    for (name, _) in files.iter().filter(|(n, _)| n.ends_with(".swt")) {
        finalized(v, &d.join(name), &format!("{sc}/{name}"), host);
    }
    let missing: Vec<&str> = expected(sc)
        .iter()
        .chain(&["vmstat.before", "vmstat.after"])
        .copied()
        .filter(|f| !files.iter().any(|(n, _)| n == f))
        .collect();
    v.check_with(
        missing.is_empty(),
        format!("{sc}: has its files"),
        if missing.is_empty() {
            String::new()
        } else {
            format!("missing {}", missing.join(", "))
        },
    );
}

/// `swaptrace info --json` says the trace is finalized.
fn finalized(v: &mut Verdict, path: &Path, name: &str, host: &Path) {
    let info = capture(Command::new(host).arg("info").arg("--json").arg(path)).and_then(|s| {
        serde_json::from_str::<serde_json::Value>(&s)
            .map_err(|e| anyhow::anyhow!("info --json output: {e}"))
    });
    match info {
        Ok(i) => {
            let fin = i.get("finalized").and_then(|f| f.as_bool()) == Some(true);
            let records = i.get("records").map(|r| r.to_string()).unwrap_or_default();
            v.check(fin, format!("{name}: finalized {fin}, records {records}"));
        }
        Err(e) => v.fail(format!("{name}: swaptrace info --json"), format!("{e:#}")),
    }
}

#[cfg(test)]
mod tests;
