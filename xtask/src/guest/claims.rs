//! The claims of the exact-probe backends, checked against the guest's own
//! counters in the traces of one kernel's `out/` directory.

use super::library::{
    free_latency, mode, ra_windows, read_trace, replay_free, replay_own_policy, replay_swapoff,
    vmstat_rows, window_columns_text, CountTable, During, FreeReplay, Loaded, Origin, Record,
    WindowColumn,
};
use super::verdict::Verdict;
use std::collections::BTreeSet;
use std::path::Path;

mod doctor;
mod zswap;

fn delta(t: &Loaded, counter: &str) -> i64 {
    t.vmstat_delta(counter).unwrap_or(0)
}

fn within(a: f64, b: f64, pct: f64) -> bool {
    if b == 0.0 {
        return a == 0.0;
    }
    ((a - b).abs() / b.abs()) * 100.0 <= pct
}

fn pct_err(a: f64, b: f64) -> f64 {
    signed_pct(a, b).abs()
}

/// Indents every line of `text` as a figure under its section.
fn figures(v: &mut Verdict, text: &str) {
    for line in text.lines() {
        v.note(format!("    {line}"));
    }
}

/// Reads a trace and checks it is whole; None when it cannot be read.
fn load(v: &mut Verdict, path: &Path) -> Option<Loaded> {
    let what = format!("{} is complete and finalized", path.display());
    match read_trace(path) {
        Ok(t) => {
            let detail = t
                .problems
                .iter()
                .map(|p| p.to_string())
                .chain(t.footer.is_none().then(|| "no footer".to_string()))
                .collect::<Vec<_>>()
                .join("\n");
            v.check_with(t.footer.is_some() && t.problems.is_empty(), what, detail);
            Some(t)
        }
        Err(e) => {
            v.fail(what, e);
            None
        }
    }
}

/// Backend that the trace header says filled `metric`.
fn backend<'a>(t: &'a Loaded, metric: &str) -> Option<&'a str> {
    t.header
        .metrics
        .iter()
        .find(|m| m.metric == metric)
        .and_then(|m| m.backend.as_deref())
}

/// Readahead calls and cache lookups of a trace, against its vmstat deltas.
struct RaFigures {
    windows: u64,
    expected_windows: i64,
    lookups: u64,
    ra_hits: u64,
    swap_ra_hit: i64,
}

fn ra_figures(t: &Loaded, during: During) -> RaFigures {
    let windows = ra_windows(t, during)
        .ok()
        .and_then(|h| h.counts)
        .map(|c| c.values().sum())
        .unwrap_or(0);
    let (mut lookups, mut ra_hits) = (0, 0);
    for r in &t.records {
        if let Record::CacheLookup { ra_hit, .. } = r {
            lookups += 1;
            ra_hits += *ra_hit as u64;
        }
    }
    RaFigures {
        windows,
        // Each readahead reads its target plus swap_ra pages: calls = pswpin - swap_ra.
        expected_windows: delta(t, "pswpin") + delta(t, "swpin_zero") - delta(t, "swap_ra"),
        lookups,
        ra_hits,
        swap_ra_hit: delta(t, "swap_ra_hit"),
    }
}

/// The readahead window histogram during swapoff (the 5.8 swapoff
/// readahead-statistics fix), and the walk replayed.
fn swapoff(v: &mut Verdict, out: &Path) {
    v.note("swapoff (the 5.8 swapoff readahead-statistics fix):");
    let Some(t) = load(v, &out.join("swapoff/swapoff.swt")) else {
        return;
    };
    match ra_windows(&t, During::Swapoff) {
        Ok(h) => figures(v, &h.text),
        Err(e) => v.fail("swapoff: readahead window histogram", e),
    }
    let f = ra_figures(&t, During::All);
    v.check(
        within(f.windows as f64, f.expected_windows as f64, 2.0),
        format!(
            "swapoff: {} readahead windows vs pswpin+swpin_zero-swap_ra = {} ({:.2}% off)",
            f.windows,
            f.expected_windows,
            pct_err(f.windows as f64, f.expected_windows as f64)
        ),
    );
    v.check(
        within(f.ra_hits as f64, f.swap_ra_hit as f64, 2.0),
        format!(
            "swapoff: {} readahead hits in {} swap-cache lookups vs swap_ra_hit {} ({:.2}% off)",
            f.ra_hits,
            f.lookups,
            f.swap_ra_hit,
            pct_err(f.ra_hits as f64, f.swap_ra_hit as f64)
        ),
    );
    if let Ok(s) = std::fs::read_to_string(out.join("swapoff/swapoff.time")) {
        v.note(format!("    swapoff took {} s", s.trim()));
    }
    if let Some(full) = load(v, &out.join("swapoff/full.swt")) {
        swapoff_replay(v, &t, &full, f.windows);
    }
}

/// The swapoff walk replayed from the swap-outs of `full` (the whole run)
/// against the live windows and counters of `live` (the swapoff alone).
fn swapoff_replay(v: &mut Verdict, live: &Loaded, full: &Loaded, live_windows: u64) {
    let so = match replay_swapoff(full) {
        Ok(so) => so,
        Err(e) => return v.fail("swapoff replay", e),
    };
    let live_counts = ra_windows(live, During::Swapoff)
        .ok()
        .and_then(|h| h.counts);
    let mut cols = Vec::new();
    cols.extend(live_counts.clone().map(|counts| WindowColumn {
        name: "live".to_string(),
        origin: Origin::Live,
        counts,
    }));
    cols.extend(
        so.policies
            .iter()
            .skip(1)
            .map(|(name, counts)| WindowColumn {
                name: name.clone(),
                origin: Origin::Replayed,
                counts: counts.clone(),
            }),
    );
    figures(v, &window_columns_text(&cols));
    // Folios written out but still in the swap cache at swapoff are hits
    // there, not reads; the trace cannot tell how many linger, so the
    // totals are printed and the window's size and shape are checked.
    let live_ra = delta(live, "swap_ra").max(0) as u64;
    v.note(format!(
        "    replayed walk: {} swap PTEs, {} windows, swap_ra {}; live: {live_windows} windows, swap_ra {live_ra}",
        so.ptes, so.windows, so.swap_ra
    ));
    let per = |ra: u64, w: u64| (ra + w) as f64 / w.max(1) as f64;
    let (mean_model, mean_live) = (per(so.swap_ra, so.windows), per(live_ra, live_windows));
    v.check(
        within(mean_model, mean_live, 5.0) && so.windows > 0,
        format!(
            "swapoff replayed through `cluster`: {mean_model:.2} pages per window vs live {mean_live:.2} ({:.2}% off)",
            pct_err(mean_model, mean_live)
        ),
    );
    let live_mode = live_counts.as_ref().and_then(mode);
    let model_mode = so.policies.first().and_then(|(_, w)| mode(w));
    v.check(
        live_mode.is_some() && live_mode == model_mode,
        format!(
            "swapoff replayed through `cluster`: window mode {model_mode:?} vs live {live_mode:?}"
        ),
    );
}

/// Swap-out pages recorded against nr_vmscan_write (pageout() writes).
fn swap_out_check(v: &mut Verdict, t: &Loaded, what: &str) {
    let pages: u64 = t
        .records
        .iter()
        .map(|r| match r {
            Record::SwapOut { nr, .. } => *nr as u64,
            _ => 0,
        })
        .sum();
    let want = delta(t, "nr_vmscan_write");
    v.check(
        within(pages as f64, want as f64, 2.0),
        format!(
            "{what}: {pages} swap-out pages vs nr_vmscan_write {want} ({:.2}% off)",
            pct_err(pages as f64, want as f64)
        ),
    );
}

/// The batch-free policies (unsorted, sorted, per-device) on `t`'s batches.
fn free_replay(v: &mut Verdict, t: &Loaded) -> Option<FreeReplay> {
    match replay_free(t) {
        Ok(m) => {
            for line in m.text.lines().take_while(|l| !l.starts_with('[')) {
                v.note(format!("    {line}"));
            }
            Some(m)
        }
        Err(e) => {
            v.fail("free replay", e);
            None
        }
    }
}

/// Does the trace's free-latency probe free one cluster per call (6.15+)?
fn per_cluster_probe(t: &Loaded) -> bool {
    t.header
        .metrics
        .iter()
        .find(|m| m.metric == "free-latency")
        .is_some_and(|m| {
            m.attach.iter().any(|a| {
                a.contains("swap_entries_free") || a.contains("__swap_cluster_free_entries")
            })
        })
}

/// Free batches with their latency and devices: sorted swap-entry freeing
/// (4.12 to 6.14), or one cluster per call (6.15+).
fn free(v: &mut Verdict, out: &Path) {
    v.note("free (sorted swap-entry freeing; per-cluster freeing from 6.15):");
    if let Some(t) = load(v, &out.join("free/free.swt")) {
        let per_cluster = per_cluster_probe(&t);
        let mut runs = CountTable::new("device runs per batch");
        let mut sizes = CountTable::new("entries per batch");
        let (mut batches, mut mixed) = (0u64, 0u64);
        let mut devices = BTreeSet::new();
        for r in &t.records {
            if let Record::FreeBatch { entries, .. } = r {
                batches += 1;
                let devs: BTreeSet<u8> = entries.iter().map(|e| e.dev).collect();
                mixed += (devs.len() > 1) as u64;
                devices.extend(devs);
                let changes = entries.windows(2).filter(|w| w[0].dev != w[1].dev).count();
                runs.add(changes as u64 + 1, 1);
                sizes.add(entries.len() as u64, 1);
            }
        }
        if let Ok(h) = free_latency(&t) {
            figures(v, &h.text);
        }
        figures(v, &runs.to_string());
        if per_cluster {
            figures(v, &sizes.to_string());
        }
        v.check(
            batches > 0,
            format!(
                "free: {batches} free batches with latencies ({})",
                backend_attach(&t, "free-latency")
            ),
        );
        // The slots cache hands out entries per device in runs of 64, so
        // whether one batch straddles two devices depends on alignment.
        v.check(
            devices.len() > 1,
            format!(
                "free: the batches name entries of {} swap devices ({mixed} batches mix them)",
                devices.len()
            ),
        );
        if let Ok(s) = std::fs::read_to_string(out.join("free/free.time")) {
            v.note(format!("    exit (memory freeing) took {} s", s.trim()));
        }
        // Sorting by device cuts lock round trips on interleaved devices; on
        // one device (the fentry run) it changes nothing.
        if let Some(m) = free_replay(v, &t) {
            v.check(
                mixed == 0 || m.sorted.locks < m.unsorted.locks,
                format!(
                    "free replay, two devices: sorted {} lock acquisitions vs unsorted {} ({} per-device, {} per-cluster)",
                    m.sorted.locks, m.unsorted.locks, m.per_device.locks, m.per_cluster.locks
                ),
            );
            // 6.15+: each live call held one cluster's lock, so per-cluster
            // replayed on those calls must take exactly one lock per call.
            if per_cluster {
                v.check(
                    m.per_cluster.locks == batches,
                    format!(
                        "free replay, per-cluster: {} lock acquisitions vs {batches} live per-cluster calls",
                        m.per_cluster.locks
                    ),
                );
            } else {
                v.note(format!(
                    "    (per-cluster replay: {} locks for {} batches; this kernel frees in sorted batches)",
                    m.per_cluster.locks, m.per_cluster.batches
                ));
            }
        }
    }
}

/// On one device (the `both` run's fentry trace) sorting saves no lock:
/// every batch takes one, sorted or not.
fn free_one_device(v: &mut Verdict, t: &Loaded) {
    if let Some(m) = free_replay(v, t) {
        v.check(
            m.sorted.locks == m.unsorted.locks && m.unsorted.locks == m.unsorted.batches,
            format!(
                "free replay, one device: sorted {} = unsorted {} = batches {}",
                m.sorted.locks, m.unsorted.locks, m.unsorted.batches
            ),
        );
    }
}

/// `backend attach` of a metric in the trace header.
fn backend_attach(t: &Loaded, metric: &str) -> String {
    t.header
        .metrics
        .iter()
        .find(|m| m.metric == metric)
        .map(|m| {
            format!(
                "{} {}",
                m.backend.as_deref().unwrap_or("-"),
                m.attach.join(", ")
            )
        })
        .unwrap_or_else(|| "-".into())
}

fn signed_pct(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        0.0
    } else {
        (a - b) * 100.0 / b.abs()
    }
}

/// Both backends attached to the same run (`both/`): each captures the
/// kernel's counts of its own window, and the two count the same.
fn both_backends(v: &mut Verdict, out: &Path) {
    v.note("fentry and kprobe on the same run:");
    let fe = load(v, &out.join("both/fentry.swt"));
    let kp = load(v, &out.join("both/kprobe.swt"));
    let (Some(fe), Some(kp)) = (fe, kp) else {
        return;
    };
    free_one_device(v, &fe);
    captured(v, &fe, &kp);
    same_run(v, &fe, &kp);
}

/// Each backend against the kernel's counters of its own recording.
fn captured(v: &mut Verdict, fe: &Loaded, kp: &Loaded) {
    let (a, b) = (ra_figures(fe, During::All), ra_figures(kp, During::All));
    for (name, t, f) in [("fentry", fe, &a), ("kprobe", kp, &b)] {
        v.note(format!(
            "    {name}: ra-window by {}, {} windows (expected {}), {} lookups, {} ra hits (swap_ra_hit {})",
            backend(t, "ra-window").unwrap_or("-"),
            f.windows,
            f.expected_windows,
            f.lookups,
            f.ra_hits,
            f.swap_ra_hit
        ));
    }
    v.check(
        backend(fe, "ra-window") == Some("fentry") && backend(kp, "ra-window") == Some("kprobe"),
        "fentry recorder used fentry, kprobe recorder used kprobes",
    );
    swap_out_check(v, fe, "fentry");
    swap_out_check(v, kp, "kprobe");
    // The windows differ (the kprobe recorder runs longer), so each is held
    // to its own kernel counters, and the two capture ratios agree within 2%.
    let ra = |f: &RaFigures| f.windows as f64 / f.expected_windows.max(1) as f64;
    let hit = |f: &RaFigures| f.ra_hits as f64 / f.swap_ra_hit.max(1) as f64;
    v.check(
        within(ra(&b), ra(&a), 2.0) && within(ra(&a), 1.0, 2.0),
        format!(
            "windows captured: fentry {:.4}, kprobe {:.4} of the kernel's",
            ra(&a),
            ra(&b)
        ),
    );
    v.check(
        within(hit(&b), hit(&a), 2.0) && within(hit(&a), 1.0, 2.0),
        format!(
            "readahead hits captured: fentry {:.4}, kprobe {:.4} of swap_ra_hit",
            hit(&a),
            hit(&b)
        ),
    );
    for (name, t) in [("fentry", fe), ("kprobe", kp)] {
        let (mut major, mut read) = (0u64, 0u64);
        for r in &t.records {
            if let Record::SwapFault {
                major: m,
                pages_read,
                ..
            } = r
            {
                major += *m as u64;
                read += *pages_read as u64;
            }
        }
        let (pgmaj, pswpin) = (
            delta(t, "pgmajfault"),
            delta(t, "pswpin") + delta(t, "swpin_zero"),
        );
        v.check(
            within(major as f64, pgmaj as f64, 2.0) && within(read as f64, pswpin as f64, 2.0),
            format!(
                "{name}: swap faults by {}: {major} major vs pgmajfault {pgmaj}, {read} pages read vs pswpin+swpin_zero {pswpin}",
                backend(t, "swap-fault").unwrap_or("-")
            ),
        );
    }
}

/// The two recorders of one run: the same counts.
fn same_run(v: &mut Verdict, fe: &Loaded, kp: &Loaded) {
    // The trace records the kernel's swap-cache frees: its own policy
    // replays to the kernel's counters.
    for (name, t) in [("fentry", fe), ("kprobe", kp)] {
        match replay_own_policy(t) {
            Ok((policy, pswpin, pgmaj)) => {
                let (kp_in, kp_maj) = (delta(t, "pswpin"), delta(t, "pgmajfault"));
                v.check(
                    within(pswpin as f64, kp_in as f64, 5.0)
                        && within(pgmaj as f64, kp_maj as f64, 5.0),
                    format!(
                        "{name}: {policy} replayed on its own trace: pswpin {pswpin} vs {kp_in} ({:.2}% off), pgmajfault {pgmaj} vs {kp_maj} ({:.2}% off)",
                        pct_err(pswpin as f64, kp_in as f64),
                        pct_err(pgmaj as f64, kp_maj as f64)
                    ),
                );
            }
            Err(e) => v.fail(format!("{name}: own-policy replay"), e),
        }
    }
    let count = |t: &Loaded, kind: &str| t.records.iter().filter(|r| r.kind_name() == kind).count();
    for kind in ["ra_window", "cache_lookup", "swap_fault", "free_batch"] {
        let (a, b) = (count(fe, kind), count(kp, kind));
        v.check(
            a > 0 && within(b as f64, a as f64, 2.0),
            format!(
                "{kind}: fentry {a}, kprobe {b} ({:.2}% apart)",
                pct_err(b as f64, a as f64)
            ),
        );
    }
}

/// `record`'s own comparison with /proc/vmstat, rebuilt from each trace:
/// every row within 1% (or both zero), or not compared with the reason
/// (a counter this kernel lacks, a kind this kernel does not report).
fn vmstat_comparison(v: &mut Verdict, out: &Path) {
    v.note("record's comparison with /proc/vmstat:");
    let others = ["swapoff/swapoff.swt", "both/fentry.swt", "both/kprobe.swt"];
    for trace in others.into_iter().chain(zswap::ZSWAP_TRACES) {
        if trace.starts_with("zswap/zswap-") && !out.join(trace).exists() {
            continue;
        }
        let Ok(t) = super::library::read_trace(&out.join(trace)) else {
            v.fail(format!("{trace}: vmstat rows"), "trace not readable");
            continue;
        };
        let rows = vmstat_rows(&t);
        let off: Vec<String> = rows
            .iter()
            .filter(|r| !r.agrees(1.0))
            .map(|r| format!("{} {} vs {} {}", r.what, r.recorded, r.counter, r.kernel))
            .collect();
        let skipped: Vec<String> = rows
            .iter()
            .filter_map(|r| Some(format!("{}: {}", r.what, r.not_compared.as_ref()?)))
            .collect();
        v.check_with(
            off.is_empty(),
            format!(
                "{trace}: {} of {} rows within 1%, {} not comparable here",
                rows.len() - off.len() - skipped.len(),
                rows.len(),
                skipped.len()
            ),
            off.join("\n"),
        );
        for s in skipped {
            v.note(format!("      ({s})"));
        }
    }
}

/// Issue 17's jobs (`overhead/`): the programs that ran under this
/// kernel's backends on two jobs that never swap and on one that swaps,
/// with their eBPF time per call and per recorded event (bpf_stats; TCG
/// inflates the times, so compare programs and kernels, not hosts).
fn overhead(v: &mut Verdict, out: &Path) {
    for (backends, suffix) in [("the kernel's best", ""), ("tracepoints only", "-tp")] {
        v.note(format!(
            "eBPF time per job, {backends} (record system-wide, bpf_stats; faults and dd never swap):"
        ));
        for job in ["faults", "dd", "swap"] {
            overhead_job(v, out, &format!("{job}{suffix}"));
        }
    }
}

fn overhead_job(v: &mut Verdict, out: &Path, job: &str) {
    {
        let path = out.join("overhead").join(format!("{job}.json"));
        let recorded = std::fs::read_to_string(&path)
            .ok()
            .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
            .map(|j| j["recorded"].clone());
        let records = recorded.as_ref().and_then(|r| r["records"].as_u64());
        let stats = recorded.and_then(|r| r["bpf_stats"].as_array().cloned());
        let Some(stats) = stats else {
            v.fail(
                format!("overhead/{job}.json: bpf_stats"),
                "missing, or not record --json output",
            );
            return;
        };
        let ran: Vec<(&str, u64, u64)> = stats
            .iter()
            .filter_map(|p| {
                let calls = p["run_count"].as_u64().filter(|&n| n > 0)?;
                let ns = p["run_time_ns"].as_u64().unwrap_or(0);
                Some((p["program"].as_str().unwrap_or("?"), calls, ns))
            })
            .collect();
        let total: u64 = ran.iter().map(|r| r.2).sum();
        // Per event only where the job swaps (the others record a task or two).
        let per_event = match records {
            Some(n) if n > 0 && job.starts_with("swap") => {
                format!(", {:.0} ns per recorded event", total as f64 / n as f64)
            }
            _ => String::new(),
        };
        v.note(format!(
            "  {job}: {} of {} programs ran, {:.1} ms of eBPF time{per_event}",
            ran.len(),
            stats.len(),
            total as f64 / 1e6
        ));
        for (name, calls, ns) in &ran {
            v.note(format!(
                "    {name:<28} {calls:>10} calls {:>8.0} ns/call",
                *ns as f64 / *calls as f64
            ));
        }
        v.check(
            !stats.is_empty(),
            format!("overhead/{job}: record reports bpf_stats per program"),
        );
    }
}

/// Checks every claim on the traces in `out` (one kernel's `out/`).
pub fn check_claims(v: &mut Verdict, out: &Path) {
    vmstat_comparison(v, out);
    overhead(v, out);
    doctor::doctor(v, out);
    swapoff(v, out);
    free(v, out);
    zswap::zswap(v, out);
    both_backends(v, out);
}
