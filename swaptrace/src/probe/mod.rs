//! Which probe captures each metric on this kernel. One table row per attach
//! point ([`table::ATTACH_POINTS`]); the choice is made from what the running
//! kernel has (BTF, kallsyms, a trial load), not from its version number.

pub mod btf;
pub mod damon;
mod kernel;
#[cfg(feature = "live")]
mod live;
mod table;
mod table_exact;
mod table_zswap;
pub mod tpformat;

pub use kernel::{
    config_preempt_mode, kernel_release, page_size, release_number, KernelFacts, Preempt, Trial,
    Twins, PREEMPT_DEBUGFS, RAW_TP_PREEMPTIBLE_FROM,
};
#[cfg(feature = "live")]
pub use live::{LiveError, Probe, ProbeConfig, ProgStat, Stats};
pub use table::{AttachPoint, Backend, Prog, ProgKind, Req, ATTACH_POINTS, METRICS};

use crate::trace::MetricSource;
use serde::Serialize;

/// The outcome for one metric: the row chosen, and why the others were not.
#[derive(Clone, Debug, Serialize)]
pub struct MetricPlan {
    pub metric: &'static str,
    pub what: &'static str,
    pub chosen: Option<Choice>,
    pub rejected: Vec<Choice>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Choice {
    pub backend: Backend,
    pub attach: &'static str,
    #[serde(skip)]
    pub progs: &'static [Prog],
    /// Empty when usable.
    pub why_not: Vec<String>,
    pub note: &'static str,
    /// Kernels the row was seen to work on (first, last).
    pub seen: Option<(&'static str, &'static str)>,
    #[serde(skip)]
    pub silences: &'static [&'static str],
}

/// Decides, for every metric, the first usable attach point in table order.
pub fn plan(k: &KernelFacts) -> Vec<MetricPlan> {
    METRICS
        .iter()
        .map(|&(metric, what)| {
            let mut chosen = None;
            let mut rejected = Vec::new();
            for ap in ATTACH_POINTS.iter().filter(|a| a.metric == metric) {
                let why_not = k.unmet(ap);
                let c = Choice {
                    backend: ap.backend,
                    attach: ap.attach,
                    progs: ap.progs,
                    why_not,
                    note: ap.note,
                    seen: ap.seen,
                    silences: ap.silences,
                };
                if chosen.is_none() && c.why_not.is_empty() {
                    chosen = Some(c);
                } else {
                    rejected.push(c);
                }
            }
            MetricPlan {
                metric,
                what,
                chosen,
                rejected,
            }
        })
        .collect()
}

impl MetricPlan {
    /// Chooses the first usable row not tried yet; false if none is left.
    pub fn next_usable(&mut self) -> bool {
        match self.rejected.iter().position(|c| c.why_not.is_empty()) {
            Some(i) => {
                self.chosen = Some(self.rejected.remove(i));
                true
            }
            None => false,
        }
    }

    /// Drops the chosen attach point (it failed to attach) for `why`.
    pub fn fail(&mut self, why: String) {
        if let Some(mut c) = self.chosen.take() {
            c.why_not.push(why);
            self.rejected.insert(0, c);
        }
    }
}

/// The header's per-metric record of a plan.
pub fn sources(plans: &[MetricPlan]) -> Vec<MetricSource> {
    plans
        .iter()
        .map(|p| MetricSource {
            metric: p.metric.to_string(),
            backend: p.chosen.as_ref().map(|c| c.backend.to_string()),
            attach: p
                .chosen
                .iter()
                .map(|c| c.attach.to_string())
                .collect::<Vec<_>>(),
            missing: match &p.chosen {
                Some(_) => None,
                None => Some(
                    p.rejected
                        .iter()
                        .map(|c| format!("{} {}: {}", c.backend, c.attach, c.why_not.join("; ")))
                        .collect::<Vec<_>>()
                        .join(" | "),
                ),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(attach: &'static str, why_not: &[&str]) -> Choice {
        Choice {
            backend: Backend::Tracepoint,
            attach,
            progs: &[],
            why_not: why_not.iter().map(|s| s.to_string()).collect(),
            note: "",
            seen: None,
            silences: &[],
        }
    }

    #[test]
    fn a_row_that_fails_to_attach_gives_way_to_the_next_usable_one() {
        let mut plan = MetricPlan {
            metric: "m",
            what: "",
            chosen: Some(choice("raw", &[])),
            rejected: vec![choice("fentry", &["EPERM"]), choice("classic", &[])],
        };
        plan.fail("verifier".into());
        assert!(plan.next_usable());
        assert_eq!(plan.chosen.as_ref().map(|c| c.attach), Some("classic"));
        // The failed row is kept with why.
        assert!(plan
            .rejected
            .iter()
            .any(|c| c.attach == "raw" && c.why_not == ["verifier"]));
        plan.fail("again".into());
        assert!(!plan.next_usable());
        assert!(plan.chosen.is_none());
    }
}
