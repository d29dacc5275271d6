//! `swaptrace compare`: two traces side by side for a patch description.

use anyhow::{bail, Result};
use std::path::PathBuf;
use swaptrace::report;

#[derive(clap::Args)]
pub struct Args {
    /// The baseline trace.
    a: PathBuf,
    /// The changed trace.
    b: PathBuf,
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
    let (ta, tb) = (super::load(&a.a)?, super::load(&a.b)?);
    let c = report::compare(&ta, &tb, labels, &a.metric);
    if let Some(dir) = &a.plot {
        #[cfg(feature = "plot")]
        for f in report::compare_png(dir, &ta, &tb, &c)? {
            println!("wrote {}", f.display());
        }
        #[cfg(not(feature = "plot"))]
        {
            let _ = dir;
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
