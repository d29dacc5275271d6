//! swaptrace: record the Linux swap path with eBPF, replay it offline.
//!
//! The modules follow the data's way: [`probe`] (attach points for this
//! kernel) → [`trace`] (the file format) → [`report`] (tables, histograms).
//! [`lab`] sets up swap and memory cgroups for experiments and tests and
//! [`workload`] is the built-in swap workload.

pub mod lab;
pub mod probe;
pub mod record;
pub mod replay;
pub mod report;
pub mod synth;
pub mod trace;
pub mod workload;
