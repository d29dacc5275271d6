//! The workload's unit tests: patterns, sizes, and every page read back.

use super::*;

#[test]
fn pattern_round_trip() {
    for s in ["seq", "random", "shuffled-blocks:16", "strided:4"] {
        let p: Pattern = s.parse().unwrap();
        assert_eq!(p.to_string(), s);
    }
    assert_eq!(
        "sequential".parse::<Pattern>().unwrap(),
        Pattern::Sequential
    );
}

#[test]
fn pattern_bad_input() {
    for s in [
        "",
        "sequ",
        "seq:3",
        "shuffled-blocks",
        "shuffled-blocks:",
        "shuffled-blocks:0",
        "shuffled-blocks:-1",
        "strided:x",
        "strided:99999999999",
    ] {
        let e = s.parse::<Pattern>().unwrap_err();
        println!("{s:?}: {e}");
        assert!(matches!(e, WorkloadError::InvalidPattern { .. }));
    }
}

#[test]
fn sizes() {
    assert_eq!(parse_size("4096").unwrap(), 4096);
    assert_eq!(parse_size("64k").unwrap(), 64 << 10);
    assert_eq!(parse_size("384M").unwrap(), 384 << 20);
    assert_eq!(parse_size("1G").unwrap(), 1 << 30);
    assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
    for s in ["", "M", "1.5G", "12X", "-1", "99999999999T"] {
        let e = parse_size(s).unwrap_err();
        println!("{s:?}: {e}");
    }
}

fn is_permutation(v: &[u64], n: u64) -> bool {
    let mut seen = vec![false; n as usize];
    v.len() as u64 == n
        && v.iter()
            .all(|&p| p < n && !std::mem::replace(&mut seen[p as usize], true))
}

#[test]
fn orders_are_permutations() {
    for n in [1u64, 7, 100, 1000, 2048] {
        for pat in [
            Pattern::Sequential,
            Pattern::Random,
            Pattern::ShuffledBlocks { block_pages: 16 },
            Pattern::ShuffledBlocks { block_pages: 3 },
            Pattern::Strided { stride_pages: 4 },
            Pattern::Strided { stride_pages: 5000 },
        ] {
            assert!(is_permutation(&touch_order(pat, n, 42), n), "{pat} {n}");
        }
    }
}

#[test]
fn shuffled_blocks_order() {
    let n = 2048;
    let v = touch_order(Pattern::ShuffledBlocks { block_pages: 16 }, n, 7);
    assert!(is_permutation(&v, n));
    assert_ne!(v, (0..n).collect::<Vec<_>>());
    // Address order inside each block, blocks start aligned.
    for chunk in v.chunks(16) {
        assert_eq!(chunk[0] % 16, 0);
        assert!(chunk.windows(2).all(|w| w[1] == w[0] + 1));
    }
    // Deterministic per seed, different across seeds.
    assert_eq!(
        v,
        touch_order(Pattern::ShuffledBlocks { block_pages: 16 }, n, 7)
    );
    assert_ne!(
        v,
        touch_order(Pattern::ShuffledBlocks { block_pages: 16 }, n, 8)
    );
}

#[test]
fn small_runs() {
    for pat in ["seq", "random", "shuffled-blocks:16", "strided:4"] {
        let spec = WorkloadSpec {
            size_bytes: 8 << 20,
            pattern: pat.parse().unwrap(),
            passes: 2,
            seed: 1,
            ..WorkloadSpec::default()
        };
        let r = run(&spec).unwrap();
        println!("{pat}: {}", serde_json::to_string(&r).unwrap());
        assert_eq!(r.pages, (8 << 20) / r.page_size);
        assert_eq!(r.pages, r.touched);
        assert!(r.min_faults >= r.pages / 2, "first touch should fault");
    }
}

/// Shared memory read by threads at once: every page checked by each.
#[test]
fn threads_read_shared_memory_back() {
    let spec = WorkloadSpec {
        size_bytes: 4 << 20,
        shared: true,
        threads: 3,
        passes: 2,
        ..WorkloadSpec::default()
    };
    let r = run(&spec).unwrap();
    assert_eq!((r.touched, r.pages), (1024, 1024));
    // A mapping never written: the threads' checks fail, and say so.
    let map = Regions::map(4, 1, 4096, true, false).unwrap();
    let e = read_threads(
        &WorkloadSpec {
            size_bytes: 4 * 4096,
            ..spec
        },
        &map,
        4,
        4096,
    );
    assert!(matches!(e, Err(WorkloadError::Corrupt { .. })), "{e:?}");
}

/// Several mappings: every page written and read back (checked), in
/// one process and in processes running together.
#[test]
fn pages_spread_over_regions_read_back() {
    let spec = WorkloadSpec {
        size_bytes: (4 << 20) + 3 * 4096,
        regions: 3,
        passes: 2,
        ..WorkloadSpec::default()
    };
    let r = run(&spec).unwrap();
    assert_eq!(r.pages, spec.size_bytes / r.page_size);
    assert_eq!(r.touched, r.pages);
    let map = Regions::map(10, 3, 4096, false, false).unwrap();
    let usable: Vec<usize> = map.maps.iter().map(|m| m.usable / 4096).collect();
    assert_eq!(usable, [4, 3, 3]);
    // Each with its guard page: three VMAs, not one.
    assert!(map.maps.iter().all(|m| m.len == m.usable + 4096));
}

/// Moved memory is read back intact, from a new address each move (its
/// guard page stops it growing in place), one region or several.
#[test]
fn moved_memory_reads_back_from_new_addresses() {
    for regions in [1, 3] {
        let spec = WorkloadSpec {
            size_bytes: 1 << 20,
            regions,
            moves: 3,
            ..WorkloadSpec::default()
        };
        let r = run(&spec).unwrap();
        assert_eq!(r.touched, r.pages);
        let mut map = Regions::map(8, regions, 4096, false, true).unwrap();
        // SAFETY: page 5 of our mapping.
        unsafe { map.page(5).cast::<u64>().write(0x5eed) };
        let before: Vec<usize> = map.maps.iter().map(|m| m.ptr as usize).collect();
        map.move_all().unwrap();
        let after: Vec<usize> = map.maps.iter().map(|m| m.ptr as usize).collect();
        assert!(
            before.iter().zip(&after).all(|(b, a)| b != a),
            "{before:x?} {after:x?}"
        );
        // SAFETY: as above, after the move.
        assert_eq!(unsafe { map.page(5).cast::<u64>().read() }, 0x5eed);
    }
}

/// Purged pages read back zero and the others intact (the read passes
/// check every page), one region or several.
#[test]
fn purged_pages_read_back_zero() {
    let spec = WorkloadSpec {
        size_bytes: 1 << 20,
        purge: 32,
        passes: 2,
        ..WorkloadSpec::default()
    };
    assert!(spec.purged(0) && spec.purged(15) && !spec.purged(16) && !spec.purged(31));
    assert!(spec.purged(32) && !spec.purged(63));
    for regions in [1, 3] {
        let r = run(&WorkloadSpec {
            regions,
            ..spec.clone()
        })
        .unwrap();
        assert_eq!(r.touched, r.pages);
    }
    // Not purged: the words written are read.
    assert!(!WorkloadSpec::default().purged(0));
}

/// Runs faulted in by madvise(MADV_POPULATE_READ), or read ahead by
/// madvise(MADV_WILLNEED), read back intact, in any order, and a run cut
/// by the end of the memory too.
#[test]
fn populated_runs_read_back() {
    for order in [ReadOrder::Address, ReadOrder::Random] {
        for (populate, willneed) in [(16, 0), (0, 16)] {
            let r = run(&WorkloadSpec {
                size_bytes: (1 << 20) + 3 * 4096,
                populate,
                willneed,
                passes: 2,
                read_order: order,
                ..WorkloadSpec::default()
            })
            .unwrap();
            assert_eq!(r.touched, r.pages);
        }
    }
}

#[test]
fn too_small() {
    let spec = WorkloadSpec {
        size_bytes: 100,
        pattern: Pattern::Sequential,
        passes: 1,
        seed: 0,
        ..WorkloadSpec::default()
    };
    assert!(matches!(run(&spec), Err(WorkloadError::Empty(100))));
}

#[test]
fn skip_every_takes_its_values_in_turn_per_2mib_block() {
    let spec = WorkloadSpec {
        skip_every: vec![20, 5],
        ..WorkloadSpec::default()
    };
    let in_block = |b: u64| {
        (b * 512..(b + 1) * 512)
            .filter(|&p| spec.skipped(p, 4096))
            .count()
    };
    // 512 pages: one in 20 (25) in even blocks, one in 5 (102) in odd ones.
    assert_eq!(
        [in_block(0), in_block(1), in_block(2), in_block(3)],
        [25, 102, 25, 102]
    );
    assert!(spec.skipped(19, 4096) && !spec.skipped(20, 4096));
    // 64 KiB pages: 32 to a block.
    assert!(spec.skipped(19, 65536) && spec.skipped(34, 65536) && !spec.skipped(35, 65536));
    let none = WorkloadSpec::default();
    assert!((0..2048).all(|p| !none.skipped(p, 4096)));
}
