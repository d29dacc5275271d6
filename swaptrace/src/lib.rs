//! swaptrace: record the Linux swap path with eBPF, replay it offline.
//!
//! The data goes [`probe`] (attach points for this kernel) → [`record`]
//! (events to records) → [`trace`] (the file format) → [`replay`] (models
//! of the kernel's swap policies) → [`report`] (tables, histograms, charts).
//! Imports point down the layers only, never within one:
//!
//! | layer | modules | imports |
//! | --- | --- | --- |
//! | 3 | [`record`], [`report`] | layers 0–2 |
//! | 2 | [`probe`], [`replay`], [`synth`] | layers 0–1 |
//! | 1 | [`trace`], [`workload`] | layer 0 |
//! | 0 | [`lab`], [`stats`] | nothing of the crate |
//!
//! The live side (probe, record) and the offline side (replay, report) meet
//! only in [`trace`] and [`stats`]; `report` reads `probe`'s plan for
//! `doctor`. [`lab`] sets up swap and memory cgroups for experiments and
//! tests, [`workload`] is the built-in swap workload, [`synth`] writes
//! synthetic traces and [`stats`] holds the count tables, log2 histograms
//! and percentiles both sides print.

pub mod lab;
pub mod probe;
pub mod record;
pub mod replay;
pub mod report;
pub mod stats;
pub mod synth;
pub mod trace;
pub mod workload;

#[cfg(test)]
mod layers;
