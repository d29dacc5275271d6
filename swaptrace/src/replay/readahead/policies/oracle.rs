//! An upper bound no kernel can reach: each miss reads the pages the next
//! faults will want.

use crate::replay::readahead::input::{Event, ReplayInput};
use crate::replay::readahead::policy::{FaultCtx, Policy, PolicyArgs};
use crate::replay::readahead::space::SwapView;
use crate::trace::SwapEntry;

/// An upper bound with the same budget: each miss reads the pages of the
/// next faults, in fault order, up to the largest window. Its accuracy and
/// coverage bound those of every policy with that window.
pub struct Oracle {
    max_pages: u32,
    /// The entry of every fault, in order.
    seq: Vec<SwapEntry>,
    /// Index of the current fault in `seq`.
    now: usize,
}

impl Oracle {
    pub fn new(input: &ReplayInput) -> Oracle {
        let seq = input
            .events
            .iter()
            .filter_map(|ev| match *ev {
                Event::Fault { entry, .. } => Some(entry),
                Event::Out { .. } | Event::Swapoff { .. } => None,
            })
            .collect();
        Oracle {
            max_pages: 1 << input.page_cluster.min(10),
            seq,
            now: 0,
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
        let want = self.max_pages as usize - 1;
        for &e in self.seq.iter().skip(self.now).take(want * 4) {
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
    }
}
