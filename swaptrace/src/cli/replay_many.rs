//! `swaptrace replay DIR|FILES…`: every trace under every policy of the
//! family, one row per (trace, policy), the traces replayed in parallel on
//! the cores. Each thread streams its own trace as `replay` does one, so
//! memory is at most a model's state (readahead) or a family's input per
//! thread, whatever the traces' lengths.

use super::replay::ReplayArgs;
use anyhow::{bail, Context, Result};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use swaptrace::replay::ReplayRequest;
use swaptrace::report::many::{self, PolicyRow};
use swaptrace::trace::output::OutputFile;

#[derive(clap::Args)]
pub struct ManyArgs {
    /// Several traces: table, json or parquet (parquet needs -o).
    #[arg(long, default_value = "table", value_parser = ["table", "json", "parquet"])]
    format: String,
    /// Several traces: the output file (default: standard output).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Replace an existing output file.
    #[arg(long)]
    force: bool,
}

/// The traces to replay one row per (trace, policy): None for a single
/// trace file (the family's own tables). A directory gives its *.swt files.
pub fn many(args: &[PathBuf]) -> Result<Option<Vec<PathBuf>>> {
    if args.len() == 1 && !args[0].is_dir() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for a in args {
        if a.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(a)
                .with_context(|| format!("reading {}", a.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "swt") && p.is_file())
                .collect();
            if found.is_empty() {
                bail!("{}: no .swt traces in it", a.display());
            }
            found.sort();
            out.extend(found);
        } else {
            out.push(a.clone());
        }
    }
    Ok(Some(out))
}

/// One trace's rows, streamed as `replay` streams a single trace.
fn one(path: &Path, r: &ReplayArgs, req: &ReplayRequest) -> Result<Vec<PolicyRow>> {
    let family = r.family();
    let mut hidden = super::progress::Progress::hidden();
    let (t, replayed) = super::replay::replay_one(path, family, req, &mut hidden)?;
    let replayed = replayed.with_context(|| format!("replaying {}", path.display()))?;
    Ok(many::policy_rows(&t, path, family.name(), &replayed))
}

pub fn run(
    paths: &[PathBuf],
    r: &ReplayArgs,
    req: &ReplayRequest,
    json: bool,
    a: &ManyArgs,
) -> Result<()> {
    let format = if json { "json" } else { a.format.as_str() };
    if format == "parquet" && a.output.is_none() {
        bail!("--format parquet needs -o FILE");
    }
    let inputs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let policy = match &a.output {
        Some(o) => Some(super::output_policy(o, a.force, &inputs)?),
        None => None,
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(paths.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let finished = AtomicUsize::new(0);
    let progress = Mutex::new(super::progress::Progress::items("replaying traces"));
    let done: Mutex<Vec<Option<Result<Vec<PolicyRow>>>>> =
        Mutex::new(paths.iter().map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(path) = paths.get(i) else { break };
                let res = one(path, r, req);
                if let Ok(mut d) = done.lock() {
                    d[i] = Some(res);
                }
                let n = finished.fetch_add(1, Ordering::Relaxed) + 1;
                if let Ok(mut p) = progress.lock() {
                    p.set(n as u64, paths.len() as u64);
                }
            });
        }
    });
    let done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut rows = Vec::new();
    let mut failed = 0;
    for (path, res) in paths.iter().zip(done) {
        match res {
            Some(Ok(r)) => rows.extend(r),
            Some(Err(e)) => {
                eprintln!("swaptrace: {}: {e:#}", path.display());
                failed += 1;
            }
            None => {
                eprintln!("swaptrace: {}: its replay thread died", path.display());
                failed += 1;
            }
        }
    }
    let text = match format {
        "json" => Some(serde_json::to_string_pretty(&rows)? + "\n"),
        "table" => Some(many::rows_text(r.family().name(), &rows)),
        _ => None,
    };
    match (&a.output, policy) {
        (Some(path), Some(policy)) => {
            let out = OutputFile::create(path, &policy, 0o644)?;
            let mut w = BufWriter::new(out.file());
            match &text {
                Some(t) => w.write_all(t.as_bytes())?,
                None => parquet(&rows, &mut w)?,
            }
            w.flush()?;
            drop(w);
            out.commit()?;
        }
        _ => print!("{}", text.unwrap_or_default()),
    }
    eprintln!(
        "{} rows: {} traces, {} family",
        rows.len(),
        paths.len() - failed,
        r.family().name()
    );
    if failed > 0 {
        bail!("{failed} of {} traces could not be replayed", paths.len());
    }
    Ok(())
}

#[cfg(feature = "parquet")]
fn parquet(rows: &[PolicyRow], w: &mut (impl Write + Send)) -> Result<()> {
    Ok(many::rows_parquet(rows, w)?)
}

#[cfg(not(feature = "parquet"))]
fn parquet(_: &[PolicyRow], _: &mut (impl Write + Send)) -> Result<()> {
    bail!("--format parquet: this swaptrace was built without the `parquet` feature")
}
