//! `swaptrace hist`: one metric of a trace, argdist or funclatency style.

use anyhow::{bail, Result};
use std::path::PathBuf;
use swaptrace::report::{self, During, HistMetric, Origin, WindowColumn};

#[derive(clap::Args)]
pub struct Args {
    /// The trace to read (.swt).
    trace: PathBuf,
    /// The metric: ra-window, pages-read, fault-latency, free-latency or
    /// zap-interval (`info` lists the ones the trace has).
    #[arg(long, value_enum)]
    metric: HistMetric,
    /// Only events during swapoff, or only outside it.
    #[arg(long, value_enum, default_value = "all")]
    during: During,
    /// With ra-window and --policy: the replayed policies' windows too,
    /// side by side.
    #[command(flatten)]
    replay: super::replay::ReplayArgs,
    /// Print JSON (explicit bucket bounds) instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<()> {
    let t = super::load(&a.trace)?;
    if a.replay.policy.is_none() {
        let h = report::histogram_explained(&t, a.metric, a.during)?;
        return if a.json {
            super::print_json(&h.json())
        } else {
            print!("{}", h.text());
            Ok(())
        };
    }
    if a.metric != HistMetric::RaWindow || a.replay.family != "readahead" {
        bail!("--policy goes with --metric ra-window (readahead policies)");
    }
    // The live windows: exact probes' when the trace has them, else the
    // pages read per major fault (a tracepoint trace's live window).
    let mut columns: Vec<WindowColumn> = Vec::new();
    let live = match report::histogram(&t, a.metric, a.during) {
        Ok(h) => h.count.map(|c| ("live", Origin::Live, c.counts)),
        Err(_) => report::histogram(&t, HistMetric::PagesRead, a.during)
            .ok()
            .and_then(|h| h.count)
            .map(|c| ("pages-read", Origin::LiveDerived, c.counts)),
    };
    if let Some((name, origin, counts)) = live {
        columns.push(WindowColumn {
            name: name.into(),
            origin,
            counts,
        });
    }
    let r = swaptrace::replay::readahead::run(&t, &a.replay.request())?;
    for m in &r.results {
        columns.push(WindowColumn {
            name: m.policy.clone(),
            origin: Origin::Replayed,
            counts: report::replayed_windows(m, a.during),
        });
    }
    if a.json {
        super::print_json(&report::window_columns_json(&columns))
    } else {
        print!("{}", report::window_columns_text(&columns));
        Ok(())
    }
}
