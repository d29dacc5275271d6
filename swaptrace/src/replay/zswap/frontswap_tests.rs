//! zswap before 6.5 (frontswap): loads that keep the entry, and a limit
//! worker that writes back one entry, queued only with the pool full.

use super::tests::{e, fault, params, read_fault, replay};
use super::*;
use crate::trace::{OutKind, Record};

fn out(ts: u64, offset: u64) -> Record {
    super::tests::out(ts, offset, OutKind::Zswap)
}

/// The kernel dropped the clean page of `offset` (its data stays in the slot).
fn freed(ts: u64, offset: u64) -> Record {
    Record::OutFreed {
        ts,
        entry: e(offset),
        nr: 1,
    }
}

/// A major write fault on `offset` that loaded its page from zswap.
fn write_load(ts: u64, offset: u64) -> Record {
    let mut f = read_fault(ts, offset, 0, true);
    if let Record::SwapFault { zswap_loads, .. } = &mut f {
        *zswap_loads = 1;
    }
    f
}

fn no_shrinker(records: &[Record], specs: &[&str]) -> ZswapMetrics {
    let input = ZswapInput::from_records(records, 4096).expect("input");
    replay(&input, &[ZswapPolicy::NoShrinker], &params(specs)).remove(0)
}

#[test]
fn a_shared_load_keeps_the_entry_until_a_write_frees_the_slot() {
    let recs = [
        out(1, 10),
        out(1, 11),
        fault(2, 10),
        freed(3, 10),
        // Dropped clean: its data is still in zswap.
        fault(4, 10),
        // A write fault frees the slot, and its entry.
        write_load(5, 11),
    ];
    let m = no_shrinker(&recs, &["loads=shared", "pool-pages=100", "ratio=1"]);
    assert_eq!(
        (m.zswap_hits, m.disk_swapins, m.untracked_swapins),
        (3, 0, 0)
    );
    assert_eq!(m.end_pool_pages, 1);
    // 6.7+: the first load took 10 out of the pool; its second is not
    // the model's (the kernel would have written the page out again).
    let m = no_shrinker(&recs, &["loads=exclusive", "pool-pages=100", "ratio=1"]);
    assert_eq!((m.zswap_hits, m.untracked_swapins), (2, 1));
    assert_eq!(m.end_pool_pages, 0);
}

#[test]
fn the_limit_worker_before_6_5_writes_back_one_entry_and_not_a_page_in_memory() {
    // A pool of 4 pages at ratio 1, accepting again at 2 (50%). 10 is
    // loaded (shared) and stays in memory; 14 finds the pool full.
    let recs = [
        out(1, 10),
        out(1, 11),
        out(1, 12),
        out(1, 13),
        fault(2, 10),
        out(3, 14),
        out(4, 15),
    ];
    let base = [
        "loads=shared",
        "pool-pages=4",
        "ratio=1",
        "accept-threshold=50",
    ];
    let run = |mode: &str| {
        let mut specs = base.to_vec();
        specs.push(mode);
        let m = no_shrinker(&recs, &specs);
        (
            m.stores_accepted,
            m.stores_rejected,
            m.writebacks,
            m.writebacks_failed,
        )
    };
    // One entry: 10 fails (in the swap cache, -EEXIST), 11 goes. 15 finds
    // 3 pages, above the threshold: refused, and no worker queued.
    assert_eq!(run("limit-reclaim=one"), (4, 2, 1, 1));
    // 6.5+: down to the threshold, 11 then 12; 15 is stored.
    assert_eq!(run("limit-reclaim=threshold"), (5, 1, 2, 1));
}

#[test]
fn the_recording_kernel_tells_how_loads_and_the_limit_worker_behave() {
    let of = |release: &str, exclusive_knob: Option<&str>| {
        let mut h = Header {
            kernel_release: release.into(),
            ..Header::default()
        };
        if let Some(v) = exclusive_knob {
            h.zswap.insert("exclusive_loads".into(), v.into());
        }
        let p = ZswapParams::recorded(&h, None);
        (p.exclusive_loads, p.limit_reclaim_one)
    };
    assert_eq!(of("6.1.0-57-amd64", None), (false, true));
    assert_eq!(of("6.5.0", Some("N")), (false, false));
    assert_eq!(of("6.6.13", Some("Y")), (true, false));
    assert_eq!(of("6.12.118+deb12-amd64", None), (true, false));
    assert_eq!(of("7.3.4+deb13-amd64", None), (true, false));
    // Unknown kernel: the current behaviour.
    assert_eq!(of("", None), (true, false));
}
