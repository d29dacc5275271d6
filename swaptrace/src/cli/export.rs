//! `swaptrace export`: a trace as JSON Lines (docs/jsonl.md).

use anyhow::{bail, Result};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use swaptrace::trace::{export_jsonl_stream, output::OutputFile, TraceStream};

#[derive(clap::Args)]
pub struct Args {
    /// The trace to read (.swt).
    trace: PathBuf,
    /// Output format: jsonl.
    #[arg(long, default_value = "jsonl")]
    format: String,
    /// Output file (default: standard output).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Replace an existing output file.
    #[arg(long)]
    force: bool,
}

pub fn run(a: Args) -> Result<()> {
    if a.format != "jsonl" {
        bail!("--format {}: only jsonl is supported", a.format);
    }
    let stats = match &a.output {
        Some(path) => {
            // Written beside the target and renamed into place once whole
            // (and, with --strict, only when the trace had no problem).
            let policy = super::output_policy(path, a.force, &[&a.trace])?;
            let out = OutputFile::create(path, &policy, 0o644)?;
            let mut w = BufWriter::new(out.file());
            let stats = export(&a.trace, &mut w)?;
            w.flush()?;
            drop(w);
            super::warn_problems(&a.trace, stats.problems.iter().cloned())?;
            out.commit()?;
            stats
        }
        None => {
            let stats = export(&a.trace, BufWriter::new(std::io::stdout().lock()))?;
            super::warn_problems(&a.trace, stats.problems.iter().cloned())?;
            stats
        }
    };
    eprintln!("exported {} records", stats.records);
    Ok(())
}

/// The trace streamed out as JSON Lines, with progress on a terminal.
fn export(trace: &std::path::Path, out: impl Write) -> Result<swaptrace::trace::ExportStats> {
    let s: TraceStream = super::open_stream(trace)?;
    let mut progress = super::progress::Progress::new("exporting");
    Ok(export_jsonl_stream(s, out, |s| {
        let (done, total) = s.position();
        progress.set(done, total);
    })?)
}
