//! What `plot`'s time charts draw, gathered batch by batch in bounded memory:
//! swap-ins counted in time bins (at most [`BINS_MAX`] per series, the bin
//! widening as the trace grows) and the heatmap's points sampled.

use crate::trace::{Footer, Header, Record};

/// Bins per series, at most.
pub const BINS_MAX: usize = 4096;
/// The narrowest bin: 100 ms.
const BIN_NS: u64 = 100_000_000;
/// Heatmap points drawn (the sample holds up to twice as many).
pub const POINTS: usize = 200_000;
/// Swapoff read ticks drawn.
pub const TICKS: usize = 20_000;

/// Counts per time bin for a few series sharing one width, which doubles
/// (bins merged in pairs) whenever a time falls past [`BINS_MAX`] bins.
#[derive(Clone, Debug)]
pub struct Bins {
    pub width_ns: u64,
    pub series: Vec<Vec<u64>>,
}

impl Bins {
    fn new(n: usize) -> Bins {
        Bins {
            width_ns: BIN_NS,
            series: vec![Vec::new(); n],
        }
    }

    fn add(&mut self, series: usize, dt_ns: u64, n: u64) {
        while dt_ns / self.width_ns >= BINS_MAX as u64 {
            self.widen();
        }
        let i = (dt_ns / self.width_ns) as usize;
        if let Some(v) = self.series.get_mut(series) {
            if v.len() <= i {
                v.resize(i + 1, 0);
            }
            v[i] += n;
        }
    }

    fn widen(&mut self) {
        self.width_ns = self.width_ns.saturating_mul(2);
        for v in &mut self.series {
            *v = v.chunks(2).map(|c| c.iter().sum()).collect();
        }
    }

    /// Widened to at least `width_ns` (to draw beside another).
    pub fn widen_to(&mut self, width_ns: u64) {
        while self.width_ns < width_ns {
            self.widen();
        }
    }

    /// Bins per second.
    fn per_s(&self) -> f64 {
        1e9 / self.width_ns as f64
    }

    /// (seconds, count) of a series' bins, from 0 through `span_s`.
    pub fn points(&self, series: &[usize], span_s: f64) -> Vec<(f64, f64)> {
        let last = (span_s * self.per_s()).ceil() as usize;
        (0..=last)
            .map(|b| {
                let n: u64 = series
                    .iter()
                    .filter_map(|&s| self.series.get(s)?.get(b))
                    .sum();
                (b as f64 / self.per_s(), n as f64)
            })
            .collect()
    }

    /// The width as the chart titles say it: "100 ms", "1.6 s".
    pub fn width_text(&self) -> String {
        let ms = self.width_ns / 1_000_000;
        if ms < 1000 {
            format!("{ms} ms")
        } else {
            format!("{} s", ms as f64 / 1000.0)
        }
    }
}

/// Every k-th item added, k doubling whenever twice `keep` are held.
#[derive(Clone, Debug)]
pub struct Sample<T> {
    keep: usize,
    every: u64,
    seen: u64,
    pub items: Vec<T>,
}

impl<T> Sample<T> {
    fn new(keep: usize) -> Sample<T> {
        Sample {
            keep,
            every: 1,
            seen: 0,
            items: Vec::new(),
        }
    }

    fn add(&mut self, item: T) {
        if self.seen.is_multiple_of(self.every) {
            self.items.push(item);
            if self.items.len() >= 2 * self.keep {
                self.every *= 2;
                let mut i = 0;
                self.items.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
            }
        }
        self.seen += 1;
    }

    /// Items added (not only those held).
    pub fn seen(&self) -> u64 {
        self.seen
    }
}

/// Swap-ins over time: faults and swapoff's reads, binned and sampled.
#[derive(Clone, Debug)]
pub struct Timeline {
    t0: u64,
    /// The last fault or swap read.
    last: Option<u64>,
    footer_end: Option<u64>,
    pub(crate) swapoff: bool,
    /// Major faults, minor faults, pages read outside faults.
    pub bins: Bins,
    /// (seconds, swap offset, major) of faults with an entry.
    pub(crate) points: Sample<(f64, f64, bool)>,
    pub(crate) majors: u64,
    pub(crate) offset_max: f64,
    /// Seconds of swapoff's reads.
    pub(crate) reads: Sample<f64>,
}

/// The time a record counts for in the span: faults' and swap reads'.
pub(crate) fn swapin_ts(r: &Record) -> Option<u64> {
    match r {
        Record::SwapFault { ts, .. } | Record::SwapRead { ts, .. } => Some(*ts),
        _ => None,
    }
}

impl Timeline {
    pub fn new(h: &Header) -> Timeline {
        Timeline {
            t0: h.monotonic_start_ns,
            last: None,
            footer_end: None,
            swapoff: false,
            bins: Bins::new(3),
            points: Sample::new(POINTS),
            majors: 0,
            offset_max: 1.0,
            reads: Sample::new(TICKS),
        }
    }

    /// The next records, in trace order.
    pub fn add(&mut self, records: &[Record]) {
        let t0 = self.t0;
        let sec = |ts: u64| ts.saturating_sub(t0) as f64 / 1e9;
        for r in records {
            self.swapoff |= crate::report::Swapoffs::reads(r);
            if let Some(ts) = swapin_ts(r) {
                self.last = self.last.max(Some(ts));
            }
            match *r {
                Record::SwapFault {
                    ts, major, entry, ..
                } => {
                    self.bins.add(usize::from(!major), ts.saturating_sub(t0), 1);
                    if let Some(e) = entry {
                        self.majors += u64::from(major);
                        self.offset_max = self.offset_max.max(e.offset as f64);
                        self.points.add((sec(ts), e.offset as f64, major));
                    }
                }
                Record::SwapRead { ts, nr, .. } => {
                    self.bins.add(2, ts.saturating_sub(t0), u64::from(nr));
                    self.reads.add(sec(ts));
                }
                _ => {}
            }
        }
    }

    /// Ends at the footer's end time, when later than the last swap-in.
    pub fn finish(mut self, footer: Option<&Footer>) -> Timeline {
        self.footer_end = footer.map(|f| f.monotonic_end_ns);
        self
    }

    /// Seconds from the start of the recording to its end.
    pub fn span_s(&self) -> f64 {
        span_s(self.t0, self.last, self.footer_end)
    }
}

/// Seconds from the start of the recording to its end: the footer's end,
/// or `last` (the last fault or swap read) when later or cut short.
pub(crate) fn span_s(t0: u64, last: Option<u64>, footer_end: Option<u64>) -> f64 {
    let end = last.into_iter().chain(footer_end).max().unwrap_or(t0);
    end.saturating_sub(t0) as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sample is every k-th item, k a power of two, never more than
    /// twice what is kept.
    #[test]
    fn a_sample_keeps_every_kth_item_and_stays_bounded() {
        let mut s = Sample::new(10);
        for i in 0..1000u64 {
            s.add(i);
            assert!(s.items.len() < 20);
        }
        assert_eq!(s.seen(), 1000);
        assert_eq!(s.every, 64);
        let want: Vec<u64> = (0..1000).step_by(64).collect();
        assert_eq!(s.items, want);
    }

    /// Past BINS_MAX bins the width doubles and pairs of bins are summed;
    /// a time near u64::MAX widens without overflow.
    #[test]
    fn bins_widen_and_keep_their_counts() {
        let mut b = Bins::new(2);
        b.add(0, 0, 1);
        b.add(0, BIN_NS, 2);
        b.add(1, 3 * BIN_NS, 4);
        assert_eq!(b.series[0], vec![1, 2]);
        b.add(0, BINS_MAX as u64 * BIN_NS, 8);
        assert_eq!(b.width_ns, 2 * BIN_NS);
        assert_eq!(b.series[0][0], 3);
        assert_eq!(b.series[1], vec![0, 4]);
        assert_eq!(b.series[0].iter().sum::<u64>(), 11);
        assert_eq!(
            b.points(&[0, 1], 0.5),
            vec![(0.0, 3.0), (0.2, 4.0), (0.4, 0.0), (0.6, 0.0)]
        );
        b.add(1, u64::MAX, 1);
        assert!(b.series.iter().all(|v| v.len() <= BINS_MAX));
        assert_eq!(b.series[1].iter().sum::<u64>(), 5);
        assert!(b.width_text().ends_with(" s"));
    }
}
