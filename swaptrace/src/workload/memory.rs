//! The workload's memory: anonymous mappings (private, or shared), one per region.

use std::io;

pub(super) struct Mapping {
    pub(super) ptr: *mut u8,
    /// Mapped, and used (the rest is a guard page).
    pub(super) len: usize,
    pub(super) usable: usize,
}

impl Mapping {
    /// Private, or shared (shmem) where `shared`.
    fn anonymous(len: usize, shared: bool) -> io::Result<Mapping> {
        let kind = if shared {
            libc::MAP_SHARED
        } else {
            libc::MAP_PRIVATE
        };
        // SAFETY: fresh anonymous mapping; no aliasing.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                kind | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // 4 KiB pages for determinism even with THP=always; best effort.
        // SAFETY: range is our own mapping.
        unsafe { libc::madvise(ptr, len, libc::MADV_NOHUGEPAGE) };
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
            usable: len,
        })
    }
}

/// The workload's memory: `regions` mappings, logical page `p` in region
/// `p % regions` at page `p / regions`, so that address order interleaves
/// the regions (one VMA each).
pub(super) struct Regions {
    pub(super) maps: Vec<Mapping>,
    ps: usize,
}

// SAFETY: the mappings live as long as `Regions`; threads share it only
// for the read passes, which only read through its pointers.
unsafe impl Sync for Regions {}

impl Regions {
    /// With `guard` a mapping has its guard page even alone, so that it
    /// cannot grow in place ([`Regions::move_all`]).
    pub(super) fn map(
        pages: u64,
        regions: u32,
        psize: u64,
        shared: bool,
        guard: bool,
    ) -> io::Result<Regions> {
        let n = u64::from(regions).min(pages).max(1);
        let maps = (0..n)
            .map(|r| {
                let len = (pages - r).div_ceil(n) * psize;
                let len = usize::try_from(len)
                    .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
                if n == 1 && !guard {
                    return Mapping::anonymous(len, shared);
                }
                // A PROT_NONE page above each: adjacent anonymous mappings
                // would merge into one VMA.
                let ps = psize as usize;
                let mut m = Mapping::anonymous(len + ps, shared)?;
                // SAFETY: the last page of our own mapping.
                if unsafe { libc::mprotect(m.ptr.add(len).cast(), ps, libc::PROT_NONE) } != 0 {
                    return Err(io::Error::last_os_error());
                }
                m.usable = len;
                Ok(m)
            })
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Regions {
            maps,
            ps: psize as usize,
        })
    }

    /// `madvise(advice)` over every mapping's usable pages.
    pub(super) fn madvise(&self, advice: libc::c_int) -> io::Result<()> {
        for m in &self.maps {
            // SAFETY: the range is our own mapping.
            if unsafe { libc::madvise(m.ptr.cast(), m.usable, advice) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Moves every mapping with `mremap(MREMAP_MAYMOVE)` to a page more
    /// than it uses (its guard page above stops it growing in place), as
    /// glibc's `realloc()` grows a large block: its pages, swapped out or
    /// not, go with it; the old guard page is unmapped.
    pub(super) fn move_all(&mut self) -> io::Result<()> {
        for m in &mut self.maps {
            let old = m.ptr;
            let new_len = m.usable + self.ps;
            // SAFETY: the used part of our own mapping, moved whole.
            let new = unsafe { libc::mremap(old.cast(), m.usable, new_len, libc::MREMAP_MAYMOVE) };
            if new == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            let guard = m.len - m.usable;
            // SAFETY: what is left at the old place is our guard page.
            if guard > 0 && unsafe { libc::munmap(old.add(m.usable).cast(), guard) } != 0 {
                return Err(io::Error::last_os_error());
            }
            // A guard page above the new place too: the next move moves.
            let top = new.cast::<u8>().wrapping_add(m.usable);
            // SAFETY: the last page of the moved mapping, ours.
            if unsafe { libc::mprotect(top.cast(), self.ps, libc::PROT_NONE) } != 0 {
                return Err(io::Error::last_os_error());
            }
            (m.ptr, m.len) = (new.cast(), new_len);
        }
        Ok(())
    }

    /// Where logical page `p` (< the pages mapped) starts.
    pub(super) fn page(&self, p: u64) -> *mut u8 {
        let n = self.maps.len() as u64;
        let m = &self.maps[(p % n) as usize];
        // SAFETY: p / n < the pages of region p % n (see `map`).
        unsafe { m.ptr.add((p / n) as usize * self.ps) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what mmap returned.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}
