//! `swaptrace record`: attach, drain the ring buffer with tokio, write the
//! trace, and always finalize it.

use super::ring::{drain, drains_for};
use super::Recorder;
use crate::lab::{self, VmStat};
use crate::probe::{self, KernelFacts, LiveError, Probe, ProbeConfig};
use crate::trace::{
    Footer, Footprint, Header, Readahead, Record, Summary, TraceError, TraceWriter, FORMAT_VERSION,
};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use swaptrace_common::names;
use tokio::io::unix::AsyncFd;

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Probe(#[from] LiveError),
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error(transparent)]
    Lab(#[from] lab::LabError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("--cgroup {0}: not a cgroup directory")]
    Cgroup(PathBuf),
}

#[derive(Clone, Debug, Default)]
pub struct RecordOptions {
    pub output: PathBuf,
    pub duration: Option<Duration>,
    /// Command to run (and trace) once probes are attached.
    pub command: Vec<String>,
    /// Memory cgroup to trace (it and its descendants); the command is started inside it.
    pub cgroup: Option<PathBuf>,
    /// A cgroup to start the command in without filtering on it.
    pub spawn_cgroup: Option<PathBuf>,
    pub pid: Option<u32>,
    pub ring_bytes: Option<u32>,
    /// Use kprobes where fentry would do.
    pub no_fentry: bool,
    /// Neither fentry nor kprobes: the tracepoint backend.
    pub tracepoints_only: bool,
    /// Which programs to attach twice (`swaptrace_common::twin`); None:
    /// those this kernel may preempt ([`probe::KernelFacts::twins_wanted`]).
    pub twins: Option<probe::Twins>,
    /// Keep a live line (events, lost, bytes) on stderr when it is a terminal.
    pub progress: bool,
    /// Say nothing on stderr (no "recording …" line, no live line).
    pub quiet: bool,
    /// The eBPF side's anomaly log on stderr (aya-log warnings).
    pub verbose: bool,
    /// The command's standard output goes to our standard error (when
    /// ours carries JSON).
    pub stdout_to_stderr: bool,
}

/// What a finished recording reports.
#[derive(Debug, serde::Serialize)]
pub struct Recorded {
    pub path: PathBuf,
    pub summary: Summary,
    pub records: u64,
    pub bytes: u64,
    pub elapsed_s: f64,
    pub exit_code: Option<i32>,
    /// The signal that ended the recording ("SIGINT", "SIGTERM"), which
    /// then killed the command if it still ran.
    pub stopped_by: Option<&'static str>,
    pub vmstat_delta: std::collections::BTreeMap<String, i64>,
    pub attached: Vec<String>,
    pub skipped: Vec<(String, String)>,
    /// Programs attached twice against preemption (`swaptrace_common::twin`).
    pub twinned: usize,
    /// eBPF run time per program (zero unless kernel.bpf_stats_enabled=1).
    pub bpf_stats: Vec<probe::ProgStat>,
}

fn clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn monotonic_ns() -> u64 {
    clock(libc::CLOCK_MONOTONIC)
}

fn mem_total_kib() -> u64 {
    lab::proc_kib("/proc/meminfo", "MemTotal").unwrap_or(0)
}

pub fn readahead_settings() -> Readahead {
    Readahead {
        page_cluster: lab::Knob::read("/proc/sys/vm/page-cluster")
            .ok()
            .and_then(|v| v.trim().parse().ok()),
        vma_ra_enabled: lab::Knob::read("/sys/kernel/mm/swap/vma_ra_enabled")
            .ok()
            .map(|v| v.trim() == "true"),
    }
}

fn header(facts: &KernelFacts, sources: Vec<crate::trace::MetricSource>, target: String) -> Header {
    Header {
        format_version: FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        kernel_release: facts.release.clone(),
        page_size: probe::page_size(),
        monotonic_start_ns: monotonic_ns(),
        realtime_start_ns: clock(libc::CLOCK_REALTIME),
        mem_total_kib: mem_total_kib(),
        swap_devices: lab::swap_devices().unwrap_or_default(),
        readahead: readahead_settings(),
        metrics: sources,
        vmstat_start: VmStat::read().map(|v| v.0).unwrap_or_default(),
        target,
        memory_limit_bytes: None,
        zswap: crate::trace::zswap_params(),
        thp: crate::trace::thp_settings(),
        thp_scan_status: probe::tpformat::read_format("huge_memory", "mm_khugepaged_scan_pmd")
            .map(|f| probe::tpformat::symbols(&f, "status"))
            .unwrap_or_default(),
        hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_string()),
        keeps_unmapped_dirty: facts.keeps_unmapped_dirty(),
        lru_gen_clears_readahead: facts.lru_gen_clears_readahead(),
        write_ends: None,
    }
}

/// memory.limit_in_bytes (v1) or memory.max (v2) of a cgroup directory;
/// None when unlimited or unreadable.
fn cgroup_limit(dir: &Path) -> Option<u64> {
    ["memory.limit_in_bytes", "memory.max"]
        .iter()
        .find_map(|f| {
            let v: u64 = std::fs::read_to_string(dir.join(f))
                .ok()?
                .trim()
                .parse()
                .ok()?;
            // v1 reports "no limit" as a huge page-aligned number.
            (v < 1 << 60).then_some(v)
        })
}

fn target_text(opts: &RecordOptions) -> String {
    let mut parts = Vec::new();
    if !opts.command.is_empty() {
        parts.push(format!("command: {}", opts.command.join(" ")));
    }
    if let Some(p) = opts.pid {
        parts.push(format!("pid {p}"));
    }
    if let Some(c) = &opts.cgroup {
        parts.push(format!("cgroup {}", c.display()));
    }
    if opts.pid.is_none() && opts.cgroup.is_none() {
        parts.push("system-wide".into());
    }
    parts.join(", ")
}

pub(super) fn cgroup_inode(dir: &Path) -> Result<u64, RecordError> {
    use std::os::unix::fs::MetadataExt;
    let procs = dir.join("cgroup.procs");
    if !procs.exists() {
        return Err(RecordError::Cgroup(dir.to_path_buf()));
    }
    std::fs::metadata(dir)
        .map(|m| m.ino())
        .map_err(|source| RecordError::Io {
            what: dir.display().to_string(),
            source,
        })
}

pub(super) type Ring = AsyncFd<aya::maps::RingBuf<aya::maps::MapData>>;

/// Probes attached, and what reading them needs.
pub(super) struct Attached {
    pub probe: Probe,
    pub plans: Vec<probe::MetricPlan>,
    pub fd: Ring,
    pub sigint: tokio::signal::unix::Signal,
    pub sigterm: tokio::signal::unix::Signal,
}

/// Which probes a recording may use besides tracepoints.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Exact {
    All,
    /// Kprobes where fentry would do (`--no-fentry`).
    NoFentry,
    /// Tracepoints only (`--tracepoints`).
    None,
}

/// Loads and attaches the probes (fentry tried, kprobes used, as `exact`
/// allows), takes the ring buffer and the signals. Within a tokio runtime.
pub(super) fn attach(
    facts: &mut KernelFacts,
    cfg: &ProbeConfig,
    exact: Exact,
) -> Result<Attached, RecordError> {
    let mut probe = Probe::load(facts, cfg)?;
    facts.fentry = match exact {
        Exact::All => probe.trial_fentry(),
        Exact::NoFentry => probe::Trial::Refused("disabled by --no-fentry".into()),
        Exact::None => probe::Trial::Refused("disabled by --tracepoints".into()),
    };
    if exact == Exact::None {
        facts.kprobes = Err("disabled by --tracepoints".into());
    }
    let mut plans = probe::plan(facts);
    probe.attach(facts, &mut plans)?;
    // After attaching: swap-outs since are marked by the probes.
    probe.mark_swap_holders()?;
    let ring = probe.take_events()?;
    // SAFETY: the RingBuf owns its map fd for as long as the AsyncFd lives.
    let fd = unsafe { AsyncFd::register(ring) }.map_err(|e| RecordError::Io {
        what: "ring buffer fd".into(),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(Attached {
        probe,
        plans,
        fd,
        sigint: signal(tokio::signal::unix::SignalKind::interrupt())?,
        sigterm: signal(tokio::signal::unix::SignalKind::terminate())?,
    })
}

/// Attaches, records until the duration ends, the command exits, or
/// SIGINT/SIGTERM, and finalizes the trace in every case but a failed start.
pub fn record(opts: &RecordOptions) -> Result<Recorded, RecordError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| RecordError::Io {
            what: "tokio runtime".into(),
            source,
        })?;
    rt.block_on(record_async(opts))
}

async fn record_async(opts: &RecordOptions) -> Result<Recorded, RecordError> {
    lab::require_root()?;
    lab::journal::restore_dead_reporting();
    let mut facts = KernelFacts::gather();
    let cfg = ProbeConfig {
        filter_pid: opts.pid,
        filter_cgroup: opts.cgroup.as_deref().map(cgroup_inode).transpose()?,
        ring_bytes: opts.ring_bytes,
        // aya-log's Level::Warn, or 0: off.
        log_level: if opts.verbose { 2 } else { 0 },
        twins: opts.twins.unwrap_or_else(|| facts.twins_wanted()),
    };
    let Attached {
        mut probe,
        plans,
        mut fd,
        mut sigint,
        mut sigterm,
    } = attach(
        &mut facts,
        &cfg,
        match (opts.tracepoints_only, opts.no_fentry) {
            (true, _) => Exact::None,
            (false, true) => Exact::NoFentry,
            (false, false) => Exact::All,
        },
    )?;
    let mut head = header(&facts, probe::sources(&plans), target_text(opts));
    head.write_ends = Some(
        probe
            .attached
            .iter()
            .any(|a| a.ends_with(" block_rq_complete")),
    );
    if head.write_ends == Some(false) && !opts.quiet {
        // The replay then cannot tell when written folios lose PG_reclaim.
        let why = probe
            .skipped
            .iter()
            .find(|(target, _)| target == "block_rq_complete")
            .map_or("not attached", |(_, why)| why.as_str());
        eprintln!("swaptrace: the end of swap writes' I/O is not recorded: {why}");
    }
    head.memory_limit_bytes = opts
        .cgroup
        .as_ref()
        .or(opts.spawn_cgroup.as_ref())
        .and_then(|d| cgroup_limit(d));
    let mut writer = TraceWriter::create(&opts.output, &head)?;
    writer.set_level(crate::trace::RECORD_ZSTD_LEVEL);
    // Under its name from the start: a killed recording leaves its trace.
    writer.publish()?;
    let mut rec = Recorder::new(head.page_size);
    rec.set_pte_reader(Box::new(super::pagemap::Pagemaps::new(head.page_size)));
    let started = Instant::now();

    let mut child = match opts.command.split_first() {
        Some((prog, args)) => {
            let mut cmd = std::process::Command::new(prog);
            cmd.args(args);
            if let Some(cg) = opts.cgroup.as_ref().or(opts.spawn_cgroup.as_ref()) {
                lab::enter_cgroup_on_exec(&mut cmd, cg);
            }
            // A killed recorder takes its workload along.
            lab::die_with_parent(&mut cmd);
            if opts.stdout_to_stderr {
                cmd.stdout(std::io::stderr());
            }
            let child = tokio::process::Command::from(cmd)
                .spawn()
                .map_err(|source| RecordError::Io {
                    what: format!("starting {prog}"),
                    source,
                });
            match child {
                Ok(c) => Some(c),
                Err(e) => {
                    // Leave a valid, finalized (empty) trace behind.
                    let _ = writer.finish(&Footer::default());
                    return Err(e);
                }
            }
        }
        None => None,
    };

    // Journaled too: `lab restore` kills it if it outlived us somehow.
    let child_entry = child.as_ref().and_then(|c| c.id()).and_then(|pid| {
        let start_time = lab::journal::start_time(pid)?;
        lab::journal::begin(lab::journal::Change::Child { pid, start_time })
            .map_err(|e| eprintln!("swaptrace: journal: {e}"))
            .ok()
            .flatten()
    });
    if !opts.quiet {
        let n = plans.iter().filter(|p| p.chosen.is_some()).count();
        let twins = match probe.twinned {
            0 => String::new(),
            t => format!(" ({t} programs attached twice against preemption)"),
        };
        eprintln!(
            "recording {n} metrics to {}{twins}; Ctrl-C to stop",
            opts.output.display()
        );
    }
    let bar = progress(opts.progress && !opts.quiet);
    // swapon/swapoff from /proc where no probe may take them.
    let watched = plans.iter().any(|p| {
        p.metric == "swapoff"
            && p.chosen
                .as_ref()
                .is_some_and(|c| c.backend == probe::Backend::Procfs)
    });
    let mut swaps = watched
        .then(super::swapwatch::Seen::now)
        .flatten()
        .map(|seen| super::swapwatch::SwapWatch::new(monotonic_ns(), seen));
    let mut swap_tick = tokio::time::interval(Duration::from_millis(super::swapwatch::POLL_MS));
    swap_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let deadline = opts.duration.map(|d| tokio::time::Instant::now() + d);
    // The probe wakes us only when 512 KiB are waiting: drain on a timer too.
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut exit_code = None;
    let mut out = Vec::with_capacity(4096);
    let mut failure: Option<RecordError> = None;
    // The traced process (and its descendants), to sample their footprint.
    let mut samples = Sampler {
        traced: child.as_ref().and_then(|c| c.id()).or(opts.pid),
        cgroup: head
            .memory_limit_bytes
            .and(opts.cgroup.as_ref().or(opts.spawn_cgroup.as_ref()).cloned()),
        ..Sampler::default()
    };

    let mut stopped_by = None;
    loop {
        tokio::select! {
            guard = fd.readable_mut() => {
                let mut guard = match guard {
                    Ok(g) => g,
                    Err(source) => { failure = Some(RecordError::Io { what: "ring buffer poll".into(), source }); break; }
                };
                // Still ready after a full batch: the select comes back.
                if !drain(guard.get_inner_mut(), &mut rec, &mut out) {
                    guard.clear_ready();
                }
                if let Err(e) = write_all(&mut writer, &mut out) { failure = Some(e); break; }
            }
            status = wait_child(&mut child) => {
                exit_code = status.map(exit_code_of);
                break;
            }
            _ = sleep_until(deadline) => break,
            _ = sigint.recv() => { stopped_by = Some("SIGINT"); break }
            _ = sigterm.recv() => { stopped_by = Some("SIGTERM"); break }
            _ = swap_tick.tick(), if swaps.is_some() => {
                if let Some(w) = swaps.as_mut() {
                    let from = out.len();
                    w.poll(monotonic_ns(), &mut out);
                    rec.add_records(from, &out);
                }
            }
            _ = tick.tick() => {
                let _ = drain(fd.get_mut(), &mut rec, &mut out);
                if let Err(e) = write_all(&mut writer, &mut out) { failure = Some(e); break; }
                if let Err(e) = writer.tick() { failure = Some(e.into()); break; }
                samples.tick(monotonic_ns());
                match &bar {
                    Some(b) => {
                        b.suspend(|| probe.flush_log());
                        b.set_message(live_line(started.elapsed().as_secs_f64(), &writer, &probe));
                    }
                    None => probe.flush_log(),
                }
            }
        }
    }
    // Stop the child if we stopped first, then take what is left in the ring.
    if let Some(c) = child.as_mut() {
        if exit_code.is_none() {
            let _ = c.start_kill();
            exit_code = c.wait().await.ok().map(exit_code_of);
        }
    }
    lab::journal::done(child_entry);
    // What the ring holds now, not what the host sends while it is read.
    let ring = opts.ring_bytes.unwrap_or(swaptrace_common::RING_BYTES) as usize;
    for _ in 0..drains_for(ring) {
        let more = drain(fd.get_mut(), &mut rec, &mut out);
        if let Err(e) = write_all(&mut writer, &mut out) {
            failure = failure.or(Some(e));
        }
        if !more {
            break;
        }
    }
    if let Some(w) = swaps.as_mut() {
        let from = out.len();
        w.poll(monotonic_ns(), &mut out);
        rec.add_records(from, &out);
    }
    probe.flush_log();
    let end = monotonic_ns();
    let vm_end = VmStat::read().map(|v| v.0).unwrap_or_default();
    samples.pool(end);
    match probe.stats() {
        Ok(st) => {
            rec.lost(end, &st.lost, &mut out);
            if st.swap_out_gone > 0 {
                let what = format!("{} (folio gone at the tracepoint)", names::SWAP_OUT);
                rec.lost_one(end, what, st.swap_out_gone, &mut out);
            }
            if st.fault_untraced > 0 {
                let what = format!(
                    "{} (a process not known to hold swap entries)",
                    names::SWAP_FAULT
                );
                rec.lost_one(end, what, st.fault_untraced, &mut out);
            }
        }
        Err(e) => failure = failure.or(Some(e.into())),
    }
    const FREE_PROGRAM: &str = "mm_page_free";
    // Runs the kernel skipped are events lost too, but for the page-free
    // program, which sees every page freed and sends for a few.
    let mut frees_unseen = 0;
    let mut skipped = 0;
    for p in probe.run_stats() {
        if p.program == FREE_PROGRAM {
            frees_unseen += p.recursion_misses;
        } else if p.recursion_misses > 0 {
            skipped += p.recursion_misses;
            let what = format!("{} (recursion)", p.program);
            rec.lost_one(end, what, p.recursion_misses, &mut out);
        }
    }
    if skipped > 0 && !opts.quiet {
        eprintln!(
            "swaptrace: {}",
            skipped_why(skipped, &facts.preempt, probe.twinned)
        );
    }
    let written = write_all(&mut writer, &mut out);
    let records = writer.records();
    let footer = Footer {
        monotonic_end_ns: end,
        vmstat_end: vm_end.clone(),
        lost: rec.summary.lost.clone(),
        records,
        exit_code,
        zswap_pool: samples.zswap_pool,
        footprint: samples.footprint,
        memcg: samples.memcg,
        frees_unseen,
    };
    if frees_unseen > 0 && !opts.quiet {
        eprintln!(
            "swaptrace: {frees_unseen} page frees unseen (mm_page_free skipped while it ran on that CPU); \
             a watched swap-cache folio among them stays in the replay's swap cache"
        );
    }
    let (alts, moved) = rec.alt_outs;
    if alts > 0 && !opts.quiet {
        eprintln!(
            "swaptrace: {alts} swap-outs named a page offset that two VMAs cover (moved by mremap()); \
             the page table or the page's fault put {moved} of them in the second"
        );
    }
    let bytes = writer.finish(&footer)?;
    written?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(e) = failure {
        return Err(e);
    }
    let vmstat_delta = VmStat(head.vmstat_start.clone()).delta(&VmStat(vm_end));
    Ok(Recorded {
        path: opts.output.clone(),
        summary: rec.summary,
        records,
        bytes,
        elapsed_s: started.elapsed().as_secs_f64(),
        exit_code,
        stopped_by,
        vmstat_delta,
        attached: probe.attached.clone(),
        skipped: probe.skipped.clone(),
        twinned: probe.twinned,
        bpf_stats: probe.run_stats(),
    })
}

/// Why the kernel skipped `n` program runs, as far as this kernel tells.
fn skipped_why(n: u64, preempt: &Result<probe::Preempt, String>, twinned: usize) -> String {
    let cause = match preempt {
        Ok(p) if p.preempts_programs() => format!(
            "this kernel preempts kernel code ({}, {}): {}, so more tasks swapping at once \
             lose more",
            p.mode,
            p.source,
            probe::Preempt::SKIPS
        ),
        Ok(p) => format!(
            "a program ran again on a CPU where it was running (preemption {}, {})",
            p.mode, p.source
        ),
        Err(e) => format!("preemption model {e}"),
    };
    let what = if twinned > 0 {
        format!(
            "{n} calls lost: the kernel's recursion guard skipped both a program and its \
             twin ({twinned} programs attached twice)"
        )
    } else {
        format!(
            "{n} program runs skipped by the kernel's recursion guard (events lost; \
             `--twins always` attaches each program twice against it)"
        )
    };
    format!("{what}: {cause}")
}

impl Recorded {
    /// How the recorded command ended, in words: stopped with the
    /// recording by a signal, or [`describe_exit`].
    pub fn command_outcome(&self) -> String {
        match self.stopped_by {
            Some(sig) => format!("the recording was stopped by {sig}, and the command with it"),
            None => describe_exit(self.exit_code),
        }
    }
}

/// A workload's [`Recorded::exit_code`] in words: a signal's death (exit
/// code 128 + N, as [`exit_code_of`] makes it) says so, SIGKILL as the OOM
/// killer's likely work.
pub fn describe_exit(code: Option<i32>) -> String {
    match code {
        Some(137) => "killed by SIGKILL (an OOM kill if the memory limit is too small)".into(),
        Some(c @ 129..=192) => format!("killed by signal {}", c - 128),
        Some(c) => format!("exit status {c}"),
        None => "no exit status".into(),
    }
}

/// The exit code, or 128 + the signal that killed it, as shells report.
fn exit_code_of(s: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    s.code()
        .or_else(|| s.signal().map(|n| 128 + n))
        .unwrap_or(-1)
}

pub(super) fn signal(
    kind: tokio::signal::unix::SignalKind,
) -> Result<tokio::signal::unix::Signal, RecordError> {
    tokio::signal::unix::signal(kind).map_err(|source| RecordError::Io {
        what: "signal handler".into(),
        source,
    })
}

/// The live line: records written, events lost so far, bytes on disk.
fn live_line(secs: f64, w: &TraceWriter, probe: &Probe) -> String {
    let lost: u64 = probe
        .stats()
        .map(|s| s.lost.iter().sum::<u64>() + s.swap_out_gone + s.fault_untraced)
        .unwrap_or(0);
    format!(
        "{secs:.0}s  events {}  lost {lost}  bytes {}",
        w.records(),
        w.bytes()
    )
}

fn progress(on: bool) -> Option<indicatif::ProgressBar> {
    // Only on a terminal: a log file gets no spinner frames.
    if !on || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return None;
    }
    let b = indicatif::ProgressBar::new_spinner();
    b.enable_steady_tick(Duration::from_millis(250));
    b.set_message("attached");
    Some(b)
}

async fn wait_child(child: &mut Option<tokio::process::Child>) -> Option<std::process::ExitStatus> {
    match child {
        Some(c) => c.wait().await.ok(),
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

fn write_all(w: &mut TraceWriter, out: &mut Vec<Record>) -> Result<(), RecordError> {
    for r in out.drain(..) {
        w.push(&r)?;
    }
    Ok(())
}

/// Cgroup samples taken at every tick (100 ms) before once a second.
const MEMCG_DENSE: usize = 100;
/// zswap pool samples (of a pool holding anything) taken at every tick
/// before once a second: a run of a second or less has some.
const POOL_DENSE: usize = 10;

/// What the footer samples once a second (the first ones more often):
/// the zswap pool (when it holds anything), the traced process tree's
/// footprint and the traced cgroup.
#[derive(Default)]
struct Sampler {
    traced: Option<u32>,
    /// The traced memory cgroup, when it has a limit.
    cgroup: Option<std::path::PathBuf>,
    last: u64,
    zswap_pool: Vec<crate::trace::PoolSample>,
    footprint: Vec<Footprint>,
    memcg: Vec<crate::trace::MemcgSample>,
}

impl Sampler {
    fn tick(&mut self, now: u64) {
        // The cgroup at every tick for its first samples (short runs too),
        // then with the others, once a second.
        let dense = self.memcg.len() < MEMCG_DENSE;
        if dense {
            self.cgroup(now);
        }
        let pool_dense = self.zswap_pool.len() < POOL_DENSE;
        if pool_dense {
            self.pool(now);
        }
        if now.saturating_sub(self.last) < 1_000_000_000 {
            return;
        }
        self.last = now;
        if !pool_dense {
            self.pool(now);
        }
        if !dense {
            self.cgroup(now);
        }
        if let Some(pid) = self.traced {
            let tree = process_tree(pid).into_iter();
            self.footprint
                .extend(tree.filter_map(|p| Footprint::now(now, p)));
        }
    }

    fn cgroup(&mut self, now: u64) {
        if let Some(dir) = &self.cgroup {
            self.memcg.extend(crate::trace::MemcgSample::now(now, dir));
        }
    }

    fn pool(&mut self, now: u64) {
        if let Some(s) = crate::trace::PoolSample::now(now).filter(|s| s.stored_kib > 0) {
            self.zswap_pool.push(s);
        }
    }
}

/// `pid` and its descendants (/proc/PID/task/*/children).
fn process_tree(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() && out.len() < 4096 {
        let p = out[i];
        i += 1;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let children = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            out.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{describe_exit, skipped_why};
    use crate::probe::Preempt;

    #[test]
    fn an_exit_code_is_said_in_words() {
        assert_eq!(describe_exit(Some(1)), "exit status 1");
        assert_eq!(describe_exit(Some(143)), "killed by signal 15");
        assert!(describe_exit(Some(137)).starts_with("killed by SIGKILL (an OOM kill"));
        assert_eq!(describe_exit(Some(-1)), "exit status -1");
        assert_eq!(describe_exit(None), "no exit status");
    }

    #[test]
    fn skipped_runs_name_the_preemption_that_causes_them() {
        let p = |mode: &str| {
            Ok(Preempt {
                mode: mode.into(),
                source: "debugfs".into(),
            })
        };
        let lazy = skipped_why(640, &p("lazy"), 0);
        assert!(lazy.starts_with("640 program runs skipped"), "{lazy}");
        assert!(
            lazy.contains("preempts kernel code (lazy, debugfs)"),
            "{lazy}"
        );
        let none = skipped_why(3, &p("voluntary"), 0);
        assert!(!none.contains("preempts kernel code"), "{none}");
        assert!(none.contains("preemption voluntary"), "{none}");
        let twins = skipped_why(4, &p("lazy"), 30);
        assert!(twins.starts_with("4 calls lost"), "{twins}");
        assert!(twins.contains("(30 programs attached twice)"), "{twins}");
        assert!(!twins.contains("--twins always"), "{twins}");
        let unknown = skipped_why(1, &Err("not known: no debugfs".into()), 0);
        assert!(
            unknown.ends_with("preemption model not known: no debugfs"),
            "{unknown}"
        );
    }
}
