use super::*;
use crate::trace::{Footer, SwapEntry, TraceWriter};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, TimestampNanosecondType};
use arrow_array::Array;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn records() -> Vec<Record> {
    let e = |offset| SwapEntry { dev: 1, offset };
    vec![
        Record::Task {
            tid: 7,
            pid: 7,
            comm: "stress".into(),
        },
        Record::SwapOut {
            ts: 1_100,
            tid: 7,
            mm: 1,
            vaddr: 0x7000,
            entry: e(40),
            nr: 1,
            how: OutKind::Io,
        },
        Record::SwapFault {
            ts: 2_000,
            dur_ns: 900,
            tid: 7,
            mm: 1,
            addr: 0x7000,
            entry: Some(e(40)),
            major: true,
            pages_read: 8,
            zero_reads: 0,
            zswap_loads: 0,
            write: false,
        },
        Record::FreeBatch {
            ts: 3_000,
            tid: 9,
            lat_ns: 500,
            entries: vec![e(40), e(41)],
        },
        Record::Syscall {
            ts: 4_000,
            tid: 9,
            call: Syscall::Swapoff,
            ret: None,
        },
        Record::Zap {
            ts: 5_000,
            tid: 9,
            mm: 1,
            swap_ents: Some(i64::MIN),
            exiting: true,
        },
        Record::Lost {
            ts: 6_000,
            what: "swap_fault".into(),
            count: 3,
        },
    ]
}

fn trace(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("hostA.swt");
    let header = Header {
        format_version: crate::trace::FORMAT_VERSION,
        kernel_release: "6.18.0-test".into(),
        page_size: 4096,
        monotonic_start_ns: 1_000,
        realtime_start_ns: 1_700_000_000_000_000_000,
        ..Header::default()
    };
    let mut w = TraceWriter::create(&path, &header).unwrap();
    for r in records() {
        w.push(&r).unwrap();
    }
    w.finish(&Footer {
        records: 7,
        ..Footer::default()
    })
    .unwrap();
    path
}

#[test]
fn every_record_is_a_row_in_row_groups_of_the_size_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = trace(dir.path());
    let out = dir.path().join("t.parquet");
    let opts = ParquetOptions {
        host: None,
        row_group_rows: 3,
    };
    let stats = export_parquet_file(&path, std::fs::File::create(&out).unwrap(), &opts).unwrap();
    assert_eq!(
        (stats.records, stats.row_groups, stats.footer),
        (7, 3, true)
    );

    let b = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&out).unwrap()).unwrap();
    let kv: std::collections::BTreeMap<String, Option<String>> = b
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .unwrap()
        .iter()
        .map(|k| (k.key.clone(), k.value.clone()))
        .collect();
    assert_eq!(kv["host"].as_deref(), Some("hostA"), "the file stem");
    assert_eq!(kv["kernel"].as_deref(), Some("6.18.0-test"));
    assert_eq!(
        kv["recorded_at"].as_deref(),
        Some("2023-11-14 22:13:20 UTC")
    );
    let h: Header = serde_json::from_str(kv["swaptrace.header"].as_deref().unwrap()).unwrap();
    assert_eq!(h.realtime_start_ns, 1_700_000_000_000_000_000);
    assert!(kv["swaptrace.footer"]
        .as_deref()
        .unwrap()
        .contains("\"records\":7"));
    assert_eq!(b.metadata().num_row_groups(), 3);

    // One batch across the row groups.
    let batches: Vec<RecordBatch> = b
        .with_batch_size(1024)
        .build()
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(batches.len(), 1);
    let batch = &batches[0];
    let col = |n: &str| batch.column_by_name(n).unwrap().clone();
    let kinds: Vec<String> = (0..batch.num_rows())
        .map(|i| col("kind").as_string::<i32>().value(i).to_string())
        .collect();
    let want: Vec<&str> = records().iter().map(|r| r.kind_name()).collect();
    assert_eq!(kinds, want);
    let ts = col("ts");
    let ts = ts.as_primitive::<Int64Type>();
    assert!(ts.is_null(0), "a task has no ts");
    assert_eq!(ts.value(2), 2_000);
    let time = col("time");
    let time = time.as_primitive::<TimestampNanosecondType>();
    assert_eq!(
        time.value(2),
        1_700_000_000_000_001_000,
        "wall = start + ts - mono"
    );
    let pages = col("pages_read");
    assert_eq!(pages.as_primitive::<Int64Type>().value(2), 8);
    assert!(pages.is_null(1), "a swap-out has no pages_read");
    let ents = col("swap_ents");
    assert_eq!(
        ents.as_primitive::<Int64Type>().value(5),
        i64::MIN,
        "kept, not null"
    );
    let entries = col("entries");
    let entries = entries.as_list::<i32>();
    assert!(entries.is_null(2));
    assert_eq!(entries.value(3).len(), 2, "the free batch's entries");
    assert_eq!(col("nr").as_primitive::<Int64Type>().value(3), 2);
    assert_eq!(col("host").as_string::<i32>().value(6), "hostA");
}

#[test]
fn a_given_host_name_wins_over_the_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = trace(dir.path());
    let mut h = Header::default();
    assert_eq!(h.host(&path), "hostA");
    h.hostname = Some("db-7".into());
    assert_eq!(h.host(&path), "db-7");
    let opts = ParquetOptions {
        host: Some("web-1".into()),
        ..ParquetOptions::default()
    };
    let out = dir.path().join("t.parquet");
    export_parquet_file(&path, std::fs::File::create(&out).unwrap(), &opts).unwrap();
    let b = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&out).unwrap()).unwrap();
    let kv = b.metadata().file_metadata().key_value_metadata().unwrap();
    let host = kv.iter().find(|k| k.key == "host").unwrap();
    assert_eq!(host.value.as_deref(), Some("web-1"));
    assert_eq!(b.metadata().num_row_groups(), 1);
}
