//! `swaptrace top` on this kernel: the per-interval figures add up to the
//! kernel's counters over the same span, and `--cgroup` sees only the
//! cgroup's tasks. Root and BPF needed; holds the live-test lock.
#![cfg(feature = "live")]

mod live_common;

use live_common::{majors, scratch, workload, EXE};
use std::path::Path;
use std::process::{Command, Stdio};
use swaptrace::lab;

/// `top --json` for `count` 1 s intervals, started now.
fn start_top(count: u32, cgroup: Option<&Path>) -> std::process::Child {
    let mut c = Command::new(EXE);
    c.args([
        "top",
        "--json",
        "--interval",
        "1s",
        "--count",
        &count.to_string(),
    ]);
    if let Some(cg) = cgroup {
        c.arg("--cgroup").arg(cg);
    }
    c.stdout(Stdio::piped()).spawn().unwrap()
}

fn intervals(top: std::process::Child) -> Vec<serde_json::Value> {
    let out = top.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn sum(iv: &[serde_json::Value], f: impl Fn(&serde_json::Value) -> u64) -> u64 {
    iv.iter().map(f).sum()
}

fn pct(a: u64, b: u64) -> f64 {
    (a as f64 - b as f64).abs() * 100.0 / (b.max(1)) as f64
}

#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn top_intervals_add_up_to_vmstat_and_cgroup_filters() {
    if let Err(e) = lab::require_root() {
        panic!("top cannot run: {e}");
    }
    let _lock = lab::live_test_lock();
    let dir = scratch("swaptrace-top-");
    let _swap = lab::SwapFile::create(&dir, 2 << 30, None).unwrap();
    let inside = lab::MemCgroup::create("swaptrace-top-in-", 96 << 20).unwrap();
    let outside = lab::MemCgroup::create("swaptrace-top-out-", 96 << 20).unwrap();

    // 1. System-wide: the intervals' sums against their own vmstat deltas.
    let top = start_top(6, None);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let m = majors(workload(inside.path(), "192M", 1));
    let iv = intervals(top);
    assert_eq!(iv.len(), 6);
    let vm = |k: &str| sum(&iv, |i| i["vmstat"][k].as_i64().unwrap_or(0).max(0) as u64);
    let s = |k: &str| sum(&iv, |i| i["summary"][k].as_u64().unwrap_or(0));
    let rows = [
        ("major faults", s("faults_major"), vm("pgmajfault")),
        (
            "pages read",
            s("fault_pages_read") + s("other_reads_io"),
            vm("pswpin"),
        ),
        ("swap-out pages", s("swap_out_io"), vm("pswpout")),
    ];
    for (what, got, want) in rows {
        eprintln!("{what}: top {got}, vmstat {want} ({:.2}%)", pct(got, want));
        assert!(want > 1000, "{what}: the workload must swap");
        assert!(pct(got, want) <= 2.0, "{what}: top {got} vs vmstat {want}");
    }
    assert_eq!(sum(&iv, |i| i["lost"].as_u64().unwrap()), 0);
    eprintln!("workload majors (getrusage) {m}");

    // 2. --cgroup: only the inside workload, while another swaps outside.
    let top = start_top(8, Some(inside.path()));
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let (wi, wo) = (
        workload(inside.path(), "192M", 2),
        workload(outside.path(), "192M", 3),
    );
    let (mi, mo) = (majors(wi), majors(wo));
    let iv = intervals(top);
    let got = sum(&iv, |i| i["summary"]["faults_major"].as_u64().unwrap_or(0));
    let all = sum(&iv, |i| {
        i["vmstat"]["pgmajfault"].as_i64().unwrap_or(0).max(0) as u64
    });
    eprintln!("--cgroup: top {got} majors; inside {mi}, outside {mo}, vmstat {all}");
    assert!(mo > 1000 && mi > 1000, "both must swap: {mi} {mo}");
    assert!(
        pct(got, mi) <= 2.0,
        "top --cgroup {got} vs the inside workload's {mi}"
    );
    assert!(
        all >= got + mo * 9 / 10,
        "vmstat {all} saw the outside workload too"
    );
    drop((inside, outside, _swap));
    std::fs::remove_dir_all(&dir).unwrap();
}
