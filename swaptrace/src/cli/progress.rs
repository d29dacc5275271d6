//! Progress on stderr for reads, replays and exports: shown only on a
//! terminal, and only once the work has taken a second.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};
use swaptrace::trace::TraceStream;

const AFTER: Duration = Duration::from_secs(1);

pub struct Progress {
    what: &'static str,
    start: Instant,
    on: bool,
    /// Bytes, or items counted (traces).
    bytes: bool,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar for `what` over the bytes of a file.
    pub fn new(what: &'static str) -> Progress {
        Progress {
            what,
            start: Instant::now(),
            on: std::io::stderr().is_terminal(),
            bytes: true,
            bar: None,
        }
    }

    /// A bar for `what` over a count of items.
    pub fn items(what: &'static str) -> Progress {
        let mut p = Progress::new(what);
        p.bytes = false;
        p
    }

    /// Never shown (work done beside other work that shows its own).
    pub fn hidden() -> Progress {
        let mut p = Progress::new("");
        p.on = false;
        p
    }

    /// `done` of `total` bytes read, in the pass `what`.
    pub fn phase(&mut self, what: &'static str, done: u64, total: u64) {
        if what != self.what {
            self.what = what;
            if let Some(b) = &self.bar {
                b.set_message(what);
            }
        }
        self.set(done, total);
    }

    /// How far `s` has read its file, in the pass `what`.
    pub fn follow(&mut self, what: &'static str, s: &TraceStream) {
        let (done, total) = s.position();
        self.phase(what, done, total);
    }

    /// How far `s` has read its file.
    pub fn follow_bytes(&mut self, s: &TraceStream) {
        let (done, total) = s.position();
        self.set(done, total);
    }

    /// `done` of `total` bytes read.
    pub fn set(&mut self, done: u64, total: u64) {
        if !self.on {
            return;
        }
        if self.bar.is_none() && self.start.elapsed() >= AFTER {
            let b = ProgressBar::new(total);
            let template = if self.bytes {
                "{msg} {bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}"
            } else {
                "{msg} {bar:40} {pos}/{len} eta {eta}"
            };
            if let Ok(st) = ProgressStyle::with_template(template) {
                b.set_style(st);
            }
            b.set_message(self.what);
            self.bar = Some(b);
        }
        if let Some(b) = &self.bar {
            b.set_position(done);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}
