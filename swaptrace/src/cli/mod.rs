//! The `swaptrace` subcommands, one file each; each owns its clap `Args`
//! and turns them into library calls. Nothing here decides policy.

mod compare;
mod demo;
mod doctor;
mod export;
mod fidelity;
mod hist;
mod import;
mod info;
mod lab;
mod plot;
mod progress;
mod record;
mod replay;
mod replay_many;
mod synopsis;
mod synth;
mod top;
mod workload;

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use swaptrace::trace::{output, Header, Loaded, OutputPolicy, Record, TraceStream};

#[derive(Parser)]
#[command(
    name = "swaptrace",
    version,
    about = "Record the Linux swap path with eBPF; replay it offline"
)]
pub struct Cli {
    /// Treat any problem found in a trace (a damaged or missing chunk, no
    /// footer, a damaged header) as an error: exit 1.
    #[arg(long, global = true)]
    strict: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

/// `--strict`, set once by [`run`].
static STRICT: AtomicBool = AtomicBool::new(false);

fn strict() -> bool {
    STRICT.load(Ordering::Relaxed)
}

#[derive(Subcommand)]
enum Cmd {
    /// Which probe captures each metric on this kernel, and why not when none.
    Doctor(doctor::Args),
    /// Attach and record a trace until DURATION, the command's exit, or Ctrl-C.
    Record(record::Args),
    /// Attach as `record` does and print, every interval, what it just saw:
    /// faults, pages read, swap-outs, reclaim, khugepaged, zswap, lost
    /// events, the readahead window table and free latency where the kernel
    /// allows exact probes. Stops on Ctrl-C or after --count intervals.
    Top(top::Args),
    /// A trace's header and its records, counted per kind.
    Info(info::Args),
    /// One metric of a trace: argdist-style counts or a log2 latency histogram.
    Hist(hist::Args),
    /// Replay a trace through a family of policies and compare them with
    /// what the kernel did: readahead (swap-ins), free (swap-entry frees),
    /// zswap (the compressed pool) or khugepaged (swap-ins for collapse).
    Replay(replay::Args),
    /// Draw PNG charts: readahead windows (live and per policy), swap-ins
    /// over time, time × swap offset, and the policies compared.
    Plot(plot::Args),
    /// Two traces side by side for a patch description: counters with the
    /// change in %, the readahead window table, latency percentiles.
    Compare(compare::Args),
    /// Write a trace as JSON Lines: the header, one object per record, the
    /// footer (schema: docs/jsonl.md).
    Export(export::Args),
    /// Turn a JSON Lines stream (docs/jsonl.md) into a trace; bad lines are
    /// reported with their line number and skipped.
    Import(import::Args),
    /// Write a synthetic trace: pages swapped out in PATTERN order, then
    /// faulted back in address order (no root needed).
    Synth(synth::Args),
    /// The built-in swap workload: touch SIZE of anonymous memory in PATTERN
    /// order, then read it back in address order, checking every page.
    Workload(workload::Args),
    /// Record the built-in workload in a memory cgroup with a temporary swap
    /// file (both removed after), then show what was recorded.
    Demo(demo::Args),
    /// The lab's journaled system changes: `lab restore` undoes what a
    /// killed run left (swap, loop devices, cgroups, knobs, processes);
    /// `lab knob|swap|cgroup` make such changes for scripts.
    Lab(lab::Args),
    /// The command synopsis README shows, generated from these definitions.
    #[command(name = "__synopsis", hide = true)]
    Synopsis,
}

pub fn run(cli: Cli) -> Result<()> {
    STRICT.store(cli.strict, Ordering::Relaxed);
    match cli.cmd {
        Cmd::Doctor(a) => doctor::run(a),
        Cmd::Record(a) => record::run(a),
        Cmd::Top(a) => top::run(a),
        Cmd::Info(a) => info::run(a),
        Cmd::Hist(a) => hist::run(a),
        Cmd::Replay(a) => replay::run(a),
        Cmd::Plot(a) => plot::run(a),
        Cmd::Compare(a) => compare::run(a),
        Cmd::Export(a) => export::run(a),
        Cmd::Import(a) => import::run(a),
        Cmd::Synth(a) => synth::run(a),
        Cmd::Workload(a) => workload::run(a),
        Cmd::Demo(a) => demo::run(a),
        Cmd::Lab(a) => lab::run(a),
        Cmd::Synopsis => {
            use clap::CommandFactory;
            print!("{}", synopsis::synopsis(&Cli::command()));
            Ok(())
        }
    }
}

/// Opens a trace to stream, naming it in errors.
fn open_stream(path: &Path) -> Result<TraceStream> {
    TraceStream::open(path).map_err(|e| match e {
        e @ swaptrace::trace::TraceError::Io { .. } => anyhow::Error::new(e),
        e => anyhow::Error::new(e).context(format!("reading {}", path.display())),
    })
}

/// Streams a trace into `each` a batch at a time (a progress bar named
/// `what`), with the state `init` makes from its header, and warns about
/// its problems: the trace without its records, and the state.
fn stream_each<S>(
    path: &Path,
    what: &'static str,
    init: impl FnOnce(&Header) -> S,
    mut each: impl FnMut(&mut S, &[Record]),
) -> Result<(Loaded, S)> {
    let mut progress = progress::Progress::new(what);
    let mut s = open_stream(path)?;
    let header = s.header().clone();
    let mut state = init(&header);
    while let Some(batch) = s.next_batch() {
        each(&mut state, &batch);
        s.recycle(batch);
        progress.follow_bytes(&s);
    }
    drop(progress);
    let end = s.finish();
    warn_problems(path, &end.problems)?;
    Ok((end.into_loaded(header, Vec::new()), state))
}

/// Warns on stderr about each problem; with `--strict`, any is an error.
fn warn_problems(
    path: &Path,
    problems: impl IntoIterator<Item = impl std::fmt::Display>,
) -> Result<()> {
    let mut n = 0;
    for p in problems {
        eprintln!("warning: {}: {p}", path.display());
        n += 1;
    }
    if n > 0 && strict() {
        anyhow::bail!("{}: {n} problems (--strict)", path.display());
    }
    Ok(())
}

/// Refuses an output that exists (without `--force`), is one of the
/// inputs, or is a symlink while running as root, before any work.
fn output_policy(out: &Path, force: bool, inputs: &[&Path]) -> Result<OutputPolicy> {
    let policy = OutputPolicy::new(force, inputs);
    output::check(out, &policy)?;
    Ok(policy)
}

fn print_json(v: &impl serde::Serialize) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

fn parse_size_arg(s: &str) -> Result<u64, String> {
    swaptrace::workload::parse_size(s).map_err(|e| e.to_string())
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, mul) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("invalid duration {s:?}: use e.g. 30s, 2m, 500ms"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("invalid duration {s:?}: must be positive"));
    }
    Ok(Duration::from_secs_f64(v * mul))
}

#[cfg(not(feature = "live"))]
fn no_live() -> Result<()> {
    anyhow::bail!("this swaptrace was built without the `live` feature: it can read traces but not record them")
}

#[cfg(not(feature = "plot"))]
fn no_plot() -> Result<()> {
    anyhow::bail!("this swaptrace was built without the `plot` feature")
}
