//! Replaying a trace through models of kernel swap policies, one family
//! each: readahead (swap-ins), free (swap-entry frees), zswap (the
//! compressed pool) and khugepaged (swap-ins for collapse). Every family has
//! the shape of [`Family`]; [`FAMILIES`] lists them.

pub mod family;
pub mod free;
pub mod khugepaged;
pub mod readahead;
pub mod zswap;

pub use family::{ParamInfo, PolicyInfo, ReplayRequest, Uses};
pub use readahead::{
    kernel_policy, policy_by_name, replay, replay_all, CostSource, DeviceModel, Event, FaultCtx,
    InputBuilder, IoCost, Metrics, Policy, ReplayError, ReplayInput, SwapView, SwapoffMetrics,
    SwapoffMode, DEVICES, POLICY_NAMES,
};

use crate::trace::{Loaded, Record};

/// A replay family: its policies, parameters and the generic options it
/// reads, and a run over a trace.
pub trait Family: Sync {
    /// As `--family` takes it.
    fn name(&self) -> &'static str;
    /// One line for `--family`'s help.
    fn about(&self) -> &'static str;
    fn policies(&self) -> &'static [PolicyInfo];
    fn params(&self) -> &'static [ParamInfo];
    fn uses(&self) -> Uses;
    fn run(&self, t: &Loaded, req: &ReplayRequest) -> Result<Replayed, FamilyError>;
    /// The records `run` reads: a streamed load keeps only these, so the
    /// memory of a replay grows with the family's input, not the trace.
    fn reads(&self, r: &Record) -> bool;
}

/// What a family's run returns, for `report::replayed_text`/`_json`.
pub enum Replayed {
    Readahead(readahead::ReadaheadReplay),
    Free(free::FreeReplay),
    Zswap(zswap::ZswapReplay),
    Khugepaged(khugepaged::KhpReplay),
}

#[derive(Debug, thiserror::Error)]
pub enum FamilyError {
    #[error(transparent)]
    Readahead(#[from] ReplayError),
    #[error(transparent)]
    Free(#[from] free::FreeError),
    #[error(transparent)]
    Zswap(#[from] zswap::ZswapError),
    #[error(transparent)]
    Khugepaged(#[from] khugepaged::KhpError),
}

impl Replayed {
    /// Remarks on what was left out of the replay.
    pub fn notes(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Replayed::Readahead(r) = self {
            if r.unknown_faults > 0 {
                v.push(format!(
                    "{} faults without a recorded swap-out entry are not replayed",
                    r.unknown_faults
                ));
            }
            if r.unknown_swapoffs > 0 {
                v.push(format!(
                    "{} swapoffs of a device the trace cannot tell are not replayed",
                    r.unknown_swapoffs
                ));
            }
            if r.bad_records > 0 {
                v.push(bad_records_note(r.bad_records));
            }
        }
        if let Replayed::Zswap(r) = self {
            if r.bad_records > 0 {
                v.push(bad_records_note(r.bad_records));
            }
        }
        v
    }

    /// How a replay ends once its tables are printed: Ok with a note when
    /// it showed something else instead (the free family on a trace without
    /// free batches shows its zapped page tables), an error when it had
    /// nothing to show.
    pub fn outcome(&self) -> Result<Option<String>, FamilyError> {
        match self {
            Replayed::Free(free::FreeReplay::NoBatches { zaps }) if zaps.is_empty() => {
                Err(free::FreeError::NoBatches.into())
            }
            Replayed::Free(free::FreeReplay::NoBatches { .. }) => Ok(Some(format!(
                "{}; shown instead: the swap entries freed by zapping page tables",
                free::FreeError::NoBatches
            ))),
            _ => Ok(None),
        }
    }
}

/// The note for records no kernel could make, which a replay skipped.
fn bad_records_note(n: u64) -> String {
    format!(
        "{n} records with a folio of more than {} pages or an impossible swap entry are not replayed",
        crate::trace::MAX_FOLIO_PAGES
    )
}

macro_rules! family {
    ($ty:ident, $module:ident, $variant:ident, $name:literal, $about:literal) => {
        pub struct $ty;
        impl Family for $ty {
            fn name(&self) -> &'static str {
                $name
            }
            fn about(&self) -> &'static str {
                $about
            }
            fn policies(&self) -> &'static [PolicyInfo] {
                $module::POLICIES
            }
            fn params(&self) -> &'static [ParamInfo] {
                $module::PARAMS
            }
            fn uses(&self) -> Uses {
                $module::USES
            }
            fn run(&self, t: &Loaded, req: &ReplayRequest) -> Result<Replayed, FamilyError> {
                Ok(Replayed::$variant($module::run(t, req)?))
            }
            fn reads(&self, r: &Record) -> bool {
                $module::reads(r)
            }
        }
    };
}

family!(
    Readahead,
    readahead,
    Readahead,
    "readahead",
    "swap readahead at swap-in faults and swapoff: cluster, vma, none, fixed:N, leap, oracle"
);
family!(
    Free,
    free,
    Free,
    "free",
    "freeing swap entries in batches: unsorted, sorted (4.12), per-device, batch:N"
);
family!(
    Zswap,
    zswap,
    Zswap,
    "zswap",
    "the zswap pool and its shrinker: no-shrinker, shrinker, second chance and disk-swapin tracking (6.12)"
);
family!(
    Khugepaged,
    khugepaged,
    Khugepaged,
    "khugepaged",
    "khugepaged's swap-ins for collapse: always, allocstall gating (4.7), referenced-half (4.8+), max-ptes-swap:N"
);

/// Every family; the first is the default of `--family`.
pub static FAMILIES: [&dyn Family; 4] = [&Readahead, &Free, &Zswap, &Khugepaged];

/// A family by its `--family` name.
pub fn family(name: &str) -> Option<&'static dyn Family> {
    FAMILIES.iter().copied().find(|f| f.name() == name)
}

/// A plain decimal (digits only: no sign, no exponent) from `lo` to `hi`,
/// as policy and parameter values are written.
pub(crate) fn parse_in(s: &str, lo: u64, hi: u64) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse::<u64>().ok().filter(|v| (lo..=hi).contains(v))
}
