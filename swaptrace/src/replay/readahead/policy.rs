//! What a readahead policy is and what it sees: the [`Policy`] trait, the
//! fault it is asked about and the arguments a policy is built from. No
//! policy lives here, so policies and the engine both point down to it.

use super::input::{ReplayInput, SwapoffMode};
use super::space::SwapView;
use crate::trace::SwapEntry;

/// A fault as policies see it.
#[derive(Clone, Copy, Debug)]
pub struct FaultCtx {
    pub ts: u64,
    pub mm: u32,
    pub vpage: u64,
    pub entry: SwapEntry,
    /// When the fault retries after waiting for its folio's read
    /// (`folio_lock_or_retry()`), whose lookup then updates the VMA's
    /// readahead address again; 0: no retry.
    pub retry: u64,
    /// Pages the kernel read for this fault, as recorded (0: none, or a
    /// swapoff's walk).
    pub kernel_read: u32,
}

/// What a policy decides: the pages a swap-cache miss reads.
pub trait Policy: Send {
    fn name(&self) -> String;
    /// Pushes the swap entries to read around a miss (the faulting entry is
    /// read anyway) and returns the window (`swapin_nr_pages()` result).
    fn readahead(&mut self, f: &FaultCtx, view: &SwapView, out: &mut Vec<SwapEntry>) -> u32;
    /// A swap-cache hit; `readahead` when the page had PG_readahead.
    fn on_hit(&mut self, _f: &FaultCtx, _readahead: bool) {}
    /// A VMA of address space `mm`: pages `[start, end)` (first seen, or
    /// its bounds changed).
    fn on_vma(&mut self, _mm: u32, _start: u64, _end: u64) {}
    /// Pages `[start, end)` of `mm` were unmapped: its VMAs there are gone.
    fn on_unmap(&mut self, _mm: u32, _start: u64, _end: u64) {}
    /// Pages `[from, from + len)` of `mm` moved to `to` (`mremap()`): its
    /// VMAs there go with them.
    fn on_move(&mut self, _mm: u32, _from: u64, _to: u64, _len: u64) {}
    /// What swapoff's `unuse_pte_range()` does with a page already in the
    /// swap cache: the kernels of each [`SwapoffMode`].
    fn swapoff_mode(&self) -> SwapoffMode {
        SwapoffMode::LookupStats
    }
    /// How many of the trace's faults, in replay order, [`Policy::future`]
    /// must have shown it before its next call (0: it reads no future).
    /// The replay reads that far ahead, so memory grows only with it.
    fn lookahead(&self) -> usize {
        0
    }
    /// The entry of the next fault not yet shown (see [`Policy::lookahead`]).
    fn future(&mut self, _entry: SwapEntry) {}
}

/// What a policy is built from (see the registry).
#[derive(Clone, Copy)]
pub struct PolicyArgs<'a> {
    /// As typed, swapoff suffix included.
    pub name: &'a str,
    /// The `N` of a parameterised name such as `fixed:N`; else empty.
    pub arg: &'a str,
    /// What it does at swapoff: the suffix's kernel, else the recording one.
    pub swapoff: SwapoffMode,
    /// The replay's input (`page_cluster`; the oracle reads its future).
    pub input: &'a ReplayInput,
}

/// Builds a policy; `Err` says why its parameter is bad.
pub type MakePolicy = fn(&PolicyArgs) -> Result<Box<dyn Policy>, String>;
