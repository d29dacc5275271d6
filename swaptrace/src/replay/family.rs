//! The one shape of every replay family (readahead, free, zswap,
//! khugepaged): its policies with their help text and default set, its
//! `--param` grammar, the generic options it reads, and a run that returns
//! the data `report/` renders.

/// How far a streamed replay has got, for progress: the pass (`scanning`,
/// then `replaying`) and the bytes read of the trace.
pub type Progress<'p> = &'p mut dyn FnMut(&'static str, u64, u64);

/// A policy as `--policy` names it.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct PolicyInfo {
    /// As typed: `cluster`, `fixed:N`, `max-ptes-swap:N`.
    pub name: &'static str,
    /// One line: what it does and which kernels it stands for.
    pub help: &'static str,
    /// In the family's default set (no `--policy`, or `--policy all`).
    pub default: bool,
}

/// A `--param NAME=VALUE` a family accepts.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct ParamInfo {
    pub name: &'static str,
    pub help: &'static str,
}

/// What the command line asks of a family. `memory_pages` and `device`
/// are read by the families whose [`Uses`] name them; the CLI refuses
/// them for the others.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReplayRequest<'a> {
    /// Comma-separated policy names, or `all`; None: the default set.
    pub policies: Option<&'a str>,
    /// `NAME=VALUE` items of `--param`.
    pub params: &'a [String],
    pub memory_pages: Option<usize>,
    pub device: Option<&'a str>,
}

/// The generic options a family reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Uses {
    pub memory_pages: bool,
    pub device: bool,
}

impl ReplayRequest<'_> {
    /// The policy names asked for: the list, or `defaults` for none/`all`.
    pub fn names(&self, infos: &[PolicyInfo]) -> Vec<String> {
        match self.policies.map(str::trim) {
            None | Some("all") => infos
                .iter()
                .filter(|p| p.default)
                .map(|p| p.name.to_string())
                .collect(),
            Some(list) => list.split(',').map(|s| s.trim().to_string()).collect(),
        }
    }
}

/// `name, name, …` of a policy or parameter table, for error messages.
pub fn known<T>(items: &[T], name: impl Fn(&T) -> &'static str) -> String {
    items.iter().map(name).collect::<Vec<_>>().join(", ")
}
