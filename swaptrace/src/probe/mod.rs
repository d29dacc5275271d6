//! Which probe captures each metric on this kernel. One table row per attach
//! point ([`table::ATTACH_POINTS`]); the choice is made from what the running
//! kernel has (BTF, kallsyms, a trial load), not from its version number.

pub mod btf;
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
