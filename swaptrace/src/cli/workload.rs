//! `swaptrace workload`: the built-in, deterministic swap workload.

use anyhow::Result;
use swaptrace::workload::{self, Pattern, ReadOrder, WorkloadSpec};

/// How many processes run the workload and how they read (shared by
/// `workload` and `demo`).
#[derive(clap::Args)]
pub struct Shape {
    /// Read passes over the memory.
    #[arg(long, default_value_t = 1)]
    pub passes: u32,
    /// Processes that run together, each on its own SIZE (seeds SEED,
    /// SEED+1, …): all write, then all read back.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub procs: u32,
    /// Order of the read passes: address or random (another permutation
    /// each pass).
    #[arg(long, default_value = "address")]
    pub read_order: ReadOrder,
    /// After writing, fork: the child reads the pages it shares with its
    /// parent (copy-on-write), the parent waits.
    #[arg(long)]
    pub fork_read: bool,
    /// Split the memory over this many mappings (VMAs), page P in mapping
    /// P mod N: address order reads them interleaved.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub regions: u32,
    /// Run it this many times, each round on a new mapping unmapped at its
    /// end (the next round's mapping takes the same addresses).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub rounds: u32,
    /// Shared memory (MAP_SHARED | MAP_ANONYMOUS, shmem) instead of private:
    /// its swap traffic is outside what `record` follows, which `info`,
    /// `record` and `replay` then say.
    #[arg(long)]
    pub shared: bool,
    /// Threads doing the read passes at once, each over every page in the
    /// same order, so that they fault on the same pages together.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub threads: u32,
    /// After writing, move the memory this many times with
    /// mremap(MREMAP_MAYMOVE), as realloc() grows a large block, then read
    /// it back.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=64))]
    pub moves: u32,
    /// Before writing, madvise(MADV_HUGEPAGE) the memory: transparent huge
    /// pages, which reclaim writes to swap whole (THP_SWAP).
    #[arg(long)]
    pub huge: bool,
    /// After writing, give back the first half of every N pages with
    /// madvise(MADV_DONTNEED), as an allocator purges free runs; 0 = none.
    #[arg(long, default_value_t = 0)]
    pub purge: u32,
    /// The read passes fault each aligned run of N pages in first with one
    /// madvise(MADV_POPULATE_READ), as stress-ng's vm stressor does (the
    /// kernel's GUP, no user fault); one mapping only; 0 = none.
    #[arg(long, default_value_t = 0)]
    pub populate: u32,
    /// The read passes read each aligned run of N pages into the swap cache
    /// first with one madvise(MADV_WILLNEED) (no fault, no readahead); one
    /// mapping only; 0 = none.
    #[arg(long, default_value_t = 0)]
    pub willneed: u32,
}

impl Shape {
    /// `spec` with this shape.
    pub fn apply(&self, spec: WorkloadSpec) -> WorkloadSpec {
        WorkloadSpec {
            passes: self.passes,
            procs: self.procs,
            read_order: self.read_order,
            fork_read: self.fork_read,
            regions: self.regions,
            rounds: self.rounds,
            shared: self.shared,
            threads: self.threads,
            moves: self.moves,
            huge: self.huge,
            purge: self.purge,
            populate: self.populate,
            willneed: self.willneed,
            ..spec
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// Anonymous memory to touch, e.g. 384M.
    #[arg(long, default_value = "384M", value_parser = super::parse_size_arg)]
    size: u64,
    /// seq, random, shuffled-blocks:K or strided:K.
    #[arg(long, default_value = "shuffled-blocks:16")]
    pattern: Pattern,
    #[command(flatten)]
    shape: Shape,
    /// Seed of the pseudo-random orders.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write every Nth page with zeros (swapped out without I/O); 0 = none.
    #[arg(long, default_value_t = 0)]
    zero_every: u32,
    /// After writing, print "holding" and keep the memory until SIGTERM/SIGINT.
    #[arg(long)]
    hold: bool,
    /// After writing, push the region out to swap (MADV_PAGEOUT).
    #[arg(long)]
    pageout: bool,
    /// Fill 1/N of each page with random bytes (pages compress ~N:1).
    #[arg(long, default_value_t = 0)]
    fill: u32,
    /// The read passes skip one page in every N (the khugepaged swap-in
    /// test of the allocstall-gating thread). A list (20,5) is taken in
    /// turn, one value per 2 MiB block.
    #[arg(long, value_delimiter = ',')]
    skip_every: Vec<u32>,
    /// madvise(MADV_HUGEPAGE) the region before the read passes.
    #[arg(long)]
    thp: bool,
    /// After the read passes, print "holding" and keep the memory.
    #[arg(long)]
    hold_after: bool,
    /// Print JSON instead of the summary line.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<()> {
    let spec = a.shape.apply(WorkloadSpec {
        size_bytes: a.size,
        pattern: a.pattern,
        seed: a.seed,
        zero_every: a.zero_every,
        hold: a.hold,
        pageout: a.pageout,
        fill: a.fill,
        skip_every: a.skip_every,
        thp: a.thp,
        hold_after: a.hold_after,
        ..WorkloadSpec::default()
    });
    let r = workload::run(&spec)?;
    if a.json {
        return super::print_json(&r);
    }
    println!(
        "{} pages ({}) written in {:.2}s, read back in {:.2}s; {} major, {} minor faults",
        r.pages,
        a.pattern,
        r.elapsed_write.as_secs_f64(),
        r.elapsed_read.as_secs_f64(),
        r.maj_faults,
        r.min_faults
    );
    Ok(())
}
