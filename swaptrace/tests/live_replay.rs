//! Fidelity of the replay models against this kernel: replaying a trace
//! through the policy the kernel ran reproduces the kernel's counters, and
//! through the other policy predicts a second run made with that policy.
//! Two experiments: under memory pressure (swap-out order from reclaim:
//! the kernel's own policy asserted; of the cross-prediction only pswpin,
//! the mean of three traces' predictions against the range of three runs,
//! as a single trace's prediction and the cluster run's own counters move
//! between runs), and with the
//! swap-out order set by MADV_PAGEOUT and no pressure on read-back
//! (both asserted, on a pair of runs whose slots the allocator laid out
//! at the same alignment: it starts at offset 1 or at an aligned cluster,
//! which moves cluster readahead's aligned windows).
#![cfg(feature = "live")]

use std::path::{Path, PathBuf};
use swaptrace::lab::{self, Knob};
use swaptrace::record::{run_demo, DemoOptions};
use swaptrace::replay::{kernel_policy, policy_by_name, replay, ReplayInput};
use swaptrace::report::{fidelity, kernel_counts, KernelCounts};
use swaptrace::trace::{read_trace, Record};
use swaptrace::workload::{Pattern, WorkloadSpec};

const EXE: &str = env!("CARGO_BIN_EXE_swaptrace");
/// Error bound, %, for the replay of the policy the kernel ran.
const FIDELITY_PCT: f64 = 8.0;
/// Error bound, %, for the prediction of the other policy's run.
const PREDICTION_PCT: f64 = 10.0;
/// Under pressure, the bound on the mean prediction's pswpin outside the
/// other policy's runs; its major faults move with reclaim's swap layout,
/// and are printed. One VMA trace predicted 55,536 pages for cluster, whose
/// run read 71,366 (others predicted within 2%): hence several runs.
const PRESSURE_PSWPIN_PCT: f64 = 8.0;
/// Runs per policy under pressure. Reclaim's layout makes the cluster runs
/// bimodal: one CI run's three read 55,678-59,165 pages, where their VMA
/// traces predicted 59,433-71,429 (other runs read up to 70,693). Five
/// runs bound the live range better.
const PRESSURE_RUNS: usize = 5;

/// How the workload gets to swap.
#[derive(Clone, Copy)]
enum Setup {
    /// 256 MiB in a 128 MiB cgroup: reclaim decides the swap-out order.
    Pressure,
    /// 128 MiB pushed out with MADV_PAGEOUT in touch order, read back in a
    /// 512 MiB cgroup: nothing is reclaimed on the way back.
    Pageout,
}

fn record(dir: &Path, name: &str, vma_ra: bool, setup: Setup) -> PathBuf {
    let _knob = Knob::set(
        "/sys/kernel/mm/swap/vma_ra_enabled",
        if vma_ra { "true" } else { "false" },
    )
    .expect("vma_ra_enabled");
    let out = dir.join(name);
    let r = run_demo(
        Path::new(EXE),
        &DemoOptions {
            command: None,
            workload: WorkloadSpec {
                size_bytes: match setup {
                    Setup::Pressure => 256 << 20,
                    Setup::Pageout => 128 << 20,
                },
                pattern: Pattern::ShuffledBlocks { block_pages: 16 },
                passes: 1,
                seed: 3,
                pageout: matches!(setup, Setup::Pageout),
                ..WorkloadSpec::default()
            },
            limit_bytes: match setup {
                Setup::Pressure => 128 << 20,
                Setup::Pageout => 512 << 20,
            },
            swap_bytes: 1 << 30,
            swap_dir: dir.to_path_buf(),
            output: out.clone(),
            // Non-rotational, so that the kernel may use VMA readahead.
            loop_device: true,
            progress: false,
        },
    )
    .expect("recording");
    assert_eq!(r.exit_code, Some(0), "workload failed (OOM?)");
    out
}

/// The layout's phase against cluster readahead's aligned windows: the
/// most common (slot offset - page) mod 2^page-cluster of the swap-outs,
/// pages counted from their VMA's start (the workload's blocks are).
fn phase(trace: &Path) -> u64 {
    let t = read_trace(trace).unwrap();
    let n = 1u64 << t.header.readahead.page_cluster.unwrap_or(3);
    let vmas = t.vmas();
    let mut count = vec![0u64; n as usize];
    for r in &t.records {
        if let Record::SwapOut {
            mm, vaddr, entry, ..
        } = *r
        {
            let start = vmas
                .iter()
                .find(|v| v.0 == mm && (v.1..v.2).contains(&vaddr))
                .map_or(0, |v| v.1);
            count[(entry.offset.wrapping_sub((vaddr - start) >> 12) % n) as usize] += 1;
        }
    }
    (0..n).max_by_key(|&p| count[p as usize]).unwrap_or(0)
}

fn replayed(trace: &Path, policy: &str) -> (swaptrace::replay::Metrics, KernelCounts, String) {
    let t = read_trace(trace).unwrap();
    let input = ReplayInput::from_trace(&t, t.header.memory_pages()).unwrap();
    assert!(t.header.memory_limit_bytes.is_some());
    let mut p = policy_by_name(policy, &input).unwrap();
    let m = replay(&input, p.as_mut());
    (
        m,
        kernel_counts(&t).unwrap(),
        kernel_policy(&t.header).to_string(),
    )
}

/// Prints every counter, then fails on those beyond their `max_pct`.
fn check(
    what: &str,
    m: &swaptrace::replay::Metrics,
    k: &KernelCounts,
    max_pct: impl Fn(&str) -> f64,
) -> Vec<String> {
    let mut bad = Vec::new();
    for (name, model, kernel, err) in fidelity(m, k) {
        let err = err.unwrap_or(f64::INFINITY);
        eprintln!("{what}: {name:<12} replayed {model:>8} kernel {kernel:>8} error {err:+.2}%");
        let max_pct = max_pct(name);
        if err.abs() > max_pct {
            bad.push(format!(
                "{what}: {name} off by {err:.2}% (limit {max_pct}%)"
            ));
        }
    }
    bad
}

/// Prints every counter of the mean prediction (one per trace) against
/// the other policy's live runs, then fails on those beyond `max_pct`
/// outside the runs' range (under pressure both the kernel's counters and
/// a single trace's prediction move between runs).
fn check_range(
    what: &str,
    predictions: &[swaptrace::replay::Metrics],
    runs: &[KernelCounts],
    max_pct: impl Fn(&str) -> f64,
) -> Vec<String> {
    let mut bad = Vec::new();
    let per_run: Vec<_> = runs.iter().map(|k| fidelity(&predictions[0], k)).collect();
    for (i, &(name, _, _, _)) in per_run[0].iter().enumerate() {
        let model: Vec<u64> = predictions
            .iter()
            .map(|m| fidelity(m, &runs[0])[i].1)
            .collect();
        let mean = model.iter().sum::<u64>() as f64 / model.len() as f64;
        let live: Vec<u64> = per_run.iter().map(|f| f[i].2.max(0) as u64).collect();
        let (Some(&lo), Some(&hi)) = (live.iter().min(), live.iter().max()) else {
            continue;
        };
        let err = if mean < lo as f64 {
            (mean - lo as f64) * 100.0 / lo.max(1) as f64
        } else if mean > hi as f64 {
            (mean - hi as f64) * 100.0 / hi.max(1) as f64
        } else {
            0.0
        };
        eprintln!(
            "{what}: {name:<12} replayed {model:?} (mean {mean:.0}) kernel runs {live:?}: outside by {err:+.2}%"
        );
        let max_pct = max_pct(name);
        if err.abs() > max_pct {
            bad.push(format!(
                "{what}: {name} mean {mean:.0} of {model:?} outside the runs {live:?} by {err:.2}% (limit {max_pct}%)"
            ));
        }
    }
    bad
}

/// Records the workload `runs` times with each policy, replays each trace
/// through its own policy and through the other's (their mean against that
/// policy's runs); returns the failures beyond the bounds.
fn experiment(
    dir: &Path,
    setup: Setup,
    runs: usize,
    predict_pct: impl Fn(&str) -> f64,
) -> Vec<String> {
    let tag = match setup {
        Setup::Pressure => "pressure",
        Setup::Pageout => "pageout",
    };
    let mut bad = Vec::new();
    let mut traces = [Vec::new(), Vec::new()];
    let mut counts = [Vec::new(), Vec::new()];
    let mut i = 0;
    let mut attempts = 0;
    while i < runs {
        let mut pair = Vec::new();
        for (j, policy) in ["vma", "cluster"].into_iter().enumerate() {
            let trace = record(
                dir,
                &format!("{policy}-{tag}-{attempts}.swt"),
                j == 0,
                setup,
            );
            // Fidelity: the policy the kernel ran, on its own trace.
            let (m, k, kp) = replayed(&trace, policy);
            assert_eq!(kp, policy);
            bad.extend(check(
                &format!("{tag}: {policy} on the {policy} trace {i}"),
                &m,
                &k,
                |_| FIDELITY_PCT,
            ));
            pair.push((trace, k));
        }
        attempts += 1;
        if let Setup::Pageout = setup {
            // MADV_PAGEOUT writes each 16-page block to consecutive slots,
            // but where the allocator starts (offset 1 of the header's
            // cluster, or an aligned free cluster) is its own choice, and
            // cluster readahead's aligned windows depend on it.
            let phases = [phase(&pair[0].0), phase(&pair[1].0)];
            eprintln!("{tag}: slot phase of the vma and cluster runs: {phases:?}");
            if phases[0] != phases[1] {
                assert!(
                    attempts < 3,
                    "{tag}: the allocator laid the two runs out differently {attempts} times"
                );
                eprintln!("{tag}: the runs' layouts differ: a prediction cannot match; recording both again");
                continue;
            }
        }
        for (j, (trace, k)) in pair.into_iter().enumerate() {
            traces[j].push(trace);
            counts[j].push(k);
        }
        i += 1;
    }
    // The two runs differ, or there is nothing to predict.
    assert_ne!(counts[0][0].pgmajfault, counts[1][0].pgmajfault);

    // Counterfactual: each trace through the other policy, against its runs.
    for (j, (policy, other)) in [("vma", "cluster"), ("cluster", "vma")]
        .into_iter()
        .enumerate()
    {
        let predictions: Vec<_> = traces[j].iter().map(|t| replayed(t, other).0).collect();
        bad.extend(check_range(
            &format!("{tag}: {other} on the {policy} traces vs the {other} runs"),
            &predictions,
            &counts[1 - j],
            &predict_pct,
        ));
    }
    bad
}

#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn replay_reproduces_the_kernel_and_predicts_the_other_policy() {
    if let Err(e) = lab::require_root() {
        panic!("replay fidelity cannot run: {e}");
    }
    let _lock = lab::live_test_lock();
    let dir = PathBuf::from(format!("/var/tmp/swaptrace-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let before = std::fs::read_to_string("/sys/kernel/mm/swap/vma_ra_enabled").unwrap();
    let mut bad = experiment(&dir, Setup::Pageout, 1, |_| PREDICTION_PCT);
    bad.extend(experiment(&dir, Setup::Pressure, PRESSURE_RUNS, |name| {
        if name == "pswpin" {
            PRESSURE_PSWPIN_PCT
        } else {
            f64::INFINITY
        }
    }));
    // The knob is back as it was.
    assert_eq!(
        std::fs::read_to_string("/sys/kernel/mm/swap/vma_ra_enabled").unwrap(),
        before
    );
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(bad.is_empty(), "{bad:#?}");
}
