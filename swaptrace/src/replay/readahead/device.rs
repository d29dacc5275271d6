//! The modelled read cost of a replay's I/O.

use super::error::ReplayError;
use super::fit::{FaultCosts, Fit, Measured};
use crate::trace::Header;

/// Modelled read cost: a fixed cost per request plus a cost per page.
/// By default fitted to the trace's major faults (`fit`, named "fit");
/// presets are round figures for 4 KiB reads, not measurements of this host;
/// `--param request-us=` / `page-us=` override either.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct DeviceModel {
    pub name: &'static str,
    pub request_us: f64,
    pub page_us: f64,
}

pub const DEVICES: [DeviceModel; 4] = [
    DeviceModel {
        name: "nvme",
        request_us: 20.0,
        page_us: 1.6,
    },
    DeviceModel {
        name: "ssd",
        request_us: 100.0,
        page_us: 8.0,
    },
    DeviceModel {
        name: "hdd",
        request_us: 8000.0,
        page_us: 30.0,
    },
    DeviceModel {
        name: "zram",
        request_us: 1.0,
        page_us: 2.5,
    },
];

impl DeviceModel {
    pub fn by_name(name: &str) -> Result<DeviceModel, ReplayError> {
        DEVICES
            .iter()
            .find(|d| d.name == name)
            .copied()
            .ok_or_else(|| ReplayError::UnknownDevice(name.to_string()))
    }

    /// The preset matching the recorded swap devices: `hdd` when any is
    /// rotational, else `ssd`.
    pub fn for_trace(h: &Header) -> DeviceModel {
        let rotational = h.swap_devices.iter().any(|d| d.rotational == Some(true));
        DEVICES[if rotational { 2 } else { 1 }]
    }

    /// The line fitted to a trace's faults, as a model.
    pub fn fitted(f: &Fit) -> DeviceModel {
        DeviceModel {
            name: "fit",
            request_us: f.request_ms * 1000.0,
            page_us: f.page_ms * 1000.0,
        }
    }

    /// Modelled time of `requests` reads of `pages` pages in all, ms.
    pub fn time_ms(&self, requests: u64, pages: u64) -> f64 {
        (requests as f64 * self.request_us + pages as f64 * self.page_us) / 1000.0
    }
}

/// Where the model's figures come from.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum CostSource {
    /// Fitted to the trace's own major faults (the default).
    Fit(Fit),
    /// A preset asked for with `--device`.
    Preset,
    /// The recorded devices' preset, as no line could be fitted: why.
    Fallback { why: String },
}

/// The I/O cost model of a replay, where it comes from, and what the
/// recorded faults measured.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct IoCost {
    pub model: CostSource,
    /// `--param request-us=` / `page-us=` changed the figures.
    pub overridden: bool,
    pub measured: Measured,
}

/// The model for a trace whose faults `costs` holds: the `--device` preset
/// when one is named, else the fit to the trace's major faults, else (with
/// why) the recorded devices' preset.
pub fn io_model(
    costs: &FaultCosts,
    header: &Header,
    preset: Option<&str>,
) -> Result<(DeviceModel, IoCost), ReplayError> {
    let (device, source) = match preset {
        Some(d) => (DeviceModel::by_name(d)?, CostSource::Preset),
        None => match costs.fit() {
            Ok(f) => (DeviceModel::fitted(&f), CostSource::Fit(f)),
            Err(why) => (
                DeviceModel::for_trace(header),
                CostSource::Fallback {
                    why: why.to_string(),
                },
            ),
        },
    };
    Ok((
        device,
        IoCost {
            model: source,
            overridden: false,
            measured: costs.measured.clone(),
        },
    ))
}
