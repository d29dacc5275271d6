//! The Python environment of the DuckDB test (swaptrace/tests/parquet_duckdb.rs):
//! a virtual environment in target/pyenv with the `duckdb` package, made
//! once and kept while it imports.

use crate::cmd::{output, root, run};
use anyhow::Result;
use std::process::Command;

/// Pinned: the version the example queries of docs/parquet.md ran on.
pub const DUCKDB_VERSION: &str = "1.4.1";

pub fn pyenv() -> Result<()> {
    let dir = root().join("target/pyenv");
    let python = dir.join("bin/python");
    let probe = format!("import duckdb; assert duckdb.__version__ == '{DUCKDB_VERSION}'");
    if output(Command::new(&python).args(["-c", &probe])).is_some() {
        eprintln!("xtask: duckdb {DUCKDB_VERSION} (target/pyenv): present");
        return Ok(());
    }
    if !python.exists() {
        eprintln!("xtask: creating the Python environment target/pyenv");
        run(Command::new("python3").arg("-m").arg("venv").arg(&dir))?;
    }
    eprintln!("xtask: installing duckdb {DUCKDB_VERSION} into target/pyenv");
    run(Command::new(&python).args([
        "-m",
        "pip",
        "install",
        "-q",
        &format!("duckdb=={DUCKDB_VERSION}"),
    ]))
}
