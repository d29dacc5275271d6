//! `swaptrace import`: a JSON Lines stream (docs/jsonl.md) into a trace.

use anyhow::{Context, Result};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// JSON Lines input.
    input: PathBuf,
    /// The trace to write.
    #[arg(short, long)]
    output: PathBuf,
    /// Replace an existing trace.
    #[arg(long)]
    force: bool,
}

pub fn run(a: Args) -> Result<()> {
    let policy = super::output_policy(&a.output, a.force, &[&a.input])?;
    let f =
        std::fs::File::open(&a.input).with_context(|| format!("opening {}", a.input.display()))?;
    let r = swaptrace::trace::import_jsonl(std::io::BufReader::new(f), &a.output, &policy)?;
    for (line, why) in &r.bad_lines {
        eprintln!("{}:{line}: {why}", a.input.display());
    }
    if r.bad_lines_omitted > 0 {
        eprintln!("… and {} more bad lines", r.bad_lines_omitted);
    }
    if r.header_synthesized {
        eprintln!("note: no header line: a minimal header was written");
    }
    if r.out_of_order > 0 {
        eprintln!(
            "note: {} records earlier than the one before",
            r.out_of_order
        );
    }
    println!(
        "imported {} records into {} ({} bad lines skipped)",
        r.records,
        a.output.display(),
        r.bad_line_count()
    );
    Ok(())
}
