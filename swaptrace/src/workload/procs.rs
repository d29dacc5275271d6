//! The workload's shapes beyond one process reading in address order:
//! several processes together, a forked child reading shared pages, and
//! reads in a random order (without allocating, so that forked children
//! need no allocator).

use std::fmt;
use std::io;
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::WorkloadError;

/// The order of the read passes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReadOrder {
    /// Address order, every pass.
    #[default]
    Address,
    /// A seeded random permutation of the pages, another one each pass.
    Random,
}

impl fmt::Display for ReadOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReadOrder::Address => "address",
            ReadOrder::Random => "random",
        })
    }
}

impl FromStr for ReadOrder {
    type Err = WorkloadError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "address" | "seq" => Ok(ReadOrder::Address),
            "random" => Ok(ReadOrder::Random),
            _ => Err(WorkloadError::InvalidPattern {
                input: s.to_string(),
                reason: "unknown read order (expected address or random)".into(),
            }),
        }
    }
}

/// The page read `i`-th in a pass over `pages` pages: `i` itself, or its
/// image under a keyed bijection of `0..pages` (a 4-round Feistel network
/// on the next even power of two, cycle-walking back into range).
pub fn read_page(order: ReadOrder, i: u64, pages: u64, key: u64) -> u64 {
    if order == ReadOrder::Address || pages <= 1 {
        return i;
    }
    let bits = (64 - (pages - 1).leading_zeros()).max(2).div_ceil(2);
    let mask = (1u64 << bits) - 1;
    let mut x = i;
    loop {
        let (mut l, mut r) = (x >> bits, x & mask);
        for round in 0..4u64 {
            let f = super::mix64(r ^ key ^ round.wrapping_mul(0x9E37_79B9_7F4A_7C15)) & mask;
            (l, r) = (r, l ^ f);
        }
        x = (l << bits) | r;
        if x < pages {
            return x;
        }
    }
}

/// Where processes running together meet between writing and reading:
/// a shared anonymous page holding counts of those arrived and failed.
pub struct Together {
    counts: *mut AtomicU32,
    procs: u32,
}

impl Together {
    pub fn new(procs: u32) -> Result<Together, WorkloadError> {
        // SAFETY: a fresh shared anonymous mapping, one page.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(WorkloadError::Mmap {
                bytes: 4096,
                source: io::Error::last_os_error(),
            });
        }
        Ok(Together {
            counts: p.cast(),
            procs,
        })
    }

    fn count(&self, i: usize) -> &AtomicU32 {
        // SAFETY: two aligned u32s inside the page, zeroed by mmap, shared
        // by the forked processes and only accessed atomically.
        unsafe { &*self.counts.add(i) }
    }

    /// Arrives and waits for every process (those that failed count too).
    pub fn arrive_and_wait(&self) {
        self.count(0).fetch_add(1, Ordering::AcqRel);
        while self.count(0).load(Ordering::Acquire) + self.count(1).load(Ordering::Acquire)
            < self.procs
        {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// This process will not arrive: nobody waits for it.
    pub fn fail(&self) {
        self.count(1).fetch_add(1, Ordering::AcqRel);
    }
}

impl Drop for Together {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what mmap returned.
        unsafe { libc::munmap(self.counts.cast(), 4096) };
    }
}

/// Forks; the child runs `f` and exits (0 on success, 3 after printing
/// the error), and the parent returns its pid.
pub fn fork_child(
    what: &str,
    f: impl FnOnce() -> Result<(), WorkloadError>,
) -> Result<libc::pid_t, WorkloadError> {
    // SAFETY: the workload runs single-threaded (the CLI's own process);
    // the child runs `f` and leaves with _exit.
    match unsafe { libc::fork() } {
        -1 => Err(WorkloadError::Fork(io::Error::last_os_error())),
        0 => {
            let code = match f() {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("workload ({what}): {e}");
                    3
                }
            };
            // SAFETY: leaves the child without running the parent's atexit.
            unsafe { libc::_exit(code) }
        }
        pid => Ok(pid),
    }
}

/// Waits for `pid`; an exit other than 0 is an error naming `what`.
pub fn wait_child(pid: libc::pid_t, what: &str) -> Result<(), WorkloadError> {
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(WorkloadError::Fork(e));
        }
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        return Ok(());
    }
    let how = if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("exit status {}", libc::WEXITSTATUS(status))
    };
    Err(WorkloadError::Child {
        what: what.to_string(),
        how,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_read_order_is_a_permutation_per_key() {
        for pages in [1u64, 2, 3, 5, 100, 1000, 4096, 5000] {
            let v: Vec<u64> = (0..pages)
                .map(|i| read_page(ReadOrder::Random, i, pages, 7))
                .collect();
            let mut s = v.clone();
            s.sort_unstable();
            assert_eq!(s, (0..pages).collect::<Vec<_>>(), "{pages}");
            if pages >= 100 {
                assert_ne!(v, (0..pages).collect::<Vec<_>>());
                let w: Vec<u64> = (0..pages)
                    .map(|i| read_page(ReadOrder::Random, i, pages, 8))
                    .collect();
                assert_ne!(v, w, "another key, another order");
            }
        }
        assert_eq!(read_page(ReadOrder::Address, 17, 100, 7), 17);
    }

    #[test]
    fn read_orders_parse() {
        assert_eq!("random".parse::<ReadOrder>().unwrap(), ReadOrder::Random);
        assert_eq!("address".parse::<ReadOrder>().unwrap(), ReadOrder::Address);
        assert!("sideways".parse::<ReadOrder>().is_err());
    }
}
