//! Replay throughput: a synthetic trace of FAULTS faults (default 10 M) over
//! FAULTS/10 swap entries, replayed through each readahead policy (or those
//! of POLICIES, comma-separated) on one core each. Prints fault events per
//! second per policy and the peak RSS.

use std::time::Instant;
use swaptrace::replay::readahead::{policy_by_name, replay, InputBuilder};
use swaptrace::synth::{generate, SynthSpec};

fn peak_rss_kib() -> u64 {
    swaptrace::lab::proc_kib("/proc/self/status", "VmHWM").unwrap_or(0)
}

fn main() {
    let faults: u64 = std::env::var("FAULTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let pages = (faults / 10).max(1);
    let spec = SynthSpec {
        pattern: "shuffled-blocks:16".parse().expect("pattern"),
        pages,
        faults,
        seed: 1,
        memory_pages: pages / 4,
    };
    let t = Instant::now();
    let mut b = InputBuilder::new(4096);
    generate(&spec, |r| b.add(&r));
    let input = b.finish(3, spec.memory_pages as usize).expect("input");
    let rss_input = peak_rss_kib();
    println!(
        "{faults} faults over {pages} entries ({} events) built in {:.2} s; RSS {} MiB",
        input.events.len(),
        t.elapsed().as_secs_f64(),
        rss_input / 1024
    );
    let names =
        std::env::var("POLICIES").unwrap_or_else(|_| "cluster,vma,none,fixed:8,leap".into());
    for name in names.split(',') {
        let Ok(mut p) = policy_by_name(name, &input) else {
            eprintln!("no policy {name}");
            continue;
        };
        let t = Instant::now();
        let m = replay(&input, p.as_mut());
        let s = t.elapsed().as_secs_f64();
        println!(
            "{name:<8} {:>6.2} M fault events/s ({:.2} s; {} majors) (issue 19 target >= 50 M/s)",
            m.faults as f64 / s / 1e6,
            s,
            m.pgmajfault
        );
    }
    let peak = peak_rss_kib();
    println!(
        "peak RSS {} MiB; model state beyond the input: {:.0} bytes per distinct entry (issue 19 target <= 30)",
        peak / 1024,
        (peak.saturating_sub(rss_input) * 1024) as f64 / pages as f64
    );
}
