//! Who owns a swapped-out folio: the VMA that maps it, found through its
//! anon_vma; and forks, which share a parent's pages with a child.

use crate::twin::twin;
use aya_ebpf::helpers::bpf_ktime_get_ns;
use aya_ebpf::macros::raw_tracepoint;
use aya_ebpf::programs::RawTracePointContext;
use swaptrace_common::kind;

use crate::konst::*;
use crate::swap::{emit, event, g, holds_swap, mark_tgid, read_u64, selected, task_tgid, Head};

/// `rb_node.rb_right`, `rb_node.rb_left` (after `__rb_parent_color`).
const RB_RIGHT: u64 = 8;
const RB_LEFT: u64 = 16;
/// Levels of the anon_vma's interval tree searched.
const AVC_DEPTH: u32 = 12;

/// The VMA on an anon_vma that maps page `index`, with its `vm_pgoff`:
/// the interval tree of anon_vma_chains (ordered by `vm_pgoff`) searched
/// from `node`, its root, as `anon_vma_interval_tree_foreach()` would. An
/// mprotect or fork puts several VMAs on one anon_vma; the root alone may
/// not map the page. Without a match, the root's VMA.
#[inline(always)]
pub(crate) fn vma_of(node: u64, index: u64) -> Option<(Head, u64)> {
    let mut node = node;
    let mut root: Option<(Head, u64)> = None;
    let shift = g(&K_PAGE_SHIFT);
    for _ in 0..AVC_DEPTH {
        if node == 0 {
            break;
        }
        let avc = node - g(&K_AVC_RB);
        let v = read_u64(avc, g(&K_AVC_VMA)).and_then(Head::read)?;
        let pgoff = v.get(g(&K_VMA_PGOFF))?;
        let pages = v.get(g(&K_VMA_END))?.wrapping_sub(v.get(g(&K_VMA_START))?) >> shift;
        let next = if index < pgoff {
            RB_LEFT
        } else if index - pgoff >= pages {
            RB_RIGHT
        } else {
            return Some((v, pgoff));
        };
        if root.is_none() {
            root = Some((v, pgoff));
        }
        node = read_u64(node, next).unwrap_or(0);
    }
    root
}

twin! {
/// Args: (parent, child). A fork that copied the address space: the
/// recorder joins the child's swap-ins to the parent's swap-outs.
#[raw_tracepoint(tracepoint = "sched_process_fork")]
pub fn process_fork / process_fork_2 (ctx: RawTracePointContext) -> i32 {
    if !selected() {
        return 0;
    }
    let off = g(&K_TASK_MM);
    let (ptask, ctask) = (ctx.arg::<u64>(0), ctx.arg::<u64>(1));
    // The child holds the parent's swap entries (copied PTEs, or one mm).
    if let (Some(p), Some(c)) = (task_tgid(ptask), task_tgid(ctask)) {
        if p != c && holds_swap(p) {
            mark_tgid(c);
        }
    }
    let parent = read_u64(ptask, off).unwrap_or(0);
    let child = read_u64(ctask, off).unwrap_or(0);
    if parent == 0 || child == 0 || parent == child {
        return 0;
    }
    let mut ev = event(kind::FORK, unsafe { bpf_ktime_get_ns() });
    ev.mm = child;
    ev.entry = parent;
    emit(ev);
    0
}
}
