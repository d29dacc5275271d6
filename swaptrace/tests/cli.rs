//! The command line on bad input: clear errors, exit status 1 or 2, no panic.

use std::process::Command;

const EXE: &str = env!("CARGO_BIN_EXE_swaptrace");

fn run(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(EXE).args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn info_refuses_a_file_that_is_not_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.swt");
    std::fs::write(&p, b"hello, not a trace at all").unwrap();
    let (code, _, err) = run(&["info", p.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("not a swaptrace trace"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let (code, _, err) = run(&["info", "/nonexistent.swt"]);
    assert_eq!(code, 1);
    assert!(err.contains("/nonexistent.swt"), "{err}");
}

#[test]
fn bad_flags_are_explained() {
    let (code, _, err) = run(&["record", "-o", "x.swt", "--duration", "soon"]);
    assert_eq!(code, 2);
    assert!(err.contains("invalid duration"), "{err}");
    let (code, _, err) = run(&["workload", "--pattern", "zigzag"]);
    assert_eq!(code, 2);
    assert!(err.contains("zigzag"), "{err}");
    let (code, _, err) = run(&["workload", "--size", "12Q"]);
    assert_eq!(code, 2);
    assert!(err.contains("12Q"), "{err}");
}

#[test]
fn lab_fidelity_takes_a_command_or_shapes_not_both() {
    let (code, _, err) = run(&["lab", "fidelity", "--shapes", "zero", "--", "sort"]);
    assert_eq!(code, 1, "{err}");
    if cfg!(feature = "live") {
        assert!(
            err.contains("a command after -- is the only shape"),
            "{err}"
        );
    } else {
        assert!(err.contains("without the `live` feature"), "{err}");
    }
    let (code, _, err) = run(&["lab", "fidelity", "--limit-mib", "8", "--", "sort"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--limit-mib"), "{err}");
}

#[test]
fn doctor_lists_every_metric_in_both_forms() {
    let (code, out, err) = run(&["doctor", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let metrics = v["metrics"].as_array().unwrap();
    assert_eq!(metrics.len(), swaptrace::probe::METRICS.len());
    for m in metrics {
        // Each metric is either captured or says why not.
        let chosen = !m["chosen"].is_null();
        let reasons = m["rejected"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| !r["why_not"].as_array().unwrap().is_empty());
        assert!(chosen || reasons, "{m}");
    }
    let (code, text, _) = run(&["doctor"]);
    assert_eq!(code, 0);
    for (m, _) in swaptrace::probe::METRICS {
        assert!(text.contains(m), "{m} missing from doctor output");
    }
}

#[test]
fn synth_replay_and_plot_offline() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("s.swt");
    let (code, _, err) = run(&[
        "synth",
        "-o",
        trace.to_str().unwrap(),
        "--pattern",
        "shuffled-blocks:16",
        "--pages",
        "20000",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&["replay", trace.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = v["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metrics"]["policy"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["cluster", "vma", "none", "fixed:8", "leap", "oracle"]
    );
    // Synthetic traces carry no kernel counters.
    assert!(v["kernel"].is_null());
    #[cfg(feature = "plot")]
    check_plots(&trace, &dir.path().join("plots"));
    let (code, _, err) = run(&["replay", trace.to_str().unwrap(), "--policy", "nope"]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown policy `nope`"), "{err}");
}

/// Free batches: sorting by device cuts the lock round trips when the
/// devices interleave in a batch, and changes nothing on one device.
#[test]
fn free_family_replay_on_interleaved_and_single_devices() {
    let dir = tempfile::tempdir().unwrap();
    let mut locks = Vec::new();
    for devices in ["2", "1"] {
        let trace = dir.path().join(format!("free{devices}.swt"));
        let t = trace.to_str().unwrap();
        let (code, _, err) = run(&[
            "synth",
            "-o",
            t,
            "--pages",
            "6400",
            "--free-devices",
            devices,
            "--interleave",
            "8",
        ]);
        assert_eq!(code, 0, "{err}");
        let (code, out, err) = run(&["replay", t, "--family", "free", "--json"]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let by: std::collections::BTreeMap<String, u64> = v["policies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["policy"].as_str().unwrap().to_string(),
                    p["locks"].as_u64().unwrap(),
                )
            })
            .collect();
        locks.push(by);
    }
    // 100 batches of 64, runs of 8 over two devices: 8 runs, 2 devices each.
    assert_eq!((locks[0]["unsorted"], locks[0]["sorted"]), (800, 200));
    assert_eq!(locks[0]["per-device"], 100);
    assert_eq!((locks[1]["unsorted"], locks[1]["sorted"]), (100, 100));
    // A readahead trace has no free batches: said plainly, exit code 1.
    let ra = dir.path().join("ra.swt");
    let (code, _, err) = run(&["synth", "-o", ra.to_str().unwrap(), "--pages", "1000"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(&["replay", ra.to_str().unwrap(), "--family", "free"]);
    assert_eq!(code, 1);
    assert!(err.contains("no free batches"), "{err}");
}

#[cfg(feature = "plot")]
fn check_plots(trace: &std::path::Path, plots: &std::path::Path) {
    let (code, _, err) = run(&[
        "plot",
        trace.to_str().unwrap(),
        "-o",
        plots.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    for f in ["windows.png", "swapins.png", "heatmap.png", "policies.png"] {
        let bytes = std::fs::read(plots.join(f)).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{f}");
        assert!(bytes.len() > 5_000, "{f}: {} bytes", bytes.len());
    }
}

/// record → export → import keeps everything a replay needs: the same
/// replay result, and `compare` of a trace with its round trip shows no change.
#[test]
fn export_import_round_trip_replays_identically() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("s.swt");
    let (t, j, back) = (
        trace.to_str().unwrap(),
        dir.path().join("s.jsonl"),
        dir.path().join("back.swt"),
    );
    let (code, _, err) = run(&[
        "synth",
        "-o",
        t,
        "--pattern",
        "shuffled-blocks:8",
        "--pages",
        "8000",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(&["export", t, "-o", j.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    // A bad line in the middle is reported by number and skipped.
    let text = std::fs::read_to_string(&j).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(
        5,
        "{\"type\":\"record\",\"kind\":\"swap_fault\",\"ts\":\"late\"}",
    );
    std::fs::write(&j, lines.join("\n")).unwrap();
    let (code, out, err) = run(&["import", j.to_str().unwrap(), "-o", back.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(":6: "), "{err}");
    assert!(out.contains("1 bad lines skipped"), "{out}");
    let replay = |p: &str| {
        let (code, out, err) = run(&["replay", p, "--json"]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["policies"].clone()
    };
    assert_eq!(replay(t), replay(back.to_str().unwrap()));
    let (code, out, err) = run(&["compare", t, back.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for m in v["metrics"].as_array().unwrap() {
        assert_eq!(m["a"], m["b"], "{m}");
    }
}

#[test]
fn replay_flags_a_family_does_not_read_are_refused() {
    let t = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sample.swt");
    for (family, flag, value) in [
        ("zswap", "--device", "nvme"),
        ("free", "--memory-pages", "100"),
        ("khugepaged", "--device", "ssd"),
    ] {
        let (code, out, err) = run(&["replay", t, "--family", family, flag, value]);
        assert_eq!(code, 2, "{family} {flag}: {err}");
        assert!(out.is_empty());
        assert!(
            err.contains(flag) && err.contains(family),
            "{family} {flag}: {err}"
        );
    }
    // The readahead family reads both.
    let (code, _, err) = run(&["replay", t, "--device", "nvme", "--memory-pages", "4096"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn each_family_lists_its_policies_and_parameters() {
    let t = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sample.swt");
    for (family, policy, param) in [
        ("readahead", "cluster-swapoff-nostats", "page-cluster=N"),
        ("free", "per-device", "lock-ns=F"),
        ("zswap", "disk-swapin-tracking", "max-pool-percent=P"),
        ("khugepaged", "referenced-half", "pressure=direct|any"),
    ] {
        let (code, out, err) = run(&["replay", t, "--family", family, "--policy", "help"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(policy), "{family}: {out}");
        let (code, out, err) = run(&["replay", t, "--family", family, "--param", "help"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(param), "{family}: {out}");
        assert!(!out.to_lowercase().contains("seed 00"), "{out}");
    }
    let (_, help, _) = run(&["replay", "--help"]);
    assert!(!help.to_lowercase().contains("seed 00"), "{help}");
    for f in ["readahead", "free", "zswap", "khugepaged"] {
        assert!(help.contains(f), "{help}");
    }
}

/// The subcommands `swaptrace --help` lists (without `help` itself).
fn subcommands() -> Vec<String> {
    let (code, out, err) = run(&["--help"]);
    assert_eq!(code, 0, "{err}");
    let cmds = out.split("Commands:").nth(1).expect("a Commands: section");
    let cmds = cmds.split("\n\n").next().unwrap_or_default();
    cmds.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// Each argument line of `-h` output with its description: (name, text).
fn help_entries(help: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut in_section = false;
    for l in help.lines() {
        if l == "Arguments:" || l == "Options:" {
            in_section = true;
            continue;
        }
        if !l.starts_with(' ') {
            in_section = false;
            continue;
        }
        let t = l.trim_start();
        if !in_section || !(t.starts_with('-') || t.starts_with('<') || t.starts_with('[')) {
            continue;
        }
        let (name, desc) = t.split_once("  ").unwrap_or((t, ""));
        out.push((name.to_string(), desc.trim().to_string()));
    }
    out
}

#[test]
fn every_flag_and_argument_has_help_text() {
    let subs = subcommands();
    assert!(subs.len() >= 10, "{subs:?}");
    // cli/replay.rs is another change's file; its TRACE gets its text there.
    let pending = [("replay", "<TRACE>")];
    let mut missing = Vec::new();
    for s in &subs {
        let (code, out, err) = run(&[s, "-h"]);
        assert_eq!(code, 0, "{s}: {err}");
        let entries = help_entries(&out);
        assert!(!entries.is_empty(), "{s}: no arguments parsed from\n{out}");
        for (name, desc) in entries {
            // A description, not just clap's "[default: …]" or "[possible values: …]".
            if (desc.is_empty() || desc.starts_with('['))
                && !pending.contains(&(s.as_str(), name.as_str()))
            {
                missing.push(format!("{s} {name}"));
            }
        }
    }
    assert!(missing.is_empty(), "no help text: {missing:?}");
    // Defaults shown where there is one to show.
    let (_, rec, _) = run(&["record", "-h"]);
    let line = |help: &str, flag: &str| {
        help.lines()
            .find(|l| l.starts_with("  ") && l.contains(flag))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        line(&rec, "--ring-size").contains("[default: 16M]"),
        "{rec}"
    );
    assert!(line(&rec, "--duration").contains("[default: "), "{rec}");
    let (_, top, _) = run(&["top", "-h"]);
    assert!(line(&top, "--count").contains("[default: "), "{top}");
    assert!(line(&top, "--interval").contains("[default: 1s]"), "{top}");
    assert!(line(&top, "--pid").contains("process"), "{top}");
}

#[test]
fn a_missing_pid_is_refused_before_attaching() {
    // The first pid from 999999 up with no /proc entry (above pid_max there is none).
    let pid = (999_999u32..)
        .find(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
        .unwrap()
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.swt");
    for args in [
        vec!["record", "-o", out.to_str().unwrap(), "--pid", &pid],
        vec!["top", "--pid", &pid, "--count", "1"],
    ] {
        let t0 = std::time::Instant::now();
        let (code, stdout, err) = run(&args);
        assert_eq!(code, 1, "{args:?}: {stdout}{err}");
        assert!(
            err.contains(&format!("--pid {pid}: no such process")),
            "{args:?}: {err}"
        );
        assert!(t0.elapsed() < std::time::Duration::from_secs(5));
    }
    assert!(!out.exists(), "no trace is written for a missing pid");
}

#[test]
fn hist_of_a_metric_the_trace_lacks_names_the_ones_it_has() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sample.swt");
    let (code, _, err) = run(&["hist", sample, "--metric", "ra-window"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("use --metric pages-read"), "{err}");
    assert!(
        err.contains("the trace has: pages-read, fault-latency"),
        "{err}"
    );
    let (code, _, err) = run(&["hist", sample, "--metric", "free-latency"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--metric zap-interval"), "{err}");
    assert!(err.contains("the trace has: pages-read"), "{err}");
    // The one it names draws.
    let (code, out, err) = run(&["hist", sample, "--metric", "pages-read"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("pages read by I/O per major swap fault"),
        "{out}"
    );
}

#[test]
fn modelled_and_live_columns_are_labelled() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sample.swt");
    let (code, out, err) = run(&["replay", sample]);
    assert_eq!(code, 0, "{err}");
    let header = out.lines().next().unwrap_or_default();
    assert!(header.ends_with(" MODEL_IO_MS"), "{out}");
    assert!(!out.contains(" IO_MS"), "{out}");
    assert!(
        out.contains("MODEL_IO_MS: a model, not a measurement"),
        "{out}"
    );
    // A tracepoint trace's live window is the pages read per major fault.
    let (code, out, err) = run(&["hist", sample, "--metric", "ra-window", "--policy", "all"]);
    assert_eq!(code, 0, "{err}");
    let header = out.lines().nth(1).unwrap_or_default();
    assert!(header.contains("pages-read"), "{out}");
    let legend = out.lines().last().unwrap_or_default();
    assert!(legend.starts_with("live: pages-read"), "{out}");
    assert!(legend.contains("; replayed: cluster, vma"), "{out}");
}

#[test]
fn doctor_is_compact_by_default_and_full_with_verbose() {
    let (code, compact, err) = run(&["doctor"]);
    assert_eq!(code, 0, "{err}");
    let metrics = swaptrace::probe::METRICS.len();
    // The kernel facts (6 lines), the table, footnotes of missing metrics' reasons.
    let missing = compact.matches("not available").count();
    assert!(
        compact.lines().count() <= 8 + metrics + 1 + 4 * missing,
        "{compact}"
    );
    for (m, _) in swaptrace::probe::METRICS {
        let rows = compact
            .lines()
            .filter(|l| l.starts_with(&format!("{m} ")))
            .count();
        assert_eq!(rows, 1, "{m}: {compact}");
    }
    let (code, full, err) = run(&["doctor", "--verbose"]);
    assert_eq!(code, 0, "{err}");
    assert!(full.lines().count() >= compact.lines().count(), "{full}");
    if compact.contains("--verbose says") {
        assert!(
            full.lines().any(|l| l.trim_start().starts_with("not ")),
            "{full}"
        );
    }
}

#[test]
fn info_of_an_empty_trace_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("empty.jsonl");
    let trace = dir.path().join("empty.swt");
    std::fs::write(&jsonl, b"").unwrap();
    let (code, _, err) = run(&[
        "import",
        jsonl.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&["info", trace.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("bytes/record"), "{out}");
    assert!(
        out.contains("(none: the trace holds only its header and footer)"),
        "{out}"
    );
    assert!(!out.contains("NaN") && !out.contains("inf"), "{out}");
}

// Hostile input (issue 18): bounded, loud, no panic.

/// A JSONL header for hand-made traces, with `page_size`.
fn jsonl_header(page_size: u64) -> String {
    format!(
        "{{\"type\":\"header\",\"format_version\":1,\"tool_version\":\"0.1.0\",\
         \"kernel_release\":\"synthetic\",\"page_size\":{page_size},\"monotonic_start_ns\":0,\
         \"realtime_start_ns\":0,\"mem_total_kib\":48,\"swap_devices\":[],\
         \"readahead\":{{\"page_cluster\":3,\"vma_ra_enabled\":true}},\"metrics\":[],\
         \"vmstat_start\":{{}},\"target\":\"hand-made\",\"memory_limit_bytes\":49152}}"
    )
}

fn swap_out(ts: u64, offset: u64, nr: u32) -> String {
    format!(
        "{{\"type\":\"record\",\"kind\":\"swap_out\",\"ts\":{ts},\"tid\":50,\"mm\":1,\
         \"vaddr\":{},\"entry\":{{\"dev\":0,\"offset\":{offset}}},\"nr\":{nr},\"how\":\"io\"}}",
        (ts % 1000) << 12
    )
}

fn swap_fault(ts: u64, offset: u64, vts: u64) -> String {
    format!(
        "{{\"type\":\"record\",\"kind\":\"swap_fault\",\"ts\":{ts},\"dur_ns\":0,\"tid\":50,\
         \"mm\":1,\"addr\":{},\"entry\":{{\"dev\":0,\"offset\":{offset}}},\"major\":true,\
         \"pages_read\":1,\"zero_reads\":0,\"zswap_loads\":0}}",
        (vts % 1000) << 12
    )
}

/// Imports header + `records` as `dir/name.swt`.
fn import(dir: &std::path::Path, name: &str, records: &[String]) -> std::path::PathBuf {
    let (j, t) = (
        dir.join(format!("{name}.jsonl")),
        dir.join(format!("{name}.swt")),
    );
    let mut text = jsonl_header(4096);
    for r in records {
        text.push('\n');
        text.push_str(r);
    }
    std::fs::write(&j, text).unwrap();
    let (code, _, err) = run(&["import", j.to_str().unwrap(), "-o", t.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    t
}

/// Runs with the address space capped at `bytes`: a huge allocation fails.
fn run_limited(args: &[&str], bytes: u64) -> (i32, String, String) {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(EXE);
    c.args(args);
    // SAFETY: setrlimit is async-signal-safe; nothing else runs in the child.
    unsafe {
        c.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = c.output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

const REPLAY_AS_LIMIT: u64 = 2 << 30;

#[test]
fn a_swap_out_of_u32_max_pages_is_skipped_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let t = import(
        dir.path(),
        "nr",
        &[
            swap_out(1000, u64::MAX - 5, u32::MAX),
            swap_out(1001, 7, 1),
            swap_out(1002, 1 << 40, 1 << 14),
            swap_fault(2000, 7, 1001),
        ],
    );
    let t = t.to_str().unwrap();
    for family in ["readahead", "zswap"] {
        let (code, out, err) = run_limited(&["replay", t, "--family", family], REPLAY_AS_LIMIT);
        assert_eq!(code, 0, "{family}: {err}");
        assert!(!err.contains("panicked"), "{family}: {err}");
        assert!(
            err.contains("note: 2 records with a folio of more than 8192 pages"),
            "{family}: {err}"
        );
        assert!(!out.is_empty());
    }
}

#[test]
fn far_swap_offsets_replay_in_little_memory() {
    let dir = tempfile::tempdir().unwrap();
    let offsets = [1 << 25, 1 << 30, (3 << 58) | 5, 1 << 63, u64::MAX];
    let mut records = Vec::new();
    for (i, &o) in offsets.iter().enumerate() {
        records.push(swap_out(1000 + i as u64, o, 1));
        records.push(swap_fault(2000 + i as u64, o, 1000 + i as u64));
    }
    let t = import(dir.path(), "far", &records);
    let t = t.to_str().unwrap();
    for family in ["readahead", "zswap"] {
        let (code, out, err) = run_limited(&["replay", t, "--family", family], REPLAY_AS_LIMIT);
        assert_eq!(code, 0, "{family}: {err}");
        assert!(!err.contains("panicked"), "{family}: {err}");
        // Offsets 2^63, u64::MAX and one with type bits set are impossible.
        assert!(err.contains("note: 6 records with"), "{family}: {err}");
        assert!(!out.is_empty());
    }
}

#[test]
fn zap_swap_ents_of_i64_min_survive_import_and_export() {
    let dir = tempfile::tempdir().unwrap();
    let zap = |v: &str| {
        format!(
            "{{\"type\":\"record\",\"kind\":\"zap\",\"ts\":5,\"tid\":1,\"mm\":1,\
             \"swap_ents\":{v},\"exiting\":true}}"
        )
    };
    let t = import(
        dir.path(),
        "zap",
        &[zap("-9223372036854775808"), zap("null")],
    );
    let back = dir.path().join("back.jsonl");
    let (code, _, err) = run(&["export", t.to_str().unwrap(), "-o", back.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&back).unwrap();
    let ents: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["kind"] == "zap")
        .map(|v| v["swap_ents"].clone())
        .collect();
    assert_eq!(
        ents,
        vec![serde_json::json!(i64::MIN), serde_json::Value::Null]
    );
}

#[test]
fn synth_refuses_sizes_beyond_its_limits() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.swt");
    let o = out.to_str().unwrap();
    for (flag, value) in [
        ("--faults", "1000000000000"),
        ("--pages", "18446744073709551615"),
        ("--pages", "0"),
        ("--memory-pages", "4503599627370496"),
        ("--memory-pages", "0"),
    ] {
        let (code, _, err) = run_limited(&["synth", "-o", o, flag, value], REPLAY_AS_LIMIT);
        assert_eq!(code, 2, "{flag} {value}: {err}");
        assert!(err.contains(flag) && err.contains(value), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(!out.exists(), "{flag} {value}");
    }
    // At the limits' edge a small trace is still written.
    let (code, _, err) = run(&[
        "synth",
        "-o",
        o,
        "--pages",
        "64",
        "--memory-pages",
        "1099511627776",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&["info", o, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["header"]["memory_limit_bytes"], 1u64 << 52, "{out}");
}

#[test]
fn replay_refuses_no_memory_and_compare_an_unknown_metric() {
    let t = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sample.swt");
    let (code, out, err) = run(&["replay", t, "--memory-pages", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty());
    assert!(
        err.contains("--memory-pages") && err.contains("'0'"),
        "{err}"
    );
    let (code, out, err) = run(&["compare", t, t, "--metric", "pswpin,nosuch"]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("nosuch"), "{err}");
    for m in ["runtime", "pgmajfault", "ra-window", "fault-latency"] {
        assert!(err.contains(m), "{m}: {err}");
    }
    let (code, out, err) = run(&["compare", t, t, "--metric", "pswpin,runtime"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("pswpin"), "{out}");
}

#[test]
fn an_os_error_is_printed_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nonexist.swt");
    let m = missing.to_str().unwrap();
    let jsonl = dir.path().join("x.jsonl");
    let nodir = dir.path().join("no/such/dir/x.swt");
    let fresh = dir.path().join("y.jsonl");
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sample.swt");
    std::fs::write(&jsonl, jsonl_header(4096)).unwrap();
    for args in [
        vec!["info", m],
        vec!["replay", m],
        vec!["export", m, "-o", fresh.to_str().unwrap()],
        vec!["export", sample, "-o", nodir.to_str().unwrap()],
        vec![
            "import",
            jsonl.to_str().unwrap(),
            "-o",
            nodir.to_str().unwrap(),
        ],
        vec!["synth", "-o", nodir.to_str().unwrap(), "--pages", "16"],
    ] {
        let (code, _, err) = run(&args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert_eq!(
            err.matches("No such file or directory").count(),
            1,
            "{args:?}: {err}"
        );
        assert!(
            err.contains(missing.file_name().unwrap().to_str().unwrap()) || err.contains("x.swt")
        );
    }
}

#[test]
fn page_sizes_no_kernel_has_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spec = swaptrace::synth::SynthSpec {
        pattern: "seq".parse().unwrap(),
        pages: 8,
        faults: 8,
        seed: 1,
        memory_pages: 4,
    };
    for (size, ok) in [
        (1u64, false),
        (2048, false),
        (3 << 12, false),
        (1 << 63, false),
        (2 << 20, false),
        (4096, true),
        (65536, true),
        (1 << 20, true),
    ] {
        // The JSONL importer.
        let j = dir.path().join(format!("{size}.jsonl"));
        let t = dir.path().join(format!("{size}.swt"));
        std::fs::write(&j, jsonl_header(size)).unwrap();
        let (code, _, err) = run(&["import", j.to_str().unwrap(), "-o", t.to_str().unwrap()]);
        assert_eq!(code == 0, ok, "import {size}: {err}");
        if !ok {
            assert!(err.contains(&format!("page_size {size}")), "{err}");
        }
        // The trace reader.
        let mut h = swaptrace::synth::header(&spec);
        h.page_size = size;
        let b = dir.path().join(format!("{size}-bin.swt"));
        swaptrace::synth::write_records(&h, [], &b, &Default::default()).unwrap();
        let (code, _, err) = run(&["info", b.to_str().unwrap()]);
        assert_eq!(code == 0, ok, "info {size}: {err}");
        if !ok {
            assert!(err.contains(&format!("page_size {size}")), "{err}");
            assert!(err.contains("offset 20"), "{err}");
        }
    }
}

/// `lab fidelity --from DIR` re-scores kept traces offline: its own-policy
/// errors are `replay`'s on the same trace, grouped by the shape in the
/// name; a directory without kept traces is an error.
#[test]
fn lab_fidelity_from_kept_traces_scores_as_replay_does() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sample.swt");
    let dir = tempfile::tempdir().unwrap();
    for n in ["demo-cluster-0.swt", "demo-cluster-1.swt"] {
        std::fs::copy(sample, dir.path().join(n)).unwrap();
    }
    let d = dir.path().to_str().unwrap();
    let (code, out, err) = run(&["lab", "fidelity", "--from", d, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let shapes = v["shapes"].as_array().unwrap();
    assert_eq!(shapes.len(), 1, "{out}");
    assert_eq!(shapes[0]["shape"], "demo");
    let (code, rout, err) = run(&["replay", sample, "--policy", "cluster,vma", "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: serde_json::Value = serde_json::from_str(&rout).unwrap();
    let kp = r["kernel_policy"].as_str().unwrap();
    let mine = r["policies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["metrics"]["policy"] == kp)
        .unwrap();
    for f in mine["fidelity"].as_array().unwrap() {
        let o = shapes[0]["own"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["counter"] == f["counter"] && o["policy"] == kp)
            .unwrap_or_else(|| panic!("no own row for {}: {out}", f["counter"]));
        assert_eq!(o["runs"], 2);
        let want = f["error_pct"].as_f64().unwrap();
        assert!((o["error_pct"]["mean"].as_f64().unwrap() - want).abs() < 1e-9);
        assert!((o["worst_pct"].as_f64().unwrap() - want.abs()).abs() < 1e-9);
        // Two copies of one run: the live runs do not differ.
        assert_eq!(o["live_spread_pct"].as_f64(), Some(0.0), "{out}");
    }
    let empty = tempfile::tempdir().unwrap();
    let (code, _, err) = run(&["lab", "fidelity", "--from", empty.path().to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("no kept traces"), "{err}");
    let (code, _, err) = run(&["lab", "fidelity", "--from", d, "--runs", "2"]);
    assert_eq!(code, 2, "--from records nothing: {err}");
}

/// `export -o -` writes to standard output, as without -o, and leaves no
/// file named "-".
#[test]
fn export_to_dash_is_standard_output() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sample.swt");
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(EXE)
        .args(["export", sample, "-o", "-"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (_, plain, _) = run(&["export", sample]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), plain);
    assert!(plain.lines().count() > 100);
    assert!(!dir.path().join("-").exists());
}
