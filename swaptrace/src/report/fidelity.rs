//! `swaptrace lab fidelity`'s summary: per workload shape, each readahead
//! policy replayed on its own live runs (own-policy error), and predicted
//! from the other policy's runs against its own live runs (mean, min, max).

use super::replay_table::KernelCounts;
use crate::replay::Metrics;
use serde::Serialize;
use std::fmt::Write;

/// The counters checked, in table order: those `replay` compares with the
/// kernel's ([`super::replay_table::fidelity`]).
pub const COUNTERS: [&str; 4] = ["pswpin", "pgmajfault", "swap_ra", "swap_ra_hit"];

/// Own-policy target, %; cross-prediction target against the live mean, %.
pub const OWN_TARGET_PCT: f64 = 2.0;
pub const CROSS_TARGET_PCT: f64 = 5.0;

fn kernel_values(k: &KernelCounts) -> [f64; 4] {
    [k.pswpin, k.pgmajfault, k.swap_ra, k.swap_ra_hit].map(|v| v as f64)
}

/// One live run: the policy the kernel ran, its counters, and the trace
/// replayed through each policy checked.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub kernel_policy: String,
    pub kernel: KernelCounts,
    /// Replayed counters by policy, in [`COUNTERS`] order.
    pub replayed: Vec<(String, [u64; 4])>,
    /// The memory the replay assumed, pages.
    pub memory_pages: usize,
    /// The share of faults whose slot the kernel freed at the read
    /// ([`Metrics::slots_freed_at_read`]).
    pub freed_at_read: f64,
}

impl Run {
    pub fn new(
        kernel_policy: &str,
        kernel: KernelCounts,
        replays: &[Metrics],
        memory_pages: usize,
    ) -> Run {
        Run {
            kernel_policy: kernel_policy.to_string(),
            kernel,
            replayed: replays
                .iter()
                .map(|m| {
                    let values = super::replay_table::fidelity(m, &kernel).map(|(_, v, _, _)| v);
                    (m.policy.clone(), values)
                })
                .collect(),
            memory_pages,
            freed_at_read: super::replay_table::freed_at_read(replays).map_or(0.0, |(_, s)| s),
        }
    }

    fn replayed(&self, policy: &str) -> Option<[f64; 4]> {
        self.replayed
            .iter()
            .find(|(p, _)| p == policy)
            .map(|(_, v)| v.map(|x| x as f64))
    }
}

/// Mean, min and max of some values.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Spread {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    fn of(v: &[f64]) -> Option<Spread> {
        if v.is_empty() {
            return None;
        }
        Some(Spread {
            mean: v.iter().sum::<f64>() / v.len() as f64,
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

fn pct(model: f64, live: f64) -> Option<f64> {
    (live > 0.0).then(|| (model - live) * 100.0 / live)
}

/// A policy replayed on the runs the kernel made with it, per counter.
#[derive(Clone, Debug, Serialize)]
pub struct Own {
    pub policy: String,
    pub counter: &'static str,
    pub runs: usize,
    /// The per-run errors, %.
    pub error_pct: Spread,
    /// The largest |error|.
    pub worst_pct: f64,
    /// The kernel's own counter over these runs: how far a chaotic
    /// workload's live runs differ from each other.
    pub live: Spread,
    /// `live`'s max − min, % of its mean (none with one run).
    pub live_spread_pct: Option<f64>,
    pub met: bool,
}

/// A policy predicted from the other policy's runs, per counter.
#[derive(Clone, Debug, Serialize)]
pub struct Cross {
    pub policy: String,
    pub from: String,
    pub counter: &'static str,
    pub predicted: Spread,
    pub live: Spread,
    pub live_runs: usize,
    /// The mean prediction against the live mean, %.
    pub error_pct: Option<f64>,
    /// The mean prediction within the live runs' min–max.
    pub in_range: bool,
    pub met: bool,
}

/// One shape's summary.
#[derive(Clone, Debug, Serialize)]
pub struct ShapeSummary {
    pub shape: String,
    pub about: String,
    pub own: Vec<Own>,
    pub cross: Vec<Cross>,
    /// Runs whose swap layout their own reclaim made (the kernel freed the
    /// slots of read faults: swap more than half full), of `runs`.
    pub layout_runs: usize,
    pub runs: usize,
}

/// Summarises a shape's runs for `policies` (the kernel policies run).
pub fn summarise(shape: &str, about: &str, runs: &[Run], policies: &[&str]) -> ShapeSummary {
    let mut own = Vec::new();
    let mut cross = Vec::new();
    for &p in policies {
        let mine: Vec<&Run> = runs.iter().filter(|r| r.kernel_policy == p).collect();
        // The kernel's counters over `p`'s own runs, per counter.
        let lives: [Vec<f64>; 4] =
            std::array::from_fn(|c| mine.iter().map(|r| kernel_values(&r.kernel)[c]).collect());
        for (c, &counter) in COUNTERS.iter().enumerate() {
            let errs: Vec<f64> = mine
                .iter()
                .filter_map(|r| pct(r.replayed(p)?[c], kernel_values(&r.kernel)[c]))
                .collect();
            let live = &lives[c];
            if let (Some(s), Some(lv)) = (Spread::of(&errs), Spread::of(live)) {
                let worst = errs.iter().fold(0.0f64, |a, e| a.max(e.abs()));
                own.push(Own {
                    policy: p.to_string(),
                    counter,
                    runs: errs.len(),
                    error_pct: s,
                    worst_pct: worst,
                    live: lv,
                    live_spread_pct: (live.len() > 1 && lv.mean > 0.0)
                        .then(|| (lv.max - lv.min) * 100.0 / lv.mean),
                    met: worst <= OWN_TARGET_PCT,
                });
            }
        }
        for &q in policies.iter().filter(|&&q| q != p) {
            let from: Vec<&Run> = runs.iter().filter(|r| r.kernel_policy == q).collect();
            for (c, &counter) in COUNTERS.iter().enumerate() {
                let predicted: Vec<f64> = from
                    .iter()
                    .filter_map(|r| Some(r.replayed(p)?[c]))
                    .collect();
                let live = &lives[c];
                let (Some(pr), Some(lv)) = (Spread::of(&predicted), Spread::of(live)) else {
                    continue;
                };
                let error_pct = pct(pr.mean, lv.mean);
                let in_range = pr.mean >= lv.min && pr.mean <= lv.max;
                cross.push(Cross {
                    policy: p.to_string(),
                    from: q.to_string(),
                    counter,
                    predicted: pr,
                    live: lv,
                    live_runs: live.len(),
                    error_pct,
                    in_range,
                    met: in_range
                        && live.len() >= 3
                        && error_pct.is_some_and(|e| e.abs() <= CROSS_TARGET_PCT),
                });
            }
        }
    }
    ShapeSummary {
        shape: shape.to_string(),
        about: about.to_string(),
        own,
        cross,
        layout_runs: runs
            .iter()
            .filter(|r| r.freed_at_read >= super::replay_table::LAYOUT_SHARE)
            .count(),
        runs: runs.len(),
    }
}

fn opt_pct(e: Option<f64>) -> String {
    e.map_or("-".into(), |e| format!("{e:+.1}%"))
}

/// The human tables: per shape, own-policy errors, then cross-predictions.
pub fn fidelity_text(shapes: &[ShapeSummary]) -> String {
    let mut s = String::new();
    for sh in shapes {
        let _ = writeln!(s, "{} — {}", sh.shape, sh.about);
        let _ = writeln!(
            s,
            "  {:<8} {:<12} {:>4} {:>9} {:>17} {:>7} {:>11}  target ±{OWN_TARGET_PCT}%",
            "OWN", "COUNTER", "RUNS", "MEAN ERR", "MIN..MAX", "WORST", "LIVE SPREAD"
        );
        for o in &sh.own {
            let spread = o.live_spread_pct.map_or("-".into(), |p| format!("{p:.1}%"));
            let _ = writeln!(
                s,
                "  {:<8} {:<12} {:>4} {:>+8.1}% {:>+7.1}%..{:>+6.1}% {:>6.1}% {:>11}  {}",
                o.policy,
                o.counter,
                o.runs,
                o.error_pct.mean,
                o.error_pct.min,
                o.error_pct.max,
                o.worst_pct,
                spread,
                if o.met { "met" } else { "not met" }
            );
        }
        if sh.own.iter().any(|o| o.live_spread_pct.is_some()) {
            let _ = writeln!(
                s,
                "  LIVE SPREAD: the kernel's own runs of a policy, max - min, % of their mean"
            );
        }
        if sh.cross.is_empty() {
            let _ = writeln!(s, "  CROSS    none: no runs of one of the policies\n");
            continue;
        }
        let _ = writeln!(
            s,
            "  {:<8} {:<8} {:<12} {:>21} {:>21} {:>7}  target: in range, ±{CROSS_TARGET_PCT}%",
            "CROSS", "FROM", "COUNTER", "PREDICTED mean [range]", "LIVE mean [range]", "ERROR"
        );
        for c in &sh.cross {
            let spread = |x: &Spread| format!("{:.0} [{:.0}-{:.0}]", x.mean, x.min, x.max);
            let _ = writeln!(
                s,
                "  {:<8} {:<8} {:<12} {:>21} {:>21} {:>7}  {}{}",
                c.policy,
                c.from,
                c.counter,
                spread(&c.predicted),
                spread(&c.live),
                opt_pct(c.error_pct),
                if c.in_range {
                    "in range"
                } else {
                    "out of range"
                },
                if c.met { ", met" } else { "" }
            );
        }
        if sh.layout_runs > 0 {
            let _ = writeln!(
                s,
                "  swap layout: in {} of {} runs the kernel freed the slots of read faults \
                 (swap more than half full) and reclaim laid the pages out anew: a policy \
                 that reads by swap offset (cluster) is predicted on the other run's layout \
                 (`replay` says more)",
                sh.layout_runs, sh.runs
            );
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(v: [i64; 4]) -> KernelCounts {
        KernelCounts {
            pswpin: v[0],
            pgmajfault: v[1],
            swap_ra: v[2],
            swap_ra_hit: v[3],
        }
    }

    fn run(kp: &str, kernel: [i64; 4], cluster: [u64; 4], vma: [u64; 4]) -> Run {
        Run {
            kernel_policy: kp.into(),
            kernel: k(kernel),
            replayed: vec![("cluster".into(), cluster), ("vma".into(), vma)],
            memory_pages: 1,
            freed_at_read: 0.0,
        }
    }

    #[test]
    fn the_counters_are_those_replay_compares_in_its_order() {
        let m = Metrics {
            pswpin: 1,
            pgmajfault: 2,
            swap_ra: 3,
            swap_ra_hit: 4,
            ..Metrics::default()
        };
        let r = Run::new("cluster", k([1, 1, 1, 1]), &[m], 1);
        assert_eq!(r.replayed[0].1, [1, 2, 3, 4]);
        let names = super::super::replay_table::fidelity(&Metrics::default(), &k([0; 4]));
        assert_eq!(names.map(|n| n.0), COUNTERS);
    }

    #[test]
    fn own_and_cross_are_worked_per_counter() {
        let runs = [
            run(
                "cluster",
                [100, 10, 90, 80],
                [101, 10, 90, 80],
                [0, 0, 0, 0],
            ),
            run(
                "cluster",
                [200, 20, 180, 160],
                [190, 20, 180, 160],
                [0, 0, 0, 0],
            ),
            run(
                "cluster",
                [150, 15, 135, 120],
                [150, 15, 135, 120],
                [0, 0, 0, 0],
            ),
            run("vma", [50, 5, 45, 40], [160, 16, 140, 130], [50, 5, 45, 40]),
        ];
        let s = summarise("t", "test", &runs, &["cluster", "vma"]);
        let o = s
            .own
            .iter()
            .find(|o| o.policy == "cluster" && o.counter == "pswpin")
            .unwrap();
        // +1%, -5%, 0%; live 100, 200 and 150: they differ by 100 of 150.
        assert_eq!(o.runs, 3);
        assert!((o.live_spread_pct.unwrap() - 100.0 * 100.0 / 150.0).abs() < 1e-9);
        assert!((o.error_pct.mean - (-4.0 / 3.0)).abs() < 1e-9);
        assert_eq!(o.error_pct.min, -5.0);
        assert_eq!(o.worst_pct, 5.0);
        assert!(!o.met);
        let o = s
            .own
            .iter()
            .find(|o| o.policy == "vma" && o.counter == "pswpin")
            .unwrap();
        assert!(o.met && o.worst_pct == 0.0);
        // One live run: no spread.
        assert_eq!(o.live_spread_pct, None);
        // Cluster predicted from the one vma run: 160 against live 100..200, mean 150.
        let c = s
            .cross
            .iter()
            .find(|c| c.policy == "cluster" && c.counter == "pswpin")
            .unwrap();
        assert_eq!(c.from, "vma");
        assert_eq!(
            c.live,
            Spread {
                mean: 150.0,
                min: 100.0,
                max: 200.0
            }
        );
        assert!(c.in_range);
        assert!((c.error_pct.unwrap() - 100.0 * 10.0 / 150.0).abs() < 1e-9);
        assert!(!c.met, "6.7% is beyond 5%");
        // Vma has a single live run: never met, whatever the error.
        let c = s
            .cross
            .iter()
            .find(|c| c.policy == "vma" && c.counter == "pswpin")
            .unwrap();
        assert_eq!(c.live_runs, 1);
        assert!(!c.met);
        assert_eq!((s.layout_runs, s.runs), (0, 4));
        let text = fidelity_text(std::slice::from_ref(&s));
        assert!(
            text.contains("not met") && text.contains("in range"),
            "{text}"
        );
        assert!(!text.contains("swap layout"), "{text}");
        assert!(
            text.contains("66.7%") && text.contains("LIVE SPREAD:"),
            "{text}"
        );
        // A run whose kernel freed the slots of 1% of its faults at the read.
        let mut laid = runs.clone();
        laid[3].freed_at_read = 0.01;
        let s = summarise("t", "test", &laid, &["cluster", "vma"]);
        assert_eq!(s.layout_runs, 1);
        let text = fidelity_text(&[s]);
        assert!(text.contains("swap layout: in 1 of 4 runs"), "{text}");
        // Runs of one policy only (the other's failed): no cross rows.
        let s = summarise("t", "test", &runs[..3], &["cluster", "vma"]);
        assert!(s.cross.is_empty());
        let text = fidelity_text(&[s]);
        assert!(text.contains("CROSS    none:"), "{text}");
        assert!(!text.contains("PREDICTED"), "{text}");
    }
}
