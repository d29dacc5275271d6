//! The modelled read cost of a replay's I/O.

use super::error::ReplayError;
use crate::trace::Header;

/// Modelled read cost: a fixed cost per request plus a cost per page.
/// Presets are round figures for 4 KiB reads, not measurements of this host;
/// `--param request-us=` / `page-us=` override them.
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

    /// Modelled time of `requests` reads of `pages` pages in all, ms.
    pub fn time_ms(&self, requests: u64, pages: u64) -> f64 {
        (requests as f64 * self.request_us + pages as f64 * self.page_us) / 1000.0
    }
}
