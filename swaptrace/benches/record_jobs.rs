//! Recording overhead on the jobs of issue 17, each alternately with
//! nothing attached, under `swaptrace record` (system-wide) and under
//! bpftrace counting the same tracepoints (the anchor):
//! - `dd`: syscall-heavy, never swaps (`dd bs=1 count=2000000`);
//! - `faults`: page-fault-heavy, never swaps (mmap 256 MiB, touch, munmap, 8 rounds);
//! - `swap`: 256 MiB of shuffled 16-page blocks in a 128 MiB cgroup, 1 GiB swap;
//! - `demo`: the built-in workload of `record_overhead` (384 MiB, same cgroup).
//!
//! Prints per job the median job time of each, the overhead, then one more
//! run under `record` with `kernel.bpf_stats_enabled=1` (restored): calls
//! and ns per call of each program. Env: RUNS (default 5), JOBS (a comma
//! list), SWAPTRACE_BIN (the `swaptrace` to measure; default this build's).
//! Needs root; prints why when it cannot run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use swaptrace::lab::{self, Knob, MemCgroup, SwapFile};
use swaptrace::record::workload_command;
use swaptrace::workload::{Pattern, WorkloadSpec};

const EXE: &str = env!("CARGO_BIN_EXE_swaptrace");
/// Set in the environment of a re-executed bench binary: run this job.
const JOB_ENV: &str = "SWAPTRACE_BENCH_JOB";
/// Where the job writes its own wall time (seconds).
const OUT_ENV: &str = "SWAPTRACE_BENCH_OUT";
/// A cgroup directory the job enters first.
const CG_ENV: &str = "SWAPTRACE_BENCH_CG";

/// The tracepoints the tracepoint backend attaches (category, name); it
/// takes swapon/swapoff from /proc, so none of the syscalls category.
const TRACEPOINTS: &[(&str, &str)] = &[
    ("exceptions", "page_fault_user"),
    ("exceptions", "page_fault_kernel"),
    ("memcg", "count_memcg_events"),
    ("kmem", "rss_stat"),
    ("vmscan", "mm_vmscan_write_folio"),
    ("vmscan", "mm_vmscan_direct_reclaim_begin"),
    ("vmscan", "mm_vmscan_direct_reclaim_end"),
    ("vmscan", "mm_vmscan_memcg_reclaim_begin"),
    ("vmscan", "mm_vmscan_memcg_reclaim_end"),
    ("huge_memory", "mm_collapse_huge_page_swapin"),
    ("huge_memory", "mm_khugepaged_scan_pmd"),
    ("huge_memory", "mm_collapse_huge_page"),
    ("sched", "sched_process_fork"),
];

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The job itself, in a re-executed bench binary.
fn run_job(name: &str) -> Result<(), String> {
    if let Ok(cg) = std::env::var(CG_ENV) {
        std::fs::write(
            Path::new(&cg).join("cgroup.procs"),
            std::process::id().to_string(),
        )
        .map_err(|e| format!("joining {cg}: {e}"))?;
    }
    let exe = std::env::var("SWAPTRACE_BIN").unwrap_or_else(|_| EXE.into());
    let start = Instant::now();
    match name {
        "dd" => {
            let ok = Command::new("dd")
                .args(["if=/dev/zero", "of=/dev/null", "bs=1", "count=2000000"])
                .stderr(Stdio::null())
                .status()
                .map_err(|e| e.to_string())?
                .success();
            if !ok {
                return Err("dd failed".into());
            }
        }
        "faults" => touch_rounds(256 << 20, 8)?,
        "swap" | "demo" => {
            let spec = WorkloadSpec {
                size_bytes: if name == "swap" { 256 << 20 } else { 384 << 20 },
                pattern: Pattern::ShuffledBlocks { block_pages: 16 },
                passes: 1,
                seed: 1,
                ..WorkloadSpec::default()
            };
            let cmd = workload_command(Path::new(&exe), &spec);
            let ok = Command::new(&cmd[0])
                .args(&cmd[1..])
                .stdout(Stdio::null())
                .status()
                .map_err(|e| e.to_string())?
                .success();
            if !ok {
                return Err("workload failed".into());
            }
        }
        _ => return Err(format!("no job {name}")),
    }
    let secs = start.elapsed().as_secs_f64();
    if let Ok(out) = std::env::var(OUT_ENV) {
        std::fs::write(&out, secs.to_string()).map_err(|e| format!("{out}: {e}"))?;
    }
    Ok(())
}

/// mmap `bytes` of anonymous memory, write a byte per page, munmap; `rounds` times.
fn touch_rounds(bytes: usize, rounds: u32) -> Result<(), String> {
    let page = 4096;
    for _ in 0..rounds {
        // SAFETY: a fresh private anonymous mapping, unmapped below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err("mmap failed".into());
        }
        for off in (0..bytes).step_by(page) {
            // SAFETY: inside the mapping.
            unsafe { std::ptr::write_volatile((p as *mut u8).add(off), 1) };
        }
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(p, bytes) };
    }
    Ok(())
}

struct Job {
    name: &'static str,
    cgroup: bool,
}

struct Bench {
    me: PathBuf,
    exe: String,
    dir: PathBuf,
    bpftrace: Option<String>,
}

/// What one run under `record` reported.
#[derive(Default)]
struct Rec {
    records: f64,
    bytes: f64,
    lost: f64,
    elapsed: f64,
    stats: Vec<(String, u64, u64)>,
}

impl Bench {
    fn job_cmd(&self, job: &Job, cg: &MemCgroup, prog: &str) -> Command {
        let mut c = Command::new(prog);
        c.env(JOB_ENV, job.name)
            .env(OUT_ENV, self.dir.join("secs"))
            .env("SWAPTRACE_BIN", &self.exe);
        if job.cgroup {
            c.env(CG_ENV, cg.path());
        } else {
            c.env_remove(CG_ENV);
        }
        c
    }

    fn secs(&self) -> Result<f64, String> {
        let t = std::fs::read_to_string(self.dir.join("secs")).map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(self.dir.join("secs"));
        t.trim().parse().map_err(|e| format!("job time: {e}"))
    }

    fn plain(&self, job: &Job, cg: &MemCgroup) -> Result<f64, String> {
        let me = self.me.display().to_string();
        let st = self
            .job_cmd(job, cg, &me)
            .status()
            .map_err(|e| e.to_string())?;
        if !st.success() {
            return Err(format!("{} failed", job.name));
        }
        self.secs()
    }

    fn recorded(&self, job: &Job, cg: &MemCgroup) -> Result<(f64, Rec), String> {
        let trace = self.dir.join("bench.swt");
        let mut c = self.job_cmd(job, cg, &self.exe);
        c.args(["record", "--json", "-o"])
            .arg(&trace)
            .arg("--")
            .arg(&self.me)
            .stderr(Stdio::null());
        let out = c.output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!("record failed: {}", out.status));
        }
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).map_err(|e| format!("record --json: {e}"))?;
        let r = &v["recorded"];
        let f = |k: &str| r[k].as_f64().unwrap_or(0.0);
        let lost = r["summary"]["lost"]
            .as_object()
            .map(|m| m.values().filter_map(|x| x.as_f64()).sum())
            .unwrap_or(0.0);
        let stats = r["bpf_stats"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|p| {
                        (
                            p["program"].as_str().unwrap_or("?").to_string(),
                            p["run_count"].as_u64().unwrap_or(0),
                            p["run_time_ns"].as_u64().unwrap_or(0),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let _ = std::fs::remove_file(&trace);
        let rec = Rec {
            records: f("records"),
            bytes: f("bytes"),
            lost,
            elapsed: f("elapsed_s"),
            stats,
        };
        Ok((self.secs()?, rec))
    }

    fn under_bpftrace(&self, job: &Job, cg: &MemCgroup) -> Result<f64, String> {
        let Some(script) = &self.bpftrace else {
            return Err("no bpftrace".into());
        };
        let mut c = self.job_cmd(job, cg, "bpftrace");
        c.args(["-q", "-e", script, "-c"])
            .arg(&self.me)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let st = c.status().map_err(|e| e.to_string())?;
        if !st.success() {
            return Err(format!("bpftrace failed: {st}"));
        }
        self.secs()
    }
}

/// The bpftrace script counting every tracepoint it can attach; prints
/// those it cannot.
fn bpftrace_script() -> Option<String> {
    let listed = Command::new("bpftrace").arg("-l").output().ok()?;
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    let mut ok = Vec::new();
    for (cat, name) in TRACEPOINTS {
        let tp = format!("tracepoint:{cat}:{name}");
        if listed.lines().any(|l| l.trim() == tp) {
            ok.push(tp);
        } else {
            println!("bpftrace: cannot attach {tp} (not listed by bpftrace -l)");
        }
    }
    (!ok.is_empty()).then(|| format!("{} {{ @[probe] = count(); }}", ok.join(",")))
}

fn pct(x: f64, base: f64) -> String {
    format!("{:+.1}%", (x / base - 1.0) * 100.0)
}

fn main() {
    if let Ok(job) = std::env::var(JOB_ENV) {
        if let Err(e) = run_job(&job) {
            eprintln!("job {job}: {e}");
            std::process::exit(1);
        }
        return;
    }
    if let Err(e) = lab::require_root() {
        println!("record_jobs: not run: {e}");
        return;
    }
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let only = std::env::var("JOBS").unwrap_or_default();
    let _ = lab::mount_tracefs();
    // bpftrace needs locked memory (ulimit -l unlimited), inherited by it.
    let inf = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: a valid rlimit.
    unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &inf) };
    let dir = PathBuf::from(format!("/var/tmp/swaptrace-jobs-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        println!("record_jobs: not run: {}: {e}", dir.display());
        return;
    }
    let bench = Bench {
        me: std::env::current_exe().unwrap_or_default(),
        exe: std::env::var("SWAPTRACE_BIN").unwrap_or_else(|_| EXE.into()),
        dir: dir.clone(),
        bpftrace: bpftrace_script(),
    };
    if bench.bpftrace.is_none() {
        println!("bpftrace: not found or attaches nothing: no anchor column");
    }
    let swap = SwapFile::create(&dir, 1 << 30, None);
    let cg = MemCgroup::create("swaptrace-jobs-", 128 << 20);
    let (swap, cg) = match (swap, cg) {
        (Ok(s), Ok(c)) => (s, c),
        (s, c) => {
            println!(
                "record_jobs: not run: swap {:?}, cgroup {:?}",
                s.err(),
                c.err()
            );
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
    };
    println!(
        "swaptrace: {}; {runs} alternating runs per job; job wall time, medians",
        bench.exe
    );
    let jobs = [
        Job {
            name: "dd",
            cgroup: false,
        },
        Job {
            name: "faults",
            cgroup: false,
        },
        Job {
            name: "swap",
            cgroup: true,
        },
        Job {
            name: "demo",
            cgroup: true,
        },
    ];
    for job in jobs
        .iter()
        .filter(|j| only.is_empty() || only.split(',').any(|o| o == j.name))
    {
        if let Err(e) = one_job(&bench, job, &cg, runs) {
            println!("{}: failed: {e}", job.name);
        }
    }
    drop(cg);
    drop(swap);
    let _ = std::fs::remove_dir_all(&dir);
}

fn one_job(b: &Bench, job: &Job, cg: &MemCgroup, runs: usize) -> Result<(), String> {
    let (mut none, mut rec, mut bt) = (Vec::new(), Vec::new(), Vec::new());
    let mut recs = Vec::new();
    for i in 0..runs {
        // Rotate which goes first, so drift favours none of the three.
        for k in 0..3 {
            match (i + k) % 3 {
                0 => none.push(b.plain(job, cg)?),
                1 => {
                    let (s, r) = b.recorded(job, cg)?;
                    rec.push(s);
                    recs.push(r);
                }
                _ => match b.under_bpftrace(job, cg) {
                    Ok(s) => bt.push(s),
                    Err(e) if b.bpftrace.is_some() => println!("  bpftrace run: {e}"),
                    Err(_) => {}
                },
            }
        }
    }
    let (mn, mr, mb) = (median(&none), median(&rec), median(&bt));
    let fmt = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.3}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    // Each round runs the three side by side: the median of the rounds'
    // own ratios is less exposed to the machine's drift than the ratio of
    // medians.
    let paired = |v: &[f64]| {
        let r: Vec<f64> = v.iter().zip(&none).map(|(x, n)| x / n).collect();
        format!("paired {:+.1}%", (median(&r) - 1.0) * 100.0)
    };
    println!("== {}", job.name);
    println!("  nothing    {mn:.3} s   [{}]", fmt(&none));
    println!(
        "  swaptrace  {mr:.3} s {:>7}  {}   [{}]",
        pct(mr, mn),
        paired(&rec),
        fmt(&rec)
    );
    if !bt.is_empty() {
        println!(
            "  bpftrace   {mb:.3} s {:>7}  {}   [{}]",
            pct(mb, mn),
            paired(&bt),
            fmt(&bt)
        );
    }
    let sum = |f: fn(&Rec) -> f64| recs.iter().map(f).sum::<f64>();
    let (events, bytes, lost, el) = (
        sum(|r| r.records),
        sum(|r| r.bytes),
        // An empty f64 sum is -0.0.
        sum(|r| r.lost) + 0.0,
        sum(|r| r.elapsed),
    );
    // Bytes per event only when there were events (else header and footer).
    let per_event = if events > 0.0 {
        format!("{:.2} bytes/event", bytes / events)
    } else {
        "no events".into()
    };
    println!(
        "  record: {:.0} events/s, {:.0} lost, {per_event} ({:.0} events/run)",
        events / el.max(1e-9),
        lost,
        events / recs.len().max(1) as f64
    );
    // One more run with bpf_stats_enabled for the eBPF time per program.
    let knob = Knob::set("/proc/sys/kernel/bpf_stats_enabled", "1").map_err(|e| e.to_string())?;
    let (w, r) = b.recorded(job, cg)?;
    drop(knob);
    let mut total = 0;
    println!("  bpf_stats (one extra run, job {w:.3} s):");
    for (p, calls, ns) in r.stats.iter().filter(|p| p.1 > 0) {
        total += ns;
        println!(
            "    {p:<28} {calls:>10} calls {:>7.0} ns/call {:>8.1} ms",
            *ns as f64 / *calls as f64,
            *ns as f64 / 1e6
        );
    }
    println!(
        "    total {:.1} ms = {:.1}% of the job's time",
        total as f64 / 1e6,
        total as f64 / 1e7 / w
    );
    Ok(())
}
