//! `swaptrace plot`: PNG charts of a trace and its replays.

use anyhow::Result;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The trace to read (.swt).
    trace: PathBuf,
    /// Directory the PNG files are written to.
    #[arg(short, long)]
    output: PathBuf,
    /// readahead: windows, swap-ins, heatmap, policies; zswap: the pool and
    /// disk swap-ins over time per policy.
    #[command(flatten)]
    replay: super::replay::ReplayArgs,
}

#[cfg(not(feature = "plot"))]
pub fn run(_: Args) -> Result<()> {
    super::no_plot()
}

#[cfg(feature = "plot")]
pub fn run(a: Args) -> Result<()> {
    use anyhow::bail;
    use swaptrace::replay;
    use swaptrace::report::{self, During, HistBuilder, HistMetric, Swapoffs, Timeline};
    use swaptrace::trace::Record;
    let file = a.trace.file_name().map_or_else(
        || a.trace.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    );
    let req = a.replay.request();
    let family = a.replay.family();
    let mut progress = super::progress::Progress::new("scanning");
    let files = match family.name() {
        "readahead" => {
            // The replay streamed (two passes), then one more for the charts.
            let (_, r) = super::replay::replay_one(&a.trace, family, &req, &mut progress)?;
            drop(progress);
            let results = match r {
                Ok(replay::Replayed::Readahead(r)) => r.results,
                Ok(_) => Vec::new(),
                Err(e) => {
                    eprintln!("note: no replay ({e}); plotting the trace alone");
                    Vec::new()
                }
            };
            let none = Swapoffs::default();
            let (t, (tl, windows)) = super::stream_each(
                &a.trace,
                "reading",
                |h| {
                    let w: Vec<HistBuilder> = [HistMetric::RaWindow, HistMetric::PagesRead]
                        .into_iter()
                        .map(|m| HistBuilder::new(m, During::All, &none))
                        .collect();
                    (Timeline::new(h), w)
                },
                |(tl, w), batch| {
                    tl.add(batch);
                    for b in w {
                        b.add(batch);
                    }
                },
            )?;
            let tl = tl.finish(t.footer.as_ref());
            // The live window: the probed swapin_nr_pages() return, else
            // (tracepoint traces) the pages read per major fault.
            let mut windows = windows
                .into_iter()
                .map(|b| b.finish().ok().and_then(|h| h.count).map(|c| c.counts));
            let live = match (windows.next().flatten(), windows.next().flatten()) {
                (Some(c), _) => Some(("live (probed window)", c)),
                (None, Some(c)) => Some(("live (pages read per major fault)", c)),
                _ => None,
            };
            report::plot_all(
                &t,
                &tl,
                &file,
                live.as_ref().map(|(n, c)| (*n, c)),
                &results,
                &a.output,
            )?
        }
        "zswap" => {
            // What the replay reads, and the swap reads the time axis ends at.
            let t = super::open_stream(&a.trace)?.load_where(
                |r| family.reads(r) || matches!(r, Record::SwapRead { .. }),
                |s| progress.follow("reading", s),
            );
            drop(progress);
            super::warn_problems(&a.trace, &t.problems)?;
            let r = replay::zswap::run(&t, &req)?;
            report::zswap_png(&a.output, &file, &t, &r.metrics)?
        }
        "khugepaged" => bail!(
            "--family khugepaged has no charts yet; `replay --family khugepaged` shows it"
        ),
        f => bail!(
            "--family {f} has no charts; `hist --metric free-latency` and `replay --family free` show it"
        ),
    };
    for f in files {
        println!("wrote {}", f.display());
    }
    Ok(())
}
