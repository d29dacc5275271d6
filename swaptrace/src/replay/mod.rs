//! Replaying a trace's swap-ins through models of the kernel's swap
//! readahead. The engine owns the swap space (entry ↔ address space and
//! virtual page, rebuilt from swap-outs), the swap cache and the metrics; a
//! policy only decides what to read on a swap-cache miss.

mod engine;
pub mod family;
pub mod free;
pub mod khugepaged;
mod policies;
pub mod zswap;

pub use engine::{
    replay, Event, FaultCtx, InputBuilder, Metrics, ReplayInput, SwapView, SwapoffMetrics,
    SwapoffMode,
};
pub use policies::{policy_by_name, Policy, POLICY_NAMES};

use crate::trace::Header;

/// The readahead the recording kernel used: VMA readahead when enabled and
/// no swap device is rotational (`swap_use_vma_readahead()`), else cluster.
pub fn kernel_policy(h: &Header) -> &'static str {
    if h.readahead.page_cluster == Some(0) {
        return "none";
    }
    let rotational = h.swap_devices.iter().any(|d| d.rotational != Some(false));
    if h.readahead.vma_ra_enabled == Some(true) && !rotational {
        "vma"
    } else {
        "cluster"
    }
}

/// Modelled read cost: a fixed cost per request plus a cost per page.
/// Presets are round figures for 4 KiB reads, not measurements of this host;
/// `--param request-us=` / `page-us=` override them.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct DeviceModel {
    pub name: &'static str,
    pub request_us: f64,
    pub page_us: f64,
}

pub const DEVICES: [DeviceModel; 4] = [
    DeviceModel {
        name: "nvme",
        request_us: 20.0,
        page_us: 1.6,
    },
    DeviceModel {
        name: "ssd",
        request_us: 100.0,
        page_us: 8.0,
    },
    DeviceModel {
        name: "hdd",
        request_us: 8000.0,
        page_us: 30.0,
    },
    DeviceModel {
        name: "zram",
        request_us: 1.0,
        page_us: 2.5,
    },
];

impl DeviceModel {
    pub fn by_name(name: &str) -> Result<DeviceModel, ReplayError> {
        DEVICES
            .iter()
            .find(|d| d.name == name)
            .copied()
            .ok_or_else(|| ReplayError::UnknownDevice(name.to_string()))
    }

    /// The preset matching the recorded swap devices: `hdd` when any is
    /// rotational, else `ssd`.
    pub fn for_trace(h: &Header) -> DeviceModel {
        let rotational = h.swap_devices.iter().any(|d| d.rotational == Some(true));
        DEVICES[if rotational { 2 } else { 1 }]
    }

    /// Modelled time of `requests` reads of `pages` pages in all, ms.
    pub fn time_ms(&self, requests: u64, pages: u64) -> f64 {
        (requests as f64 * self.request_us + pages as f64 * self.page_us) / 1000.0
    }
}

/// A plain decimal (digits only: no sign, no exponent) from `lo` to `hi`,
/// as policy and parameter values are written.
pub(crate) fn parse_in(s: &str, lo: u64, hi: u64) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse::<u64>().ok().filter(|v| (lo..=hi).contains(v))
}

/// Runs each policy over the same input, in parallel on the cores.
pub fn replay_all(input: &ReplayInput, policies: Vec<Box<dyn Policy>>) -> Vec<Metrics> {
    std::thread::scope(|s| {
        let handles: Vec<_> = policies
            .into_iter()
            .map(|mut p| s.spawn(move || replay(input, p.as_mut())))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("unknown policy `{0}` (known: {names})", names = POLICY_NAMES.join(", "))]
    UnknownPolicy(String),
    #[error("bad policy parameter `{0}`: {1}")]
    BadParam(String, String),
    #[error("the trace has no swap-in faults with a known swap entry (nor a swapoff of recorded swap-outs) to replay")]
    NothingToReplay,
    #[error("unknown device model `{0}` (known: nvme, ssd, hdd, zram)")]
    UnknownDevice(String),
}
