//! `/proc/PID/pagemap`: the swap entry a page's PTE holds, for the
//! swap-outs whose page offset two VMAs cover ([`super::PteReader`]).

use super::PteReader;
use crate::trace::SwapEntry;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// `PM_SWAP` and `PM_PRESENT` of a pagemap entry (Documentation/admin-guide/mm/pagemap.rst).
const PM_SWAP: u64 = 1 << 62;
const PM_PRESENT: u64 = 1 << 63;
/// Bits 0–4: the swap type; 5–54: the offset (CAP_SYS_ADMIN, else 0).
const TYPE_BITS: u32 = 5;
const OFFSET_MASK: u64 = (1 << 50) - 1;
/// Open pagemaps kept: the processes a recording swaps are few.
const KEEP: usize = 64;

/// Pagemaps by process, opened at first use (None: it could not be).
pub(super) struct Pagemaps {
    page_shift: u32,
    files: HashMap<u32, Option<File>>,
}

impl Pagemaps {
    pub(super) fn new(page_size: u64) -> Pagemaps {
        Pagemaps {
            page_shift: page_size.max(1).trailing_zeros(),
            files: HashMap::new(),
        }
    }
}

/// The swap entry of a pagemap entry, if it names one.
pub(super) fn swap_of(pme: u64) -> Option<SwapEntry> {
    (pme & PM_SWAP != 0 && pme & PM_PRESENT == 0).then_some(SwapEntry {
        dev: (pme & ((1 << TYPE_BITS) - 1)) as u8,
        offset: (pme >> TYPE_BITS) & OFFSET_MASK,
    })
}

impl PteReader for Pagemaps {
    fn swap_entry(&mut self, pid: u32, vaddr: u64) -> Option<SwapEntry> {
        if self.files.len() >= KEEP && !self.files.contains_key(&pid) {
            self.files.clear();
        }
        let file = self
            .files
            .entry(pid)
            .or_insert_with(|| File::open(format!("/proc/{pid}/pagemap")).ok())
            .as_ref()?;
        let mut buf = [0u8; 8];
        let at = (vaddr >> self.page_shift).checked_mul(8)?;
        if file.read_exact_at(&mut buf, at).is_err() {
            // Gone: another process may take its pid.
            self.files.remove(&pid);
            return None;
        }
        swap_of(u64::from_le_bytes(buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_swap_pte_names_its_entry_and_a_present_page_none() {
        // Type 1, offset 0x1234, PM_SWAP (pagemap_pmd_range(): type | offset << 5).
        let pme = PM_SWAP | 1 | (0x1234 << 5);
        assert_eq!(
            swap_of(pme),
            Some(SwapEntry {
                dev: 1,
                offset: 0x1234
            })
        );
        assert_eq!(swap_of(PM_PRESENT | 0x5678), None);
        assert_eq!(swap_of(0), None);
    }

    #[test]
    fn our_own_page_is_present_and_a_gone_process_reads_none() {
        let mut p = Pagemaps::new(4096);
        let page = vec![1u8; 4096];
        let addr = page.as_ptr() as u64;
        assert_eq!(p.swap_entry(std::process::id(), addr), None);
        // Pids past pid_max (4,194,304 at most) never exist.
        assert_eq!(p.swap_entry(u32::MAX, addr), None);
        assert!(p.files.get(&u32::MAX).is_some_and(|f| f.is_none()));
    }
}
