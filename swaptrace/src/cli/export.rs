//! `swaptrace export`: a trace as JSON Lines (docs/jsonl.md).

use anyhow::{bail, Context, Result};
use std::io::BufWriter;
use std::path::PathBuf;
use swaptrace::trace::export_jsonl_file;

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
}

pub fn run(a: Args) -> Result<()> {
    if a.format != "jsonl" {
        bail!("--format {}: only jsonl is supported", a.format);
    }
    let stats = match &a.output {
        Some(path) => {
            let f = std::fs::File::create(path)
                .with_context(|| format!("creating {}", path.display()))?;
            export_jsonl_file(&a.trace, BufWriter::new(f))?
        }
        None => export_jsonl_file(&a.trace, BufWriter::new(std::io::stdout().lock()))?,
    };
    for p in &stats.problems {
        eprintln!("warning: {p}");
    }
    eprintln!("exported {} records", stats.records);
    Ok(())
}
