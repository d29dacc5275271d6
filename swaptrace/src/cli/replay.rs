//! `swaptrace replay`: a trace through one family of policies.

use anyhow::Result;
use std::path::{Path, PathBuf};
use swaptrace::replay::{self, Family, ReplayRequest};
use swaptrace::report;
use swaptrace::trace::Loaded;

/// The words of the readahead tables, in short; docs/extending.md "Words
/// the tables use" has the glossary.
const WORDS: &str = "\
Words of the readahead tables (glossary: docs/extending.md, \"Words the tables use\"):
  ACCURACY     readahead pages later used / readahead pages read (SWAP_RA_HIT / SWAP_RA)
  COVERAGE     swap-ins served by a readahead page / all swap-ins, faults and swapoff's PTEs
  POLLUTION    readahead pages evicted without ever being used (a count of pages)
  TIMELINESS   mean time from a readahead to the first use of its page (JSON: timeliness_us)
  WINDOW       pages one readahead decision reads: swapin_nr_pages()'s return, argdist's $retval
  PTES         (swapoff table) swap PTEs try_to_unuse() walked and swapped in
  WINDOWS      (swapoff table) readahead decisions made during swapoff
  MODE         (swapoff table) the most frequent window chosen during swapoff: what the
               policy allowed, which can exceed what it read (see SWAP_RA)
  MODEL_IO_MS  modelled read time, not a measurement: per request + per page costs fitted
               to this trace's major faults (or a --device preset); the table prints the
               fit and, beside it, the measured time of the recorded faults";

#[derive(clap::Args)]
#[command(after_help = WORDS)]
pub struct Args {
    /// The trace to replay (.swt); several traces, or a directory of them,
    /// give one row per (trace, policy) naming host, kernel and recording
    /// time, the traces replayed in parallel.
    #[arg(required = true)]
    traces: Vec<PathBuf>,
    #[command(flatten)]
    replay: ReplayArgs,
    /// Print JSON instead of the tables.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pub many: super::replay_many::ManyArgs,
}

/// Which family and how to replay it: shared by `replay`, `hist` and `plot`.
#[derive(clap::Args)]
pub struct ReplayArgs {
    /// The family of policies (see `--policy` for each family's names).
    #[arg(long, default_value = "readahead", value_parser = family_names())]
    pub family: String,
    /// Comma-separated policy names, or `all` (each family's default set).
    /// readahead: cluster, vma, none, fixed:N, leap, oracle and the swapoff
    /// variants; free: unsorted, sorted, per-device, batch:N; zswap:
    /// no-shrinker, shrinker, shrinker-second-chance, disk-swapin-tracking;
    /// khugepaged: always, allocstall-per-pmd, allocstall-at-sleep,
    /// referenced-half, max-ptes-swap:N. `--family F --policy help` lists
    /// them with what each stands for.
    #[arg(long)]
    pub policy: Option<String>,
    /// NAME=VALUE, repeatable: a family's parameter (`--param help` lists
    /// them), e.g. page-cluster=3, lock-ns=40, ratio=2.5, pressure=any.
    #[arg(long = "param")]
    pub params: Vec<String>,
    /// readahead only: swap-backed pages memory holds (default: the traced
    /// cgroup's limit less what the recording saw it hold besides anonymous
    /// memory, else its limit, else all memory; printed with the replay).
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub memory_pages: Option<usize>,
    /// readahead only: a preset for the modelled I/O time (MODEL_IO_MS):
    /// nvme, ssd, hdd, zram. Default: per-request and per-page costs fitted
    /// to the trace's major faults (duration against pages read); with too
    /// few of them, hdd when a recorded swap device is rotational, else ssd.
    #[arg(long)]
    pub device: Option<String>,
}

fn family_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        replay::FAMILIES
            .iter()
            .map(|f| clap::builder::PossibleValue::new(f.name()).help(f.about())),
    )
}

impl ReplayArgs {
    pub fn family(&self) -> &'static dyn Family {
        // The value parser admits only registered names.
        replay::family(&self.family).unwrap_or(replay::FAMILIES[0])
    }

    /// The request for the chosen family; flags it does not read are
    /// refused as clap refuses an unknown flag (exit 2).
    pub fn request(&self) -> ReplayRequest<'_> {
        let f = self.family();
        let uses = f.uses();
        for (given, used, flag) in [
            (
                self.memory_pages.is_some(),
                uses.memory_pages,
                "--memory-pages",
            ),
            (self.device.is_some(), uses.device, "--device"),
        ] {
            if given && !used {
                use clap::CommandFactory;
                super::Cli::command()
                    .error(
                        clap::error::ErrorKind::ArgumentConflict,
                        format!("{flag} is not used by --family {}", f.name()),
                    )
                    .exit();
            }
        }
        ReplayRequest {
            policies: self.policy.as_deref(),
            params: &self.params,
            memory_pages: self.memory_pages,
            device: self.device.as_deref(),
        }
    }

    /// `--policy help` / `--param help`: the family's tables.
    pub fn help_asked(&self) -> Option<String> {
        let f = self.family();
        if self.policy.as_deref() == Some("help") {
            return Some(report::policy_help(f));
        }
        if self.params.iter().any(|p| p == "help") {
            return Some(report::param_help(f));
        }
        None
    }
}

pub fn run(a: Args) -> Result<()> {
    if let Some(h) = a.replay.help_asked() {
        print!("{h}");
        return Ok(());
    }
    let req = a.replay.request();
    if let Some(paths) = super::replay_many::many(&a.traces)? {
        return super::replay_many::run(&paths, &a.replay, &req, a.json, &a.many);
    }
    let trace = &a.traces[0];
    let mut progress = super::progress::Progress::new("scanning");
    let (t, r) = replay_one(trace, a.replay.family(), &req, &mut progress)?;
    let r = match r {
        Ok(r) => r,
        // Why, from the THP settings the trace recorded.
        Err(replay::FamilyError::Khugepaged(replay::khugepaged::KhpError::NoScans)) => {
            anyhow::bail!("{}", report::khp_no_scans_text(&t))
        }
        Err(e) => return Err(e.into()),
    };
    if a.json {
        super::print_json(&report::replayed_json(&t, &r))?;
    } else {
        for n in r.notes() {
            eprintln!("note: {n}");
        }
        if let replay::Replayed::Zswap(z) = &r {
            print!("{}", report::zswap_context(&t, &z.metrics));
        }
        print!("{}", report::replayed_text(&t, &r));
    }
    // A family may have shown something else instead (free with no batches
    // shows the zapped page tables: a note), or nothing (an error).
    if let Some(n) = r.outcome()? {
        eprintln!("note: {n}");
    }
    Ok(())
}

/// One trace through `family`, streamed: readahead and zswap in two passes,
/// free in one, khugepaged holding only the records it reads (at most
/// `RECORDS_MAX`; it sorts them), any other family loading the records it
/// reads ([`Family::reads`]). The
/// trace as `report` renders it (no records for readahead) and the replay;
/// the outer error is the trace's (unreadable, or `--strict`).
pub(super) fn replay_one(
    trace: &Path,
    family: &dyn Family,
    req: &ReplayRequest,
    progress: &mut super::progress::Progress,
) -> Result<(Loaded, Result<replay::Replayed, replay::FamilyError>)> {
    let show = |s: &swaptrace::trace::TraceStream| progress.follow("reading", s);
    match family.name() {
        "readahead" => return streamed(trace, req, progress),
        "zswap" => return zswap_streamed(trace, req, progress),
        "free" => {
            let (header, end, r) = replay::free::run_stream(super::open_stream(trace)?, req, show);
            super::warn_problems(trace, &end.problems)?;
            let t = end.into_loaded(header, Vec::new());
            return Ok((t, r.map(replay::Replayed::Free).map_err(Into::into)));
        }
        "khugepaged" => {
            let s = super::open_stream(trace)?;
            let max = replay::khugepaged::RECORDS_MAX;
            let (t, r) = replay::khugepaged::run_stream(s, req, max, show);
            super::warn_problems(trace, &t.problems)?;
            return Ok((t, r.map(replay::Replayed::Khugepaged).map_err(Into::into)));
        }
        _ => {}
    }
    let t = super::open_stream(trace)?.load_where(|r| family.reads(r), show);
    super::warn_problems(trace, &t.problems)?;
    let r = family.run(&t, req);
    Ok((t, r))
}

/// The readahead family streamed (two passes, bounded memory): the trace as
/// `report` renders it (header and footer, no records) and the replay.
fn streamed(
    trace: &Path,
    req: &ReplayRequest,
    progress: &mut super::progress::Progress,
) -> Result<(Loaded, Result<replay::Replayed, replay::FamilyError>)> {
    let mut show = |phase, done, total| progress.phase(phase, done, total);
    let scanned = replay::readahead::scan(super::open_stream(trace)?, &mut show);
    super::warn_problems(trace, &scanned.end.problems)?;
    let r = scanned
        .replay(req, super::open_stream(trace)?, &mut show)
        .map(replay::Replayed::Readahead)
        .map_err(Into::into);
    Ok((scanned.end.into_loaded(scanned.header, Vec::new()), r))
}

/// The zswap family streamed (two passes, bounded memory), as [`streamed`].
fn zswap_streamed(
    trace: &Path,
    req: &ReplayRequest,
    progress: &mut super::progress::Progress,
) -> Result<(Loaded, Result<replay::Replayed, replay::FamilyError>)> {
    let mut show = |phase, done, total| progress.phase(phase, done, total);
    let scanned = replay::zswap::scan(super::open_stream(trace)?, &mut show);
    super::warn_problems(trace, &scanned.end.problems)?;
    let r = scanned
        .replay(req, super::open_stream(trace)?, &mut show)
        .map(replay::Replayed::Zswap)
        .map_err(Into::into);
    Ok((scanned.end.into_loaded(scanned.header, Vec::new()), r))
}
