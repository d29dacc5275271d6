//! Recording overhead: the built-in workload in a 128 MiB memory cgroup with
//! a temporary swap file, alternately with and without `record` attached.
//! Prints wall time per run, the median overhead, events/s, lost events and
//! bytes per event on disk. Needs root; prints why when it cannot run.

use std::path::{Path, PathBuf};
use std::process::Command;
use swaptrace::lab::{self, MemCgroup, SwapFile};
use swaptrace::record::{record, workload_command, RecordOptions};
use swaptrace::workload::{Pattern, WorkloadSpec};

const EXE: &str = env!("CARGO_BIN_EXE_swaptrace");

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The workload's own wall time, read from its JSON report.
fn workload_secs(report: &Path) -> f64 {
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report).expect("workload report")).expect("json");
    let d = |k: &str| {
        v[k]["secs"].as_f64().unwrap_or(0.0) + v[k]["nanos"].as_f64().unwrap_or(0.0) / 1e9
    };
    d("elapsed_write") + d("elapsed_read")
}

fn shell(cmd: &[String], report: &Path) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!("{} --json > {}", cmd.join(" "), report.display()),
    ]
}

fn main() {
    if let Err(e) = lab::require_root() {
        println!("record_overhead: not run: {e}");
        return;
    }
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let _lock = lab::live_test_lock();
    let dir = PathBuf::from(format!("/var/tmp/swaptrace-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // SWAP=loop puts swap on a non-rotational loop device: less disk noise.
    let on_loop = std::env::var("SWAP").is_ok_and(|v| v == "loop");
    let _swap = if on_loop {
        SwapFile::on_loop(&dir, 1 << 30, false, None)
    } else {
        SwapFile::create(&dir, 1 << 30, None)
    }
    .expect("swap");
    let cg = MemCgroup::create("swaptrace-bench-", 128 << 20).expect("cgroup");
    let spec = WorkloadSpec {
        size_bytes: 384 << 20,
        pattern: Pattern::ShuffledBlocks { block_pages: 16 },
        passes: 1,
        seed: 1,
        ..WorkloadSpec::default()
    };
    let cmd = workload_command(Path::new(EXE), &spec);
    let report = dir.join("report.json");
    let trace = dir.join("bench.swt");
    let (mut base, mut traced) = (Vec::new(), Vec::new());
    let (mut events, mut lost, mut bytes, mut rec_secs) = (0u64, 0u64, 0u64, 0f64);
    // The workload under `record`, in the cgroup, unfiltered.
    let run_traced = || {
        record(&RecordOptions {
            output: trace.clone(),
            command: shell(&cmd, &report),
            spawn_cgroup: Some(cg.path().to_path_buf()),
            ..RecordOptions::default()
        })
        .expect("record")
    };
    println!(
        "{runs} runs each of {} MiB {} in a 128 MiB cgroup, swap on {}",
        spec.size_bytes >> 20,
        spec.pattern,
        if on_loop { "a loop device" } else { "a file" }
    );
    for i in 0..runs {
        // Alternate which goes first, so drift does not favour either.
        let baseline = |report: &Path| {
            assert!(lab_spawn(&cg, &shell(&cmd, report)), "workload failed");
            workload_secs(report)
        };
        let first = if i % 2 == 0 {
            Some(baseline(&report))
        } else {
            None
        };
        let r = run_traced();
        assert_eq!(r.exit_code, Some(0), "workload failed under record");
        let w = workload_secs(&report);
        let b = first.unwrap_or_else(|| baseline(&report));
        events += r.records;
        lost += r.summary.lost_total();
        bytes += r.bytes;
        rec_secs += r.elapsed_s;
        println!(
            "run {i}: without {b:.3}s  with record {w:.3}s  ({:+.1}%)  {} records, {} lost",
            (w / b - 1.0) * 100.0,
            r.records,
            r.summary.lost_total()
        );
        base.push(b);
        traced.push(w);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (ab, at) = (mean(&base), mean(&traced));
    let (mb, mt) = (median(&mut base), median(&mut traced));
    println!("median without record   {mb:.3} s");
    println!("median with record      {mt:.3} s");
    println!(
        "overhead                {:+.2} % of wall time by medians, {:+.2} % by means (target <= 3 %)",
        (mt / mb - 1.0) * 100.0,
        (at / ab - 1.0) * 100.0
    );
    println!("events recorded/s       {:.0}", events as f64 / rec_secs);
    println!("lost events             {lost} (target 0)");
    println!(
        "bytes per event on disk {:.2} (target <= 16)",
        bytes as f64 / events as f64
    );
    // One more run with kernel.bpf_stats_enabled, for the eBPF time per program.
    if let Ok(_stats) = lab::Knob::set("/proc/sys/kernel/bpf_stats_enabled", "1") {
        let r = run_traced();
        let w = workload_secs(&report);
        let mut total = 0;
        println!("eBPF run time (one run with bpf_stats_enabled; the workload took {w:.3} s):");
        for p in r.bpf_stats.iter().filter(|p| p.run_count > 0) {
            total += p.run_time_ns;
            println!(
                "  {:<28} {:>9} calls {:>8.1} ms {:>6.0} ns/call",
                p.program,
                p.run_count,
                p.run_time_ns as f64 / 1e6,
                p.run_time_ns as f64 / p.run_count as f64
            );
        }
        println!(
            "  total {:.1} ms = {:.1} % of the workload's time, {:.0} ns per recorded event",
            total as f64 / 1e6,
            total as f64 / 1e7 / w,
            total as f64 / r.records.max(1) as f64
        );
    }
    drop(cg);
    drop(_swap);
    let _ = std::fs::remove_dir_all(&dir);
}

fn lab_spawn(cg: &MemCgroup, argv: &[String]) -> bool {
    let mut c = Command::new(&argv[0]);
    c.args(&argv[1..]);
    cg.spawn(&mut c)
        .and_then(|mut ch| ch.wait())
        .map(|s| s.success())
        .unwrap_or(false)
}
