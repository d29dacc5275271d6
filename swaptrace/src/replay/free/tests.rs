use super::*;

fn batch(tid: u32, devs: &[u8]) -> Record {
    Record::FreeBatch {
        ts: 0,
        tid,
        lat_ns: 1000,
        entries: devs
            .iter()
            .enumerate()
            .map(|(i, &dev)| SwapEntry {
                dev,
                offset: i as u64,
            })
            .collect(),
    }
}

fn run(records: &[Record], p: &[FreePolicy]) -> Vec<FreeMetrics> {
    let input = FreeInput::from_records(records).expect("batches");
    replay_free(&input, p, FreeCost::default())
}

#[test]
fn hand_worked_batch() {
    let m = run(
        &[batch(1, &[0, 1, 0, 1, 1, 0])],
        &[FreePolicy::Unsorted, FreePolicy::Sorted],
    );
    assert_eq!(m[0].locks, 5);
    assert_eq!(m[1].locks, 2);
    assert_eq!(m[0].runs_per_batch, BTreeMap::from([(5, 1)]));
    assert_eq!(m[1].runs_per_batch, BTreeMap::from([(2, 1)]));
    assert_eq!((m[0].mixed_batches, m[1].mixed_batches), (1, 1));
    assert_eq!((m[0].entries, m[0].batches), (6, 1));
}

#[test]
fn interleaved_two_devices() {
    let recs = synth_free(2, 64 * 100, 64, 8, 7);
    let m = run(
        &recs,
        &[
            FreePolicy::Unsorted,
            FreePolicy::Sorted,
            FreePolicy::PerDevice,
        ],
    );
    let (u, s, d) = (&m[0], &m[1], &m[2]);
    assert_eq!(u.batches, 100);
    assert_eq!(u.mixed_batches, 100);
    assert_eq!(u.locks, 100 * 8);
    assert!(s.locks < u.locks);
    assert_eq!(s.locks, 2 * s.mixed_batches);
    assert_eq!(s.runs_per_batch, BTreeMap::from([(2, 100)]));
    // 3200 entries per device: 50 full buffers each.
    assert_eq!(d.entries, 6400);
    assert_eq!(d.locks, 6400 / 64);
    assert_eq!(d.mixed_batches, 0);
    assert!(d.locks < s.locks);
}

#[test]
fn per_device_flushes_partial_buffers() {
    // 100 entries on dev 0 and 30 on dev 1 for tid 1; 5 on dev 0 for tid 2.
    let mut devs = vec![0u8; 100];
    devs.extend([1u8; 30]);
    let m = run(
        &[
            batch(1, &devs[..70]),
            batch(2, &[0; 5]),
            batch(1, &devs[70..]),
        ],
        &[FreePolicy::PerDevice],
    );
    // tid 1: dev 0 → 64 + 36, dev 1 → 30; tid 2: 5.
    assert_eq!(m[0].locks, 4);
    assert_eq!(m[0].batches, 4);
    assert_eq!(m[0].entries, 135);
    assert_eq!(m[0].runs_per_batch, BTreeMap::from([(1, 4)]));
}

#[test]
fn one_device_one_lock_per_batch() {
    let recs = synth_free(1, 1000, 64, 8, 1);
    let m = run(&recs, &[FreePolicy::Unsorted, FreePolicy::Sorted]);
    assert_eq!(m[0].batches, 16);
    assert_eq!(m[0].locks, 16);
    assert_eq!(
        m[0],
        FreeMetrics {
            policy: "unsorted".into(),
            ..m[1].clone()
        }
    );
    assert_eq!(m[0].mixed_batches, 0);
    assert_eq!(m[0].runs_per_batch, BTreeMap::from([(1, 16)]));
}

#[test]
fn rebatching_per_task() {
    // Two tasks, each 10 entries alternating devices; batch:4 → 3 batches each.
    let d: Vec<u8> = (0..10).map(|i| (i % 2) as u8).collect();
    let m = run(
        &[batch(1, &d[..6]), batch(2, &d), batch(1, &d[6..])],
        &[FreePolicy::Batch(4), FreePolicy::Batch(1)],
    );
    assert_eq!(m[0].batches, 6);
    assert_eq!(m[0].entries, 20);
    // Chunks of 4 and 4 and 2, all mixing both devices.
    assert_eq!(m[0].locks, 12);
    assert_eq!(m[0].mixed_batches, 6);
    assert_eq!(m[1].batches, 20);
    assert_eq!(m[1].locks, 20);
    assert_eq!(m[1].mixed_batches, 0);
}

#[test]
fn policy_names() {
    assert_eq!(FreePolicy::from_name("unsorted"), Ok(FreePolicy::Unsorted));
    assert_eq!(FreePolicy::from_name("sorted"), Ok(FreePolicy::Sorted));
    assert_eq!(
        FreePolicy::from_name("per-device"),
        Ok(FreePolicy::PerDevice)
    );
    assert_eq!(FreePolicy::from_name("batch:1"), Ok(FreePolicy::Batch(1)));
    assert_eq!(
        FreePolicy::from_name("batch:4096"),
        Ok(FreePolicy::Batch(4096))
    );
    for bad in [
        "batch:0",
        "batch:4097",
        "batch:",
        "batch:x",
        "batch:-1",
        "batch:+5",
        "batch:1e3",
        "batch:99999999999999",
    ] {
        assert_eq!(
            FreePolicy::from_name(bad),
            Err(FreeError::BadBatchSize(bad.into())),
            "{bad}"
        );
    }
    assert!(matches!(
        FreePolicy::from_name("fifo"),
        Err(FreeError::UnknownPolicy(_))
    ));
    assert!(matches!(
        FreePolicy::from_name(""),
        Err(FreeError::UnknownPolicy(_))
    ));
    for p in FreePolicy::defaults() {
        assert_eq!(p.name().parse::<FreePolicy>(), Ok(p));
    }
}

#[test]
fn no_batches_is_an_error() {
    let recs = vec![Record::Task {
        tid: 1,
        pid: 1,
        comm: "x".into(),
    }];
    let e = FreeInput::from_records(&recs).unwrap_err();
    assert_eq!(e, FreeError::NoBatches);
    assert!(e.to_string().contains("swaptrace doctor"));
    assert_eq!(FreeInput::from_records(&[]), Err(FreeError::NoBatches));
}

#[test]
fn cost_arithmetic() {
    let c = FreeCost::default();
    assert_eq!(c.ns(3, 6), 3.0 * 150.0 + 6.0 * 60.0);
    let m = replay_free(
        &FreeInput::from_records(&[batch(1, &[0, 1, 0, 1, 1, 0]), batch(1, &[2, 2])])
            .expect("batches"),
        &[FreePolicy::Unsorted, FreePolicy::Sorted],
        FreeCost::new(100.0, 10.0).expect("cost"),
    );
    // unsorted: 5 + 1 locks, 8 entries.
    assert_eq!(m[0].model_ns, 6.0 * 100.0 + 8.0 * 10.0);
    assert_eq!(m[0].model_ns_per_batch, 340.0);
    assert_eq!(m[0].locks_per_batch, 3.0);
    assert_eq!(m[0].locks_per_1k_entries, 750.0);
    // sorted: 2 + 1 locks.
    assert_eq!(m[1].model_ns, 3.0 * 100.0 + 80.0);
    assert!(FreeCost::new(f64::NAN, 1.0).is_err());
    assert!(FreeCost::new(1.0, -1.0).is_err());
    assert!(FreeCost::new(f64::INFINITY, 1.0).is_err());
}

#[test]
fn empty_batches_and_high_devices() {
    let m = run(
        &[batch(1, &[]), batch(1, &[255, 0, 255])],
        &FreePolicy::defaults(),
    );
    assert_eq!(m[0].batches, 2);
    assert_eq!(m[0].locks, 3);
    assert_eq!(m[0].runs_per_batch, BTreeMap::from([(0, 1), (3, 1)]));
    assert_eq!(m[1].locks, 2);
    assert_eq!(m[2].locks, 2);
    assert_eq!(m[3].locks, 2);
}

#[test]
fn live_summary() {
    let mut recs = synth_free(2, 640, 64, 16, 3);
    recs.push(Record::FreeBatch {
        ts: 9,
        tid: 5,
        lat_ns: 1_000_000,
        entries: vec![SwapEntry { dev: 3, offset: 1 }],
    });
    let input = FreeInput::from_records(&recs).expect("batches");
    let live = LiveFree::from_input(&input);
    assert_eq!(live.batches, 11);
    assert_eq!(live.entries, 641);
    assert_eq!(live.devices, vec![0, 1, 3]);
    assert_eq!(live.mixed_batches, 10);
    assert!(live.lat_p50_ns >= 4 * 150 + 64 * 60);
    assert!(live.lat_p50_ns <= live.lat_p90_ns && live.lat_p99_ns <= live.lat_max_ns);
    assert!(live.lat_max_ns >= 999_000);
}

#[test]
fn synth_handles_zero_arguments() {
    let recs = synth_free(0, 10, 0, 0, 0);
    let input = FreeInput::from_records(&recs).expect("batches");
    assert_eq!(input.batches.len(), 10);
    assert!(synth_free(3, 0, 64, 1, 0)
        .iter()
        .all(|r| !matches!(r, Record::FreeBatch { .. })));
}

fn loaded(records: Vec<Record>) -> Loaded {
    Loaded {
        header: crate::trace::Header::default(),
        records,
        footer: None,
        problems: Vec::new(),
        skipped: 0,
        chunks: Vec::new(),
    }
}

#[test]
fn policy_table_parses_and_keeps_the_default_set() {
    for p in POLICIES.iter().filter(|p| !p.name.ends_with(":N")) {
        assert_eq!(
            FreePolicy::from_name(p.name).map(|x| x.name()),
            Ok(p.name.into())
        );
    }
    let defaults: Vec<String> = FreePolicy::defaults().iter().map(|p| p.name()).collect();
    assert_eq!(ReplayRequest::default().names(POLICIES), defaults);
    let e = FreePolicy::from_name("fifo").unwrap_err().to_string();
    assert!(
        e.contains("per-device, batch:64, per-cluster, batch:N"),
        "{e}"
    );
}

#[test]
fn cost_params() {
    let p =
        |v: &[&str]| FreeCost::from_params(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(p(&[]), Ok(FreeCost::default()));
    assert_eq!(
        p(&["lock-ns=10", "entry-ns=2.5"]),
        Ok(FreeCost {
            lock_ns: 10.0,
            entry_ns: 2.5
        })
    );
    let e = p(&["lock-ns=x"]).unwrap_err();
    assert_eq!(e.to_string(), "--param lock-ns=x: a cost in ns");
    assert!(matches!(e, FreeError::BadCostValue(..)));
    assert_eq!(
        p(&["lock-ns"]).unwrap_err().to_string(),
        "--param lock-ns: known parameters of --family free: lock-ns=F, entry-ns=F"
    );
    assert!(matches!(p(&["entry-ns=-1"]), Err(FreeError::BadCost(_))));
}

#[test]
fn run_replays_or_shows_the_zaps() {
    let req = ReplayRequest {
        policies: Some("sorted, batch:8"),
        ..ReplayRequest::default()
    };
    let FreeReplay::Replayed { live, metrics } =
        super::run(&loaded(synth_free(2, 640, 64, 8, 1)), &req).expect("replay")
    else {
        panic!("no batches")
    };
    assert_eq!(live.batches, 10);
    let names: Vec<&str> = metrics.iter().map(|m| m.policy.as_str()).collect();
    assert_eq!(names, ["sorted", "batch:8"]);
    let zap = Record::Zap {
        ts: 5,
        tid: 1,
        mm: 3,
        swap_ents: Some(10),
        exiting: true,
    };
    let r = super::run(&loaded(vec![zap]), &ReplayRequest::default()).expect("zaps");
    let FreeReplay::NoBatches { zaps } = r else {
        panic!("batches")
    };
    assert_eq!((zaps.len(), zaps[0].mm), (1, 3));
    // Parameters and policies are checked first.
    let bad = ReplayRequest {
        policies: Some("fifo"),
        ..ReplayRequest::default()
    };
    assert!(matches!(
        super::run(&loaded(Vec::new()), &bad),
        Err(FreeError::UnknownPolicy(_))
    ));
}

/// A batch of entries at these (device, offset).
fn at(entries: &[(u8, u64)]) -> Record {
    Record::FreeBatch {
        ts: 0,
        tid: 1,
        lat_ns: 500,
        entries: entries
            .iter()
            .map(|&(dev, offset)| SwapEntry { dev, offset })
            .collect(),
    }
}

#[test]
fn per_cluster_takes_one_lock_per_cluster_of_a_batch() {
    // Offsets 0..511 are cluster 0, 512.. cluster 1; device 1's cluster 0
    // is another lock.
    let recs = [
        at(&[(0, 3), (0, 4), (0, 511)]),
        at(&[(0, 511), (0, 512), (1, 5), (0, 7)]),
        at(&[(0, 1024)]),
    ];
    let m = run(&recs, &[FreePolicy::PerCluster, FreePolicy::Sorted]);
    assert_eq!(m[0].locks, 1 + 3 + 1);
    assert_eq!(m[0].runs_per_batch, BTreeMap::from([(1, 2), (3, 1)]));
    assert_eq!(m[0].mixed_batches, 1);
    assert_eq!(m[1].locks, 1 + 2 + 1);
    assert_eq!(
        FreePolicy::from_name("per-cluster"),
        Ok(FreePolicy::PerCluster)
    );
}

#[test]
fn default_set_adds_per_cluster_for_kernels_that_free_per_cluster() {
    let names = |release: &str| {
        let mut t = loaded(synth_free(1, 128, 64, 1, 3));
        t.header.kernel_release = release.into();
        let FreeReplay::Replayed { metrics, .. } =
            super::run(&t, &ReplayRequest::default()).expect("replay")
        else {
            panic!("no batches")
        };
        metrics.into_iter().map(|m| m.policy).collect::<Vec<_>>()
    };
    assert!(!names("6.12.57+deb12-amd64").contains(&"per-cluster".to_string()));
    assert!(!names("6.14.0").contains(&"per-cluster".to_string()));
    assert_eq!(
        names("7.3.4+deb13-amd64").last().map(String::as_str),
        Some("per-cluster")
    );
    assert!(names("6.15.1").contains(&"per-cluster".to_string()));
    assert!(recorded_per_cluster("6.18.15+deb13-amd64"));
}
