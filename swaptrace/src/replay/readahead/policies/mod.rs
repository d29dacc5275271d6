//! Every readahead policy by the name `--policy` takes: one file each in
//! this folder, one row in [`REGISTRY`]. Adding a policy is its file (with
//! its unit test), its `mod` line and its row here (docs/extending.md).

mod cluster;
mod fixed;
mod leap;
mod oracle;
mod vma;

pub use vma::ra_range;

use crate::replay::family::PolicyInfo;
use crate::replay::readahead::error::ReplayError;
use crate::replay::readahead::input::{Event, ReplayInput, SwapoffMode};
use crate::replay::readahead::policy::{MakePolicy, Policy, PolicyArgs};
use crate::trace::Header;
use cluster::Cluster;
use fixed::Fixed;
use leap::Leap;
use oracle::Oracle;
use vma::Vma;

/// A policy's row: what `--policy` lists and how to build it.
pub struct Registered {
    /// As typed; a name ending in `:N` takes a parameter (`fixed:N`).
    pub name: &'static str,
    /// One line: what it does and which kernels it stands for.
    pub help: &'static str,
    /// Its name in the default set (`fixed:8` for `fixed:N`); None: not in it.
    pub default: Option<&'static str>,
    pub make: MakePolicy,
}

pub const REGISTRY: &[Registered] = &[
    Registered {
        name: "cluster",
        help: "cluster readahead, swap_cluster_readahead(): a window grown by readahead hits, aligned on swap offsets (the kernel's choice on rotational swap or with vma_ra_enabled off); at swapoff as the recording kernel",
        default: Some("cluster"),
        make: Cluster::make,
    },
    Registered {
        name: "vma",
        help: "VMA-based readahead, swap_vma_readahead() (4.14 default on non-rotational swap): a window on virtual addresses per address space, within the fault's PMD; at swapoff as the recording kernel",
        default: Some("vma"),
        make: Vma::make,
    },
    Registered {
        name: "cluster-swapoff-fix",
        help: "cluster with swapoff as kernels 5.8 to 6.17 (the 5.8 swapoff readahead-statistics fix): a swap-cache hit counts, readahead only on a miss",
        default: None,
        make: Cluster::make,
    },
    Registered {
        name: "vma-swapoff-fix",
        help: "vma with swapoff as kernels 5.8 to 6.17 (the 5.8 swapoff readahead-statistics fix): a swap-cache hit counts, readahead only on a miss",
        default: None,
        make: Vma::make,
    },
    Registered {
        name: "cluster-no-swapoff-fix",
        help: "cluster with swapoff as kernels before 5.8: swapin_readahead() for every swap PTE, no hit counted",
        default: None,
        make: Cluster::make,
    },
    Registered {
        name: "vma-no-swapoff-fix",
        help: "vma with swapoff as kernels before 5.8: swapin_readahead() for every swap PTE, no hit counted",
        default: None,
        make: Vma::make,
    },
    Registered {
        name: "cluster-swapoff-nostats",
        help: "cluster with swapoff as kernels from 6.18: swap-cache lookup without the readahead statistics, no hit counted",
        default: None,
        make: Cluster::make,
    },
    Registered {
        name: "vma-swapoff-nostats",
        help: "vma with swapoff as kernels from 6.18: swap-cache lookup without the readahead statistics, no hit counted",
        default: None,
        make: Vma::make,
    },
    Registered {
        name: "none",
        help: "no readahead: a miss reads the faulting page only (fixed:1; the kernel with page-cluster 0)",
        default: Some("none"),
        make: Fixed::none,
    },
    Registered {
        name: "fixed:N",
        help: "a fixed window of N pages aligned on swap offsets, N a power of two from 1 to 1024 (fixed:8 in the default set)",
        default: Some("fixed:8"),
        make: Fixed::make,
    },
    Registered {
        name: "leap",
        help: "Leap (USENIX ATC 2020): prefetches along the majority trend of recent swap-offset deltas, else cluster readahead; in no kernel",
        default: Some("leap"),
        make: Leap::make,
    },
    Registered {
        name: "oracle",
        help: "an upper bound: a miss reads the pages of the next faults, up to the largest window; in no kernel",
        default: Some("oracle"),
        make: Oracle::make,
    },
];

/// The registry as `--policy` documents it.
pub const POLICIES: &[PolicyInfo] = &infos::<{ REGISTRY.len() }>();

/// The registry's names, in its order.
pub const POLICY_NAMES: &[&str] = &names::<{ REGISTRY.len() }>();

const fn infos<const N: usize>() -> [PolicyInfo; N] {
    let mut out = [PolicyInfo {
        name: "",
        help: "",
        default: false,
    }; N];
    let mut i = 0;
    while i < N {
        let r = &REGISTRY[i];
        out[i] = PolicyInfo {
            name: r.name,
            help: r.help,
            default: r.default.is_some(),
        };
        i += 1;
    }
    out
}

const fn names<const N: usize>() -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = REGISTRY[i].name;
        i += 1;
    }
    out
}

/// The swapoff suffixes of `cluster` and `vma`, by the kernels they stand for.
const SWAPOFF_SUFFIXES: [(SwapoffMode, &str); 3] = [
    (SwapoffMode::Readahead, "no-swapoff-fix"),
    (SwapoffMode::LookupStats, "swapoff-fix"),
    (SwapoffMode::LookupNoStats, "swapoff-nostats"),
];

/// A policy by name (see [`REGISTRY`]) for `input` (the oracle reads its
/// future). Plain `cluster` and `vma` do at swapoff what the recording
/// kernel does (`input.swapoff_mode`); a swapoff suffix chooses another
/// kernel's way (other policies take the suffix and ignore it).
pub fn policy_by_name(name: &str, input: &ReplayInput) -> Result<Box<dyn Policy>, ReplayError> {
    let suffix = name.split_once('-').and_then(|(base, rest)| {
        SWAPOFF_SUFFIXES
            .iter()
            .find(|(_, s)| *s == rest)
            .map(|&(mode, _)| (base, mode))
    });
    let (base, swapoff) = suffix.unwrap_or((name, input.swapoff_mode));
    // The name as listed, else its base, else a parameterised name.
    let plain = |n: &str| {
        REGISTRY
            .iter()
            .find(|r| param_prefix(r).is_none() && r.name == n)
            .map(|r| (r, ""))
    };
    let found = plain(name).or_else(|| plain(base)).or_else(|| {
        REGISTRY
            .iter()
            .find_map(|r| Some((r, name.strip_prefix(param_prefix(r)?)?)))
    });
    let Some((r, arg)) = found else {
        return Err(ReplayError::UnknownPolicy {
            name: name.to_string(),
            known: POLICY_NAMES.join(", "),
        });
    };
    let args = PolicyArgs {
        name,
        arg,
        swapoff,
        input,
    };
    (r.make)(&args).map_err(|why| ReplayError::BadParam(name.to_string(), why))
}

/// `fixed:` of a parameterised row `fixed:N`.
fn param_prefix(r: &Registered) -> Option<&'static str> {
    r.name.strip_suffix('N').filter(|p| p.ends_with(':'))
}

/// The default set (`--policy all`, or none): the registry's defaults, with
/// the other kernels' swapoff variants after `vma` when the trace has a
/// swapoff (the plain names do the recording kernel's).
pub fn default_names(input: &ReplayInput) -> Vec<String> {
    let swapoff = input
        .events
        .iter()
        .any(|e| matches!(e, Event::Swapoff { .. }));
    default_names_for(swapoff, input)
}

/// [`default_names`] of a streamed input (no events): `swapoff` when the
/// trace has one.
pub(in crate::replay::readahead) fn default_names_for(
    swapoff: bool,
    input: &ReplayInput,
) -> Vec<String> {
    let mut names: Vec<String> = REGISTRY
        .iter()
        .filter_map(|r| r.default.map(str::to_string))
        .collect();
    if swapoff {
        let other: Vec<String> = ["cluster", "vma"]
            .iter()
            .flat_map(|base| {
                SWAPOFF_SUFFIXES
                    .iter()
                    .filter(|(m, _)| *m != input.swapoff_mode)
                    .map(move |(_, s)| format!("{base}-{s}"))
            })
            .collect();
        let at = names.iter().position(|n| n == "vma").map_or(0, |i| i + 1);
        names.splice(at..at, other);
    }
    names
}

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
