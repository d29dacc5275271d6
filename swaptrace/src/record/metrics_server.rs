//! `top --listen`: a small HTTP/1.x server on one thread that answers
//! `GET /metrics` with [`Metrics::render`] and everything else with an
//! error status. One connection at a time, the request head bounded to
//! [`MAX_REQUEST`] bytes and every read and write to [`IO_TIMEOUT`], so a
//! slow or hostile client delays a scrape by at most that, and never
//! panics the recorder.

use super::prometheus::{Format, Metrics};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Largest request head read; a longer one gets 431.
pub const MAX_REQUEST: usize = 8192;
/// Bound on each read and write of a connection.
pub const IO_TIMEOUT: Duration = Duration::from_secs(2);
/// Most bytes read and dropped after the reply, before closing.
const LINGER_BYTES: usize = 64 * 1024;
/// How often the accept loop looks at the stop flag.
const POLL: Duration = Duration::from_millis(50);

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("--listen {addr}: {source}")]
    Bind { addr: String, source: io::Error },
    #[error("metrics server: {0}")]
    Setup(io::Error),
}

/// The serving thread; dropping it stops the thread.
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `addr` (e.g. 127.0.0.1:9464) and serves `metrics` from a thread.
    pub fn start(addr: &str, metrics: Arc<Mutex<Metrics>>) -> Result<MetricsServer, ServeError> {
        let listener = TcpListener::bind(addr).map_err(|source| ServeError::Bind {
            addr: addr.to_string(),
            source,
        })?;
        let local = listener.local_addr().map_err(ServeError::Setup)?;
        listener.set_nonblocking(true).map_err(ServeError::Setup)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    match listener.accept() {
                        // A failed connection is that client's problem only.
                        Ok((s, _)) => {
                            let _ = serve(s, &metrics);
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
                        Err(_) => std::thread::sleep(POLL),
                    }
                }
            })
            .map_err(ServeError::Setup)?;
        Ok(MetricsServer {
            addr: local,
            stop,
            thread: Some(thread),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One connection: read the head, answer, close.
fn serve(mut s: TcpStream, metrics: &Mutex<Metrics>) -> io::Result<()> {
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(IO_TIMEOUT))?;
    s.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while head_end(&buf).is_none() && buf.len() < MAX_REQUEST {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let reply = respond(&buf, |f| {
        // A poisoned lock still holds consistent totals (they are only added to).
        let m = metrics.lock().unwrap_or_else(|e| e.into_inner());
        m.render(f)
    });
    s.write_all(&reply)?;
    s.flush()?;
    // Lingering close: read what the client still sends (bounded), so that
    // closing with unread input does not reset the connection before the
    // client has read the reply.
    s.shutdown(std::net::Shutdown::Write)?;
    s.set_read_timeout(Some(POLL * 4))?;
    let mut left = LINGER_BYTES;
    while left > 0 {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
    Ok(())
}

/// The end of the request head (after the blank line), if it is in `buf`.
fn head_end(buf: &[u8]) -> Option<usize> {
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn reply(status: &str, content_type: &str, extra: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The whole response to the request `req` (its head, perhaps cut at
/// [`MAX_REQUEST`]); `render` is called only for `GET /metrics`.
pub fn respond(req: &[u8], render: impl FnOnce(Format) -> String) -> Vec<u8> {
    const PLAIN: &str = "text/plain; charset=utf-8";
    let Some(end) = head_end(req) else {
        return if req.len() >= MAX_REQUEST {
            reply(
                "431 Request Header Fields Too Large",
                PLAIN,
                "",
                "request head too large\n",
            )
        } else {
            reply("400 Bad Request", PLAIN, "", "incomplete request\n")
        };
    };
    let Ok(head) = std::str::from_utf8(&req[..end]) else {
        return reply("400 Bad Request", PLAIN, "", "request is not UTF-8\n");
    };
    let mut lines = head.lines();
    let mut first = lines.next().unwrap_or("").split_whitespace();
    let (Some(method), Some(target), Some(version), None) =
        (first.next(), first.next(), first.next(), first.next())
    else {
        return reply("400 Bad Request", PLAIN, "", "bad request line\n");
    };
    if !version.starts_with("HTTP/1.") {
        return reply("400 Bad Request", PLAIN, "", "HTTP/1.x only\n");
    }
    let path = target.split('?').next().unwrap_or("");
    if path != "/metrics" {
        return reply("404 Not Found", PLAIN, "", "only /metrics is served\n");
    }
    if method != "GET" {
        return reply(
            "405 Method Not Allowed",
            PLAIN,
            "Allow: GET\r\n",
            "only GET\n",
        );
    }
    let accept = lines.find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case("accept").then_some(v.trim())
    });
    let format = Format::negotiate(accept);
    reply("200 OK", format.content_type(), "", &render(format))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(r: &[u8]) -> String {
        let s = String::from_utf8_lossy(r);
        s.lines().next().unwrap_or("").to_string()
    }

    fn body(f: Format) -> String {
        Metrics::new("h", "/", []).render(f)
    }

    #[test]
    fn get_metrics_answers_with_the_exposition() {
        let r = respond(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", body);
        let s = String::from_utf8_lossy(&r);
        assert_eq!(status(&r), "HTTP/1.1 200 OK");
        assert!(s.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
        let (_, b) = s.split_once("\r\n\r\n").unwrap_or_default();
        assert!(s.contains(&format!("Content-Length: {}\r\n", b.len())));
        assert!(b.contains("# TYPE swaptrace_faults_total counter"));
        // A query string is ignored; Accept picks OpenMetrics.
        let r = respond(
            b"GET /metrics?x=1 HTTP/1.0\r\nACCEPT: application/openmetrics-text; version=1.0.0\r\n\r\n",
            body,
        );
        let s = String::from_utf8_lossy(&r);
        assert!(s.contains("application/openmetrics-text"), "{s}");
        assert!(s.ends_with("# EOF\n"));
    }

    #[test]
    fn anything_else_gets_an_error_status_without_rendering() {
        let never = |_: Format| -> String { panic!("rendered for a bad request") };
        let cases: &[(&[u8], &str)] = &[
            (b"GET / HTTP/1.1\r\n\r\n", "404"),
            (b"GET /metricsx HTTP/1.1\r\n\r\n", "404"),
            (b"POST /metrics HTTP/1.1\r\n\r\n", "405"),
            (b"GET /metrics\r\n\r\n", "400"),
            (b"GET /metrics HTTP/2 extra\r\n\r\n", "400"),
            (b"GET /metrics SPDY/3\r\n\r\n", "400"),
            (b"\xff\xfe /metrics HTTP/1.1\r\n\r\n", "400"),
            (b"GET /metrics HTTP/1.1\r\n", "400"),
            (b"", "400"),
        ];
        for (req, want) in cases {
            let r = respond(req, never);
            assert!(
                status(&r).starts_with(&format!("HTTP/1.1 {want} ")),
                "{:?}: {}",
                String::from_utf8_lossy(req),
                status(&r)
            );
        }
        let big = vec![b'a'; MAX_REQUEST];
        assert!(status(&respond(&big, never)).contains(" 431 "));
    }

    fn get(addr: SocketAddr, req: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(req).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn the_server_answers_over_tcp_and_survives_bad_clients() {
        let m = Arc::new(Mutex::new(Metrics::new("h", "/", ["swap_fault"])));
        let srv = MetricsServer::start("127.0.0.1:0", m.clone()).unwrap();
        let addr = srv.local_addr();
        // A client that sends a partial head and hangs up.
        {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"GET /met").unwrap();
        }
        // One that sends an endless header line: cut at MAX_REQUEST.
        let long = [
            b"GET /metrics HTTP/1.1\r\nX: ".as_slice(),
            &[b'a'; 3 * MAX_REQUEST],
        ]
        .concat();
        let mut s = TcpStream::connect(addr).unwrap();
        let _ = s.write_all(&long);
        let mut r = String::new();
        let _ = s.read_to_string(&mut r);
        assert!(r.starts_with("HTTP/1.1 431 "), "{r}");
        assert!(get(addr, b"GET /x HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404 "));
        let r = get(addr, b"GET /metrics HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK"), "{r}");
        assert!(
            r.contains(r#"swaptrace_lost_events_total{host="h",cgroup="/",reason="swap_fault"} 0"#)
        );
        drop(srv);
        assert!(
            TcpStream::connect(addr).is_err(),
            "still listening after drop"
        );
    }

    #[test]
    fn binding_a_bad_address_names_it() {
        let Err(e) = MetricsServer::start(
            "not-an-address",
            Arc::new(Mutex::new(Metrics::new("h", "/", []))),
        ) else {
            panic!("bound a bad address")
        };
        assert!(e.to_string().contains("--listen not-an-address"), "{e}");
    }
}
