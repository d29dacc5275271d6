//! `swaptrace info`: a trace's header and its records counted per kind.

use anyhow::Result;
use std::path::PathBuf;
use swaptrace::report;

#[derive(clap::Args)]
pub struct Args {
    /// The trace to read (.swt).
    trace: PathBuf,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<()> {
    let t = super::load(&a.trace)?;
    let path = a.trace.display().to_string();
    if a.json {
        super::print_json(&report::info_json(&t, &path))
    } else {
        let bytes = std::fs::metadata(&a.trace).map(|m| m.len()).unwrap_or(0);
        print!("{}", report::info_text(&t, &path, bytes));
        Ok(())
    }
}
