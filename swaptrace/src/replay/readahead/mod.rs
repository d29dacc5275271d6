//! The readahead family: a trace's swap-ins replayed through models of the
//! kernel's swap readahead. The engine owns the swap space (entry ↔ address
//! space and virtual page, rebuilt from swap-outs), the swap cache and the
//! metrics; a policy only decides what to read on a swap-cache miss.
//!
//! - `input`: the trace as events; `space`: swap slots and page table;
//!   `metrics`: the counters; `policy`: the [`Policy`] trait and what it sees;
//! - `engine`: the model, which knows policies only by the trait;
//! - `policies/`: one file per policy (`cluster`, `vma`, `fixed`, `leap`,
//!   `oracle`) and the registry (`policies/mod.rs`), the only module that
//!   names them;
//! - `device`: the I/O cost model (presets); `fit`: its fit to the trace's
//!   own major faults;
//! - `run`: the family's entry point (default set, `--param`, device model).

mod device;
mod engine;
mod error;
mod fit;
mod input;
mod lru;
mod metrics;
mod pages;
mod policies;
mod policy;
mod run;
mod space;
mod stream;

#[cfg(test)]
mod tests;

pub use device::{io_model, CostSource, DeviceModel, IoCost, DEVICES};
pub use engine::{replay, replay_all};
pub use error::ReplayError;
pub use fit::{fit, FaultCosts, Fit, FitShortfall, Measured, MIN_FAULTS};
pub use input::{Event, InputBuilder, ReplayInput, Store, SwapoffMode};
pub use metrics::{Metrics, SwapoffMetrics};
pub use policies::{
    default_names, kernel_policy, policy_by_name, ra_range, Registered, POLICIES, POLICY_NAMES,
    REGISTRY,
};
pub use policy::{FaultCtx, MakePolicy, Policy, PolicyArgs};
pub use run::{reads, run, ReadaheadReplay, PARAMS, USES};
pub(crate) use space::MixHasher;
pub use space::SwapView;
pub use stream::{run_streamed, scan, Progress, Scanned};
