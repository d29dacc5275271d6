//! `swaptrace hist`: one metric of a trace, argdist or funclatency style,
//! read a chunk at a time.

use anyhow::{bail, Result};
use std::path::{Path, PathBuf};
use swaptrace::replay;
use swaptrace::report::{self, During, HistBuilder, HistMetric, Origin, Swapoffs, WindowColumn};

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

/// The swapoff calls `--during` needs (a first pass keeping only those).
fn swapoffs(trace: &Path, during: During) -> Result<Swapoffs> {
    if during == During::All {
        return Ok(Swapoffs::default());
    }
    let t = super::open_stream(trace)?.load_where(Swapoffs::reads, |_| {});
    Ok(Swapoffs::of(&t.records))
}

/// Builders fed the whole trace, streamed.
fn build(trace: &Path, bs: Vec<HistBuilder>) -> Result<Vec<HistBuilder>> {
    let (_, bs) = super::stream_each(
        trace,
        "reading",
        |_| bs,
        |bs, batch| {
            for b in bs {
                b.add(batch);
            }
        },
    )?;
    Ok(bs)
}

pub fn run(a: Args) -> Result<()> {
    let spans = swapoffs(&a.trace, a.during)?;
    if a.replay.policy.is_none() {
        let one = build(&a.trace, vec![HistBuilder::new(a.metric, a.during, &spans)])?;
        let h = match one.into_iter().next().map(HistBuilder::finish) {
            Some(Ok(h)) => h,
            Some(Err(e)) => {
                // What the trace has instead: one more pass, on this error only.
                let all = build(&a.trace, HistBuilder::all(a.during, &spans))?;
                return Err(report::explain(e, a.metric, &all).into());
            }
            None => bail!("no histogram"),
        };
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
    let live: Vec<HistBuilder> = [HistMetric::RaWindow, HistMetric::PagesRead]
        .into_iter()
        .map(|m| HistBuilder::new(m, a.during, &spans))
        .collect();
    let mut live = build(&a.trace, live)?.into_iter().map(HistBuilder::finish);
    let live = match (live.next(), live.next()) {
        (Some(Ok(h)), _) => h.count.map(|c| ("live", Origin::Live, c.counts)),
        (_, Some(Ok(h))) => h
            .count
            .map(|c| ("pages-read", Origin::LiveDerived, c.counts)),
        _ => None,
    };
    if let Some((name, origin, counts)) = live {
        columns.push(WindowColumn {
            name: name.into(),
            origin,
            counts,
        });
    }
    let mut progress = super::progress::Progress::new("scanning");
    let (_, r) = super::replay::replay_one(
        &a.trace,
        a.replay.family(),
        &a.replay.request(),
        &mut progress,
    )?;
    drop(progress);
    let replay::Replayed::Readahead(r) = r? else {
        bail!("--policy goes with readahead policies");
    };
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
