//! A fixed, aligned window (`none` is `fixed:1`): the baseline, the loop of
//! `swap_cluster_readahead()` without `__swapin_nr_pages()`.

use super::cluster::aligned_cluster;
use crate::replay::readahead::policy::{FaultCtx, Policy, PolicyArgs};
use crate::replay::readahead::space::SwapView;
use crate::trace::SwapEntry;

/// Reads the aligned `pages` around every miss.
pub struct Fixed {
    pages: u32,
}

impl Fixed {
    /// `fixed:N`: N a power of two from 1 to 1024.
    pub fn make(a: &PolicyArgs) -> Result<Box<dyn Policy>, String> {
        let pages: u32 = a.arg.parse().map_err(|_| "N must be a number")?;
        if pages == 0 || !pages.is_power_of_two() || pages > 1024 {
            return Err("N must be a power of two from 1 to 1024".into());
        }
        Ok(Box::new(Fixed { pages }))
    }

    /// `none`: only the faulting page.
    pub fn none(_: &PolicyArgs) -> Result<Box<dyn Policy>, String> {
        Ok(Box::new(Fixed { pages: 1 }))
    }
}

impl Policy for Fixed {
    fn name(&self) -> String {
        if self.pages == 1 {
            "none".into()
        } else {
            format!("fixed:{}", self.pages)
        }
    }

    fn readahead(&mut self, f: &FaultCtx, view: &SwapView, out: &mut Vec<SwapEntry>) -> u32 {
        aligned_cluster(f, self.pages, view, out);
        self.pages
    }
}
