//! `swaptrace compare`: two traces (or two groups of repeated runs) side by
//! side for a patch description.

use anyhow::{bail, Result};
use std::path::PathBuf;
use swaptrace::report::{self, CompareBuilder, CompareInput, Timeline};

#[derive(clap::Args)]
pub struct Args {
    /// The baseline trace and the changed one (`compare A B`), or the
    /// baseline's repeated runs (`compare A1 A2 A3 -- B1 B2 B3`).
    #[arg(required = true, value_name = "A")]
    a: Vec<PathBuf>,
    /// The changed trace's repeated runs, after `--`. With repeated runs the
    /// table shows mean ± stddev per side and the change with its spread,
    /// as `perf stat -r` does.
    #[arg(last = true, value_name = "B")]
    b: Vec<PathBuf>,
    /// Names of the two columns, e.g. A=vanilla,B=patched.
    #[arg(long, default_value = "A=A,B=B")]
    label: String,
    /// Only these metrics (comma-separated): runtime, pswpin, pswpout,
    /// pgmajfault, swap_ra, swap_ra_hit, zswpin, zswpout, zswpwb,
    /// khugepaged-swapin, ra-window, fault-latency, free-latency, …
    #[arg(long, value_delimiter = ',')]
    metric: Vec<String>,
    /// Also draw the A/B charts into this directory.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<()> {
    let mut labels = ("A".to_string(), "B".to_string());
    for part in a.label.split(',') {
        match part.split_once('=') {
            Some(("A", v)) => labels.0 = v.to_string(),
            Some(("B", v)) => labels.1 = v.to_string(),
            _ => bail!("--label {}: expected A=NAME,B=NAME", a.label),
        }
    }
    let known = report::compare_metric_names();
    if let Some(m) = a.metric.iter().find(|m| !known.contains(&m.as_str())) {
        bail!("--metric {m}: unknown metric (known: {})", known.join(", "));
    }
    if let Some(f) = a.b.iter().find(|p| p.to_string_lossy().starts_with('-')) {
        bail!(
            "{}: after `--` only B's traces may follow; put options before `--`",
            f.display()
        );
    }
    let (pa, pb) = match (a.a.as_slice(), a.b.as_slice()) {
        ([x, y], []) => (vec![x.clone()], vec![y.clone()]),
        (_, []) => {
            bail!("compare takes two traces, A B, or two groups of runs: A1 A2 … -- B1 B2 …")
        }
        (x, y) => (x.to_vec(), y.to_vec()),
    };
    // Each trace streamed; the first of each side also binned for the charts.
    let read = |ps: &[PathBuf]| -> Result<(Vec<CompareInput>, Option<Timeline>)> {
        let mut first = None;
        let mut out = Vec::new();
        for (i, p) in ps.iter().enumerate() {
            let charts = i == 0 && a.plot.is_some();
            let (t, (b, tl)) = super::stream_each(
                p,
                "reading",
                |h| (CompareBuilder::default(), charts.then(|| Timeline::new(h))),
                |(b, tl), batch| {
                    b.add(batch);
                    if let Some(tl) = tl {
                        tl.add(batch);
                    }
                },
            )?;
            first = first.or(tl.map(|tl| tl.finish(t.footer.as_ref())));
            out.push(b.finish(t));
        }
        Ok((out, first))
    };
    let ((ta, fa), (tb, fb)) = (read(&pa)?, read(&pb)?);
    let (ra, rb): (Vec<_>, Vec<_>) = (ta.iter().collect(), tb.iter().collect());
    let c = report::compare_runs(&ra, &rb, labels, &a.metric);
    if let Some(dir) = &a.plot {
        // The charts show the first run of each side.
        #[cfg(feature = "plot")]
        if let (Some(x), Some(tx), Some(y), Some(ty)) = (ta.first(), &fa, tb.first(), &fb) {
            for f in report::compare_png(dir, (&x.t, tx), (&y.t, ty), &c)? {
                println!("wrote {}", f.display());
            }
        }
        #[cfg(not(feature = "plot"))]
        {
            let _ = (dir, fa, fb);
            return super::no_plot();
        }
    }
    if a.json {
        super::print_json(&c.json())
    } else {
        print!("{}", c.text());
        Ok(())
    }
}
