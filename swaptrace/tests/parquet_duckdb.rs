//! A real client reads the Parquet export: DuckDB (Python package, installed
//! by `cargo xtask setup` into target/pyenv) queries two traces' files
//! together, and its counts must equal `swaptrace info --json`. Every
//! example query of docs/parquet.md runs here. Without DuckDB the test says
//! why, and fails under CI=true.
#![cfg(feature = "parquet")]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_swaptrace");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// A Python that imports duckdb: target/pyenv's, $SWAPTRACE_PYTHON, python3.
fn python() -> Result<PathBuf, String> {
    let mut tried = Vec::new();
    let candidates = [
        Some(root().join("target/pyenv/bin/python")),
        std::env::var_os("SWAPTRACE_PYTHON").map(PathBuf::from),
        Some(PathBuf::from("python3")),
    ];
    for p in candidates.into_iter().flatten() {
        let ok = Command::new(&p)
            .args(["-c", "import duckdb"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Ok(p);
        }
        tried.push(p.display().to_string());
    }
    Err(format!(
        "no Python with duckdb (tried {}): run `cargo xtask setup`",
        tried.join(", ")
    ))
}

fn swaptrace(args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .output()
        .expect("run swaptrace");
    assert!(
        out.status.success(),
        "swaptrace {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Runs the views and every `-- name:` SQL block of docs/parquet.md in
/// `dir`; returns {name: [row as object, …]}.
const RUNNER: &str = r#"
import duckdb, json, re, sys
dir, doc = sys.argv[1], open(sys.argv[2]).read()
c = duckdb.connect()
c.execute(f"CREATE VIEW traces AS SELECT * FROM read_parquet('{dir}/traces/*.parquet')")
c.execute(f"CREATE VIEW replays AS SELECT * FROM read_parquet('{dir}/replays/*.parquet')")
out = {}
for block in re.findall(r"```sql\n(.*?)```", doc, re.S):
    name = re.match(r"-- name: (\w+)", block).group(1)
    # DuckDB writes the JSON itself (its Python types for a timestamp
    # with a time zone need pytz).
    path = f"{dir}/{name}.json"
    c.execute(f"COPY ({block.strip().rstrip(';')}) TO '{path}' (FORMAT json, ARRAY true)")
    out[name] = json.load(open(path))
meta = c.execute(f"SELECT decode(value) FROM parquet_kv_metadata('{dir}/traces/*.parquet') WHERE decode(key) = 'host' ORDER BY 1").fetchall()
out["_hosts_in_metadata"] = [r[0] for r in meta]
print(json.dumps(out, default=str))
"#;

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

#[test]
fn duckdb_counts_over_two_traces_equal_info_and_the_doc_queries_run() {
    let py = match python() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("parquet_duckdb: NOT RUN: {why}");
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "parquet_duckdb under CI=true: {why}"
            );
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let traces = [
        ("sample", root().join("examples/sample.swt")),
        ("swapoff", root().join("swaptrace/tests/golden/swapoff.swt")),
    ];
    std::fs::create_dir(dir.path().join("traces")).unwrap();
    std::fs::create_dir(dir.path().join("replays")).unwrap();
    let mut infos = Vec::new();
    for (host, swt) in &traces {
        let swt = swt.to_str().unwrap();
        let pq = dir.path().join(format!("traces/{host}.parquet"));
        swaptrace(&[
            "export",
            swt,
            "--format",
            "parquet",
            "-o",
            pq.to_str().unwrap(),
        ]);
        let info: Value = serde_json::from_str(&swaptrace(&["info", swt, "--json"])).unwrap();
        infos.push((*host, info));
    }
    let rp = dir.path().join("replays/all.parquet");
    let (a, b) = (traces[0].1.to_str().unwrap(), traces[1].1.to_str().unwrap());
    swaptrace(&[
        "replay",
        a,
        b,
        "--format",
        "parquet",
        "-o",
        rp.to_str().unwrap(),
    ]);

    let out = Command::new(&py)
        .args(["-c", RUNNER])
        .arg(dir.path())
        .arg(root().join("docs/parquet.md"))
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "duckdb: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let q: Value = serde_json::from_slice(&out.stdout).unwrap();
    eprintln!("counts: {}", q["counts"]);
    assert_eq!(
        q["_hosts_in_metadata"],
        serde_json::json!(["sample", "swapoff"])
    );

    for (host, info) in &infos {
        let rows: Vec<&Value> = q["counts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["host"] == *host)
            .collect();
        let records = info["records"].as_object().unwrap();
        assert_eq!(rows.len(), records.len(), "{host}: kinds");
        for r in &rows {
            let kind = r["kind"].as_str().unwrap();
            assert_eq!(int(&r["records"]), int(&records[kind]), "{host} {kind}");
        }
        let sum = |col: &str| rows.iter().map(|r| int(&r[col])).sum::<i64>();
        let s = &info["summary"];
        assert_eq!(sum("major_faults"), int(&s["faults_major"]), "{host}");
        assert_eq!(sum("pages_read"), int(&s["fault_pages_read"]), "{host}");
        assert!(
            int(&s["faults_major"]) > 0,
            "{host}: a trace with major faults"
        );

        // Every major fault is in one window bucket and one second.
        for (query, col) in [
            ("windows", "major_faults"),
            ("major_per_second", "major_faults"),
        ] {
            let total: i64 = q[query]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["host"] == *host)
                .map(|r| int(&r[col]))
                .sum();
            assert_eq!(total, int(&s["faults_major"]), "{query} {host}");
        }
    }

    // The policy comparison: one row per policy, the kernel's own at 0 %.
    let policies = q["policies"].as_array().unwrap();
    assert!(policies.len() >= 6, "{policies:?}");
    let cluster = policies.iter().find(|r| r["policy"] == "cluster").unwrap();
    assert_eq!(int(&cluster["hosts"]), 2);
    assert_eq!(cluster["change_pct"].as_f64(), Some(0.0));
    assert_eq!(cluster["major_faults"], cluster["kernel_major_faults"]);
}
