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
    use swaptrace::report::{self, During, HistMetric};
    let t = super::load(&a.trace)?;
    let file = a.trace.file_name().map_or_else(
        || a.trace.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    );
    let req = a.replay.request();
    let files = match a.replay.family.as_str() {
        "readahead" => {
            let results = match swaptrace::replay::readahead::run(&t, &req) {
                Ok(r) => r.results,
                Err(e) => {
                    eprintln!("note: no replay ({e}); plotting the trace alone");
                    Vec::new()
                }
            };
            // The live window: the probed swapin_nr_pages() return, else
            // (tracepoint traces) the pages read per major fault.
            let hist = |m| {
                report::histogram(&t, m, During::All)
                    .ok()
                    .and_then(|h| h.count)
                    .map(|c| c.counts)
            };
            let live = hist(HistMetric::RaWindow)
                .map(|c| ("live (probed window)", c))
                .or_else(|| {
                    hist(HistMetric::PagesRead).map(|c| ("live (pages read per major fault)", c))
                });
            report::plot_all(
                &t,
                &file,
                live.as_ref().map(|(n, c)| (*n, c)),
                &results,
                &a.output,
            )?
        }
        "zswap" => {
            let r = swaptrace::replay::zswap::run(&t, &req)?;
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
