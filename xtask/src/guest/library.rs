//! Every call of the checks into the swaptrace library, in one place: the
//! rest of `guest/` names no `swaptrace::` path.

use std::collections::BTreeMap;
use std::path::Path;

use swaptrace::replay::ReplayRequest;
pub use swaptrace::report::{mode, window_columns_text, During, Origin, WindowColumn};
pub use swaptrace::stats::CountTable;
pub use swaptrace::trace::{Loaded, Record};

/// The recording kernel's (major, minor).
pub fn kernel_version(release: &str) -> (u32, u32) {
    swaptrace::trace::kernel_version(release)
}

pub fn read_trace(path: &Path) -> Result<Loaded, String> {
    swaptrace::trace::read_trace(path).map_err(|e| e.to_string())
}

/// A histogram of a trace: its text and, for a count table, the counts.
pub struct Hist {
    pub text: String,
    pub counts: Option<BTreeMap<u64, u64>>,
}

fn hist(t: &Loaded, metric: swaptrace::report::HistMetric, during: During) -> Result<Hist, String> {
    let h = swaptrace::report::histogram(t, metric, during).map_err(|e| e.to_string())?;
    Ok(Hist {
        text: h.text(),
        counts: h.count.map(|c| c.counts),
    })
}

/// Readahead windows (`swapin_nr_pages()` returns).
pub fn ra_windows(t: &Loaded, during: During) -> Result<Hist, String> {
    hist(t, swaptrace::report::HistMetric::RaWindow, during)
}

/// Free-batch latencies (`swapcache_free_entries()`, or one cluster's range on 6.15+).
pub fn free_latency(t: &Loaded) -> Result<Hist, String> {
    hist(t, swaptrace::report::HistMetric::FreeLatency, During::All)
}

/// The swapoff walk replayed through `cluster` and its two variants.
pub struct SwapoffReplay {
    /// Swap PTEs the walk of the first policy (`cluster`) visited.
    pub ptes: u64,
    pub swap_ra: u64,
    pub windows: u64,
    /// Per policy, `cluster` first: its windows during swapoff.
    pub policies: Vec<(String, BTreeMap<u64, u64>)>,
}

/// Replays the swap-outs of `full` (the whole run) with a swapoff walk.
pub fn replay_swapoff(full: &Loaded) -> Result<SwapoffReplay, String> {
    let req = ReplayRequest {
        policies: Some("cluster,cluster-swapoff-fix,cluster-no-swapoff-fix"),
        ..ReplayRequest::default()
    };
    let results = swaptrace::replay::readahead::run(full, &req)
        .map_err(|e| e.to_string())?
        .results;
    let so = results
        .first()
        .and_then(|m| m.swapoff.as_ref())
        .ok_or("no swapoff walk in full.swt")?;
    Ok(SwapoffReplay {
        ptes: so.ptes,
        swap_ra: so.swap_ra,
        windows: so.windows.values().sum(),
        policies: results
            .iter()
            .map(|m| {
                (
                    m.policy.clone(),
                    swaptrace::report::replayed_windows(m, During::Swapoff),
                )
            })
            .collect(),
    })
}

/// The kernel's own readahead policy replayed on `t`: its name and
/// (pswpin, pgmajfault) replayed.
pub fn replay_own_policy(t: &Loaded) -> Result<(&'static str, u64, u64), String> {
    let policy = swaptrace::replay::kernel_policy(&t.header);
    let req = ReplayRequest {
        policies: Some(policy),
        ..ReplayRequest::default()
    };
    let r = swaptrace::replay::readahead::run(t, &req).map_err(|e| e.to_string())?;
    let m = r.results.first().ok_or("no replay")?;
    Ok((policy, m.pswpin, m.pgmajfault))
}

/// The zswap policies replayed on `t`: the comparison table.
pub fn replay_zswap_text(t: &Loaded) -> Result<String, String> {
    let r =
        swaptrace::replay::zswap::run(t, &ReplayRequest::default()).map_err(|e| e.to_string())?;
    Ok(swaptrace::report::zswap_text(&r.live, &r.metrics))
}

/// The recording kernel's zswap policy replayed on `t`: its name and
/// (what, live, replayed) for stores, zswap loads, disk swap-ins and
/// writebacks, and every policy's disk swap-ins (the seed's table). None
/// where zswap was off.
pub fn replay_zswap_own(t: &Loaded) -> Result<Option<ZswapOwn>, String> {
    use swaptrace::replay::zswap;
    let Some(policy) = zswap::kernel_policy(&t.header) else {
        return Ok(None);
    };
    let r = zswap::run(t, &ReplayRequest::default()).map_err(|e| e.to_string())?;
    let m = r
        .metrics
        .iter()
        .find(|m| m.policy == policy.name())
        .ok_or("the kernel's policy was not replayed")?;
    let l = &r.live;
    let rows = vec![
        (
            "stores",
            l.zswpout.unwrap_or(l.zswap_stores),
            m.stores_accepted,
        ),
        (
            "zswap loads",
            l.zswpin.unwrap_or(l.zswap_loads),
            m.zswap_hits,
        ),
        (
            "disk swap-ins",
            l.pswpin.unwrap_or(l.disk_pages_read),
            m.disk_swapins,
        ),
        ("writebacks", l.writebacks, m.writebacks),
    ];
    let disk_swapins = r
        .metrics
        .iter()
        .map(|m| (m.policy.clone(), m.disk_swapins))
        .collect();
    Ok(Some(ZswapOwn {
        policy: policy.name(),
        rows,
        disk_swapins,
    }))
}

pub struct ZswapOwn {
    pub policy: &'static str,
    /// (what, live, replayed).
    pub rows: Vec<(&'static str, u64, u64)>,
    /// Every policy's replayed disk swap-ins (pages).
    pub disk_swapins: Vec<(String, u64)>,
}

/// Lock acquisitions of one batch-free policy.
#[derive(Clone, Copy, Debug)]
pub struct FreeLocks {
    pub batches: u64,
    pub locks: u64,
}

/// The batch-free policies replayed on `t`'s batches.
pub struct FreeReplay {
    pub text: String,
    pub unsorted: FreeLocks,
    pub sorted: FreeLocks,
    pub per_device: FreeLocks,
    /// One lock per cluster of a batch (6.15+).
    pub per_cluster: FreeLocks,
}

pub fn replay_free(t: &Loaded) -> Result<FreeReplay, String> {
    use swaptrace::replay::free::{self, FreeError};
    let req = ReplayRequest {
        policies: Some("unsorted,sorted,per-device,per-cluster"),
        ..ReplayRequest::default()
    };
    let (live, m) = match free::run(t, &req).map_err(|e| e.to_string())? {
        free::FreeReplay::Replayed { live, metrics } => (live, metrics),
        free::FreeReplay::NoBatches { .. } => return Err(FreeError::NoBatches.to_string()),
    };
    let locks = |i: usize| {
        m.get(i)
            .map(|f| FreeLocks {
                batches: f.batches,
                locks: f.locks,
            })
            .ok_or_else(|| format!("no result for policy {i}"))
    };
    Ok(FreeReplay {
        text: swaptrace::report::free_text(&live, &m),
        unsorted: locks(0)?,
        sorted: locks(1)?,
        per_device: locks(2)?,
        per_cluster: locks(3)?,
    })
}

/// The rows `record` printed for `t`: its records summed as the recorder
/// sums them, against the vmstat deltas of its header and footer.
pub fn vmstat_rows(t: &Loaded) -> Vec<swaptrace::report::CheckRow> {
    let mut summary = swaptrace::trace::Summary::default();
    for r in &t.records {
        summary.add(r);
    }
    let delta: BTreeMap<String, i64> = t
        .header
        .vmstat_start
        .keys()
        .filter_map(|k| t.vmstat_delta(k).map(|d| (k.clone(), d)))
        .collect();
    let seen = swaptrace::report::Seen::from_header(&t.header);
    swaptrace::report::vmstat_check(&summary, &delta, seen)
}
