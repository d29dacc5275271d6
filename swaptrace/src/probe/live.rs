//! Loading and attaching the eBPF programs, with offsets from BTF.

use super::btf::BtfError;
use super::kernel::{KernelFacts, Trial, Twins};
use super::table::{Prog, ProgKind};
use super::MetricPlan;
use aya::maps::{Array, MapData, PerCpuArray, RingBuf};
use aya::programs::{FEntry, FExit, KProbe, ProgramError, RawTracePoint, TracePoint};
use aya::{Ebpf, EbpfError, EbpfLoader};
use std::collections::HashMap;
use swaptrace_common::{kind, twin};

mod globals;

use globals::globals;

static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/swaptrace"));

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("recording needs root (CAP_BPF and CAP_PERFMON); run as root")]
    NotRoot,
    #[error("kernel BTF: {0}")]
    Btf(#[from] BtfError),
    #[error("loading the eBPF object: {0}")]
    Load(#[from] EbpfError),
    #[error("program {name}: {source}")]
    Program {
        name: String,
        #[source]
        source: ProgramError,
    },
    #[error("map {name}: {why}")]
    Map { name: &'static str, why: String },
    #[error("program {0} missing from the eBPF object")]
    MissingProgram(String),
    #[error("no probe attached: {0}")]
    NothingAttached(String),
}

/// Filters and sizes chosen by the user.
#[derive(Clone, Debug, Default)]
pub struct ProbeConfig {
    pub filter_pid: Option<u32>,
    /// Inode of a memory cgroup (v1) directory; its descendants are included.
    pub filter_cgroup: Option<u64>,
    /// Ring buffer size in bytes (a power of two, multiple of the page size).
    pub ring_bytes: Option<u32>,
    /// aya-log level of the eBPF side's anomaly reports (failed kernel
    /// reads, unexpected layouts, dropped events): 0 is off and costs
    /// nothing (the verifier drops the code), 2 (`Level::Warn`) shows them.
    pub log_level: u8,
    /// Which programs of `swaptrace_common::twin::HOOKS` to attach twice
    /// (where the kernel may preempt them: [`KernelFacts::twins_wanted`]).
    pub twins: Twins,
}

/// Counters of the running probe.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Lost events per `swaptrace_common::kind`.
    pub lost: [u64; kind::COUNT],
    /// Swap-outs whose folio had no swap entry left at the tracepoint.
    pub swap_out_gone: u64,
    /// Swap-in faults of processes not known to hold swap entries, so
    /// not traced (tracepoint backend).
    pub fault_untraced: u64,
}

pub struct Probe {
    ebpf: Ebpf,
    /// Attached programs, and those that could not be, with why.
    pub attached: Vec<String>,
    pub skipped: Vec<(String, String)>,
    /// Globals that the kernel's BTF could not resolve.
    pub unresolved: Vec<(String, String)>,
    /// Which programs get twins ([`ProbeConfig::twins`]), and how many did.
    twins: Twins,
    pub twinned: usize,
    /// aya's parse of the kernel BTF, for fentry/fexit loads (parsed once).
    aya_btf: Option<Result<aya::Btf, String>>,
    /// The eBPF side's log, when `log_level` is not 0.
    log: Option<aya_log::EbpfLogger<&'static StderrLog>>,
}

/// Writes the eBPF side's log records to stderr: each distinct line once
/// per read of the log, with its count (a full ring reports every drop).
pub struct StderrLog {
    pending: std::sync::Mutex<Vec<(String, u64)>>,
}

static STDERR_LOG: StderrLog = StderrLog {
    pending: std::sync::Mutex::new(Vec::new()),
};

/// Distinct lines held per read; past them, lines are printed at once.
const LOG_LINES_HELD: usize = 64;

impl StderrLog {
    fn pending(&self) -> std::sync::MutexGuard<'_, Vec<(String, u64)>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Prints what this read of the log gathered.
    fn settle(&self) {
        for (line, n) in self.pending().drain(..) {
            match n {
                1 => eprintln!("{line}"),
                _ => eprintln!("{line} (×{n})"),
            }
        }
    }
}

impl log::Log for StderrLog {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }

    fn log(&self, r: &log::Record) {
        let level = r.level().as_str().to_lowercase();
        let line = format!("swaptrace: ebpf {level}: {}", r.args());
        let mut pending = self.pending();
        if let Some((_, n)) = pending.iter_mut().find(|(l, _)| *l == line) {
            *n += 1;
        } else if pending.len() < LOG_LINES_HELD {
            pending.push((line, 1));
        } else {
            eprintln!("{line}");
        }
    }

    /// aya-log flushes after every record: lines wait for `settle`.
    fn flush(&self) {}
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

impl Probe {
    /// Loads the object with this kernel's offsets. Attaches nothing yet.
    pub fn load(facts: &KernelFacts, cfg: &ProbeConfig) -> Result<Probe, LiveError> {
        if !is_root() {
            return Err(LiveError::NotRoot);
        }
        let btf = facts.btf.as_ref().map_err(|e| {
            LiveError::NothingAttached(format!("kernel BTF is needed for offsets: {e}"))
        })?;
        let (values, unresolved) = globals(facts, btf, cfg);
        let mut loader = EbpfLoader::new();
        for (name, v) in &values {
            loader.override_global(name, v, true);
        }
        if let Some(bytes) = cfg.ring_bytes {
            loader.map_max_entries("EVENTS", bytes);
        }
        loader.override_global(aya_log::LEVEL, &cfg.log_level, true);
        let mut ebpf = loader.load(OBJECT)?;
        let log = match cfg.log_level {
            0 => None,
            _ => Some(
                aya_log::EbpfLogger::init_with_logger(&mut ebpf, &STDERR_LOG).map_err(|e| {
                    LiveError::Map {
                        name: "AYA_LOGS",
                        why: e.to_string(),
                    }
                })?,
            ),
        };
        Ok(Probe {
            ebpf,
            attached: Vec::new(),
            skipped: Vec::new(),
            unresolved,
            twins: cfg.twins,
            twinned: 0,
            aya_btf: None,
            log,
        })
    }

    /// Prints what the eBPF side logged since the last call (`log_level`).
    pub fn flush_log(&mut self) {
        if let Some(l) = &mut self.log {
            l.flush();
            STDERR_LOG.settle();
        }
    }

    fn aya_btf(&mut self) -> Result<aya::Btf, String> {
        self.aya_btf
            .get_or_insert_with(|| aya::Btf::from_sys_fs().map_err(|e| format!("no BTF: {e}")))
            .clone()
    }

    /// Attaches the programs of each metric's chosen attach point. A metric
    /// whose programs fail to attach is marked missing in `plans`, with why.
    pub fn attach(
        &mut self,
        facts: &KernelFacts,
        plans: &mut [MetricPlan],
    ) -> Result<(), LiveError> {
        let _ = crate::lab::mount_tracefs();
        // Developer knob for overhead experiments: programs not to attach.
        let skip = std::env::var("SWAPTRACE_SKIP_PROGRAMS").unwrap_or_default();
        let skip: Vec<&str> = skip.split(',').filter(|s| !s.is_empty()).collect();
        // And for tests: programs whose attach fails, as a kernel may refuse them.
        let fail = std::env::var("SWAPTRACE_FAIL_PROGRAMS").unwrap_or_default();
        let fail: Vec<&str> = fail.split(',').filter(|s| !s.is_empty()).collect();
        let aya_btf = self.aya_btf().ok();
        let mut done: HashMap<&'static str, Result<(), String>> = HashMap::new();
        for plan in plans.iter_mut() {
            // A row whose programs fail gives way to the next usable one,
            // and the programs it attached itself go: they would run for
            // nothing, or record what the next row records too.
            loop {
                let mut fresh = Vec::new();
                let Some(e) = self.attach_choice(
                    facts,
                    plan,
                    (&skip, &fail),
                    aya_btf.as_ref(),
                    &mut done,
                    &mut fresh,
                ) else {
                    break;
                };
                for prog in fresh {
                    self.detach(prog);
                    done.remove(prog.name);
                }
                plan.fail(e);
                if !plan.next_usable() {
                    break;
                }
            }
        }
        if self.attached.is_empty() {
            return Err(LiveError::NothingAttached(format!("{:?}", self.skipped)));
        }
        Ok(())
    }

    /// The twin of `prog` where twins are on (its failure costs only the
    /// guard against preemption: noted in `skipped`).
    fn attach_twin(&mut self, prog: &Prog, btf: Option<&aya::Btf>) {
        let wanted = match prog.kind {
            ProgKind::Fentry | ProgKind::Fexit => self.twins != Twins::None,
            ProgKind::RawTracepoint => self.twins == Twins::All,
            _ => false,
        };
        let Some(hook) = twin::HOOKS.iter().position(|h| *h == prog.name) else {
            return;
        };
        if !wanted {
            return;
        }
        let name = twin_name(prog);
        // The hook takes tokens only once its twin runs.
        let on = self.attach_prog(&name, prog, btf).and_then(|()| {
            let map = self.ebpf.map_mut("TWIN_ON").ok_or(LiveError::Map {
                name: "TWIN_ON",
                why: "missing".into(),
            })?;
            let mut on = Array::<_, u32>::try_from(map).map_err(|e| LiveError::Map {
                name: "TWIN_ON",
                why: e.to_string(),
            })?;
            on.set(hook as u32, 1, 0).map_err(|e| LiveError::Map {
                name: "TWIN_ON",
                why: e.to_string(),
            })
        });
        match on {
            Ok(()) => self.twinned += 1,
            Err(e) => self
                .skipped
                .push((prog.target.to_string(), format!("{name}: {e}"))),
        }
    }

    /// Attaches the programs of `plan`'s chosen row, those it attached
    /// first in `fresh`; the first failure.
    fn attach_choice(
        &mut self,
        facts: &KernelFacts,
        plan: &MetricPlan,
        (skip, fail): (&[&str], &[&str]),
        aya_btf: Option<&aya::Btf>,
        done: &mut HashMap<&'static str, Result<(), String>>,
        fresh: &mut Vec<&'static Prog>,
    ) -> Option<String> {
        let choice = plan.chosen.as_ref()?;
        let mut failure = None;
        for prog in choice.progs {
            if skip.contains(&prog.name) {
                continue;
            }
            // A raw tracepoint that this kernel lacks and the row does not
            // require (e.g. page_fault_kernel) is left out.
            if prog.kind == ProgKind::RawTracepoint
                && facts
                    .btf
                    .as_ref()
                    .is_ok_and(|b| b.tracepoint_params(prog.target).is_err())
            {
                self.skipped.push((
                    prog.target.to_string(),
                    "tracepoint not in this kernel".into(),
                ));
                continue;
            }
            let res = match done.get(prog.name) {
                Some(r) => r.clone(),
                None => {
                    let r = if fail.contains(&prog.name) {
                        Err(format!("{}: failed (SWAPTRACE_FAIL_PROGRAMS)", prog.name))
                    } else {
                        self.attach_prog(prog.name, prog, aya_btf)
                            .map_err(|e| format!("{}: {e}", prog.name))
                    };
                    match &r {
                        Ok(()) => {
                            self.attached.push(attached_label(prog));
                            self.attach_twin(prog, aya_btf);
                            fresh.push(prog);
                        }
                        Err(e) => self.skipped.push((prog.target.to_string(), e.clone())),
                    }
                    done.insert(prog.name, r.clone());
                    r
                }
            };
            match res {
                Err(e) if !OPTIONAL_PROGS.contains(&prog.name) => {
                    failure.get_or_insert(e);
                }
                _ => {}
            }
        }
        failure
    }

    /// Detaches and unloads `prog` and its twin, attached for a row that
    /// then failed.
    fn detach(&mut self, prog: &Prog) {
        let label = attached_label(prog);
        self.attached.retain(|a| *a != label);
        let twin = twin_name(prog);
        for name in [prog.name, twin.as_str()] {
            let Ok(p) = self.program(name) else {
                continue;
            };
            let unloaded = match prog.kind {
                ProgKind::RawTracepoint => <&mut RawTracePoint>::try_from(p).map(|p| p.unload()),
                ProgKind::Tracepoint(_) => <&mut TracePoint>::try_from(p).map(|p| p.unload()),
                ProgKind::Kprobe | ProgKind::Kretprobe => {
                    <&mut KProbe>::try_from(p).map(|p| p.unload())
                }
                ProgKind::Fentry => <&mut FEntry>::try_from(p).map(|p| p.unload()),
                ProgKind::Fexit => <&mut FExit>::try_from(p).map(|p| p.unload()),
            };
            match unloaded {
                Ok(Ok(())) if name != prog.name => self.twinned = self.twinned.saturating_sub(1),
                Ok(Ok(())) | Ok(Err(ProgramError::NotLoaded)) => {}
                Err(e) | Ok(Err(e)) => self.skipped.push((
                    prog.target.to_string(),
                    format!("{name}: not unloaded: {e}"),
                )),
            }
        }
    }

    fn attach_prog(
        &mut self,
        name: &str,
        prog: &Prog,
        btf: Option<&aya::Btf>,
    ) -> Result<(), LiveError> {
        let err = |source| LiveError::Program {
            name: name.to_string(),
            source,
        };
        let no_btf = || LiveError::NothingAttached("no kernel BTF for fentry".into());
        match prog.kind {
            ProgKind::RawTracepoint => {
                let p: &mut RawTracePoint = self.program(name)?.try_into().map_err(err)?;
                p.load().map_err(err)?;
                p.attach(prog.target).map_err(err)?;
            }
            ProgKind::Tracepoint(cat) => {
                let p: &mut TracePoint = self.program(name)?.try_into().map_err(err)?;
                p.load().map_err(err)?;
                p.attach(cat, prog.target).map_err(err)?;
            }
            ProgKind::Kprobe | ProgKind::Kretprobe => {
                let p: &mut KProbe = self.program(name)?.try_into().map_err(err)?;
                p.load().map_err(err)?;
                p.attach(prog.target, 0).map_err(err)?;
            }
            ProgKind::Fentry => {
                let p: &mut FEntry = self.program(name)?.try_into().map_err(err)?;
                p.load(prog.target, btf.ok_or_else(no_btf)?).map_err(err)?;
                p.attach().map_err(err)?;
            }
            ProgKind::Fexit => {
                let p: &mut FExit = self.program(name)?.try_into().map_err(err)?;
                p.load(prog.target, btf.ok_or_else(no_btf)?).map_err(err)?;
                p.attach().map_err(err)?;
            }
        }
        Ok(())
    }

    fn program(&mut self, name: &str) -> Result<&mut aya::programs::Program, LiveError> {
        self.ebpf
            .program_mut(name)
            .ok_or_else(|| LiveError::MissingProgram(name.to_string()))
    }

    /// Loads (never attaches) an fentry program to learn whether fentry is allowed.
    pub fn trial_fentry(&mut self) -> Trial {
        let btf = match self.aya_btf() {
            Ok(b) => b,
            Err(e) => return Trial::NotTried(e),
        };
        let p = match self.program("trial_fentry") {
            Ok(p) => p,
            Err(e) => return Trial::NotTried(e.to_string()),
        };
        let p: &mut FEntry = match p.try_into() {
            Ok(p) => p,
            Err(e) => return Trial::NotTried(e.to_string()),
        };
        match p.load("do_swap_page", &btf) {
            Ok(()) => Trial::Allowed,
            Err(e) => Trial::Refused(load_error_text(&e)),
        }
    }

    /// Marks the processes that hold swap entries now (VmSwap in
    /// /proc/PID/status), whose faults the tracepoint backend must trace;
    /// swap-outs and forks mark the others as they come. Returns how many.
    pub fn mark_swap_holders(&mut self) -> Result<usize, LiveError> {
        let map = self.ebpf.map_mut("SWAP_TGIDS").ok_or(LiveError::Map {
            name: "SWAP_TGIDS",
            why: "missing".into(),
        })?;
        let mut bits: Array<&mut MapData, u64> =
            Array::try_from(map).map_err(|e| LiveError::Map {
                name: "SWAP_TGIDS",
                why: e.to_string(),
            })?;
        let mut words: HashMap<u32, u64> = HashMap::new();
        for tgid in swap_holders() {
            *words.entry(tgid >> 6).or_default() |= 1 << (tgid & 63);
        }
        for (&i, &w) in &words {
            // Or-ed with what the probes marked since they were attached.
            let old = bits.get(&i, 0).unwrap_or(0);
            bits.set(i, old | w, 0).map_err(|e| LiveError::Map {
                name: "SWAP_TGIDS",
                why: e.to_string(),
            })?;
        }
        Ok(words.values().map(|w| w.count_ones() as usize).sum())
    }

    /// The ring buffer of events; callable once.
    pub fn take_events(&mut self) -> Result<RingBuf<MapData>, LiveError> {
        let map = self.ebpf.take_map("EVENTS").ok_or(LiveError::Map {
            name: "EVENTS",
            why: "missing".into(),
        })?;
        RingBuf::try_from(map).map_err(|e| LiveError::Map {
            name: "EVENTS",
            why: e.to_string(),
        })
    }

    /// Lost events so far, summed over CPUs.
    pub fn stats(&self) -> Result<Stats, LiveError> {
        let map = self.ebpf.map("LOST").ok_or(LiveError::Map {
            name: "LOST",
            why: "missing".into(),
        })?;
        let arr: PerCpuArray<&MapData, u64> =
            PerCpuArray::try_from(map).map_err(|e| LiveError::Map {
                name: "LOST",
                why: e.to_string(),
            })?;
        let get = |k: u32| -> Result<u64, LiveError> {
            let v = arr.get(&k, 0).map_err(|e| LiveError::Map {
                name: "LOST",
                why: e.to_string(),
            })?;
            Ok(v.iter().sum())
        };
        let mut s = Stats::default();
        for (k, slot) in s.lost.iter_mut().enumerate() {
            *slot = get(k as u32)?;
        }
        s.swap_out_gone = get(swaptrace_common::unseen::SWAP_OUT_GONE)?;
        s.fault_untraced = get(swaptrace_common::unseen::FAULT_UNTRACED)?;
        Ok(s)
    }
}

/// Processes with swap entries (a VmSwap line above 0 kB).
fn swap_holders() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            crate::lab::proc_kib(&format!("/proc/{pid}/status"), "VmSwap").is_some_and(|k| k > 0)
        })
        .collect()
}

/// Run time of one program, from its fdinfo (non-zero only while
/// `kernel.bpf_stats_enabled` is 1).
#[derive(Clone, Debug, serde::Serialize)]
pub struct ProgStat {
    pub program: String,
    pub run_time_ns: u64,
    pub run_count: u64,
    /// Events lost to the kernel's recursion guard: runs skipped because the
    /// program was already running on that CPU (one run preempted by another
    /// task's). With a twin, the calls where both programs were skipped.
    pub recursion_misses: u64,
    /// Runs the guard skipped, of the program and its twin.
    pub skipped_runs: u64,
    /// Whether the figures are of the program and its twin (`<name>_2`).
    pub twinned: bool,
}

impl Probe {
    /// Per-program run time and count of the loaded programs.
    pub fn run_stats(&self) -> Vec<ProgStat> {
        use std::os::fd::{AsFd, AsRawFd};
        let mut out = Vec::new();
        for (name, prog) in self.ebpf.programs() {
            let Ok(fd) = prog.info().and_then(|i| i.fd()) else {
                continue;
            };
            let path = format!("/proc/self/fdinfo/{}", fd.as_fd().as_raw_fd());
            let Ok(text) = std::fs::read_to_string(path) else {
                continue;
            };
            let field = |k: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(k))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0)
            };
            let misses = field("recursion_misses:");
            out.push(ProgStat {
                program: name.to_string(),
                run_time_ns: field("run_time_ns:"),
                run_count: field("run_cnt:"),
                recursion_misses: misses,
                skipped_runs: misses,
                twinned: false,
            });
        }
        merge_twins(out, &self.twin_counts())
    }

    /// `TWIN_COUNTS` summed over the CPUs (empty if unreadable).
    fn twin_counts(&self) -> Vec<u64> {
        let Some(map) = self.ebpf.map("TWIN_COUNTS") else {
            return Vec::new();
        };
        let Ok(arr) = PerCpuArray::<&MapData, u64>::try_from(map) else {
            return Vec::new();
        };
        (0..twin::COUNTERS)
            .map(|i| arr.get(&i, 0).map_or(0, |v| v.iter().sum()))
            .collect()
    }
}

/// One row per hook: a twin's figures added to its program's, and the
/// events lost from both programs' misses and the hook's counters
/// (`counts`, `twin::lost`).
fn merge_twins(stats: Vec<ProgStat>, counts: &[u64]) -> Vec<ProgStat> {
    let (twins, mut out): (Vec<ProgStat>, Vec<ProgStat>) = stats
        .into_iter()
        .partition(|p| twin_of(&p.program).is_some());
    for t in twins {
        let Some((hook, base)) = twin_of(&t.program) else {
            continue;
        };
        let Some(p) = out.iter_mut().find(|p| p.program == base) else {
            continue;
        };
        let recorded = counts.get(2 * hook).copied().unwrap_or(0);
        let taken = counts.get(2 * hook + 1).copied().unwrap_or(0);
        p.run_time_ns += t.run_time_ns;
        p.run_count += t.run_count;
        p.skipped_runs += t.skipped_runs;
        p.recursion_misses = twin::lost(p.skipped_runs, recorded, taken);
        p.twinned = true;
    }
    out
}

/// Programs whose failure to load or attach leaves their row standing:
/// only what they add is missing (the trace's header says).
const OPTIONAL_PROGS: &[&str] = &["block_rq_complete"];

/// How `attached` names an attached program.
fn attached_label(prog: &Prog) -> String {
    format!("{:?} {}", prog.kind, prog.target)
}

/// The name of `prog`'s twin program.
fn twin_name(prog: &Prog) -> String {
    format!("{}{}", prog.name, twin::SUFFIX)
}

/// The hook index and program name of twin program `name`.
fn twin_of(name: &str) -> Option<(usize, &str)> {
    let base = name.strip_suffix(twin::SUFFIX)?;
    let hook = twin::HOOKS.iter().position(|h| *h == base)?;
    Some((hook, base))
}

/// "EPERM" style text from a load error (the verifier log is not wanted here).
fn load_error_text(e: &ProgramError) -> String {
    use std::error::Error;
    let mut cur: Option<&dyn Error> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return match io.raw_os_error() {
                Some(libc::EPERM) => "EPERM (BPF_PROG_LOAD refused by the kernel's policy)".into(),
                Some(libc::EINVAL) => format!("EINVAL ({io})"),
                _ => io.to_string(),
            };
        }
        cur = err.source();
    }
    e.to_string()
}

#[cfg(test)]
mod tests {
    use super::{merge_twins, ProgStat};
    use crate::probe::tpformat::field_offset as format_field_offset;
    use swaptrace_common::twin;

    #[test]
    fn a_twin_adds_to_its_program_and_only_calls_both_skipped_are_lost() {
        let stat = |program: &str, runs, misses| ProgStat {
            program: program.into(),
            run_time_ns: 10 * runs,
            run_count: runs,
            recursion_misses: misses,
            skipped_runs: misses,
            twinned: false,
        };
        let hook = twin::index("fault_fentry") as usize;
        let mut counts = vec![0; twin::COUNTERS as usize];
        // 100 calls: 7 with the first run skipped, 2 with the twin's, 1 with both.
        counts[2 * hook] = 99;
        counts[2 * hook + 1] = 90;
        let merged = merge_twins(
            vec![
                stat("fault_fentry", 92, 8),
                stat("mm_page_free", 50, 3),
                stat("fault_fentry_2", 97, 3),
            ],
            &counts,
        );
        assert_eq!(merged.len(), 2);
        let f = &merged[0];
        assert_eq!((f.program.as_str(), f.twinned), ("fault_fentry", true));
        assert_eq!(
            (f.run_count, f.run_time_ns, f.skipped_runs),
            (189, 1890, 11)
        );
        assert_eq!(f.recursion_misses, 1);
        // A program without a twin keeps its own figures.
        let p = &merged[1];
        assert_eq!((p.recursion_misses, p.twinned), (3, false));
    }

    #[test]
    fn tracefs_format_offsets() {
        let f = "name: sys_exit_swapoff\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n\tfield:long ret;\toffset:16;\tsize:8;\tsigned:1;\n";
        assert_eq!(format_field_offset(f, "ret"), Some(16));
        assert_eq!(format_field_offset(f, "__syscall_nr"), Some(8));
        assert_eq!(format_field_offset(f, "nope"), None);
    }
}
