//! `swaptrace export`: a trace as JSON Lines (docs/jsonl.md) or Parquet
//! (docs/parquet.md).

use anyhow::{bail, Result};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use swaptrace::trace::{export_jsonl_stream, output::OutputFile, TraceStream};

#[derive(clap::Args)]
pub struct Args {
    /// The trace to read (.swt).
    trace: PathBuf,
    /// Output format: jsonl, or parquet (one wide table, docs/parquet.md).
    #[arg(long, default_value = "jsonl")]
    format: String,
    /// parquet only: the name the rows carry in `host` (default: the
    /// recording host's, else the trace's file name without .swt).
    #[arg(long)]
    host: Option<String>,
    /// Output file (default, or `-`: standard output).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Replace an existing output file.
    #[arg(long)]
    force: bool,
}

pub fn run(mut a: Args) -> Result<()> {
    // `-o -` is standard output, as for most tools (not a file named "-").
    a.output = a.output.filter(|p| p.as_os_str() != "-");
    if a.format == "parquet" {
        return parquet(a);
    }
    if a.format != "jsonl" {
        bail!("--format {}: jsonl or parquet", a.format);
    }
    if a.host.is_some() {
        bail!("--host is for --format parquet");
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
            super::warn_problems(&a.trace, &stats.problems)?;
            out.commit()?;
            stats
        }
        None => {
            let stats = export(&a.trace, BufWriter::new(std::io::stdout().lock()))?;
            super::warn_problems(&a.trace, &stats.problems)?;
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
    Ok(export_jsonl_stream(s, out, |s| progress.follow_bytes(s))?)
}

#[cfg(feature = "parquet")]
fn parquet(a: Args) -> Result<()> {
    use swaptrace::trace::parquet::{export_parquet_file, ParquetOptions};
    let opts = ParquetOptions {
        host: a.host.clone(),
        ..ParquetOptions::default()
    };
    let stats = match &a.output {
        Some(path) => {
            let policy = super::output_policy(path, a.force, &[&a.trace])?;
            let out = OutputFile::create(path, &policy, 0o644)?;
            let stats = export_parquet_file(&a.trace, BufWriter::new(out.file()), &opts)?;
            super::warn_problems(&a.trace, &stats.problems)?;
            out.commit()?;
            stats
        }
        None => {
            let stats = export_parquet_file(&a.trace, BufWriter::new(std::io::stdout()), &opts)?;
            super::warn_problems(&a.trace, &stats.problems)?;
            stats
        }
    };
    eprintln!(
        "exported {} records in {} row groups",
        stats.records, stats.row_groups
    );
    Ok(())
}

#[cfg(not(feature = "parquet"))]
fn parquet(_: Args) -> Result<()> {
    bail!("--format parquet: this swaptrace was built without the `parquet` feature")
}
