//! Leap (USENIX ATC 2020): prefetch along the majority trend of recent
//! swap-offset deltas. No kernel ships it.

use super::cluster::Cluster;
use crate::replay::readahead::policy::{FaultCtx, Policy, PolicyArgs};
use crate::replay::readahead::space::SwapView;
use crate::trace::SwapEntry;
use std::collections::VecDeque;

/// Leap: the majority trend of recent swap-offset deltas (Boyer-Moore vote
/// over the last 4, 8, 16, 32 faults) prefetches along the trend; the window
/// grows with prefetch hits; no trend falls back to cluster readahead.
pub struct Leap {
    max_pages: u32,
    history: VecDeque<u64>,
    hits: u32,
    prev_win: u32,
    fallback: Cluster,
}

const LEAP_HISTORY: usize = 32;

impl Leap {
    pub fn new(page_cluster: u32) -> Leap {
        Leap {
            max_pages: 1 << page_cluster.min(10),
            history: VecDeque::with_capacity(LEAP_HISTORY + 1),
            hits: 0,
            prev_win: 0,
            fallback: Cluster::new(page_cluster),
        }
    }

    pub fn make(a: &PolicyArgs) -> Result<Box<dyn Policy>, String> {
        Ok(Box::new(Leap::new(a.input.page_cluster)))
    }

    fn remember(&mut self, offset: u64) {
        self.history.push_back(offset);
        if self.history.len() > LEAP_HISTORY + 1 {
            self.history.pop_front();
        }
    }
}

/// The delta that is a strict majority among the last `w` deltas, for the
/// smallest w of 4, 8, 16, 32 that has one (Boyer-Moore majority vote).
pub fn majority_trend(history: &VecDeque<u64>) -> Option<i64> {
    let deltas: Vec<i64> = history
        .iter()
        .zip(history.iter().skip(1))
        .map(|(a, b)| b.wrapping_sub(*a) as i64)
        .collect();
    let mut w = 4;
    while w <= deltas.len() {
        let recent = &deltas[deltas.len() - w..];
        let (mut cand, mut count) = (0i64, 0usize);
        for &d in recent {
            if count == 0 {
                cand = d;
                count = 1;
            } else if d == cand {
                count += 1;
            } else {
                count -= 1;
            }
        }
        if cand != 0 && recent.iter().filter(|&&d| d == cand).count() > w / 2 {
            return Some(cand);
        }
        w *= 2;
    }
    None
}

impl Policy for Leap {
    fn name(&self) -> String {
        "leap".into()
    }

    fn readahead(&mut self, f: &FaultCtx, view: &SwapView, out: &mut Vec<SwapEntry>) -> u32 {
        self.remember(f.entry.offset);
        let Some(delta) = majority_trend(&self.history) else {
            self.hits = 0;
            return self.fallback.readahead(f, view, out);
        };
        // Window as __swapin_nr_pages() sizes it, a trend standing in for an
        // adjacent offset: hits + 2 rounded up, at least half the last window.
        let hits = std::mem::take(&mut self.hits);
        let mut win = hits + 2;
        if hits > 0 {
            win = win.next_power_of_two().max(4);
        }
        let win = win.min(self.max_pages).max(self.prev_win / 2).max(1);
        self.prev_win = win;
        for k in 1..win as i64 {
            let off = f.entry.offset as i64 + delta * k;
            if off <= 0 || off as u64 > view.dev_max(f.entry.dev) {
                break;
            }
            let e = SwapEntry {
                dev: f.entry.dev,
                offset: off as u64,
            };
            if view.allocated(e) {
                out.push(e);
            }
        }
        win
    }

    fn on_hit(&mut self, f: &FaultCtx, readahead: bool) {
        self.remember(f.entry.offset);
        if readahead {
            self.hits += 1;
        }
        self.fallback.on_hit(f, readahead);
    }
}

#[cfg(test)]
mod tests {
    use super::majority_trend;
    use std::collections::VecDeque;

    #[test]
    fn leap_finds_the_majority_delta() {
        let h: VecDeque<u64> = [10, 13, 16, 19, 22].into_iter().collect();
        assert_eq!(majority_trend(&h), Some(3));
        // Mostly +2 with noise: still +2 in the window of 8.
        let h: VecDeque<u64> = [0, 2, 4, 90, 92, 94, 96, 5, 98].into_iter().collect();
        assert_eq!(majority_trend(&h), Some(2));
        // Random: none.
        let h: VecDeque<u64> = [5, 90, 3, 44, 17, 8].into_iter().collect();
        assert_eq!(majority_trend(&h), None);
        // Too short to judge.
        let h: VecDeque<u64> = [1, 2, 3].into_iter().collect();
        assert_eq!(majority_trend(&h), None);
    }
}
