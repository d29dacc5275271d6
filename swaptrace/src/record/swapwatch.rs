//! swapon(2) and swapoff(2) where no probe may sit on the system call
//! functions: read from /proc. A syscall tracepoint would do it exactly,
//! but enabling any one sends every system call of the host through the
//! tracing slow path (TIF_SYSCALL_TRACEPOINT: +20% on a syscall-heavy job).
//!
//! `swapoff()` takes the device's free pages out of `totalswap`
//! (`si_swapinfo()`: `total_swap_pages` less the device, plus what it still
//! holds) before `try_to_unuse()`, and the device leaves /proc/swaps when it
//! returns. So a drop of `totalswap` over unchanged devices is a swapoff
//! begun, a device gone is one done, `totalswap` back up over the same
//! devices is one failed, and a new device is a swapon. Each bracket is
//! recorded from the poll before it was seen to the poll that saw it: it
//! holds the call, within the poll interval. The caller is the task whose
//! /proc/*/task/*/syscall shows swapoff at that poll.

use crate::trace::{Record, Syscall};

/// How often [`SwapWatch::poll`] is meant to run.
pub const POLL_MS: u64 = 10;

/// What one poll sees: the swap devices listed and `totalswap` (bytes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Seen {
    pub devices: Vec<String>,
    pub total: u64,
}

impl Seen {
    /// /proc/swaps and sysinfo(2) now; None if either cannot be read.
    pub fn now() -> Option<Seen> {
        let swaps = std::fs::read_to_string("/proc/swaps").ok()?;
        // SAFETY: sysinfo fills the struct it is given.
        let mut si: libc::sysinfo = unsafe { std::mem::zeroed() };
        if unsafe { libc::sysinfo(&mut si) } != 0 {
            return None;
        }
        Some(Seen {
            devices: devices(&swaps),
            total: si.totalswap as u64 * u64::from(si.mem_unit.max(1)),
        })
    }
}

/// The device paths of /proc/swaps (its first column, header skipped).
fn devices(swaps: &str) -> Vec<String> {
    swaps
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// The swapon/swapoff state machine over successive polls.
pub struct SwapWatch {
    last: Seen,
    last_ts: u64,
    /// A swapoff begun and not yet seen to end.
    open: Option<Open>,
    polls: u64,
}

/// A swapoff in progress: when it began at the latest, and its caller once
/// found (its bracket is recorded then: a task on a CPU shows "running",
/// not its system call).
#[derive(Clone, Copy)]
struct Open {
    from: u64,
    tid: Option<u32>,
}

/// Polls between two searches for the caller of a swapoff.
const SEARCH_EVERY: u64 = 10;

/// The failure a watcher can tell (a swapoff undone), not its errno.
pub const FAILED: i64 = -1;

impl SwapWatch {
    pub fn new(ts: u64, seen: Seen) -> SwapWatch {
        SwapWatch {
            last: seen,
            last_ts: ts,
            open: None,
            polls: 0,
        }
    }

    /// One poll at `ts`: the brackets it closes or opens, pushed to `out`.
    pub fn poll(&mut self, ts: u64, out: &mut Vec<Record>) {
        if let Some(seen) = Seen::now() {
            self.step(ts, seen, caller_of_swapoff, out);
        }
    }

    /// [`SwapWatch::poll`] with what was seen given, and how to find the
    /// task inside swapoff.
    pub fn step(
        &mut self,
        ts: u64,
        seen: Seen,
        caller: impl Fn() -> Option<u32>,
        out: &mut Vec<Record>,
    ) {
        let from = self.last_ts;
        self.polls += 1;
        let call = |call, tid, ts, ret| Record::Syscall { ts, tid, call, ret };
        // The bracket's start, once: with its caller, or unknown (0).
        let enter = |o: &mut Open, tid: Option<u32>, out: &mut Vec<Record>| {
            if o.tid.is_none() {
                let t = tid.unwrap_or(0);
                out.push(call(Syscall::Swapoff, t, o.from, None));
                o.tid = Some(t);
            }
        };
        let gone = self
            .last
            .devices
            .iter()
            .filter(|d| !seen.devices.contains(d));
        for _ in gone {
            // Begun and done between two polls, if none was open.
            let mut o = self.open.take().unwrap_or(Open { from, tid: None });
            enter(&mut o, None, out);
            out.push(call(Syscall::Swapoff, o.tid.unwrap_or(0), ts, Some(0)));
        }
        let new = seen
            .devices
            .iter()
            .filter(|d| !self.last.devices.contains(d));
        for _ in new {
            out.push(call(Syscall::Swapon, 0, from, None));
            out.push(call(Syscall::Swapon, 0, ts, Some(0)));
        }
        if seen.devices == self.last.devices {
            match self.open.as_mut() {
                None if seen.total < self.last.total => {
                    let mut o = Open { from, tid: None };
                    if let Some(t) = caller() {
                        enter(&mut o, Some(t), out);
                    }
                    self.open = Some(o);
                }
                Some(o) if seen.total > self.last.total => {
                    enter(o, None, out);
                    out.push(call(Syscall::Swapoff, o.tid.unwrap_or(0), ts, Some(FAILED)));
                    self.open = None;
                }
                Some(o) if o.tid.is_none() && self.polls.is_multiple_of(SEARCH_EVERY) => {
                    if let Some(t) = caller() {
                        enter(o, Some(t), out);
                    }
                }
                _ => {}
            }
        }
        self.last = seen;
        self.last_ts = ts;
    }
}

/// The first task found inside swapoff(2) (/proc/PID/task/TID/syscall).
fn caller_of_swapoff() -> Option<u32> {
    let nr = libc::SYS_swapoff.to_string();
    for p in std::fs::read_dir("/proc").ok()?.flatten() {
        if !p
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Ok(s) = std::fs::read_to_string(t.path().join("syscall")) else {
                continue;
            };
            if s.split_whitespace().next() == Some(nr.as_str()) {
                return t.file_name().to_string_lossy().parse().ok();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(devices: &[&str], total: u64) -> Seen {
        Seen {
            devices: devices.iter().map(|d| d.to_string()).collect(),
            total,
        }
    }

    /// (call, tid, ts, ret) of each record.
    fn calls(out: &[Record]) -> Vec<(Syscall, u32, u64, Option<i64>)> {
        out.iter()
            .map(|r| match r {
                Record::Syscall { ts, tid, call, ret } => (*call, *tid, *ts, *ret),
                _ => panic!("not a syscall: {r:?}"),
            })
            .collect()
    }

    #[test]
    fn a_swapoff_is_bracketed_from_the_poll_before_its_drop_to_the_poll_after_its_device_left() {
        let mut w = SwapWatch::new(0, seen(&["/dev/a", "/dev/b"], 2000));
        let mut out = Vec::new();
        w.step(10, seen(&["/dev/a", "/dev/b"], 2000), || Some(7), &mut out);
        assert!(out.is_empty());
        // /dev/b's free part leaves totalswap: swapoff began after 10.
        w.step(20, seen(&["/dev/a", "/dev/b"], 1400), || Some(7), &mut out);
        // try_to_unuse() draining it: still the same swapoff.
        w.step(30, seen(&["/dev/a", "/dev/b"], 1200), || Some(8), &mut out);
        assert!(w.open.is_some());
        w.step(40, seen(&["/dev/a"], 1000), || None, &mut out);
        assert!(w.open.is_none());
        assert_eq!(
            calls(&out),
            [
                (Syscall::Swapoff, 7, 10, None),
                (Syscall::Swapoff, 7, 40, Some(0))
            ]
        );
    }

    #[test]
    fn a_swapoff_undone_fails_and_one_between_polls_is_closed_at_once() {
        let mut w = SwapWatch::new(0, seen(&["/dev/a"], 1000));
        let mut out = Vec::new();
        w.step(10, seen(&["/dev/a"], 600), || None, &mut out);
        // reinsert_swap_info(): the pages are back, the device stays.
        w.step(20, seen(&["/dev/a"], 1000), || None, &mut out);
        // A full device (no drop) or a short call: only its end is seen.
        w.step(30, seen(&[], 0), || None, &mut out);
        assert_eq!(
            calls(&out),
            [
                (Syscall::Swapoff, 0, 0, None),
                (Syscall::Swapoff, 0, 20, Some(FAILED)),
                (Syscall::Swapoff, 0, 20, None),
                (Syscall::Swapoff, 0, 30, Some(0)),
            ]
        );
    }

    #[test]
    fn a_caller_found_later_gets_the_bracket_from_its_start() {
        let mut w = SwapWatch::new(0, seen(&["/dev/a"], 1000));
        let mut out = Vec::new();
        w.step(10, seen(&["/dev/a"], 600), || None, &mut out);
        assert!(out.is_empty(), "no bracket before its caller is known");
        let mut ts = 10;
        while out.is_empty() && ts < 10 * (SEARCH_EVERY + 2) {
            ts += 10;
            w.step(ts, seen(&["/dev/a"], 500), || Some(42), &mut out);
        }
        w.step(ts + 10, seen(&[], 0), || None, &mut out);
        assert_eq!(
            calls(&out),
            [
                (Syscall::Swapoff, 42, 0, None),
                (Syscall::Swapoff, 42, ts + 10, Some(0))
            ]
        );
    }

    #[test]
    fn a_new_device_is_a_swapon_and_its_total_is_no_swapoff() {
        let mut w = SwapWatch::new(0, seen(&["/dev/a"], 1000));
        let mut out = Vec::new();
        w.step(10, seen(&["/dev/a", "/f"], 1500), || Some(3), &mut out);
        w.step(20, seen(&["/dev/a", "/f"], 1500), || Some(3), &mut out);
        assert!(w.open.is_none());
        assert_eq!(
            calls(&out),
            [
                (Syscall::Swapon, 0, 0, None),
                (Syscall::Swapon, 0, 10, Some(0))
            ]
        );
    }

    #[test]
    fn proc_swaps_lists_its_device_paths() {
        let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                    /dev/loop0                              partition\t1048572\t\t0\t\t-2\n\
                    /var/tmp/swap\\040file                   file\t\t1024\t\t0\t\t-3\n";
        assert_eq!(devices(text), ["/dev/loop0", "/var/tmp/swap\\040file"]);
    }
}
