//! `swaptrace doctor`: which probe captures each metric on this kernel.

use anyhow::Result;
use swaptrace::probe::{self, KernelFacts};
use swaptrace::report;

#[derive(clap::Args)]
pub struct Args {
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
    /// Every probe considered per metric and why each refused one was not
    /// used (default: one line per metric, each reason once).
    #[arg(short, long)]
    verbose: bool,
}

pub fn run(a: Args) -> Result<()> {
    #[allow(unused_mut)]
    let mut facts = KernelFacts::gather();
    #[cfg(feature = "live")]
    {
        match probe::Probe::load(&facts, &probe::ProbeConfig::default()) {
            Ok(mut p) => facts.fentry = p.trial_fentry(),
            Err(e) => facts.fentry = probe::Trial::NotTried(e.to_string()),
        }
    }
    #[cfg(not(feature = "live"))]
    {
        facts.fentry = probe::Trial::NotTried("built without the `live` feature".into());
    }
    let plans = probe::plan(&facts);
    if a.json {
        super::print_json(&report::doctor_json(&facts, &plans))
    } else {
        print!("{}", report::doctor_text(&facts, &plans, a.verbose));
        Ok(())
    }
}
