//! Rows of many replays as Parquet: one column per key, typed from the
//! values (Int64 when every value is an integer, Float64 for other
//! numbers, Boolean, else Utf8), null where a row lacks the key.

use super::many::{PolicyRow, ROW_KEYS};
use crate::trace::parquet::{props, ParquetError};
use arrow_array::builder::{BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::KeyValue;
use serde_json::Value;
use std::io::Write;
use std::sync::Arc;

pub type RowsError = ParquetError;

fn column_type(rows: &[PolicyRow], key: &str) -> DataType {
    let vals = || {
        rows.iter()
            .filter_map(|r| r.get(key))
            .filter(|v| !v.is_null())
    };
    if vals().all(|v| v.is_i64()) && vals().next().is_some() {
        DataType::Int64
    } else if vals().all(Value::is_number) && vals().next().is_some() {
        DataType::Float64
    } else if vals().all(Value::is_boolean) && vals().next().is_some() {
        DataType::Boolean
    } else {
        DataType::Utf8
    }
}

fn column(rows: &[PolicyRow], key: &str, dt: &DataType) -> ArrayRef {
    let get = |r: &PolicyRow| r.get(key).filter(|v| !v.is_null()).cloned();
    match dt {
        DataType::Int64 => {
            let mut b = Int64Builder::new();
            rows.iter()
                .for_each(|r| b.append_option(get(r).and_then(|v| v.as_i64())));
            Arc::new(b.finish())
        }
        DataType::Float64 => {
            let mut b = Float64Builder::new();
            rows.iter()
                .for_each(|r| b.append_option(get(r).and_then(|v| v.as_f64())));
            Arc::new(b.finish())
        }
        DataType::Boolean => {
            let mut b = BooleanBuilder::new();
            rows.iter()
                .for_each(|r| b.append_option(get(r).and_then(|v| v.as_bool())));
            Arc::new(b.finish())
        }
        _ => {
            let mut b = StringBuilder::new();
            for r in rows {
                b.append_option(get(r).map(|v| match v {
                    Value::String(s) => s,
                    v => v.to_string(),
                }));
            }
            Arc::new(b.finish())
        }
    }
}

/// Writes the rows as one row group: the keys of [`ROW_KEYS`] first, then
/// every other key in the order first seen.
pub fn rows_parquet<W: Write + Send>(rows: &[PolicyRow], out: W) -> Result<(), ParquetError> {
    let mut keys: Vec<String> = ROW_KEYS.iter().map(|k| k.to_string()).collect();
    for r in rows {
        for k in r.keys() {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    let types: Vec<DataType> = keys.iter().map(|k| column_type(rows, k)).collect();
    let schema = Arc::new(Schema::new(
        keys.iter()
            .zip(&types)
            .map(|(k, t)| Field::new(k, t.clone(), true))
            .collect::<Vec<_>>(),
    ));
    let cols = keys
        .iter()
        .zip(&types)
        .map(|(k, t)| column(rows, k, t))
        .collect();
    let batch = RecordBatch::try_new(schema.clone(), cols)?;
    let kv = vec![KeyValue::new(
        "swaptrace_version".into(),
        env!("CARGO_PKG_VERSION").to_string(),
    )];
    let mut w = ArrowWriter::try_new(out, schema, Some(props(kv, rows.len().max(1))?))?;
    w.write(&batch)?;
    w.close()?;
    Ok(())
}
