//! Helpers of the live `top` tests (live_top.rs, live_prometheus.rs).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use swaptrace::lab;

pub const EXE: &str = env!("CARGO_BIN_EXE_swaptrace");

/// /var/tmp/<prefix><pid>, created.
pub fn scratch(prefix: &str) -> PathBuf {
    let d = PathBuf::from(format!("/var/tmp/{prefix}{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A swapping workload of `size` in `cg`.
pub fn workload(cg: &Path, size: &str, seed: u32) -> std::process::Child {
    let mut c = Command::new(EXE);
    c.args([
        "workload",
        "--json",
        "--size",
        size,
        "--pattern",
        "shuffled-blocks:16",
        "--seed",
    ])
    .arg(seed.to_string())
    .stdout(Stdio::piped());
    lab::enter_cgroup_on_exec(&mut c, cg);
    c.spawn().unwrap()
}

/// The workload's major faults (getrusage), once it has exited.
pub fn majors(w: std::process::Child) -> u64 {
    let out = w.wait_with_output().unwrap();
    assert!(out.status.success(), "workload: {:?}", out.status);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["maj_faults"].as_u64().unwrap()
}
