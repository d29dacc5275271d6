//! An upper bound no kernel can reach: each miss reads the pages the next
//! faults will want.

use crate::replay::readahead::input::ReplayInput;
use crate::replay::readahead::policy::{FaultCtx, Policy, PolicyArgs};
use crate::replay::readahead::space::SwapView;
use crate::trace::SwapEntry;
use std::collections::VecDeque;

/// An upper bound with the same budget: each miss reads the pages of the
/// next faults, in fault order, up to the largest window. Its accuracy and
/// coverage bound those of every policy with that window.
pub struct Oracle {
    max_pages: u32,
    /// The entries of the faults from the `base`th on, in order, as far as
    /// the replay has shown them ([`Policy::future`]).
    seq: VecDeque<SwapEntry>,
    base: usize,
    /// Index of the current fault.
    now: usize,
}

impl Oracle {
    pub fn new(input: &ReplayInput) -> Oracle {
        Oracle {
            max_pages: 1 << input.page_cluster.min(10),
            seq: VecDeque::new(),
            base: 0,
            now: 0,
        }
    }

    /// Forgets the faults before the current one.
    fn trim(&mut self) {
        while self.base < self.now && self.seq.pop_front().is_some() {
            self.base += 1;
        }
    }

    pub fn make(a: &PolicyArgs) -> Result<Box<dyn Policy>, String> {
        Ok(Box::new(Oracle::new(a.input)))
    }
}

impl Policy for Oracle {
    fn name(&self) -> String {
        "oracle".into()
    }

    fn readahead(&mut self, f: &FaultCtx, view: &SwapView, out: &mut Vec<SwapEntry>) -> u32 {
        self.now += 1;
        self.trim();
        let want = self.max_pages as usize - 1;
        let skip = self.now - self.base;
        for &e in self.seq.iter().skip(skip).take(want * 4) {
            if out.len() == want {
                break;
            }
            if e != f.entry && view.allocated(e) && !out.contains(&e) {
                out.push(e);
            }
        }
        self.max_pages
    }

    fn on_hit(&mut self, _f: &FaultCtx, _readahead: bool) {
        self.now += 1;
        self.trim();
    }

    /// `readahead` reads the `4 * (max_pages - 1)` faults after the next.
    fn lookahead(&self) -> usize {
        self.now + 1 + 4 * (self.max_pages as usize - 1)
    }

    fn future(&mut self, entry: SwapEntry) {
        self.seq.push_back(entry);
    }
}
