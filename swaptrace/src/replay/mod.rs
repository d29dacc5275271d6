//! Replaying a trace through models of kernel swap policies, one family
//! each: readahead (swap-ins), free (swap entry frees), zswap (the
//! compressed pool) and khugepaged (swap-ins for collapse).

pub mod family;
pub mod free;
pub mod khugepaged;
pub mod readahead;
pub mod zswap;

pub use readahead::{
    kernel_policy, policy_by_name, replay, DeviceModel, Event, FaultCtx, InputBuilder, Metrics,
    Policy, ReplayError, ReplayInput, SwapView, SwapoffMetrics, SwapoffMode, DEVICES, POLICY_NAMES,
};

/// [`readahead::replay_all`] in the shape its callers outside the family
/// still expect, until they call [`readahead::run`]: a policy that panics
/// panics here too, naming itself, instead of giving a row of zeros.
pub fn replay_all(input: &ReplayInput, policies: Vec<Box<dyn Policy>>) -> Vec<Metrics> {
    readahead::replay_all(input, policies).unwrap_or_else(|e| panic!("{e}"))
}

/// A plain decimal (digits only: no sign, no exponent) from `lo` to `hi`,
/// as policy and parameter values are written.
pub(crate) fn parse_in(s: &str, lo: u64, hi: u64) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse::<u64>().ok().filter(|v| (lo..=hi).contains(v))
}
