//! The readahead family's entry point: what a `replay` command asks of it
//! (policies, `--param`, memory, device model), run over a trace.

use super::device::{io_model, DeviceModel, IoCost};
use super::engine::replay_all;
use super::error::ReplayError;
use super::fit::FaultCosts;
use super::input::ReplayInput;
use super::metrics::Metrics;
use super::policies::{default_names, default_names_for, policy_by_name};
use super::policy::Policy;
use crate::replay::family::{known, ParamInfo, ReplayRequest, Uses};
use crate::trace::{Header, Loaded, ReadCoverage, Record, ReplayMemory, Summary};

/// The `--param NAME=VALUE`s the readahead family takes.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "page-cluster=N",
        help:
            "overrides the recorded /proc/sys/vm/page-cluster, 0 to 10 (windows of up to 2^N pages)",
    },
    ParamInfo {
        name: "request-us=F",
        help: "overrides the device model's cost per read request, µs",
    },
    ParamInfo {
        name: "page-us=F",
        help: "overrides the device model's cost per page read, µs",
    },
];

/// The readahead family reads `--memory-pages` and `--device`.
pub const USES: Uses = Uses {
    memory_pages: true,
    device: true,
};

/// What a readahead replay gives to render.
#[derive(Clone, Debug)]
pub struct ReadaheadReplay {
    /// One per policy, in the order asked.
    pub results: Vec<Metrics>,
    /// Faults of the trace without a known entry (not replayed).
    pub unknown_faults: u64,
    /// Successful swapoffs whose device could not be told (not replayed).
    pub unknown_swapoffs: u64,
    /// Records no kernel could make, skipped ([`ReplayInput::bad_records`]).
    pub bad_records: u64,
    /// The device model the modelled I/O times use.
    pub device: DeviceModel,
    /// Where its figures come from, and the recorded faults' own time.
    pub cost: IoCost,
    /// The memory replayed, and where it comes from.
    pub memory: ReplayMemory,
    /// What of the kernel's swap-ins the trace holds (None without vmstat).
    pub coverage: Option<ReadCoverage>,
}

/// Replays `t` through the policies `req` names (none or `all`: the
/// default set, [`default_names`]). Memory defaults to what the recording
/// tells ([`ReplayMemory`]); the device model to a fit of the trace's major
/// faults, else to the recorded swap devices' preset ([`io_model`]).
/// Every record: the readahead input reads most kinds, and `replay`
/// streams this family in two passes instead of loading it.
pub fn reads(_: &Record) -> bool {
    true
}

pub fn run(t: &Loaded, req: &ReplayRequest) -> Result<ReadaheadReplay, ReplayError> {
    let memory = ReplayMemory::of(&t.header, t.footer.as_ref(), req.memory_pages);
    let mut input = ReplayInput::from_trace(t, memory.pages)?;
    let (device, cost, policies) =
        prepare(&mut input, &t.header, &FaultCosts::of_trace(t), req, None)?;
    let mut summary = Summary::default();
    t.records.iter().for_each(|r| summary.add(r));
    Ok(ReadaheadReplay {
        results: replay_all(&input, policies)?,
        unknown_faults: input.unknown_faults,
        unknown_swapoffs: input.unknown_swapoffs,
        bad_records: input.bad_records,
        device,
        cost,
        memory,
        coverage: ReadCoverage::of(&summary, |c| t.vmstat_delta(c)),
    })
}

/// The device model, where its costs come from, and the policies.
pub(super) type Prepared = (DeviceModel, IoCost, Vec<Box<dyn Policy>>);

/// The device model (fitted to `costs`, or a preset) and the policies `req`
/// asks for, with its `--param`s applied to `input`. `swapoff`: whether a
/// streamed input (no events) has a swapoff.
pub(super) fn prepare(
    input: &mut ReplayInput,
    header: &Header,
    costs: &FaultCosts,
    req: &ReplayRequest,
    swapoff: Option<bool>,
) -> Result<Prepared, ReplayError> {
    let (mut device, mut cost) = io_model(costs, header, req.device)?;
    for p in req.params {
        set_param(p, input, &mut device)?;
    }
    cost.overridden = req
        .params
        .iter()
        .any(|p| p.starts_with("request-us=") || p.starts_with("page-us="));
    let names = match (req.policies, swapoff) {
        (None | Some("all"), None) => default_names(input),
        (None | Some("all"), Some(s)) => default_names_for(s, input),
        (Some(list), _) => list.split(',').map(|n| n.trim().to_string()).collect(),
    };
    let policies = names
        .iter()
        .map(|n| policy_by_name(n, input))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((device, cost, policies))
}

/// One `--param NAME=VALUE` of [`PARAMS`].
fn set_param(
    p: &str,
    input: &mut ReplayInput,
    device: &mut DeviceModel,
) -> Result<(), ReplayError> {
    let bad = |why| ReplayError::Param {
        param: p.to_string(),
        why,
    };
    let cost = |v: &str| {
        v.parse::<f64>()
            .ok()
            .filter(|c| c.is_finite() && *c >= 0.0)
            .ok_or_else(|| bad("a cost in µs, 0 or more"))
    };
    match p.split_once('=') {
        Some(("page-cluster", v)) => {
            input.page_cluster = v
                .parse()
                .ok()
                .filter(|&c: &u32| c <= 10)
                .ok_or_else(|| bad("page-cluster is 0 to 10"))?
        }
        Some(("request-us", v)) => device.request_us = cost(v)?,
        Some(("page-us", v)) => device.page_us = cost(v)?,
        _ => {
            return Err(ReplayError::UnknownParam {
                param: p.to_string(),
                known: known(PARAMS, |i| i.name),
            })
        }
    }
    Ok(())
}
