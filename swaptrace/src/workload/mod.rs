//! The built-in, deterministic swap workload.
//!
//! [`run`] maps anonymous private memory, first-touches every page by writing
//! a page-unique non-zero pattern in the order given by a [`Pattern`] (this is
//! the order the pages age and, under pressure, get swapped out), then reads
//! the region back in address order, verifying every page.

use std::fmt;
use std::io;
use std::str::FromStr;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

mod memory;
mod procs;
use memory::Regions;
pub use procs::ReadOrder;

#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("invalid pattern {input:?}: {reason} (expected seq, random, shuffled-blocks:N or strided:N)")]
    InvalidPattern { input: String, reason: String },
    #[error("invalid size {input:?}: {reason} (expected e.g. 4096, 64k, 384M, 1G)")]
    InvalidSize { input: String, reason: String },
    #[error("workload size {0} bytes is less than one page")]
    Empty(u64),
    #[error("mmap of {bytes} bytes failed: {source}")]
    Mmap {
        bytes: u64,
        #[source]
        source: io::Error,
    },
    #[error("mremap(MREMAP_MAYMOVE): {0}")]
    Mremap(#[source] io::Error),
    #[error("madvise(MADV_POPULATE_READ): {0}")]
    Populate(io::Error),
    #[error("madvise(MADV_WILLNEED): {0}")]
    WillNeed(io::Error),
    #[error("madvise(MADV_PAGEOUT): {0}")]
    Pageout(#[source] io::Error),
    #[error("madvise(MADV_HUGEPAGE): {0}")]
    Madvise(#[source] io::Error),
    #[error("waiting for SIGTERM: {0}")]
    Signal(#[source] io::Error),
    #[error("getrusage failed: {0}")]
    Rusage(#[source] io::Error),
    #[error("fork or wait: {0}")]
    Fork(#[source] io::Error),
    #[error("{what} failed: {how}")]
    Child { what: String, how: String },
    #[error("a reader thread panicked")]
    ReaderPanicked,
    #[error(
        "page {page} corrupt in pass {pass}: word at offset {offset} is {found:#018x}, expected {expected:#018x}"
    )]
    Corrupt {
        page: u64,
        pass: u32,
        offset: usize,
        expected: u64,
        found: u64,
    },
}

/// Order in which pages are first touched (written).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Pattern {
    /// Address order.
    Sequential,
    /// A seeded random permutation of all pages.
    Random,
    /// Blocks of `block_pages` pages in a seeded random permutation; address
    /// order inside a block.
    ShuffledBlocks { block_pages: u32 },
    /// Pages 0, s, 2s, …, then 1, 1+s, …, until every page is touched once.
    Strided { stride_pages: u32 },
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Sequential => f.write_str("seq"),
            Pattern::Random => f.write_str("random"),
            Pattern::ShuffledBlocks { block_pages } => write!(f, "shuffled-blocks:{block_pages}"),
            Pattern::Strided { stride_pages } => write!(f, "strided:{stride_pages}"),
        }
    }
}

impl FromStr for Pattern {
    type Err = WorkloadError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |reason: &str| WorkloadError::InvalidPattern {
            input: s.to_string(),
            reason: reason.to_string(),
        };
        let t = s.trim();
        let (name, arg) = match t.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (t, None),
        };
        let count = |arg: Option<&str>| -> Result<u32, WorkloadError> {
            let a = arg.ok_or_else(|| bad("missing page count after ':'"))?;
            let n: u32 = a
                .trim()
                .parse()
                .map_err(|_| bad("page count is not a positive integer"))?;
            if n == 0 {
                return Err(bad("page count must be at least 1"));
            }
            Ok(n)
        };
        match name.to_ascii_lowercase().as_str() {
            "seq" | "sequential" if arg.is_none() => Ok(Pattern::Sequential),
            "random" if arg.is_none() => Ok(Pattern::Random),
            "seq" | "sequential" | "random" => Err(bad("takes no argument")),
            "shuffled-blocks" => Ok(Pattern::ShuffledBlocks {
                block_pages: count(arg)?,
            }),
            "strided" => Ok(Pattern::Strided {
                stride_pages: count(arg)?,
            }),
            _ => Err(bad("unknown pattern")),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkloadSpec {
    pub size_bytes: u64,
    pub pattern: Pattern,
    /// Read passes in address order after the first touch.
    pub passes: u32,
    pub seed: u64,
    /// Every Nth page is written with zeros (0: none), so that swap-out
    /// finds zero-filled pages (SWPOUT_ZERO, no I/O).
    #[serde(default)]
    pub zero_every: u32,
    /// After the first touch, print "holding" and keep the memory until
    /// SIGTERM or SIGINT, then return without the read passes.
    #[serde(default)]
    pub hold: bool,
    /// After the first touch, push the whole region out to swap with
    /// `madvise(MADV_PAGEOUT)`, in the order of the first touch: a
    /// deterministic way to fill swap in an order of our choosing.
    #[serde(default)]
    pub pageout: bool,
    /// Fill the first 1/N of each page with pseudo-random bytes, so that
    /// pages compress about N:1 (zswap); 0: only the checked words.
    #[serde(default)]
    pub fill: u32,
    /// The read passes skip one page in every N (0: none), as the khugepaged allocstall-gating thread's
    /// test does, leaving those in swap for khugepaged. Several values are
    /// taken in turn, one per 2 MiB block (a PMD), so that blocks leave
    /// different numbers of pages in swap.
    #[serde(default)]
    pub skip_every: Vec<u32>,
    /// Before the read passes, `madvise(MADV_HUGEPAGE)` the region so that
    /// khugepaged collapses it.
    #[serde(default)]
    pub thp: bool,
    /// After the read passes, print "holding" and keep the memory until
    /// SIGTERM or SIGINT.
    #[serde(default)]
    pub hold_after: bool,
    /// Processes that run the workload together, each on its own memory of
    /// `size_bytes` (seeds `seed`, `seed + 1`, …): all write, then all read.
    #[serde(default = "one")]
    pub procs: u32,
    /// The order of the read passes.
    #[serde(default)]
    pub read_order: ReadOrder,
    /// After writing, fork: the child does the read passes on the pages it
    /// shares with its parent (copy-on-write), the parent waits.
    #[serde(default)]
    pub fork_read: bool,
    /// Separate mappings (VMAs) the memory is split over, page `p` in
    /// mapping `p % regions`: address order reads them interleaved.
    #[serde(default = "one")]
    pub regions: u32,
    /// Rounds of the whole run, each on a new mapping (seed `seed + round`)
    /// unmapped at its end: the next mapping takes the same addresses.
    #[serde(default = "one")]
    pub rounds: u32,
    /// Shared memory (MAP_SHARED | MAP_ANONYMOUS: shmem) instead of
    /// private: reclaim writes it through `shmem_writeout()` and faults read
    /// it through `shmem_swapin_folio()`, paths the recorder does not follow.
    #[serde(default)]
    pub shared: bool,
    /// Threads that do the read passes at once, each over every page in
    /// the same order: they fault on the same pages together.
    #[serde(default = "one")]
    pub threads: u32,
    /// After writing, move the memory this many times with
    /// `mremap(MREMAP_MAYMOVE)`, a page larger each time, as glibc's
    /// `realloc()` grows a large block; then read it back.
    #[serde(default)]
    pub moves: u32,
    /// Before writing, `madvise(MADV_HUGEPAGE)` the memory: it is in
    /// transparent huge pages, which reclaim writes to swap whole.
    #[serde(default)]
    pub huge: bool,
    /// After writing, give back the first half of every N pages with
    /// `madvise(MADV_DONTNEED)`, as an allocator purges free runs (0:
    /// none); the read passes find them zero.
    #[serde(default)]
    pub purge: u32,
    /// The read passes fault each aligned run of N pages in first, with one
    /// `madvise(MADV_POPULATE_READ)` as its first page comes (0: none), as
    /// stress-ng's vm stressor does: the kernel's GUP swaps them in, with
    /// no user fault. One mapping only (`regions` 1).
    #[serde(default)]
    pub populate: u32,
    /// The read passes read each aligned run of N pages into the swap
    /// cache first, with one `madvise(MADV_WILLNEED)` as its first page
    /// comes (0: none): the kernel reads the run's swap entries alone, no
    /// readahead, and the faults find them cached. One mapping only.
    #[serde(default)]
    pub willneed: u32,
}

fn one() -> u32 {
    1
}

impl Default for WorkloadSpec {
    /// The demo's workload: 384 MiB in shuffled 16-page blocks, read back once.
    fn default() -> WorkloadSpec {
        WorkloadSpec {
            size_bytes: 384 << 20,
            pattern: Pattern::ShuffledBlocks { block_pages: 16 },
            passes: 1,
            seed: 1,
            zero_every: 0,
            hold: false,
            pageout: false,
            fill: 0,
            skip_every: Vec::new(),
            thp: false,
            hold_after: false,
            procs: 1,
            read_order: ReadOrder::Address,
            fork_read: false,
            regions: 1,
            rounds: 1,
            shared: false,
            threads: 1,
            moves: 0,
            huge: false,
            purge: 0,
            populate: 0,
            willneed: 0,
        }
    }
}

impl WorkloadSpec {
    /// Whether [`WorkloadSpec::purge`] gives `page` back.
    pub fn purged(&self, page: u64) -> bool {
        let n = u64::from(self.purge);
        n > 1 && page % n < n / 2
    }

    /// Whether the read passes skip `page` ([`WorkloadSpec::skip_every`]),
    /// with pages of `ps` bytes.
    pub fn skipped(&self, page: u64, ps: usize) -> bool {
        let per_block = ((2 << 20) / ps.max(1)).max(1) as u64;
        let n = match self.skip_every.as_slice() {
            [] => return false,
            list => u64::from(list[(page / per_block % list.len() as u64) as usize]),
        };
        n > 0 && page % n == n - 1
    }

    /// The word expected in `slot` of page `page`.
    pub fn word(&self, page: u64, slot: usize) -> u64 {
        if self.zero_every > 0 && page.is_multiple_of(u64::from(self.zero_every)) {
            0
        } else {
            page_word(self.seed, page, slot)
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkloadReport {
    pub pages: u64,
    pub touched: u64,
    pub page_size: u64,
    pub elapsed_write: Duration,
    pub elapsed_read: Duration,
    /// getrusage(RUSAGE_SELF) deltas over the whole run (all threads).
    pub maj_faults: u64,
    pub min_faults: u64,
}

/// splitmix64: small, fast, seedable; good enough for permutations.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.0)
    }

    /// Uniform-enough value in `0..n` (multiply-high; n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Words written per page, at `slot * page_size / SLOTS`.
const SLOTS: usize = 4;

/// The (non-zero) word stored in `slot` of page `page`.
pub fn page_word(seed: u64, page: u64, slot: usize) -> u64 {
    mix64(seed ^ mix64(page.wrapping_add(1)) ^ (slot as u64).wrapping_mul(0xA24B_AED4_963E_E407))
        | 1
}

/// Page indices in first-touch order for `pages` pages: a permutation of `0..pages`.
pub fn touch_order(pattern: Pattern, pages: u64, seed: u64) -> Vec<u64> {
    match pattern {
        Pattern::Sequential => (0..pages).collect(),
        Pattern::Random => {
            let mut v: Vec<u64> = (0..pages).collect();
            SplitMix64::new(seed).shuffle(&mut v);
            v
        }
        Pattern::ShuffledBlocks { block_pages } => {
            let bp = u64::from(block_pages.max(1));
            let mut blocks: Vec<u64> = (0..pages.div_ceil(bp)).collect();
            SplitMix64::new(seed).shuffle(&mut blocks);
            let mut v = Vec::with_capacity(pages as usize);
            for b in blocks {
                v.extend(b * bp..((b + 1) * bp).min(pages));
            }
            v
        }
        Pattern::Strided { stride_pages } => {
            let s = u64::from(stride_pages.max(1));
            let mut v = Vec::with_capacity(pages as usize);
            for start in 0..s.min(pages) {
                v.extend((start..pages).step_by(s as usize));
            }
            v
        }
    }
}

/// Parse a byte count: plain digits, or with a binary suffix k/K, M, G, T
/// (optionally followed by "iB" or "B"), e.g. "4096", "64k", "384M", "1G".
pub fn parse_size(s: &str) -> Result<u64, WorkloadError> {
    let bad = |reason: &str| WorkloadError::InvalidSize {
        input: s.to_string(),
        reason: reason.to_string(),
    };
    let t = s.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(digits_end);
    if num.is_empty() {
        return Err(bad("no leading number"));
    }
    let n: u64 = num.parse().map_err(|_| bad("number too large"))?;
    let unit = suffix.trim();
    let unit = unit
        .strip_suffix("iB")
        .or_else(|| unit.strip_suffix('B'))
        .unwrap_or(unit);
    let shift = match unit {
        "" => 0,
        "k" | "K" => 10,
        "m" | "M" => 20,
        "g" | "G" => 30,
        "t" | "T" => 40,
        _ => return Err(bad("unknown unit suffix")),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| bad("size overflows u64"))
}

/// Major and minor faults of this process and its waited-for children.
fn rusage_faults() -> Result<(u64, u64), WorkloadError> {
    let (mut maj, mut min) = (0, 0);
    for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
        // SAFETY: getrusage fills the zeroed struct.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(who, &mut ru) } != 0 {
            return Err(WorkloadError::Rusage(io::Error::last_os_error()));
        }
        maj += ru.ru_majflt as u64;
        min += ru.ru_minflt as u64;
    }
    Ok((maj, min))
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// Prints "holding" and blocks until SIGTERM or SIGINT arrives.
/// After MADV_PAGEOUT the written pages stay in the swap cache until
/// reclaim passes again (their PTEs are swap entries, so a second madvise
/// cannot reach them). Waits for the writeback, then has the memory cgroup
/// this process is in reclaim itself: `memory.force_empty` (v1) or
/// `memory.reclaim` (v2). Outside a cgroup the pages stay cached (the
/// read-back then finds them there) and a warning says so.
fn drop_own_swap_cache() {
    for _ in 0..100 {
        match crate::lab::proc_kib("/proc/meminfo", "Writeback") {
            Some(kib) if kib > 1024 => std::thread::sleep(Duration::from_millis(50)),
            _ => break,
        }
    }
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let knob = cgroups.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        if path == "/" {
            None
        } else if controllers.split(',').any(|c| c == "memory") {
            Some((
                format!("/sys/fs/cgroup/memory{path}/memory.force_empty"),
                "0",
            ))
        } else if controllers.is_empty() {
            Some((format!("/sys/fs/cgroup{path}/memory.reclaim"), "1G"))
        } else {
            None
        }
    });
    match knob {
        Some((path, value)) => {
            if let Err(e) = std::fs::write(&path, value) {
                eprintln!("workload: {path}: {e}: paged-out pages may stay in the swap cache");
            }
        }
        None => {
            eprintln!("workload: not in a memory cgroup: paged-out pages stay in the swap cache")
        }
    }
}

fn wait_for_stop() -> Result<(), WorkloadError> {
    use std::io::Write;
    // SAFETY: plain signal-set manipulation on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        println!("holding");
        let _ = std::io::stdout().flush();
        let mut sig = 0;
        if libc::sigwait(&set, &mut sig) != 0 {
            return Err(WorkloadError::Signal(io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// Runs the workload: in this process, or in `spec.procs` processes (this
/// one and forked ones) that all write, meet, then all read. With several
/// processes or `fork_read` it forks: call it from a single-threaded
/// process (the CLI's). The report sums every process's faults.
pub fn run(spec: &WorkloadSpec) -> Result<WorkloadReport, WorkloadError> {
    let (maj0, min0) = rusage_faults()?;
    let mut r = if spec.procs <= 1 {
        run_one(spec, None)?
    } else {
        let together = procs::Together::new(spec.procs)?;
        let mut kids = Vec::new();
        for i in 1..spec.procs {
            let mine = WorkloadSpec {
                seed: spec.seed.wrapping_add(u64::from(i)),
                ..spec.clone()
            };
            let t = &together;
            kids.push(procs::fork_child(
                "a process running together",
                move || run_one(&mine, Some(t)).map(drop).inspect_err(|_| t.fail()),
            )?);
        }
        let mine = run_one(spec, Some(&together)).inspect_err(|_| together.fail());
        let waited: Result<Vec<()>, _> = kids
            .into_iter()
            .map(|pid| procs::wait_child(pid, "a process running together"))
            .collect();
        let mut r = mine?;
        waited?;
        r.pages *= u64::from(spec.procs);
        r.touched *= u64::from(spec.procs);
        r
    };
    let (maj1, min1) = rusage_faults()?;
    r.maj_faults = maj1.saturating_sub(maj0);
    r.min_faults = min1.saturating_sub(min0);
    Ok(r)
}

/// One process's run, [`WorkloadSpec::rounds`] times: write, meet the
/// others (`together`, in the first round), read back, unmap.
fn run_one(
    spec: &WorkloadSpec,
    together: Option<&procs::Together>,
) -> Result<WorkloadReport, WorkloadError> {
    let mut total = run_round(spec, together)?;
    for round in 1..spec.rounds {
        let spec = WorkloadSpec {
            seed: spec.seed.wrapping_add(round as u64),
            ..spec.clone()
        };
        let r = run_round(&spec, None)?;
        total.pages += r.pages;
        total.touched += r.touched;
        total.elapsed_write += r.elapsed_write;
        total.elapsed_read += r.elapsed_read;
    }
    Ok(total)
}

/// One round: write, meet the others (`together`), read back, unmap.
fn run_round(
    spec: &WorkloadSpec,
    together: Option<&procs::Together>,
) -> Result<WorkloadReport, WorkloadError> {
    let psize = page_size();
    let pages = spec.size_bytes / psize;
    if pages == 0 {
        return Err(WorkloadError::Empty(spec.size_bytes));
    }
    let len = usize::try_from(pages * psize).map_err(|_| WorkloadError::Mmap {
        bytes: pages * psize,
        source: io::Error::from(io::ErrorKind::InvalidInput),
    })?;
    let order = touch_order(spec.pattern, pages, spec.seed);
    let guard = spec.moves > 0;
    let mut map =
        Regions::map(pages, spec.regions.max(1), psize, spec.shared, guard).map_err(|source| {
            WorkloadError::Mmap {
                bytes: len as u64,
                source,
            }
        })?;
    let ps = psize as usize;
    let slot_off = |slot: usize| (slot * ps / SLOTS) & !7;
    if spec.huge {
        map.madvise(libc::MADV_HUGEPAGE)
            .map_err(WorkloadError::Madvise)?;
    }

    let t0 = Instant::now();
    let mut touched = 0u64;
    for &p in &order {
        // Offsets below are < page size and 8-aligned.
        let base = map.page(p);
        if spec.fill > 0 && spec.word(p, 0) != 0 {
            for off in (0..ps / spec.fill as usize).step_by(8) {
                if off % (ps / SLOTS) != 0 {
                    // SAFETY: off < page size, 8-aligned; slot words are skipped.
                    unsafe {
                        std::ptr::write_volatile(base.add(off).cast::<u64>(), mix64(p ^ off as u64))
                    };
                }
            }
        }
        for slot in 0..SLOTS {
            unsafe {
                std::ptr::write_volatile(base.add(slot_off(slot)).cast::<u64>(), spec.word(p, slot))
            };
        }
        touched += 1;
    }
    let elapsed_write = t0.elapsed();
    if spec.pageout {
        // In the order of the first touch, a run of consecutive pages per
        // call: swap slots are handed out in this order.
        let mut i = 0;
        while i < order.len() {
            let mut n = 1;
            while map.maps.len() == 1 && i + n < order.len() && order[i + n] == order[i] + n as u64
            {
                n += 1;
            }
            // SAFETY: the run lies inside one of our own mappings.
            let r = unsafe { libc::madvise(map.page(order[i]).cast(), n * ps, libc::MADV_PAGEOUT) };
            if r != 0 {
                return Err(WorkloadError::Pageout(io::Error::last_os_error()));
            }
            i += n;
        }
        drop_own_swap_cache();
    }
    drop(order);
    purge(spec, &map, pages, ps)?;
    if spec.hold {
        wait_for_stop()?;
        return Ok(WorkloadReport {
            pages,
            touched,
            page_size: psize,
            elapsed_write,
            elapsed_read: Duration::ZERO,
            maj_faults: 0,
            min_faults: 0,
        });
    }

    if spec.thp {
        map.madvise(libc::MADV_HUGEPAGE)
            .map_err(WorkloadError::Madvise)?;
    }
    for _ in 0..spec.moves {
        map.move_all().map_err(WorkloadError::Mremap)?;
    }
    if let Some(t) = together {
        t.arrive_and_wait();
    }
    let t1 = Instant::now();
    let read = || read_threads(spec, &map, pages, ps);
    if spec.fork_read {
        let pid = procs::fork_child("the forked reader", read)?;
        procs::wait_child(pid, "the forked reader")?;
    } else {
        read()?;
    }
    let elapsed_read = t1.elapsed();
    if spec.hold_after {
        wait_for_stop()?;
    }
    drop(map);
    Ok(WorkloadReport {
        pages,
        touched,
        page_size: psize,
        elapsed_write,
        elapsed_read,
        maj_faults: 0,
        min_faults: 0,
    })
}

/// [`WorkloadSpec::purge`]: the first half of every N pages given back, a
/// call per run of pages in one mapping.
fn purge(spec: &WorkloadSpec, map: &Regions, pages: u64, ps: usize) -> Result<(), WorkloadError> {
    let n = u64::from(spec.purge);
    if n < 2 {
        return Ok(());
    }
    let give_back = |p: u64, len: u64| {
        // SAFETY: `len` pages from `p` lie inside one of our mappings.
        let r =
            unsafe { libc::madvise(map.page(p).cast(), len as usize * ps, libc::MADV_DONTNEED) };
        if r != 0 {
            return Err(WorkloadError::Madvise(io::Error::last_os_error()));
        }
        Ok(())
    };
    for first in (0..pages).step_by(n as usize) {
        let len = (n / 2).min(pages - first);
        if map.maps.len() == 1 {
            give_back(first, len)?;
        } else {
            // Page by page: consecutive pages lie in different mappings.
            (first..first + len).try_for_each(|p| give_back(p, 1))?;
        }
    }
    Ok(())
}

/// [`WorkloadSpec::populate`] and [`WorkloadSpec::willneed`]: at the
/// first page of an aligned run, the run faulted in, or read into the
/// swap cache, by one call.
fn populate(
    spec: &WorkloadSpec,
    map: &Regions,
    p: u64,
    pages: u64,
    ps: usize,
) -> Result<(), WorkloadError> {
    let calls = [
        (
            spec.populate,
            libc::MADV_POPULATE_READ,
            WorkloadError::Populate as fn(_) -> _,
        ),
        (spec.willneed, libc::MADV_WILLNEED, WorkloadError::WillNeed),
    ];
    for (n, advice, error) in calls {
        let n = u64::from(n);
        if n < 2 || !p.is_multiple_of(n) || map.maps.len() != 1 {
            continue;
        }
        let len = n.min(pages - p) as usize * ps;
        // SAFETY: `len` bytes from page `p` lie inside our one mapping.
        if unsafe { libc::madvise(map.page(p).cast(), len, advice) } != 0 {
            return Err(error(io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// The read passes in [`WorkloadSpec::threads`] threads at once.
fn read_threads(
    spec: &WorkloadSpec,
    map: &Regions,
    pages: u64,
    ps: usize,
) -> Result<(), WorkloadError> {
    if spec.threads <= 1 {
        return read_passes(spec, map, pages, ps);
    }
    std::thread::scope(|scope| {
        let readers: Vec<_> = (0..spec.threads)
            .map(|_| scope.spawn(|| read_passes(spec, map, pages, ps)))
            .collect();
        readers
            .into_iter()
            .try_for_each(|r| r.join().unwrap_or(Err(WorkloadError::ReaderPanicked)))
    })
}

/// The read passes over `map`, checking every page read.
fn read_passes(
    spec: &WorkloadSpec,
    map: &Regions,
    pages: u64,
    ps: usize,
) -> Result<(), WorkloadError> {
    let slot_off = |slot: usize| (slot * ps / SLOTS) & !7;
    for pass in 0..spec.passes {
        let key = spec.seed ^ mix64(u64::from(pass) + 1);
        for i in 0..pages {
            let p = procs::read_page(spec.read_order, i, pages, key);
            if spec.skipped(p, ps) {
                continue;
            }
            populate(spec, map, p, pages, ps)?;
            // One word per page, rotating the slot between pages and passes.
            let slot = ((p + u64::from(pass)) % SLOTS as u64) as usize;
            let off = slot_off(slot);
            // SAFETY: as above.
            let found = unsafe { std::ptr::read_volatile(map.page(p).add(off).cast::<u64>()) };
            let expected = if spec.purged(p) {
                0
            } else {
                spec.word(p, slot)
            };
            if found != expected {
                return Err(WorkloadError::Corrupt {
                    page: p,
                    pass,
                    offset: off,
                    expected,
                    found,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
