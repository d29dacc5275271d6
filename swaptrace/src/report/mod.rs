//! Human tables and histograms (bcc style) and their JSON twins, for every
//! command and every replay family.

mod check;
mod compare;
mod doctor;
pub mod fidelity;
mod free;
mod info;
mod khugepaged;
pub mod many;
#[cfg(feature = "parquet")]
mod many_parquet;
mod metric_hist;
#[cfg(feature = "plot")]
mod plot;
mod recorded;
mod replay_table;
mod replayed;
mod timeline;
mod zap;
mod zswap;

pub use check::{check_text, vmstat_check, CheckRow, Seen};
pub use compare::{
    compare, compare_metric_names, compare_runs, CompareBuilder, CompareInput, Comparison, COMPARED,
};
pub use doctor::{doctor_json, doctor_text};
pub use free::{free_json, free_replay_json, free_replay_text, free_text};
pub use info::{info_json, info_text, summary, TraceInfo};
pub use khugepaged::{khp_json, khp_no_scans_text, khp_replay_json, khp_replay_text, khp_text};
pub use metric_hist::{
    explain, histogram, histogram_explained, During, HistBuilder, HistError, HistMetric, HistOut,
    Swapoffs,
};
#[cfg(feature = "plot")]
pub use plot::{compare_png, plot_all, zswap_png, PlotError};
pub use recorded::{recorded_line, recorded_text};
pub use replay_table::{
    fidelity, kernel_counts, mode, replay_json, replay_text, replayed_windows, window_columns_json,
    window_columns_text, KernelCounts, Origin, WindowColumn,
};
pub use replayed::{param_help, policy_help, replayed_json, replayed_text};
pub use timeline::{Bins, Sample, Timeline, BINS_MAX};
pub use zap::{footprint_text, zap_text};
pub use zswap::{zswap_context, zswap_json, zswap_text};

#[cfg(test)]
mod streamed_tests;
