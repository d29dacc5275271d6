//! `swaptrace info`: a trace's header and its records counted per kind,
//! read one chunk at a time.

use anyhow::Result;
use std::path::{Path, PathBuf};
use swaptrace::report::TraceInfo;

#[derive(clap::Args)]
pub struct Args {
    /// The trace to read (.swt).
    trace: PathBuf,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<()> {
    print(&a.trace, a.json)
}

/// `info` of `trace`, streamed (also what `demo` prints of its recording).
pub(super) fn print(trace: &Path, json: bool) -> Result<()> {
    let s = super::open_stream(trace)?;
    let mut progress = super::progress::Progress::new("reading");
    let t = TraceInfo::stream(s, |s| progress.follow_bytes(s));
    drop(progress);
    super::warn_problems(trace, &t.problems)?;
    let path = trace.display().to_string();
    if json {
        super::print_json(&t.json(&path))
    } else {
        let bytes = std::fs::metadata(trace).map(|m| m.len()).unwrap_or(0);
        print!("{}", t.text(&path, bytes));
        Ok(())
    }
}
