//! `cargo xtask bench --scale`: a synthetic trace of N events (200 M by
//! default) written to target/, then `synth`, `info`, `export` (JSONL and
//! Parquet) and `replay` of it timed, each with its peak RSS (wait4's
//! ru_maxrss of the child), and fault events per second per policy per
//! core (faults over the child's CPU time: decoding included).

use crate::cmd::{self, root};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The policies of `--policy all` on a trace without swapoff.
const POLICIES: [&str; 6] = ["cluster", "vma", "none", "fixed:8", "leap", "oracle"];

/// What one child used.
struct Usage {
    wall_s: f64,
    cpu_s: f64,
    max_rss_kib: u64,
    stdout: String,
}

/// Runs `cmd` (stdout to a file when `out` is Some, else captured) and
/// returns what it used, from `wait4()`.
fn measure(cmd: &mut Command, out: Option<&Path>) -> Result<Usage> {
    let capture = root().join("target/scale-stdout.txt");
    let sink = match out {
        Some(p) => std::fs::File::create(p),
        None => std::fs::File::create(&capture),
    }
    .context("stdout file")?;
    eprintln!("xtask: measuring {cmd:?}");
    let t = Instant::now();
    let child = cmd
        .current_dir(root())
        .stdout(Stdio::from(sink))
        .spawn()
        .with_context(|| format!("starting {cmd:?}"))?;
    let mut status = 0;
    // SAFETY: rusage is plain data, written by the kernel.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, whose pid this is.
    let r = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut ru) };
    let wall_s = t.elapsed().as_secs_f64();
    if r < 0 {
        bail!("wait4: {}", std::io::Error::last_os_error());
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        bail!("{cmd:?} failed: wait status {status}");
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(Usage {
        wall_s,
        cpu_s: secs(ru.ru_utime) + secs(ru.ru_stime),
        max_rss_kib: ru.ru_maxrss as u64,
        stdout: match out {
            Some(_) => String::new(),
            None => std::fs::read_to_string(&capture).unwrap_or_default(),
        },
    })
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

fn mib(kib: u64) -> String {
    format!("{} MiB", kib / 1024)
}

/// Faults replayed by each policy of a `replay --json`.
fn faults(json: &str) -> Result<Vec<(String, u64)>> {
    let v: serde_json::Value = serde_json::from_str(json).context("replay --json")?;
    let rows = v["policies"].as_array().context("no policies")?;
    Ok(rows
        .iter()
        .map(|p| {
            let m = &p["metrics"];
            let name = m["policy"].as_str().unwrap_or("?").to_string();
            (name, m["faults"].as_u64().unwrap_or(0))
        })
        .collect())
}

pub fn scale(events: u64, pages: u64, bench: bool) -> Result<()> {
    cmd::run(Command::new("cargo").args([
        "build",
        "--release",
        "-p",
        "swaptrace",
        "--no-default-features",
        "--features",
        "plot,parquet",
    ]))?;
    let target = target_dir();
    let exe = target.join("release/swaptrace");
    let trace = target.join("scale.swt");
    // One swap-out per page, then faults over them in shuffled blocks.
    let pages = pages.clamp(1, (events / 2).max(1));
    let faults_n = events.saturating_sub(pages).max(1);
    let st = |a: &[&str]| {
        let mut c = Command::new(&exe);
        c.args(a);
        c
    };
    let (p, f, m) = (
        pages.to_string(),
        faults_n.to_string(),
        (pages / 4).max(1).to_string(),
    );
    let t = trace.to_string_lossy().to_string();
    let synth = measure(
        &mut st(&[
            "synth",
            "-o",
            &t,
            "--force",
            "--pages",
            &p,
            "--faults",
            &f,
            "--memory-pages",
            &m,
        ]),
        None,
    )?;
    let size = std::fs::metadata(&trace).map(|m| m.len()).unwrap_or(0);
    let info = measure(&mut st(&["info", &t, "--json"]), None)?;
    let null = Path::new("/dev/null");
    let export = measure(&mut st(&["export", &t]), Some(null))?;
    let pq = target.join("scale.parquet").to_string_lossy().to_string();
    let parquet = measure(
        &mut st(&["export", &t, "--format", "parquet", "-o", &pq, "--force"]),
        None,
    )?;
    let _ = std::fs::remove_file(&pq);
    let all = measure(&mut st(&["replay", &t, "--policy", "all", "--json"]), None)?;
    let mut per = Vec::new();
    for name in POLICIES {
        let u = measure(&mut st(&["replay", &t, "--policy", name, "--json"]), None)?;
        let n = faults(&u.stdout)?.first().map_or(0, |r| r.1);
        per.push((name, n, u));
    }
    println!("\nscale benchmark: {events} events ({pages} pages, {faults_n} faults), {size} bytes on disk");
    println!(
        "{:<22} {:>9} {:>9} {:>10}",
        "COMMAND", "WALL s", "CPU s", "PEAK RSS"
    );
    for (name, u) in [
        ("synth", &synth),
        ("info", &info),
        ("export (jsonl)", &export),
        ("export (parquet)", &parquet),
        ("replay --policy all", &all),
    ] {
        println!(
            "{name:<22} {:>9.2} {:>9.2} {:>10}",
            u.wall_s,
            u.cpu_s,
            mib(u.max_rss_kib)
        );
    }
    println!(
        "\n{:<10} {:>12} {:>9} {:>10} {:>16} {:>12}",
        "POLICY", "FAULTS", "CPU s", "PEAK RSS", "M FAULTS/S/CORE", "B/ENTRY"
    );
    for (name, n, u) in &per {
        // Model state: the replay's peak beyond `info`'s (reading alone),
        // per swap entry of the trace.
        let model = u.max_rss_kib.saturating_sub(info.max_rss_kib) * 1024;
        println!(
            "{name:<10} {n:>12} {:>9.2} {:>10} {:>16.1} {:>12.1}",
            u.cpu_s,
            mib(u.max_rss_kib),
            *n as f64 / u.cpu_s.max(1e-9) / 1e6,
            model as f64 / pages as f64
        );
    }
    let all_faults: u64 = faults(&all.stdout)?.iter().map(|r| r.1).sum();
    println!(
        "\nreplay --policy all: {:.2} s wall, {:.1} M fault events/s/core over its CPU time",
        all.wall_s,
        all_faults as f64 / all.cpu_s.max(1e-9) / 1e6
    );
    if bench {
        cmd::run(
            Command::new("cargo")
                .args(["bench", "-p", "swaptrace", "--no-default-features"])
                .args(["--features", "plot", "--bench", "replay"])
                .env("FAULTS", faults_n.to_string()),
        )?;
    }
    Ok(())
}
