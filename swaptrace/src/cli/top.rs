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
    /// Also serve the running totals at http://ADDR/metrics for Prometheus
    /// (text format 0.0.4, OpenMetrics if asked), e.g. 127.0.0.1:9464.
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// No screen output (with --listen: only serve /metrics). Without a
    /// terminal on stdout, --listen is quiet unless --json is given.
    #[arg(short, long)]
    quiet: bool,
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
    use std::io::{IsTerminal, Write};
    use std::sync::{Arc, Mutex};
    use swaptrace::record::prometheus::{self, Metrics};
    use swaptrace::record::{MetricsServer, TopOptions, TOP_SECTIONS};
    if let Some(m) = a
        .metric
        .iter()
        .find(|m| !TOP_SECTIONS.contains(&m.as_str()))
    {
        anyhow::bail!("--metric {m}: known: {}", TOP_SECTIONS.join(", "));
    }
    let metrics = a.listen.as_deref().map(|addr| {
        let cgroup = a
            .cgroup
            .as_deref()
            .map_or("/".into(), |p| p.display().to_string());
        let reasons = (0..swaptrace_common::kind::COUNT as u8)
            .map(swaptrace_common::kind::name)
            .filter(|n| *n != "unknown");
        let m = Metrics::new(&prometheus::host_name(), &cgroup, reasons);
        (addr, Arc::new(Mutex::new(m)))
    });
    // Bound before attaching, so that a taken port fails at once.
    let _server = match &metrics {
        Some((addr, m)) => {
            let s = MetricsServer::start(addr, m.clone())?;
            eprintln!("serving http://{}/metrics", s.local_addr());
            Some(s)
        }
        None => None,
    };
    let screen = !a.quiet && (a.listen.is_none() || a.json || std::io::stdout().is_terminal());
    let opts = TopOptions {
        interval: a.interval,
        count: a.count,
        pid: a.pid,
        cgroup: a.cgroup,
        metrics: a.metric.clone(),
    };
    if !a.json && !a.quiet {
        eprintln!(
            "attaching; an interval every {:?}, Ctrl-C to stop",
            a.interval
        );
    }
    swaptrace::record::top(&opts, |iv| {
        if let Some((_, m)) = &metrics {
            let mut m = m.lock().unwrap_or_else(|e| e.into_inner());
            m.add_interval(
                &iv.summary,
                &iv.windows,
                &iv.pages_read,
                &iv.free_latency_s,
                &iv.lost_by,
            );
        }
        if !screen {
            return;
        }
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
