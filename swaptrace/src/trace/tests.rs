use super::*;

#[test]
fn utc_dates() {
    assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
    assert_eq!(
        utc(1_796_010_000 * 1_000_000_000),
        "2026-11-30 03:40:00 UTC"
    );
}

#[test]
fn kernel_versions() {
    assert_eq!(kernel_version("6.18.0-1-amd64"), (6, 18));
    assert_eq!(kernel_version("5.7"), (5, 7));
    assert_eq!(kernel_version("unknown"), (0, 0));
}

/// One record of every kind. The match makes a new kind a compile error
/// here until it has an example.
fn one_of_each() -> Vec<Record> {
    let e = SwapEntry { dev: 0, offset: 1 };
    let all = vec![
        Record::Task {
            tid: 1,
            pid: 1,
            comm: "a".into(),
        },
        Record::AddressSpace { mm: 1, pid: 1 },
        Record::SwapOut {
            ts: 0,
            tid: 1,
            mm: 1,
            vaddr: 0,
            entry: e,
            nr: 1,
            how: OutKind::Io,
        },
        Record::major_fault(0, 1, 0),
        Record::SwapRead {
            ts: 0,
            tid: 1,
            how: ReadKind::Io,
            nr: 1,
        },
        Record::Reclaim {
            ts: 0,
            tid: 1,
            begin: true,
            memcg: false,
            nr_reclaimed: 0,
        },
        Record::KhugepagedSwapin {
            ts: 0,
            tid: 1,
            mm: 1,
            swapped_in: 0,
            referenced: 0,
            ret: 0,
        },
        Record::Syscall {
            ts: 0,
            tid: 1,
            call: Syscall::Swapoff,
            ret: None,
        },
        Record::ZswapWriteback {
            ts: 0,
            tid: 1,
            nr: 1,
            entry: None,
        },
        Record::RaWindow {
            ts: 0,
            tid: 1,
            entry: e,
            window: 8,
            hits: 0,
            source: RaSource::FexitLastReadaheadPages,
        },
        Record::CacheLookup {
            ts: 0,
            tid: 1,
            entry: e,
            hit: true,
            ra_hit: false,
        },
        Record::FreeBatch {
            ts: 0,
            tid: 1,
            lat_ns: 0,
            entries: vec![e],
        },
        Record::ZswapOp {
            ts: 0,
            tid: 1,
            load: true,
            ok: true,
        },
        Record::Zap {
            ts: 0,
            tid: 1,
            mm: 1,
            swap_ents: None,
            exiting: false,
        },
        Record::KhugepagedScan {
            ts: 0,
            tid: 1,
            mm: 1,
            referenced: 0,
            none_or_zero: 0,
            unmapped: 0,
            status: 1,
            pmd: 0,
        },
        Record::Collapse {
            ts: 0,
            tid: 1,
            mm: 1,
            isolated: true,
            status: 1,
        },
        Record::Lost {
            ts: 0,
            what: "swap_fault".into(),
            count: 1,
        },
        Record::Vma {
            ts: 0,
            mm: 1,
            start: 0x7f00_0000_0000,
            end: 0x7f00_1000_0000,
        },
        Record::OutFreed {
            ts: 0,
            entry: SwapEntry { dev: 1, offset: 77 },
            nr: 1,
        },
        Record::Unmapped {
            ts: 0,
            mm: 1,
            start: 0x7f00_0000_0000,
            end: 0x7f00_0c00_0000,
        },
        Record::Isolated {
            ts: 0,
            entry: SwapEntry { dev: 1, offset: 78 },
        },
        Record::Zapped {
            ts: 0,
            mm: 1,
            start: 0x7f00_0000_0000,
            end: 0x7f00_0020_0000,
        },
        Record::Moved {
            ts: 0,
            mm: 1,
            from: 0x7f00_0000_0000,
            to: 0x7e00_0000_0000,
            len: 0x8_0000,
        },
        Record::WillNeed {
            ts: 0,
            tid: 4,
            mm: 1,
            start: 0x7f00_0000_0000,
            end: 0x7f00_0010_0000,
            how: ReadKind::Zero,
            nr: 1,
        },
        Record::WriteEnd {
            ts: 0,
            entry: SwapEntry { dev: 0, offset: 9 },
            nr: 4,
        },
    ];
    let mut seen = [false; 25];
    for r in &all {
        let i = match r {
            Record::Task { .. } => 0,
            Record::AddressSpace { .. } => 1,
            Record::SwapOut { .. } => 2,
            Record::SwapFault { .. } => 3,
            Record::SwapRead { .. } => 4,
            Record::Reclaim { .. } => 5,
            Record::KhugepagedSwapin { .. } => 6,
            Record::Syscall { .. } => 7,
            Record::ZswapWriteback { .. } => 8,
            Record::RaWindow { .. } => 9,
            Record::CacheLookup { .. } => 10,
            Record::FreeBatch { .. } => 11,
            Record::ZswapOp { .. } => 12,
            Record::Zap { .. } => 13,
            Record::KhugepagedScan { .. } => 14,
            Record::Collapse { .. } => 15,
            Record::Lost { .. } => 16,
            Record::Vma { .. } => 17,
            Record::OutFreed { .. } => 18,
            Record::Unmapped { .. } => 19,
            Record::Isolated { .. } => 20,
            Record::Moved { .. } => 21,
            Record::Zapped { .. } => 22,
            Record::WillNeed { .. } => 23,
            Record::WriteEnd { .. } => 24,
        };
        seen[i] = true;
    }
    assert!(seen.iter().all(|&s| s), "an example per kind");
    all
}

#[test]
fn serde_tags_are_the_common_kind_names() {
    for r in one_of_each() {
        let v = serde_json::to_value(&r).expect("a record serializes");
        assert_eq!(v["kind"], r.kind_name(), "{r:?}");
    }
}

/// What the recorder read from the kernel wins; an older trace's kernel
/// release decides otherwise (kept from 6.18, where it was seen).
#[test]
fn keeps_unmapped_dirty_from_the_recording_or_the_release() {
    let h = |release: &str, recorded: Option<bool>| Header {
        kernel_release: release.into(),
        keeps_unmapped_dirty: recorded,
        ..Header::default()
    };
    assert!(h("6.18.15+deb13-amd64", None).keeps_unmapped_dirty());
    assert!(h("7.3.4", None).keeps_unmapped_dirty());
    assert!(!h("6.12.118+deb12-amd64", None).keeps_unmapped_dirty());
    assert!(!h("unknown", None).keeps_unmapped_dirty());
    assert!(h("6.16.0", Some(true)).keeps_unmapped_dirty());
    assert!(!h("6.18.0", Some(false)).keeps_unmapped_dirty());
    // Older headers have no such field, and read as None.
    let json = serde_json::to_string(&h("6.1.0", None)).expect("json");
    assert!(!json.contains("keeps_unmapped_dirty"));
    let back: Header = serde_json::from_str(&json).expect("header");
    assert_eq!(back.keeps_unmapped_dirty, None);
}

/// MGLRU's isolation clears the readahead flag on 6.18, not on 7.3.
#[test]
fn isolation_clears_readahead_where_mglru_does_before_7_0() {
    let h = |release: &str, mglru: Option<bool>| Header {
        kernel_release: release.into(),
        lru_gen_clears_readahead: mglru,
        ..Header::default()
    };
    assert!(h("6.18.15+deb13-amd64", Some(true)).isolation_clears_readahead());
    assert!(!h("7.3.4+deb13-amd64", Some(true)).isolation_clears_readahead());
    assert!(!h("6.18.15+deb13-amd64", Some(false)).isolation_clears_readahead());
    assert!(!h("6.18.15+deb13-amd64", None).isolation_clears_readahead());
}
