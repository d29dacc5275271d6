//! What can go wrong in a readahead replay.

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("unknown policy `{name}` (known: {known})")]
    UnknownPolicy { name: String, known: String },
    #[error("bad policy parameter `{0}`: {1}")]
    BadParam(String, String),
    #[error("--param {param}: {why}")]
    Param { param: String, why: &'static str },
    #[error("--param {param}: known parameters: {known}")]
    UnknownParam { param: String, known: String },
    #[error("the trace has no swap-in faults with a known swap entry (nor a swapoff of recorded swap-outs) to replay{}", skipped(*unknown_faults, *bad_records))]
    NothingToReplay {
        unknown_faults: u64,
        bad_records: u64,
    },
    #[error("unknown device model `{0}` (known: nvme, ssd, hdd, zram)")]
    UnknownDevice(String),
    #[error("the replay of policy `{0}` panicked (a bug in its model)")]
    PolicyPanicked(String),
    /// A streamed replay could not read its trace.
    #[error(transparent)]
    Trace(#[from] crate::trace::TraceError),
}

/// What [`ReplayError::NothingToReplay`] left out, if anything.
fn skipped(unknown_faults: u64, bad_records: u64) -> String {
    let mut v = Vec::new();
    if unknown_faults > 0 {
        v.push(format!("{unknown_faults} faults without a swap entry"));
    }
    if bad_records > 0 {
        let what = "records with an impossible swap entry or folio size";
        v.push(format!("{bad_records} {what}"));
    }
    match v.is_empty() {
        true => String::new(),
        false => format!(" ({})", v.join(", ")),
    }
}
