//! A synthetic zswap trace for the tests.

use crate::trace::{OutKind, Record, SwapEntry};
use crate::workload::SplitMix64;

/// A synthetic trace: `cold` pages swapped out once and never touched, then
/// `rounds` rounds of a `hot` set swapped out and faulted back in (shuffled),
/// every `chunk` swap-outs inside a `Reclaim` begin/end pair. The recorded
/// side says every page went to zswap and came back from it.
pub(crate) fn synth_zswap(
    cold: usize,
    hot: usize,
    rounds: usize,
    chunk: usize,
    seed: u64,
) -> Vec<Record> {
    let mut g = Synth {
        out: vec![
            Record::Task {
                tid: SYNTH_TID,
                pid: SYNTH_TID,
                comm: "synth-zswap".into(),
            },
            Record::AddressSpace {
                mm: 1,
                pid: SYNTH_TID,
            },
        ],
        ts: 1_000_000,
        next_offset: 1,
        slots: vec![0; cold + hot],
        chunk: chunk.max(1),
    };
    let mut rng = SplitMix64::new(seed);
    let cold_pages: Vec<usize> = (0..cold).collect();
    g.swap_out(&cold_pages);
    let mut hot_pages: Vec<usize> = (cold..cold + hot).collect();
    for _ in 0..rounds {
        g.swap_out(&hot_pages);
        rng.shuffle(&mut hot_pages);
        for &page in &hot_pages {
            let ts = g.tick(5_000);
            let offset = g.slots[page];
            g.out.push(Record::SwapFault {
                ts,
                dur_ns: 3_000,
                tid: SYNTH_TID,
                mm: 1,
                addr: synth_addr(page),
                entry: Some(SwapEntry { dev: 0, offset }),
                major: true,
                pages_read: 0,
                zero_reads: 0,
                zswap_loads: 1,
                write: false,
            });
        }
    }
    g.out
}

const SYNTH_TID: u32 = 1000;

fn synth_addr(page: usize) -> u64 {
    0x7f00_0000_0000 + page as u64 * 4096
}

struct Synth {
    out: Vec<Record>,
    ts: u64,
    next_offset: u64,
    /// Each page's current swap offset.
    slots: Vec<u64>,
    chunk: usize,
}

impl Synth {
    fn tick(&mut self, step: u64) -> u64 {
        self.ts += step;
        self.ts
    }

    fn reclaim(&mut self, begin: bool, nr_reclaimed: u64) {
        let ts = self.tick(1_000);
        self.out.push(Record::Reclaim {
            ts,
            tid: SYNTH_TID,
            begin,
            memcg: true,
            nr_reclaimed,
        });
    }

    /// Swaps `pages` out to fresh slots, `chunk` per reclaim episode.
    fn swap_out(&mut self, pages: &[usize]) {
        for c in pages.chunks(self.chunk) {
            self.reclaim(true, 0);
            for &page in c {
                let ts = self.tick(2_000);
                let entry = SwapEntry {
                    dev: 0,
                    offset: self.next_offset,
                };
                self.next_offset += 1;
                self.slots[page] = entry.offset;
                self.out.push(Record::SwapOut {
                    ts,
                    tid: SYNTH_TID,
                    mm: 1,
                    vaddr: synth_addr(page),
                    entry,
                    nr: 1,
                    how: OutKind::Zswap,
                });
            }
            self.reclaim(false, c.len() as u64);
        }
    }
}
