//! Shared by the recording and the offline side: `argdist -C` count
//! tables, `funclatency` log2 histograms and percentiles.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// COUNT per value, printed as argdist does (`COUNT  EVENT` rows, ascending count).
#[derive(Clone, Debug, Default, Serialize)]
pub struct CountTable {
    pub expr: String,
    pub counts: BTreeMap<u64, u64>,
}

impl CountTable {
    pub fn new(expr: &str) -> CountTable {
        CountTable {
            expr: expr.to_string(),
            counts: BTreeMap::new(),
        }
    }

    pub fn add(&mut self, value: u64, n: u64) {
        *self.counts.entry(value).or_default() += n;
    }

    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }
}

impl fmt::Display for CountTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rows: Vec<_> = self.counts.iter().collect();
        rows.sort_by_key(|(v, c)| (**c, **v));
        writeln!(f, "\t{:<10} EVENT", "COUNT")?;
        for (v, c) in rows {
            writeln!(f, "\t{:<10} {} = {}", c, self.expr, v)?;
        }
        Ok(())
    }
}

/// Power-of-two buckets: bucket k holds values in [2^k, 2^(k+1)), bucket 0 also 0.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Log2Hist {
    pub unit: String,
    pub buckets: Vec<u64>,
}

#[derive(Serialize)]
struct Bucket {
    low: u64,
    high: u64,
    count: u64,
}

impl Log2Hist {
    pub fn new(unit: &str) -> Log2Hist {
        Log2Hist {
            unit: unit.to_string(),
            buckets: Vec::new(),
        }
    }

    pub fn add(&mut self, v: u64) {
        let k = if v == 0 {
            0
        } else {
            63 - v.leading_zeros() as usize
        };
        if self.buckets.len() <= k {
            self.buckets.resize(k + 1, 0);
        }
        self.buckets[k] += 1;
    }

    pub fn total(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// Buckets with explicit bounds (inclusive), for JSON.
    pub fn to_json(&self) -> serde_json::Value {
        let b: Vec<Bucket> = self
            .buckets
            .iter()
            .enumerate()
            .map(|(k, &count)| Bucket {
                low: if k == 0 { 0 } else { 1 << k },
                high: (1u64 << (k + 1)) - 1,
                count,
            })
            .collect();
        serde_json::json!({ "unit": self.unit, "buckets": b })
    }
}

impl fmt::Display for Log2Hist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let max = self.buckets.iter().copied().max().unwrap_or(0).max(1);
        writeln!(f, "{:>24} : count    distribution", self.unit)?;
        for (k, &c) in self.buckets.iter().enumerate() {
            let low = if k == 0 { 0 } else { 1u64 << k };
            let high = (1u64 << (k + 1)) - 1;
            let bar = "*".repeat((c * 40).div_ceil(max) as usize);
            writeln!(f, "{low:>10} -> {high:<10} : {c:<8} |{bar:<40}|")?;
        }
        Ok(())
    }
}

/// The percentiles reported: median, tail and maximum.
const PCTS: [f64; 5] = [50.0, 90.0, 99.0, 99.9, 100.0];

/// (percentile, value) pairs for [`PCTS`] and the largest value.
pub fn percentiles(values: &[u64]) -> (Vec<(f64, u64)>, u64) {
    let mut p = Percentiles::new();
    for &v in values {
        p.add(v);
    }
    p.get()
}

/// [`percentiles`] of values added one at a time: an HDR histogram, so
/// memory does not grow with the values.
pub struct Percentiles(Option<hdrhistogram::Histogram<u64>>);

impl Default for Percentiles {
    fn default() -> Self {
        Percentiles::new()
    }
}

impl Percentiles {
    pub fn new() -> Percentiles {
        Percentiles(hdrhistogram::Histogram::<u64>::new_with_bounds(1, 1 << 40, 3).ok())
    }

    pub fn add(&mut self, v: u64) {
        if let Some(h) = &mut self.0 {
            h.saturating_record(v);
        }
    }

    /// Adds another's values (same bounds: cannot fail).
    pub fn merge(&mut self, other: &Percentiles) {
        if let (Some(a), Some(b)) = (&mut self.0, &other.0) {
            let _ = a.add(b);
        }
    }

    /// Values added.
    pub fn len(&self) -> u64 {
        self.0.as_ref().map_or(0, |h| h.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value at percentile `q` (0-100); None without values.
    pub fn at(&self, q: f64) -> Option<u64> {
        self.0
            .as_ref()
            .filter(|h| !h.is_empty())
            .map(|h| h.value_at_percentile(q))
    }

    /// (percentile, value) pairs for [`PCTS`] and the largest value.
    pub fn get(&self) -> (Vec<(f64, u64)>, u64) {
        let Some(h) = &self.0 else {
            return (Vec::new(), 0);
        };
        let p = PCTS
            .iter()
            .map(|&q| (q, h.value_at_percentile(q)))
            .collect();
        (p, h.max())
    }
}

/// The argdist probe line printed above readahead window tables (the
/// `swapin_nr_pages()` return that the windows stand for).
pub const RA_WINDOW_TITLE: &str = "r::swapin_nr_pages(unsigned long offset):unsigned long:$retval";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argdist_rows_ascend_by_count() {
        let mut t = CountTable::new("$retval");
        t.add(8, 36948);
        t.add(2, 527771);
        t.add(1, 49290);
        let s = t.to_string();
        let rows: Vec<&str> = s.lines().skip(1).collect();
        assert!(rows[0].contains("36948") && rows[0].ends_with("$retval = 8"));
        assert!(rows[2].contains("527771") && rows[2].ends_with("$retval = 2"));
        assert_eq!(t.total(), 36948 + 527771 + 49290);
    }

    #[test]
    fn log2_buckets_and_bounds() {
        let mut h = Log2Hist::new("usecs");
        for v in [0, 1, 2, 3, 4, 1000] {
            h.add(v);
        }
        assert_eq!(h.buckets[0], 2);
        assert_eq!(h.buckets[1], 2);
        assert_eq!(h.buckets[2], 1);
        assert_eq!(h.buckets[9], 1);
        let j = h.to_json();
        assert_eq!(j["buckets"][9]["low"], 512);
        assert_eq!(j["buckets"][9]["high"], 1023);
        assert!(h.to_string().contains("512 -> 1023"));
    }

    #[test]
    fn percentiles_cover_the_largest_values() {
        let mut v: Vec<u64> = (0..1000).collect();
        v.push(20_000);
        v.push(30_000);
        let (p, max) = percentiles(&v);
        assert_eq!(p[0].0, 50.0);
        assert!((495..=505).contains(&p[0].1), "{p:?}");
        assert!(max >= 29_990, "{max}");
        assert_eq!(p[4].1, max);
    }
}
