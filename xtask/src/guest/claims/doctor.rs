//! The doctor's claims: the exact probes chosen where the kernel has their
//! functions, and the preemption model it reads.

use super::Verdict;
use std::path::Path;

/// The doctor's choice: the exact probes where the kernel has their functions.
pub(super) fn doctor(v: &mut Verdict, out: &Path) {
    v.note("doctor:");
    let d = match std::fs::read_to_string(out.join("doctor/doctor.json"))
        .map_err(|e| e.to_string())
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).map_err(|e| e.to_string()))
    {
        Ok(d) => d,
        Err(e) => return v.fail("doctor/doctor.json", e),
    };
    let metrics = d["metrics"].as_array().cloned().unwrap_or_default();
    for m in &metrics {
        let name = m["metric"].as_str().unwrap_or("?");
        let chosen = m["chosen"]["backend"].as_str().unwrap_or("-");
        let attach = m["chosen"]["attach"].as_str().unwrap_or("NOT AVAILABLE");
        v.note(format!("    {name:<18} {chosen:<11} {attach}"));
        // A row rejected only because this build lacks it means the
        // kernel has something we do not attach.
        for r in m["rejected"].as_array().into_iter().flatten() {
            let why: Vec<&str> = r["why_not"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|w| w.as_str())
                .collect();
            if why == ["not in this build yet"] {
                v.note(format!(
                    "    {:<18} (kernel has {}, not in this build)",
                    "",
                    r["attach"].as_str().unwrap_or("?")
                ));
            }
        }
    }
    preempt(v, out, &d);
    for want in ["ra-window", "swap-cache-hit", "free-latency"] {
        let b = metrics
            .iter()
            .find(|m| m["metric"] == want)
            .and_then(|m| m["chosen"]["backend"].as_str())
            .unwrap_or("-");
        v.check(
            b == "fentry" || b == "kprobe",
            format!("doctor: {want} by an exact probe (got {b})"),
        );
    }
}

/// The preemption model the doctor read (debugfs is mounted in the
/// guest), the default of the kernel package's config where it has one:
/// under full or lazy preemption the recorder's programs can be preempted,
/// and runs of them skipped: `record` then attaches them twice.
fn preempt(v: &mut Verdict, out: &Path, d: &serde_json::Value) {
    let mode = d["preempt"]["mode"].as_str().unwrap_or("-");
    let source = d["preempt"]["source"].as_str().unwrap_or("-");
    v.note(format!("    preemption {mode} ({source})"));
    v.check(
        source == swaptrace::probe::PREEMPT_DEBUGFS,
        format!("doctor: preemption model read from debugfs (got {mode} from {source})"),
    );
    // `record --twins auto` (the zswap scenario's first run) twins its
    // programs exactly where they can be preempted.
    if let Ok(stderr) = std::fs::read_to_string(out.join("zswap/record.stderr")) {
        let twinned = stderr.contains("programs attached twice");
        let want = matches!(mode, "full" | "lazy");
        v.check(
            twinned == want,
            format!("record: programs attached twice under {mode} preemption: {twinned}"),
        );
    }
    let release = out
        .parent()
        .and_then(|k| k.file_name())
        .map(|r| r.to_string_lossy().to_string())
        .unwrap_or_default();
    let config = out
        .parent()
        .and_then(|k| k.parent())
        .map(|g| g.join(format!("k-{release}/boot/config-{release}")));
    let Some(text) = config.and_then(|c| std::fs::read_to_string(c).ok()) else {
        v.note("    (no config in the kernel package to compare with)");
        return;
    };
    let want = swaptrace::probe::config_preempt_mode(&text).unwrap_or_else(|| "-".into());
    v.check(
        mode == want,
        format!("doctor: preemption {mode}, the config's default {want}"),
    );
}
