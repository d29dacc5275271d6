use super::verify;
use crate::guest::verdict::{Check, Verdict};
use std::fs;
use std::path::Path;
use swaptrace::synth::{write, SynthPattern, SynthSpec};
use swaptrace::workload::Pattern;

/// A host swaptrace that always fails.
const NO_HOST: &str = "/bin/false";

fn synth(path: &Path) {
    if let Some(d) = path.parent() {
        fs::create_dir_all(d).expect("mkdir");
    }
    let spec = SynthSpec {
        pattern: SynthPattern::One(Pattern::Random),
        pages: 256,
        faults: 512,
        seed: 1,
        memory_pages: 64,
    };
    write(&spec, path, &swaptrace::trace::OutputPolicy::replace()).expect("synthetic trace");
}

fn check<'a>(v: &'a Verdict, what: &str) -> Option<&'a Check> {
    v.checks().find(|c| c.what == what)
}

#[test]
fn an_empty_run_fails_every_check_without_panicking() {
    let dir = tempfile::tempdir().expect("tempdir");
    let v = verify(dir.path(), Path::new(NO_HOST));
    assert_eq!(v.passed(), 0, "{v}");
    // uname, features, kallsyms, seven scenarios, then the claims' traces.
    assert!(v.failed() >= 10 + 6, "{v}");
}

#[test]
fn a_corrupt_or_truncated_trace_is_a_failed_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    fs::create_dir_all(out.join("swapoff")).expect("mkdir");
    let live = out.join("swapoff/swapoff.swt");
    fs::write(&live, b"not a trace at all").expect("write");
    let v = verify(dir.path(), Path::new(NO_HOST));
    let what = format!("{} is complete and finalized", live.display());
    let c = check(&v, &what).unwrap_or_else(|| panic!("no check {what:?} in\n{v}"));
    assert!(!c.ok && !c.detail.is_empty(), "{c}");

    // A whole swapoff.swt, and full.swt cut in half.
    synth(&live);
    let full = out.join("swapoff/full.swt");
    synth(&full);
    let bytes = fs::read(&full).expect("read");
    fs::write(&full, &bytes[..bytes.len() / 2]).expect("truncate");
    let v = verify(dir.path(), Path::new(NO_HOST));
    let c = check(&v, &what).unwrap_or_else(|| panic!("no check {what:?} in\n{v}"));
    assert!(c.ok, "{c}");
    let what = format!("{} is complete and finalized", full.display());
    let c = check(&v, &what).unwrap_or_else(|| panic!("no check {what:?} in\n{v}"));
    assert!(!c.ok, "{c}");
}

#[test]
fn synthetic_traces_are_read_and_checked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let traces = [
        "swapoff/swapoff.swt",
        "swapoff/full.swt",
        "free/free.swt",
        "both/fentry.swt",
        "both/kprobe.swt",
        "zswap/zswap.swt",
    ];
    for t in traces {
        synth(&out.join(t));
    }
    let mut v = Verdict::default();
    crate::guest::claims::check_claims(&mut v, &out);
    for t in traces {
        let what = format!("{} is complete and finalized", out.join(t).display());
        let c = check(&v, &what).unwrap_or_else(|| panic!("no check {what:?} in\n{v}"));
        assert!(c.ok, "{c}");
    }
    // Synthetic traces carry no backends or free batches: those claims fail.
    let c = check(
        &v,
        "fentry recorder used fentry, kprobe recorder used kprobes",
    )
    .expect("backend check");
    assert!(!c.ok);
    assert!(
        v.to_string()
            .contains("swapoff (the 5.8 swapoff readahead-statistics fix):"),
        "{v}"
    );
}

#[test]
fn overhead_lists_the_programs_that_ran() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().join("out/overhead");
    fs::create_dir_all(&d).expect("mkdir");
    let stats = r#"{"recorded": {"records": 400, "bpf_stats": [
        {"program": "count_memcg_events", "run_count": 4000, "run_time_ns": 320000},
        {"program": "do_swap_page", "run_count": 0, "run_time_ns": 0}]}}"#;
    fs::write(d.join("faults.json"), stats).expect("write");
    let mut v = Verdict::default();
    crate::guest::claims::check_claims(&mut v, &dir.path().join("out"));
    let ok = check(&v, "overhead/faults: record reports bpf_stats per program");
    assert!(ok.is_some_and(|c| c.ok), "{v}");
    let text = v.to_string();
    assert!(
        text.contains("faults: 1 of 2 programs ran, 0.3 ms"),
        "{text}"
    );
    assert!(
        text.contains("count_memcg_events") && text.contains("80 ns/call"),
        "{text}"
    );
    assert!(!text.contains("    do_swap_page"), "{text}");
    let dd = check(&v, "overhead/dd.json: bpf_stats").expect("dd check");
    assert!(!dd.ok, "{dd}");
    // The same jobs under tracepoints only are read too.
    assert!(text.contains("tracepoints only"), "{text}");
    let tp = check(&v, "overhead/faults-tp.json: bpf_stats").expect("tp check");
    assert!(!tp.ok, "{tp}");
}

#[test]
fn a_scenario_is_held_to_its_status_and_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().join("out/free");
    synth(&d.join("free.swt"));
    for (f, text) in [
        ("status", "0\n"),
        ("free.time", "1.5\n"),
        ("vmstat.before", ""),
    ] {
        fs::write(d.join(f), text).expect("write");
    }
    let v = verify(dir.path(), Path::new(NO_HOST));
    assert!(check(&v, "free: status 0").is_some_and(|c| c.ok), "{v}");
    let files = check(&v, "free: has its files").expect("files check");
    assert!(
        !files.ok && files.detail == "missing vmstat.after",
        "{files}"
    );
    let info = check(&v, "free/free.swt: swaptrace info --json").expect("info check");
    assert!(!info.ok, "{info}");
    let swapoff = check(&v, "swapoff: status missing");
    assert!(
        swapoff.is_none(),
        "no out/swapoff/ is one failed check, not two"
    );
}
