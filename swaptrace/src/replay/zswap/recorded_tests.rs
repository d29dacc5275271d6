//! The replay following the recording: the kernel's writebacks (its own
//! policy writes back as many, another walks as far times its count) and
//! the pages its zswap refused.

use super::tests::{out, params, parse, read_fault, replay};
use super::*;
use crate::trace::{OutKind, Record};

fn writeback(ts: u64, nr: u32) -> Record {
    Record::ZswapWriteback {
        ts,
        tid: 1,
        nr,
        entry: None,
    }
}

/// 200 pages stored, 40 of them read from disk after the cold 100 were
/// written back by the kernel, then recorded writebacks of 30 pages.
fn paced_trace() -> Vec<Record> {
    let mut r: Vec<Record> = (0..200).map(|o| out(o, o, OutKind::Zswap)).collect();
    r.push(reclaim(250));
    r.push(writeback(300, 100));
    // The kernel read 40 of the written-back pages from disk.
    r.extend((0..40).map(|o| read_fault(400 + o, o, 1, false)));
    r.push(reclaim(450));
    r.extend((0..3).map(|i| writeback(500 + i, 10)));
    r
}

fn reclaim(ts: u64) -> Record {
    Record::Reclaim {
        ts,
        tid: 1,
        begin: true,
        memcg: true,
        nr_reclaimed: 0,
    }
}

fn paced_input(kernel: Option<ZswapPolicy>) -> ZswapInput {
    let mut input = ZswapInput::from_records(&paced_trace(), 4096).expect("input");
    input.kernel_policy = kernel;
    input
}

#[test]
fn the_kernel_s_policy_writes_back_what_the_kernel_wrote_back() {
    let input = paced_input(Some(ZswapPolicy::DiskSwapinTracking));
    assert!(input.has_writebacks);
    let p = params(&["pool-pages=100000"]);
    let m = &replay(&input, &[ZswapPolicy::DiskSwapinTracking], &p)[0];
    assert_eq!(m.pressure, "recorded writebacks (disk-swapin-tracking)");
    // Second chance rotates all 200 fresh entries once, then writes back
    // the oldest 100: the pages the kernel read from disk after it.
    assert_eq!(m.writebacks, 130);
    assert_eq!(m.rotations, 200);
    assert_eq!(m.disk_swapins, 40);
    assert_eq!(m.agreement.disk_disk, 40);
    // Ignoring the writebacks: one do_shrink_slab() per reclaim, at
    // priority 10 a scan of (count >> 10) * 4 / 2 = 0 entries.
    let p = params(&["pool-pages=100000", "writebacks=ignore"]);
    let m = &replay(&input, &[ZswapPolicy::DiskSwapinTracking], &p)[0];
    assert_eq!(m.pressure, "reclaim");
    assert_eq!((m.pressure_episodes, m.writebacks), (2, 0));
}

#[test]
fn recorded_writebacks_count_the_model_s_own_limit_writebacks() {
    // A pool of 50 compressed pages (150 stored at ratio 3): the model's
    // limit writebacks pay part of the recorded 130.
    let input = paced_input(Some(ZswapPolicy::DiskSwapinTracking));
    let p = params(&["pool-pages=50", "accept-threshold=90"]);
    let m = &replay(&input, &[ZswapPolicy::DiskSwapinTracking], &p)[0];
    assert!(m.writebacks_limit > 0, "{m:?}");
    assert_eq!(m.writebacks, 130, "{m:?}");
}

#[test]
fn another_policy_walks_as_far_as_the_kernel_s_walk_times_its_count() {
    let input = paced_input(Some(ZswapPolicy::DiskSwapinTracking));
    let p = params(&["pool-pages=100000"]);
    let all = replay(&input, &ZswapPolicy::all(), &p);
    let by = |name: &str| all.iter().find(|m| m.policy == name).expect(name);
    // The first 100: equal counts (no disk swap-in yet), the same walk of
    // 300 entries: second chance writes back 100 after 200 rotations.
    // The 30 after 40 disk swap-ins, which the reclaim's count consumed:
    // the kernel's count is 100 - 40 = 60 and its walk 30 entries; second
    // chance counts all 100 and walks 50.
    assert_eq!(by("shrinker-second-chance").writebacks, 150);
    assert_eq!(by("disk-swapin-tracking").writebacks, 130);
    // Without a shrinker, the pool never fills: nothing.
    assert_eq!(by("no-shrinker").writebacks, 0);
    // 6.8: no rotation; its count (100 stored, protection grown by every
    // store and swap-in, halved past a quarter) scales the same walk.
    assert!(by("shrinker").writebacks > 0);
    // Without the recording kernel's policy, the writebacks are ignored.
    let m = &replay(&paced_input(None), &[ZswapPolicy::DiskSwapinTracking], &p)[0];
    assert_eq!(m.writebacks, 0);
}

#[test]
fn a_page_the_recording_s_zswap_refused_is_refused_by_every_policy() {
    // 10 pages stored, 3 refused by the kernel (sent to disk with the pool
    // nearly empty: incompressible), then all 13 faulted.
    let mut recs: Vec<Record> = (0..13)
        .map(|o| out(o, o, if o < 10 { OutKind::Zswap } else { OutKind::Io }))
        .collect();
    recs.extend((0..13).map(|o| read_fault(100 + o, o, 1, false)));
    let input = |kernel| {
        let mut i = ZswapInput::from_records(&recs, 4096).expect("input");
        i.kernel_policy = kernel;
        i
    };
    let p = params(&["pool-pages=100000"]);
    let zswap_on = input(Some(ZswapPolicy::DiskSwapinTracking));
    for m in replay(&zswap_on, &ZswapPolicy::all(), &p) {
        assert_eq!(
            (m.stores_accepted, m.stores_rejected),
            (10, 3),
            "{}",
            m.policy
        );
        assert_eq!(m.stores_refused_as_recorded, 3);
        assert_eq!((m.zswap_hits, m.disk_swapins), (10, 3));
        assert_eq!(m.disk_swapins_not_stored, 3);
    }
    // Ignored, or zswap off in the recording: every page is the model's to store.
    let ignore = params(&["pool-pages=100000", "refusals=ignore"]);
    for (i, p) in [(&zswap_on, &ignore), (&input(None), &p)] {
        let m = &replay(i, &[ZswapPolicy::NoShrinker], p)[0];
        assert_eq!((m.stores_accepted, m.stores_rejected), (13, 0));
        assert_eq!((m.zswap_hits, m.disk_swapins), (13, 0));
    }
    // A full pool rejects by its limit first: not counted as the recording's.
    let m = &replay(
        &zswap_on,
        &[ZswapPolicy::NoShrinker],
        &params(&["pool-pages=0"]),
    )[0];
    assert_eq!((m.stores_rejected, m.stores_refused_as_recorded), (13, 0));
    // A zswap that stored nothing refused for its own reasons (off in
    // the memcg, say): the model stores every page.
    let all_io: Vec<Record> = (0..13).map(|o| out(o, o, OutKind::Io)).collect();
    let mut i = ZswapInput::from_records(&all_io, 4096).expect("input");
    i.kernel_policy = Some(ZswapPolicy::DiskSwapinTracking);
    let m = &replay(&i, &[ZswapPolicy::NoShrinker], &p)[0];
    assert_eq!((m.stores_accepted, m.stores_refused_as_recorded), (13, 0));
    assert!(parse(&["refusals=maybe"]).is_err());
}
