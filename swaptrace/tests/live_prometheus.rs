//! `swaptrace top --listen` on this kernel: its /metrics passes
//! `promtool check metrics`, counts the faults of a swapping workload, and a
//! real Prometheus server (the Debian `prometheus` package, installed by
//! `cargo xtask setup`) scrapes it on loopback. Root and BPF needed; holds
//! the live-test lock; both servers are stopped by guards.
#![cfg(feature = "live")]

mod live_common;

use live_common::{majors, scratch, workload, EXE};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use swaptrace::lab;

const PROMETHEUS: &str = "/usr/bin/prometheus";
const PROMTOOL: &str = "/usr/bin/promtool";

/// A child stopped with SIGTERM (then SIGKILL after 5 s) when dropped.
struct Stop(Child, &'static str);

impl Drop for Stop {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(s)) = self.0.try_wait() {
                eprintln!("{} stopped: {s}", self.1);
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
        eprintln!("{} killed after SIGTERM timed out", self.1);
    }
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// HTTP/1.0 GET (no chunked replies): (status line, headers, body).
fn get(port: u16, path: &str) -> std::io::Result<(String, String, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut r = String::new();
    s.read_to_string(&mut r)?;
    let (head, body) = r.split_once("\r\n\r\n").unwrap_or((&r, ""));
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    Ok((status.into(), headers.into(), body.into()))
}

/// Polls `f` every 250 ms until it gives Some, for at most `limit`.
fn until<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let t = Instant::now();
    while t.elapsed() < limit {
        if let Some(v) = f() {
            return Some(v);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    None
}

/// The value of the sample line starting with `prefix`.
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

fn promtool_check(text: &str) -> (bool, String) {
    let mut c = Command::new(PROMTOOL)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = c.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), said)
}

fn start_prometheus(dir: &Path, target_port: u16, web_port: u16) -> Stop {
    let conf = dir.join("prometheus.yml");
    std::fs::write(
        &conf,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: swaptrace\n    static_configs:\n      - targets: ['127.0.0.1:{target_port}']\n"
        ),
    )
    .unwrap();
    let mut c = Command::new(PROMETHEUS);
    c.arg(format!("--config.file={}", conf.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{web_port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap());
    lab::die_with_parent(&mut c);
    Stop(c.spawn().unwrap(), "prometheus")
}

#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn top_listen_serves_metrics_that_promtool_and_prometheus_accept() {
    if let Err(e) = lab::require_root() {
        panic!("top --listen cannot run: {e}");
    }
    for tool in [PROMETHEUS, PROMTOOL] {
        assert!(
            Path::new(tool).exists(),
            "{tool} is missing: run `cargo xtask setup` as root (Debian package prometheus)"
        );
    }
    let _lock = lab::live_test_lock();
    let dir = scratch("swaptrace-prom-");
    let _swap = lab::SwapFile::create(&dir, 2 << 30, None).unwrap();
    let cg = lab::MemCgroup::create("swaptrace-prom-", 96 << 20).unwrap();

    // 1. top --listen, quiet, until stopped (--count bounds it anyway).
    let port = free_port();
    let mut c = Command::new(EXE);
    c.args(["top", "--quiet", "--interval", "1s", "--count", "120"])
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .stdout(Stdio::piped());
    lab::die_with_parent(&mut c);
    let top = Stop(c.spawn().unwrap(), "top");
    // Attached and counting once the first interval is in.
    let up = until(Duration::from_secs(30), || {
        let (_, _, t) = get(port, "/metrics").ok()?;
        (sample(&t, "swaptrace_intervals_total")? >= 1.0).then_some(())
    });
    assert!(up.is_some(), "top --listen had no interval within 30 s");
    let m = majors(workload(cg.path(), "192M", 4));
    std::thread::sleep(Duration::from_millis(1500));
    let (status, headers, text) = get(port, "/metrics").unwrap();
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(
        headers.contains("Content-Type: text/plain; version=0.0.4"),
        "{headers}"
    );
    eprintln!("--- scrape of top --listen (first 30 lines) ---");
    for l in text.lines().take(30) {
        eprintln!("{l}");
    }
    eprintln!("---");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let labels = format!("{{host=\"{}\",cgroup=\"/\"}}", host.trim());
    let majors_seen = sample(&text, &format!("swaptrace_major_faults_total{labels}"))
        .unwrap_or_else(|| panic!("no major faults sample in\n{text}"));
    eprintln!("workload majors (getrusage) {m}, swaptrace_major_faults_total {majors_seen}");
    assert!(m > 1000, "the workload must swap: {m} majors");
    assert!(
        majors_seen >= m as f64 * 0.9,
        "top saw {majors_seen} majors system-wide, the workload alone {m}"
    );
    let count = sample(
        &text,
        &format!("swaptrace_pages_read_per_fault_count{labels}"),
    );
    assert!(count.is_some_and(|c| c >= majors_seen * 0.9), "{count:?}");
    let (st, _, _) = get(port, "/").unwrap();
    assert!(st.starts_with("HTTP/1.1 404"), "{st}");

    // 2. promtool's verdict on the exposition.
    let (ok, said) = promtool_check(&text);
    eprintln!(
        "promtool check metrics: exit {}, {:?}",
        if ok { 0 } else { 1 },
        said.trim()
    );
    assert!(ok, "promtool check metrics: {said}");

    // 3. A real Prometheus scraping top every second, on loopback.
    let web = free_port();
    let prom = start_prometheus(&dir, port, web);
    let t = Instant::now();
    let q = "/api/v1/query?query=swaptrace_faults_total";
    let found = until(Duration::from_secs(20), || {
        let (_, _, body) = get(web, q).ok()?;
        let v: serde_json::Value = serde_json::from_str(&body).ok()?;
        let r = v["data"]["result"].as_array()?;
        (v["status"] == "success" && !r.is_empty()).then(|| r.clone())
    });
    let log = std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default();
    let Some(result) = found else {
        panic!("prometheus had no swaptrace_faults_total within 20 s; its log:\n{log}")
    };
    eprintln!(
        "prometheus answered {q} after {:.1} s: {}",
        t.elapsed().as_secs_f64(),
        serde_json::to_string(&result).unwrap_or_default()
    );
    assert_eq!(result[0]["metric"]["job"], "swaptrace");
    assert_eq!(result[0]["metric"]["host"], host.trim());
    let v: f64 = result[0]["value"][1]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(-1.0);
    assert!(
        v >= majors_seen,
        "prometheus has {v} faults, top served {majors_seen} majors"
    );
    drop(prom);
    drop(top);
    drop((cg, _swap));
    std::fs::remove_dir_all(&dir).unwrap();
}
