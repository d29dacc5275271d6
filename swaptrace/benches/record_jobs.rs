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
//! list), SWAPTRACE_BIN (the `swaptrace` to measure; default this build's),
//! RECORD_ARGS (more `record` options, e.g. `--twins always`).
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
        "burst" => burst(64 << 20, 6)?,
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
    // CPU time too (the job and its children): the swap job's wall time
    // varies with its I/O more than with what record adds.
    let cpu = [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN]
        .iter()
        .map(|&who| {
            // SAFETY: getrusage fills the struct it is given.
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            unsafe { libc::getrusage(who, &mut ru) };
            let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
            t(ru.ru_utime) + t(ru.ru_stime)
        })
        .sum::<f64>();
    if let Ok(out) = std::env::var(OUT_ENV) {
        std::fs::write(&out, format!("{secs} {cpu}")).map_err(|e| format!("{out}: {e}"))?;
    }
    Ok(())
}

/// A private anonymous mapping of `bytes` (the caller unmaps it).
fn anon_map(bytes: usize) -> Result<*mut libc::c_void, String> {
    // SAFETY: a fresh private anonymous mapping, nothing else touched.
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
    Ok(p)
}

/// The event rate a recorder must keep up with: in each of two processes
/// (one per core here), `bytes` of zero-filled pages pushed out with
/// MADV_PAGEOUT (swap-outs without I/O, SWPOUT_ZERO) and read back
/// (swap-in faults, SWPIN_ZERO), `rounds` times: two events per page and
/// round, at memory speed.
fn burst(bytes: usize, rounds: u32) -> Result<(), String> {
    let page = 4096;
    // SAFETY: fork in a single-threaded bench process; the child only
    // touches its own copy and exits.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err("fork failed".into());
    }
    let p = anon_map(bytes)?;
    let mut sum = 0u64;
    for _ in 0..rounds {
        for off in (0..bytes).step_by(page) {
            // SAFETY: inside the mapping; a zero keeps the page zero-filled.
            unsafe { std::ptr::write_volatile((p as *mut u8).add(off), 0) };
        }
        // SAFETY: the mapping made above.
        unsafe { libc::madvise(p, bytes, libc::MADV_PAGEOUT) };
        for off in (0..bytes).step_by(page) {
            // SAFETY: inside the mapping.
            sum += unsafe { std::ptr::read_volatile((p as *const u8).add(off)) } as u64;
        }
    }
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(p, bytes) };
    if child == 0 {
        // SAFETY: the child leaves without running the parent's exit path.
        unsafe { libc::_exit(i32::from(sum != 0)) };
    }
    let mut status = 0;
    // SAFETY: waits for the child forked above.
    unsafe { libc::waitpid(child, &mut status, 0) };
    if sum != 0 || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err("burst: a page read back was not zero".into());
    }
    Ok(())
}

/// mmap `bytes` of anonymous memory, write a byte per page, munmap; `rounds` times.
fn touch_rounds(bytes: usize, rounds: u32) -> Result<(), String> {
    let page = 4096;
    for _ in 0..rounds {
        let p = anon_map(bytes)?;
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

    /// The job's wall and CPU seconds.
    fn secs(&self) -> Result<(f64, f64), String> {
        let t = std::fs::read_to_string(self.dir.join("secs")).map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(self.dir.join("secs"));
        let mut v = t.split_whitespace().map(|x| x.parse::<f64>());
        match (v.next(), v.next()) {
            (Some(Ok(w)), Some(Ok(c))) => Ok((w, c)),
            _ => Err(format!("job time: {t:?}")),
        }
    }

    fn plain(&self, job: &Job, cg: &MemCgroup) -> Result<(f64, f64), String> {
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

    fn recorded(&self, job: &Job, cg: &MemCgroup) -> Result<((f64, f64), Rec), String> {
        let trace = self.dir.join("bench.swt");
        let mut c = self.job_cmd(job, cg, &self.exe);
        c.args(["record", "--json", "-o"]).arg(&trace);
        if let Ok(more) = std::env::var("RECORD_ARGS") {
            c.args(more.split_whitespace());
        }
        c.arg("--").arg(&self.me).stderr(Stdio::null());
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

    fn under_bpftrace(&self, job: &Job, cg: &MemCgroup) -> Result<(f64, f64), String> {
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
        "swaptrace: {}; {runs} alternating runs per job; job wall and CPU time, medians",
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
        Job {
            name: "burst",
            cgroup: false,
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
    // Per round: nothing, swaptrace, bpftrace (wall, CPU), side by side.
    let mut rounds: Vec<[Option<(f64, f64)>; 3]> = Vec::new();
    let mut recs = Vec::new();
    for i in 0..runs {
        let mut round = [None; 3];
        // Rotate which goes first, so drift favours none of the three.
        for k in 0..3 {
            match (i + k) % 3 {
                0 => round[0] = Some(b.plain(job, cg)?),
                1 => {
                    let (s, r) = b.recorded(job, cg)?;
                    round[1] = Some(s);
                    recs.push(r);
                }
                _ => match b.under_bpftrace(job, cg) {
                    Ok(s) => round[2] = Some(s),
                    Err(e) if b.bpftrace.is_some() => println!("  bpftrace run: {e}"),
                    Err(_) => {}
                },
            }
        }
        rounds.push(round);
    }
    println!("== {}", job.name);
    for (what, pick) in [("wall", 0usize), ("cpu", 1)] {
        let of = |k: usize| -> Vec<f64> {
            rounds
                .iter()
                .filter_map(|r| r[k].map(|t| [t.0, t.1][pick]))
                .collect()
        };
        let none = of(0);
        let mn = median(&none);
        // The median of each round's own ratio is less exposed to the
        // machine's drift than the ratio of the medians.
        let paired = |k: usize| {
            let r: Vec<f64> = rounds
                .iter()
                .filter_map(|r| Some([r[k]?.0, r[k]?.1][pick] / [r[0]?.0, r[0]?.1][pick]))
                .collect();
            (median(&r) - 1.0) * 100.0
        };
        let fmt = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:.3}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        println!("  {what:<4} nothing    {mn:.3} s   [{}]", fmt(&none));
        for (k, name) in [(1, "swaptrace"), (2, "bpftrace")] {
            let v = of(k);
            if v.is_empty() {
                continue;
            }
            let m = median(&v);
            println!(
                "  {what:<4} {name:<10} {m:.3} s {:>7}  paired {:+.1}%   [{}]",
                pct(m, mn),
                paired(k),
                fmt(&v)
            );
        }
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
    // The rate while the job ran, and over the whole recording.
    let job_s: f64 = rounds.iter().filter_map(|r| r[1].map(|t| t.0)).sum();
    println!(
        "  record: {:.0} events/s in the job ({:.0} over the recording), {:.0} lost, {per_event} ({:.0} events/run)",
        events / job_s.max(1e-9),
        events / el.max(1e-9),
        lost,
        events / recs.len().max(1) as f64
    );
    // One more run with bpf_stats_enabled for the eBPF time per program.
    let knob = Knob::set("/proc/sys/kernel/bpf_stats_enabled", "1").map_err(|e| e.to_string())?;
    let ((w, _), r) = b.recorded(job, cg)?;
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
