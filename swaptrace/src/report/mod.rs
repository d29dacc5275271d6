//! Human tables and histograms (bcc style) and their JSON twins.

mod check;
mod compare;
mod doctor;
mod guest;
mod info;
mod metric_hist;
#[cfg(feature = "plot")]
mod plot;
mod replay_table;
mod zap;

pub use check::{check_text, vmstat_check, CheckRow};
pub use compare::{compare, Comparison, COMPARED};
pub use doctor::{doctor_json, doctor_text};
pub use guest::{verify_guest_out, GuestVerdict};
pub use info::{info_json, info_text, summary};
pub use metric_hist::{histogram, During, HistError, HistMetric, HistOut};
#[cfg(feature = "plot")]
pub use plot::{compare_png, plot_all, zswap_png, PlotError};
pub use replay_table::{
    fidelity, kernel_counts, replay_json, replay_text, replayed_windows, window_columns_json,
    window_columns_text, KernelCounts,
};
pub use zap::{footprint_text, zap_spans, zap_text, ZapSpan};

// Moved down to `stats` and `trace`; kept until the files of replay/ and
// report/ that still use these paths import them from there.
pub use crate::stats::{CountTable, Log2Hist, RA_WINDOW_TITLE};
pub use crate::trace::{utc, SWAP_COUNTERS};
