//! The I/O cost model fitted to the trace's own major faults: a fault's
//! duration against the pages it read, `dur ≈ request + pages × page`.
//!
//! Robust to outliers (a fault that also waited on reclaim or a lock): the
//! median duration per number of pages read, then a least-squares line
//! through those medians, each weighted by its number of faults. Costs are
//! clamped to 0 or more. Too few faults, or reads of a single size, leave the
//! two costs indistinguishable: the caller falls back to a preset.

use crate::trace::{Footer, Header, Loaded, Record};
use std::collections::BTreeMap;

/// Faults needed in the fit (in groups of at least [`MIN_GROUP`]).
pub const MIN_FAULTS: u64 = 16;
/// Faults a read size needs for its median to enter the fit.
pub const MIN_GROUP: usize = 3;
/// Durations kept for the medians, at most (a uniform sample beyond).
const MAX_SAMPLES: usize = 1 << 20;

/// A fitted cost line, in ms.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Fit {
    pub request_ms: f64,
    pub page_ms: f64,
    /// Major faults whose read sizes entered the fit.
    pub faults: u64,
    /// Distinct read sizes (pages per fault) fitted.
    pub sizes: usize,
    /// Weighted R² of the line against the per-size medians; None when
    /// the medians do not vary.
    pub r2: Option<f64>,
    /// Median |duration - line| over the fitted faults, ms.
    pub residual_ms: f64,
}

/// Why no line could be fitted.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FitShortfall {
    #[error("the trace's major faults carry no durations")]
    NoDurations,
    #[error("{usable} major faults read from swap with a recorded duration (counting read sizes seen {MIN_GROUP} times or more); a fit needs {MIN_FAULTS}")]
    TooFew { usable: u64 },
    #[error("every fitted major fault read {0} pages: the per-request and per-page costs cannot be told apart")]
    OneSize(u32),
}

/// The measured side: what the recorded faults took.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Measured {
    pub major_faults: u64,
    /// Sum of the major faults' `dur_ns`, ms (faults of several threads overlap).
    pub major_fault_ms: f64,
    /// The trace's wall time (footer end - header start, else the span of
    /// its faults), ms.
    pub trace_ms: Option<f64>,
}

/// Major faults' (pages read, duration) collected record by record, in
/// bounded memory (reservoir sampling past [`MAX_SAMPLES`]).
#[derive(Default)]
pub struct FaultCosts {
    samples: Vec<(u32, u32)>,
    seen: u64,
    rng: u64,
    pub measured: Measured,
    first_ts: Option<u64>,
    last_ts: u64,
}

impl FaultCosts {
    pub fn add(&mut self, r: &Record) {
        let Record::SwapFault {
            ts,
            dur_ns,
            major,
            pages_read,
            ..
        } = *r
        else {
            return;
        };
        self.first_ts.get_or_insert(ts);
        self.last_ts = self.last_ts.max(ts);
        if !major {
            return;
        }
        self.measured.major_faults += 1;
        self.measured.major_fault_ms += dur_ns as f64 / 1e6;
        if pages_read == 0 || dur_ns == 0 {
            return;
        }
        self.seen += 1;
        if self.samples.len() < MAX_SAMPLES {
            self.samples.push((pages_read, dur_ns));
        } else {
            // Algorithm R with splitmix64: deterministic, uniform.
            self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.rng;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            let j = ((z ^ (z >> 31)) % self.seen) as usize;
            if let Some(s) = self.samples.get_mut(j) {
                *s = (pages_read, dur_ns);
            }
        }
    }

    /// Every record of `t`, and the trace's wall time from its header and
    /// footer.
    pub fn of_trace(t: &Loaded) -> FaultCosts {
        let mut c = FaultCosts::default();
        for r in &t.records {
            c.add(r);
        }
        c.end(&t.header, t.footer.as_ref());
        c
    }

    /// Sets the trace's duration once every record was added: from the
    /// footer, else from the first and last record seen.
    pub fn end(&mut self, header: &Header, footer: Option<&Footer>) {
        self.measured.trace_ms = match footer {
            Some(f) => Some(f.monotonic_end_ns.saturating_sub(header.monotonic_start_ns) as f64),
            None => self.first_ts.map(|a| self.last_ts.saturating_sub(a) as f64),
        }
        .map(|ns| ns / 1e6);
    }

    pub fn fit(&self) -> Result<Fit, FitShortfall> {
        if self.seen == 0 {
            return Err(
                if self.measured.major_faults > 0 && self.measured.major_fault_ms == 0.0 {
                    FitShortfall::NoDurations
                } else {
                    FitShortfall::TooFew { usable: 0 }
                },
            );
        }
        fit(&self.samples)
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_unstable_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The cost line through (pages read, duration in ns) samples.
pub fn fit(samples: &[(u32, u32)]) -> Result<Fit, FitShortfall> {
    let mut by_size: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for &(p, d) in samples {
        by_size.entry(p).or_default().push(d as f64 / 1e6);
    }
    by_size.retain(|_, v| v.len() >= MIN_GROUP);
    let faults: u64 = by_size.values().map(|v| v.len() as u64).sum();
    if faults < MIN_FAULTS {
        return Err(FitShortfall::TooFew { usable: faults });
    }
    if let (1, Some(&p)) = (by_size.len(), by_size.keys().next()) {
        return Err(FitShortfall::OneSize(p));
    }
    // (x, median y, weight) per read size.
    let pts: Vec<(f64, f64, f64)> = by_size
        .iter_mut()
        .map(|(&p, v)| (p as f64, median(v), v.len() as f64))
        .collect();
    let sw: f64 = pts.iter().map(|p| p.2).sum();
    let mx = pts.iter().map(|p| p.2 * p.0).sum::<f64>() / sw;
    let my = pts.iter().map(|p| p.2 * p.1).sum::<f64>() / sw;
    let sxx: f64 = pts.iter().map(|p| p.2 * (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| p.2 * (p.0 - mx) * (p.1 - my)).sum();
    let mut page = sxy / sxx;
    let mut request = my - page * mx;
    if page < 0.0 {
        // Bigger reads were not slower: all of it per request.
        page = 0.0;
        request = my;
    } else if request < 0.0 {
        // The line through the origin, least squares.
        request = 0.0;
        let sx2: f64 = pts.iter().map(|p| p.2 * p.0 * p.0).sum();
        page = pts.iter().map(|p| p.2 * p.0 * p.1).sum::<f64>() / sx2;
    }
    let line = |x: f64| request + page * x;
    let ss_tot: f64 = pts.iter().map(|p| p.2 * (p.1 - my).powi(2)).sum();
    let ss_res: f64 = pts.iter().map(|p| p.2 * (p.1 - line(p.0)).powi(2)).sum();
    let mut res: Vec<f64> = by_size
        .iter()
        .flat_map(|(&p, v)| v.iter().map(move |d| (d - line(p as f64)).abs()))
        .collect();
    Ok(Fit {
        request_ms: request,
        page_ms: page,
        faults,
        sizes: pts.len(),
        r2: (ss_tot > 0.0).then(|| 1.0 - ss_res / ss_tot),
        residual_ms: median(&mut res),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 0.1 ms + 0.02 ms/page, ±10% noise, and 5% of faults 50× slow.
    fn synthetic(n: usize) -> Vec<(u32, u32)> {
        let mut x: u64 = 12345;
        (0..n)
            .map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                let pages = [1u32, 2, 4, 8, 16][i % 5];
                let mut ns = (100_000.0 + 20_000.0 * pages as f64) * (0.9 + 0.2 * u);
                if i % 20 == 7 {
                    ns *= 50.0;
                }
                (pages, ns as u32)
            })
            .collect()
    }

    #[test]
    fn fit_recovers_known_costs_through_noise_and_outliers() {
        let f = fit(&synthetic(2000)).expect("fit");
        assert!((f.request_ms - 0.1).abs() < 0.01, "{f:?}");
        assert!((f.page_ms - 0.02).abs() < 0.002, "{f:?}");
        assert_eq!(f.faults, 2000);
        assert_eq!(f.sizes, 5);
        assert!(f.r2.is_some_and(|r| r > 0.99), "{f:?}");
        assert!(f.residual_ms < 0.03, "{f:?}");
    }

    #[test]
    fn fit_clamps_costs_to_non_negative() {
        // Bigger reads faster: no per-page cost, the mean median per request.
        let s: Vec<(u32, u32)> = (0..20)
            .map(|i| (1 + i % 2, 200_000 - 50_000 * (i % 2)))
            .collect();
        let f = fit(&s).expect("fit");
        assert_eq!(f.page_ms, 0.0);
        assert!((f.request_ms - 0.175).abs() < 1e-9, "{f:?}");
        // A line crossing below 0 at 0 pages: through the origin instead.
        let s: Vec<(u32, u32)> = (0..20)
            .map(|i| (1 + i % 2, 10_000 + 90_000 * (i % 2)))
            .collect();
        let f = fit(&s).expect("fit");
        assert_eq!(f.request_ms, 0.0);
        assert!(f.page_ms > 0.0, "{f:?}");
    }

    #[test]
    fn too_few_or_one_size_is_no_fit() {
        // 10 faults over 5 sizes: 2 a size, none counts.
        assert_eq!(fit(&synthetic(10)), Err(FitShortfall::TooFew { usable: 0 }));
        assert_eq!(
            fit(&synthetic(15)),
            Err(FitShortfall::TooFew { usable: 15 })
        );
        // Sizes with fewer than MIN_GROUP faults do not count.
        let mut s = synthetic(15);
        s.extend([(64, 1_000_000), (64, 1_000_000)]);
        assert_eq!(fit(&s), Err(FitShortfall::TooFew { usable: 15 }));
        assert!(fit(&synthetic(16)).is_ok());
        let s: Vec<(u32, u32)> = (0..40).map(|i| (8, 100_000 + i)).collect();
        assert_eq!(fit(&s), Err(FitShortfall::OneSize(8)));
    }

    #[test]
    fn reservoir_keeps_memory_bounded() {
        let mut c = FaultCosts::default();
        let r = Record::SwapFault {
            ts: 1,
            dur_ns: 5,
            tid: 1,
            mm: 1,
            addr: 0,
            entry: None,
            major: true,
            pages_read: 1,
            zero_reads: 0,
            zswap_loads: 0,
            write: false,
        };
        for _ in 0..MAX_SAMPLES + 10 {
            c.add(&r);
        }
        assert_eq!(c.samples.len(), MAX_SAMPLES);
        assert_eq!(c.measured.major_faults, (MAX_SAMPLES + 10) as u64);
    }
}
