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
/// Steps down the anon_vma's interval tree (an rbtree: at most twice as
/// high as a balanced one).
const AVC_STEPS: u32 = 24;

/// The VMA on an anon_vma that maps page `index`, with its `vm_pgoff`: the
/// first anon_vma_chain of the interval tree from `root` whose VMA covers
/// `index`, as `anon_vma_interval_tree_foreach()` finds it
/// (`interval_tree_subtree_search()`: by each subtree's last page). An
/// mprotect, fork or mremap puts several VMAs, their page ranges
/// overlapping, on one anon_vma; the root alone may not map the page.
/// Without a match, the root's VMA. Also the page's address in another
/// VMA that covers `index` (0 if the search met none): the page table
/// tells which one maps the page, and only userspace can read it.
#[inline(always)]
pub(crate) fn vma_of(root: u64, index: u64) -> Option<(Head, u64, u64)> {
    let (found, alt) = vma_covering(root, index);
    let vma = found.or_else(|| {
        // Without a match, the root's VMA.
        (root != 0).then(|| read_u64(root - g(&K_AVC_RB), g(&K_AVC_VMA)))?
    })?;
    let v = Head::read(vma)?;
    let pgoff = v.get(g(&K_VMA_PGOFF))?;
    Some((v, pgoff, alt))
}

/// The address of page `index` in the VMA of the interval tree node
/// `node`, if that VMA covers it.
#[inline(always)]
fn address_in(node: u64, index: u64) -> Option<u64> {
    let vma = read_u64(node.wrapping_sub(g(&K_AVC_RB)), g(&K_AVC_VMA))?;
    let pgoff = read_u64(vma, g(&K_VMA_PGOFF))?;
    let start = read_u64(vma, g(&K_VMA_START))?;
    let pages = read_u64(vma, g(&K_VMA_END))?.wrapping_sub(start) >> g(&K_PAGE_SHIFT);
    (index >= pgoff && index - pgoff < pages)
        .then(|| start.wrapping_add((index - pgoff) << g(&K_PAGE_SHIFT)))
}

/// The search of [`vma_of`]: the VMA's address, and the page's address in
/// a second VMA covering it: a node the search went left from (it comes
/// after the match), or the match's right child. Member reads only (no
/// 64-byte copies): the swap-out program and its twin's frame share 512
/// bytes of stack.
#[inline(always)]
fn vma_covering(root: u64, index: u64) -> (Option<u64>, u64) {
    let shift = g(&K_PAGE_SHIFT);
    let (rb, last) = (g(&K_AVC_RB), g(&K_AVC_LAST));
    // Whether a subtree's last page reaches `index` (unknown: no).
    let covers = |n: u64| n != 0 && read_u64(n.wrapping_sub(rb), last).is_some_and(|l| l >= index);
    let mut node = root;
    let mut alt = 0;
    for _ in 0..AVC_STEPS {
        if node == 0 {
            return (None, 0);
        }
        let left = read_u64(node, RB_LEFT).unwrap_or(0);
        if covers(left) {
            if alt == 0 {
                alt = address_in(node, index).unwrap_or(0);
            }
            node = left;
            continue;
        }
        let Some(vma) = read_u64(node - rb, g(&K_AVC_VMA)) else {
            return (None, 0);
        };
        let Some(pgoff) = read_u64(vma, g(&K_VMA_PGOFF)) else {
            return (None, 0);
        };
        if index < pgoff {
            return (None, 0);
        }
        let Some(start) = read_u64(vma, g(&K_VMA_START)) else {
            return (None, 0);
        };
        let Some(end) = read_u64(vma, g(&K_VMA_END)) else {
            return (None, 0);
        };
        let pages = end.wrapping_sub(start) >> shift;
        let right = read_u64(node, RB_RIGHT).unwrap_or(0);
        if index - pgoff < pages {
            if alt == 0 && right != 0 {
                alt = address_in(right, index).unwrap_or(0);
            }
            return (Some(vma), alt);
        }
        if !covers(right) {
            return (None, 0);
        }
        node = right;
    }
    (None, 0)
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
