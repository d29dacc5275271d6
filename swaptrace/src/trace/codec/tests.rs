use super::*;

pub(crate) fn samples() -> Vec<Record> {
    vec![
        Record::Task {
            tid: 7,
            pid: 7,
            comm: "stress".into(),
        },
        Record::AddressSpace { mm: 1, pid: 7 },
        Record::SwapOut {
            ts: 1_000_000,
            tid: 90,
            mm: 1,
            vaddr: 0x7f00_0000_0000,
            entry: SwapEntry { dev: 1, offset: 77 },
            nr: 1,
            how: OutKind::Zero,
        },
        Record::SwapFault {
            ts: 999_000,
            dur_ns: 12_345,
            tid: 7,
            mm: 1,
            addr: 0x7f00_0000_0123,
            entry: Some(SwapEntry { dev: 1, offset: 77 }),
            major: true,
            pages_read: 8,
            zero_reads: 2,
            zswap_loads: 0,
            write: true,
        },
        Record::SwapFault {
            ts: 2_000_000,
            dur_ns: 0,
            tid: 7,
            mm: 1,
            addr: 0x1000,
            entry: None,
            major: false,
            pages_read: 0,
            zero_reads: 0,
            zswap_loads: 0,
            write: false,
        },
        Record::SwapRead {
            ts: 3,
            tid: 1,
            how: ReadKind::Zswap,
            nr: 4,
        },
        Record::Reclaim {
            ts: 5,
            tid: 1,
            begin: false,
            memcg: true,
            nr_reclaimed: 32,
        },
        Record::KhugepagedSwapin {
            ts: 6,
            tid: 40,
            mm: 2,
            swapped_in: 511,
            referenced: 256,
            ret: -1,
        },
        Record::Syscall {
            ts: 7,
            tid: 1,
            call: Syscall::Swapoff,
            ret: Some(-22),
        },
        Record::ZswapWriteback {
            ts: 8,
            tid: 3,
            nr: 1,
            entry: None,
        },
        Record::ZswapWriteback {
            ts: 8,
            tid: 3,
            nr: 1,
            entry: Some(SwapEntry {
                dev: 2,
                offset: 1 << 40,
            }),
        },
        Record::RaWindow {
            ts: 9,
            tid: 3,
            entry: SwapEntry {
                dev: 0,
                offset: 100,
            },
            window: 8,
            hits: 5,
            source: RaSource::FexitLastReadaheadPages,
        },
        Record::CacheLookup {
            ts: 10,
            tid: 3,
            entry: SwapEntry { dev: 2, offset: 99 },
            hit: true,
            ra_hit: true,
        },
        Record::FreeBatch {
            ts: 11,
            tid: 4,
            lat_ns: 12_000,
            entries: vec![
                SwapEntry { dev: 0, offset: 5 },
                SwapEntry { dev: 1, offset: 3 },
                SwapEntry { dev: 0, offset: 6 },
            ],
        },
        Record::ZswapOp {
            ts: 12,
            tid: 4,
            load: true,
            ok: false,
        },
        Record::Zap {
            ts: 13,
            tid: 4,
            mm: 2,
            swap_ents: Some(-3),
            exiting: true,
        },
        Record::Zap {
            ts: 14,
            tid: 4,
            mm: 2,
            swap_ents: None,
            exiting: false,
        },
        Record::KhugepagedScan {
            ts: 15,
            tid: 5,
            mm: 2,
            referenced: 300,
            none_or_zero: 0,
            unmapped: 25,
            status: 1,
            pmd: 0,
        },
        Record::KhugepagedScan {
            ts: 15,
            tid: 5,
            mm: 2,
            referenced: 200,
            none_or_zero: 3,
            unmapped: 65,
            status: 6,
            pmd: 0x7f12_3440_0000,
        },
        Record::Collapse {
            ts: 16,
            tid: 5,
            mm: 2,
            isolated: true,
            status: -3,
        },
        Record::Lost {
            ts: 8,
            what: "swap_fault".into(),
            count: 3,
        },
        Record::Unmapped {
            ts: 9,
            mm: 1,
            start: 0x7f00_0000_0000,
            end: 0x7f00_0c00_0000,
        },
        Record::Isolated {
            ts: 1_000_400,
            entry: SwapEntry { dev: 1, offset: 90 },
        },
        Record::Zapped {
            ts: 1_000_450,
            mm: 1,
            start: 0x7f00_0010_0000,
            end: 0x7f00_0030_0000,
        },
        Record::Moved {
            ts: 1_000_500,
            mm: 1,
            from: 0x7f00_0000_0000,
            to: 0x7e00_0000_0000,
            len: 0x10_0000,
        },
        Record::WillNeed {
            ts: 1_000_600,
            tid: 4,
            mm: 1,
            start: 0x7f00_0000_0000,
            end: 0x7f00_0010_0000,
            how: ReadKind::Zswap,
            nr: 2,
        },
        Record::WriteEnd {
            ts: 1_000_700,
            entry: SwapEntry {
                dev: 1,
                offset: 4096,
            },
            nr: 128,
        },
    ]
}

/// [`samples`] encoded as one chunk.
fn sample_bytes() -> Vec<u8> {
    let mut buf = Vec::new();
    let mut st = DeltaState::default();
    for r in &samples() {
        encode_record(&mut buf, &mut st, r);
    }
    buf
}

#[test]
fn every_kind_round_trips() {
    let recs = samples();
    let (back, skipped) = decode_records(&sample_bytes()).unwrap();
    assert_eq!(skipped, 0);
    assert_eq!(back, recs);
}

#[test]
fn decoding_into_a_used_vector_gives_the_chunk_alone() {
    let buf = sample_bytes();
    // A vector that held another chunk, and a failed decode's leftovers:
    // cleared, and each chunk starts from a fresh delta state.
    let mut out = vec![zap(None); 3];
    assert!(decode_records_into(&buf[..buf.len() - 1], &mut out).is_err());
    for _ in 0..2 {
        assert_eq!(decode_records_into(&buf, &mut out), Ok(0));
        assert_eq!(out, samples());
    }
}

#[test]
fn unknown_kinds_are_skipped_by_length() {
    let mut buf = vec![200, 3, 1, 2, 3];
    let mut st = DeltaState::default();
    encode_record(&mut buf, &mut st, &samples()[0]);
    let (back, skipped) = decode_records(&buf).unwrap();
    assert_eq!(skipped, 1);
    assert_eq!(back, vec![samples()[0].clone()]);
}

#[test]
fn cut_records_are_errors_not_panics() {
    let buf = sample_bytes();
    for n in 0..buf.len() {
        // Any prefix either decodes to fewer records or errors; never panics.
        if let Ok((recs, _)) = decode_records(&buf[..n]) {
            assert!(recs.len() < samples().len());
        }
    }
}

fn zap(swap_ents: Option<i64>) -> Record {
    Record::Zap {
        ts: 1,
        tid: 2,
        mm: 3,
        swap_ents,
        exiting: false,
    }
}

fn encoded(r: &Record) -> Vec<u8> {
    let mut buf = Vec::new();
    encode_record(&mut buf, &mut DeltaState::default(), r);
    buf
}

#[test]
fn zap_swap_ents_round_trip_at_the_extremes() {
    for v in [
        None,
        Some(0),
        Some(-1),
        Some(i64::MAX),
        Some(i64::MIN + 1),
        Some(i64::MIN),
    ] {
        let (back, skipped) = decode_records(&encoded(&zap(v))).unwrap();
        assert_eq!((back, skipped), (vec![zap(v)], 0), "{v:?}");
    }
    // Below i64::MIN's code the bytes are the plain varint's, as v1 wrote them.
    let mut plain = Vec::new();
    put(&mut plain, zigzag(i64::MAX) + 1);
    let mut wide = Vec::new();
    put_wide(&mut wide, zigzag(i64::MAX) as u128 + 1);
    assert_eq!(plain, wide);
    // A code past 2^64 is an error, not a wrapped value.
    let mut buf = encoded(&zap(Some(i64::MIN)));
    let last = buf.len() - 1;
    assert_eq!(buf[last], 2);
    buf[last] = 3;
    assert!(decode_records(&buf).is_err());
}

/// A reader older than `isolated` skips those records by length: what it
/// decodes of the rest must be what was written (their Δ chains are
/// their own). Dropping their bytes from the chunk is what it sees.
#[test]
/// Isolated, moved, will_need, write_end and large-folio out_freed records have delta chains of
/// their own: a reader that skips them (older than they are) decodes the
/// rest alike.
fn a_reader_that_skips_newer_kinds_decodes_the_rest() {
    let e = |offset| SwapEntry { dev: 0, offset };
    let recs = [
        Record::OutFreed {
            ts: 100,
            entry: e(5),
            nr: 1,
        },
        Record::Isolated {
            ts: 150,
            entry: e(9),
        },
        Record::OutFreed {
            ts: 160,
            entry: e(7),
            nr: 1,
        },
        Record::Isolated {
            ts: 170,
            entry: e(3),
        },
        // A large folio freed whole.
        Record::OutFreed {
            ts: 162,
            entry: e(512),
            nr: 512,
        },
        Record::Moved {
            ts: 165,
            mm: 1,
            from: 0x7f00_0000_0000,
            to: 0x7e00_0000_0000,
            len: 0x10_0000,
        },
        Record::WillNeed {
            ts: 170,
            tid: 4,
            mm: 1,
            start: 0x7f00_0000_0000,
            end: 0x7f00_0010_0000,
            how: ReadKind::Io,
            nr: 1,
        },
        Record::WriteEnd {
            ts: 171,
            entry: e(5),
            nr: 3,
        },
        zap(Some(4)),
    ];
    let newer = |r: &Record| {
        matches!(
            r,
            Record::Isolated { .. }
                | Record::Moved { .. }
                | Record::OutFreed { nr: 2.., .. }
                | Record::WillNeed { .. }
                | Record::WriteEnd { .. }
        )
    };
    let (mut all, mut older) = (Vec::new(), Vec::new());
    let (mut st, mut skipping) = (DeltaState::default(), DeltaState::default());
    for r in &recs {
        encode_record(&mut all, &mut st, r);
        let mut one = Vec::new();
        encode_record(&mut one, &mut skipping, r);
        if !newer(r) {
            older.extend(one);
        }
    }
    let (back, _) = decode_records(&all).expect("decodes");
    assert_eq!(back, recs);
    let kept: Vec<Record> = recs.iter().filter(|r| !newer(r)).cloned().collect();
    let (back, skipped) = decode_records(&older).expect("decodes");
    assert_eq!((back, skipped), (kept, 0));
}
