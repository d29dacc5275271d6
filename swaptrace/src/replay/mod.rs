//! Replaying a trace's swap-ins through models of the kernel's swap
//! readahead. The engine owns the swap space (entry ↔ address space and
//! virtual page, rebuilt from swap-outs), the swap cache and the metrics; a
//! policy only decides what to read on a swap-cache miss.

mod engine;
mod policies;

pub use engine::{replay, Event, FaultCtx, InputBuilder, Metrics, ReplayInput, SwapView};
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
    #[error("the trace has no swap-in faults with a known swap entry to replay")]
    NothingToReplay,
}
