//! `swaptrace top`: what the probes see, interval by interval.

use anyhow::Result;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// Length of an interval, e.g. 1s, 500ms.
    #[arg(short, long, default_value = "1s", value_parser = super::parse_duration)]
    interval: Duration,
    /// Stop after this many intervals [default: until Ctrl-C].
    #[arg(short, long)]
    count: Option<u64>,
    /// Only this process; it must exist when `top` starts.
    #[arg(long, conflicts_with = "cgroup")]
    pid: Option<u32>,
    /// Only tasks of this memory cgroup (v1 directory) and below.
    #[arg(long)]
    cgroup: Option<PathBuf>,
    /// Only these sections: faults, pages-read, ra-window, swap-out,
    /// free-latency, khugepaged, zswap, reclaim, vmstat.
    #[arg(long, value_delimiter = ',')]
    metric: Vec<String>,
    /// One JSON object per interval, one per line.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<()> {
    super::record::check_pid(a.pid)?;
    run_checked(a)
}

#[cfg(not(feature = "live"))]
fn run_checked(_: Args) -> Result<()> {
    super::no_live()
}

#[cfg(feature = "live")]
fn run_checked(a: Args) -> Result<()> {
    use std::io::Write;
    use swaptrace::record::{TopOptions, TOP_SECTIONS};
    if let Some(m) = a
        .metric
        .iter()
        .find(|m| !TOP_SECTIONS.contains(&m.as_str()))
    {
        anyhow::bail!("--metric {m}: known: {}", TOP_SECTIONS.join(", "));
    }
    let opts = TopOptions {
        interval: a.interval,
        count: a.count,
        pid: a.pid,
        cgroup: a.cgroup,
        metrics: a.metric.clone(),
    };
    if !a.json {
        eprintln!(
            "attaching; an interval every {:?}, Ctrl-C to stop",
            a.interval
        );
    }
    swaptrace::record::top(&opts, |iv| {
        let mut o = std::io::stdout().lock();
        let _ = if a.json {
            writeln!(o, "{}", iv.json())
        } else {
            writeln!(o, "{}", iv.text(&a.metric))
        };
        let _ = o.flush();
    })?;
    Ok(())
}
