//! The lab's journal: every change to the system (swap file, swapon, loop
//! device, cgroup, knob, child process) is appended to
//! `/run/swaptrace/<owner pid>.journal` and fsync'd *before* it is made, and
//! marked undone when its guard undoes it. A run killed with SIGKILL leaves
//! its journal behind; [`restore_dead`] undoes what it lists, newest first.
//!
//! One JSON object per line: `{"begin":ID,"owner_start":T,"change":{..}}`
//! or `{"end":ID}`. The file is removed when nothing in it is outstanding.

use std::fs;
use std::io::{self, BufRead, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};

use super::{io_err, LabError, Result};

/// Where journals live.
pub const JOURNAL_DIR: &str = "/run/swaptrace";

/// One change the lab makes; the fields are what undoing it needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Change {
    /// A swap file created (O_EXCL, mode 0600, owned by root): deleted.
    SwapFile { path: PathBuf },
    /// A loop device attached over `file`: every loop device backed by it
    /// is detached.
    Loop { file: PathBuf },
    /// swapon of `path` (a file or a block device): swapoff.
    Swapon { path: PathBuf },
    /// A memory cgroup made: its tasks killed (the lab's workload), rmdir.
    Cgroup { path: PathBuf },
    /// A sysfs/procfs value written: `old` written back.
    Knob { path: PathBuf, old: String },
    /// A process started: killed if it still runs (same start time).
    Child { pid: u32, start_time: u64 },
    /// A zram device added (`hot_add`): removed.
    Zram { id: u32 },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum Line {
    Begin {
        begin: u64,
        owner_start: u64,
        change: Change,
    },
    End {
        end: u64,
    },
}

/// What one undo did.
#[derive(Clone, Debug, Serialize)]
pub struct Undone {
    pub change: Change,
    /// "ok: ..." or the error; a failed undo stays in the journal.
    pub result: String,
    pub ok: bool,
}

/// What restoring one owner's journal did.
#[derive(Clone, Debug, Serialize)]
pub struct Restored {
    pub owner: u32,
    pub journal: PathBuf,
    pub undone: Vec<Undone>,
    /// The journal is gone (everything in it undone).
    pub removed: bool,
}

/// The owner changes are journaled for: this process unless set (the
/// `swaptrace lab` commands journal for the script that called them).
static OWNER: AtomicU32 = AtomicU32::new(0);

pub fn set_owner(pid: u32) {
    OWNER.store(pid, Ordering::Relaxed);
}

fn owner() -> u32 {
    match OWNER.load(Ordering::Relaxed) {
        0 => std::process::id(),
        p => p,
    }
}

/// Journaling is on for root (who can change the system); a non-root
/// process only touches its own files and journals nothing.
fn enabled() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Start time of a process (clock ticks after boot, field 22 of
/// /proc/PID/stat), or None when it does not exist.
pub fn start_time(pid: u32) -> Option<u64> {
    stat(pid).map(|(_, start)| start)
}

/// A process's state letter and start time, from /proc/PID/stat.
fn stat(pid: u32) -> Option<(char, u64)> {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: split after the last ')'.
    let mut rest = s[s.rfind(')')? + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    Some((state, rest.nth(18)?.parse().ok()?))
}

/// Alive: /proc/PID exists with the start time recorded, and is not a
/// zombie (dead, waiting for its new parent to reap it).
fn alive(pid: u32, start: u64) -> bool {
    stat(pid).is_some_and(|(state, st)| st == start && !matches!(state, 'Z' | 'X'))
}

/// A random u64 (getrandom(2); /dev/urandom if that fails).
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: writes at most 8 bytes into `b`.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != 8 {
        if let Ok(mut f) = fs::File::open("/dev/urandom") {
            let _ = io::Read::read_exact(&mut f, &mut b);
        }
    }
    u64::from_ne_bytes(b)
}

/// The journal directory, made 0700 and checked to be a root-owned real
/// directory (not a symlink planted by someone else).
fn open_dir(dir: &Path) -> Result<()> {
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io_err(format!("mkdir {}", dir.display()))(e)),
    }
    let md = fs::symlink_metadata(dir).map_err(io_err(format!("stat {}", dir.display())))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !md.is_dir() || md.uid() != me || md.mode() & 0o022 != 0 {
        return Err(LabError::Unsupported(format!(
            "{} is not a directory owned by uid {me} and writable only by it",
            dir.display()
        )));
    }
    Ok(())
}

fn journal_path(dir: &Path, owner: u32) -> PathBuf {
    dir.join(format!("{owner}.journal"))
}

/// An open journal file, flock'ed for as long as it lives.
struct Locked(fs::File);

impl Locked {
    /// Opens and locks `path`; a file removed while we waited for the lock
    /// (its last change undone) is opened afresh.
    fn open(path: &Path, create: bool) -> Result<Option<Locked>> {
        loop {
            let Some(l) = Self::open_once(path, create)? else {
                return Ok(None);
            };
            let same = match (l.0.metadata(), fs::symlink_metadata(path)) {
                (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
                _ => false,
            };
            if same {
                return Ok(Some(l));
            }
        }
    }

    fn open_once(path: &Path, create: bool) -> Result<Option<Locked>> {
        let f = fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(create)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path);
        let f = match f {
            Ok(f) => f,
            Err(e) if !create && e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(format!("opening {}", path.display()))(e)),
        };
        // SAFETY: valid fd; blocks until no other swaptrace holds it.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io_err(format!("flock {}", path.display()))(
                io::Error::last_os_error(),
            ));
        }
        Ok(Some(Locked(f)))
    }

    fn lines(&self) -> Vec<Line> {
        let mut f = &self.0;
        let _ = io::Seek::seek(&mut f, io::SeekFrom::Start(0));
        io::BufReader::new(f)
            .lines()
            .map_while(|l| l.ok())
            // A line cut by a crash mid-write is skipped.
            .filter_map(|l| serde_json::from_str(&l).ok())
            .collect()
    }

    fn append(&self, line: &Line, path: &Path) -> Result<()> {
        let mut text = serde_json::to_string(line).map_err(|e| LabError::Parse {
            what: "journal line".into(),
            detail: e.to_string(),
        })?;
        text.push('\n');
        (&self.0)
            .write_all(text.as_bytes())
            .and_then(|()| self.0.sync_data())
            .map_err(io_err(format!("writing {}", path.display())))
    }
}

/// The changes begun and not yet ended, oldest first, with their owner's
/// start time.
fn outstanding(lines: &[Line]) -> Vec<(u64, u64, Change)> {
    let ended: std::collections::HashSet<u64> = lines
        .iter()
        .filter_map(|l| match l {
            Line::End { end } => Some(*end),
            _ => None,
        })
        .collect();
    lines
        .iter()
        .filter_map(|l| match l {
            Line::Begin {
                begin,
                owner_start,
                change,
            } if !ended.contains(begin) => Some((*begin, *owner_start, change.clone())),
            _ => None,
        })
        .collect()
}

/// A journaled change; [`Entry::done`] marks it undone.
#[derive(Debug)]
pub struct Entry {
    id: u64,
    owner: u32,
    dir: PathBuf,
}

/// Journal `change` for the current owner before it is made.
pub fn begin(change: Change) -> Result<Option<Entry>> {
    if !enabled() {
        return Ok(None);
    }
    begin_in(Path::new(JOURNAL_DIR), owner(), change).map(Some)
}

fn begin_in(dir: &Path, owner: u32, change: Change) -> Result<Entry> {
    open_dir(dir)?;
    let own_start = start_time(owner).ok_or_else(|| {
        LabError::Unsupported(format!("journal owner pid {owner} is not running"))
    })?;
    let path = journal_path(dir, owner);
    // A journal under our pid from an earlier process (pid reuse) is a dead
    // run's: undo it first.
    if let Some(j) = Locked::open(&path, false)? {
        let stale = outstanding(&j.lines())
            .iter()
            .any(|(_, start, _)| *start != own_start);
        drop(j);
        if stale {
            restore_file(&path, owner, true);
        }
    }
    let j = Locked::open(&path, true)?.ok_or_else(|| LabError::Unsupported("journal".into()))?;
    let id = random_u64();
    j.append(
        &Line::Begin {
            begin: id,
            owner_start: own_start,
            change,
        },
        &path,
    )?;
    Ok(Entry {
        id,
        owner,
        dir: dir.to_path_buf(),
    })
}

impl Entry {
    /// The change was undone: mark it so; the journal goes once empty.
    pub fn done(self) {
        let path = journal_path(&self.dir, self.owner);
        let res = (|| -> Result<()> {
            let Some(j) = Locked::open(&path, false)? else {
                return Ok(());
            };
            j.append(&Line::End { end: self.id }, &path)?;
            if outstanding(&j.lines()).is_empty() {
                fs::remove_file(&path).map_err(io_err(format!("removing {}", path.display())))?;
            }
            Ok(())
        })();
        if let Err(e) = res {
            eprintln!("swaptrace lab: journal: {e}");
        }
    }
}

/// Marks an optional entry done (no journal when not root).
pub fn done(e: Option<Entry>) {
    if let Some(e) = e {
        e.done();
    }
}

/// Undo what every journal whose owner is gone lists (all journals' owners
/// checked by pid and start time).
pub fn restore_dead() -> Result<Vec<Restored>> {
    restore_in(Path::new(JOURNAL_DIR), None)
}

/// Undo what `owner`'s journal lists, alive or not (a script's own cleanup).
pub fn restore_owner(owner: u32) -> Result<Vec<Restored>> {
    restore_in(Path::new(JOURNAL_DIR), Some(owner))
}

/// The journals in `dir`: (owner pid, path).
fn journals(dir: &Path) -> Result<Vec<(u32, PathBuf)>> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err(format!("reading {}", dir.display()))(e)),
    };
    let mut out: Vec<(u32, PathBuf)> = rd
        .flatten()
        .filter_map(|ent| {
            let path = ent.path();
            let owner = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".journal"))
                .and_then(|n| n.parse::<u32>().ok())?;
            Some((owner, path))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Dead owners' journals in `dir`, or `only`'s alive or not.
fn restore_in(dir: &Path, only: Option<u32>) -> Result<Vec<Restored>> {
    let mut out = Vec::new();
    for (owner, path) in journals(dir)? {
        if only.is_some_and(|o| o != owner) {
            continue;
        }
        if let Some(r) = restore_file(&path, owner, only.is_some()) {
            out.push(r);
        }
    }
    Ok(out)
}

/// Owners still running whose journals list changes not undone, with
/// how many: what `lab restore` without `--owner` leaves alone.
pub fn running_owners() -> Result<Vec<(u32, usize)>> {
    running_in(Path::new(JOURNAL_DIR))
}

fn running_in(dir: &Path) -> Result<Vec<(u32, usize)>> {
    let mut out = Vec::new();
    for (owner, path) in journals(dir)? {
        let Some(j) = Locked::open(&path, false)? else {
            continue;
        };
        let todo = outstanding(&j.lines());
        if todo.iter().any(|(_, start, _)| alive(owner, *start)) {
            out.push((owner, todo.len()));
        }
    }
    Ok(out)
}

/// Undo, newest first, what one journal lists if its owner is dead (or
/// `even_alive`). Holds the journal's lock throughout, so two restores never
/// undo the same change.
fn restore_file(path: &Path, owner: u32, even_alive: bool) -> Option<Restored> {
    let j = match Locked::open(path, false) {
        Ok(Some(j)) => j,
        Ok(None) => return None,
        Err(e) => {
            eprintln!("swaptrace lab: {e}");
            return None;
        }
    };
    let todo = outstanding(&j.lines());
    if !even_alive && todo.iter().any(|(_, start, _)| alive(owner, *start)) {
        return None;
    }
    // An empty journal of a running process: it is about to write its
    // first line.
    if todo.is_empty() && !even_alive && start_time(owner).is_some() {
        return None;
    }
    let mut undone = Vec::new();
    for (id, _, change) in todo.into_iter().rev() {
        let r = undo(&change);
        let ok = r.is_ok();
        if ok {
            if let Err(e) = j.append(&Line::End { end: id }, path) {
                eprintln!("swaptrace lab: {e}");
            }
        }
        undone.push(Undone {
            change,
            result: r.unwrap_or_else(|e| e.to_string()),
            ok,
        });
    }
    let removed = outstanding(&j.lines()).is_empty() && fs::remove_file(path).is_ok();
    Some(Restored {
        owner,
        journal: path.to_path_buf(),
        undone,
        removed,
    })
}

/// Undo one change of a dead run; Ok says what was done.
fn undo(c: &Change) -> Result<String> {
    match c {
        Change::Child {
            pid,
            start_time: st,
        } => {
            if !alive(*pid, *st) {
                return Ok("already gone".into());
            }
            // SAFETY: plain kill(2) of a pid whose start time we just checked.
            if unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) } != 0 {
                return Err(io_err(format!("kill {pid}"))(io::Error::last_os_error()));
            }
            for _ in 0..100 {
                if !alive(*pid, *st) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Ok("killed".into())
        }
        Change::Cgroup { path } => super::remove_cgroup(path, true),
        Change::Knob { path, old } => {
            super::write_file(path, old)?;
            Ok(format!("wrote {old:?} back"))
        }
        Change::Swapon { path } => super::swap::swapoff_path(path),
        Change::Loop { file } => super::swap::detach_loops_of(file),
        Change::SwapFile { path } => super::swap::remove_swap_file(path),
        Change::Zram { id } => super::swap::remove_zram(*id),
    }
}

/// Restore dead runs and say on stderr what was undone; every live command
/// calls this first.
pub fn restore_dead_reporting() {
    if !enabled() {
        return;
    }
    match restore_dead() {
        Ok(v) => {
            for r in &v {
                eprint!("{}", restored_text(r));
            }
        }
        Err(e) => eprintln!("swaptrace lab: restoring dead runs: {e}"),
    }
}

/// What a restore did, one line per change.
pub fn restored_text(r: &Restored) -> String {
    let mut s = format!(
        "restored what pid {} left ({}{}):\n",
        r.owner,
        r.journal.display(),
        if r.removed { ", removed" } else { ", kept" }
    );
    for u in &r.undone {
        let what = match &u.change {
            Change::SwapFile { path } => format!("swap file {}", path.display()),
            Change::Loop { file } => format!("loop device over {}", file.display()),
            Change::Swapon { path } => format!("swapon {}", path.display()),
            Change::Cgroup { path } => format!("cgroup {}", path.display()),
            Change::Knob { path, old } => format!("knob {} = {old:?}", path.display()),
            Change::Child { pid, .. } => format!("process {pid}"),
            Change::Zram { id } => format!("zram device /dev/zram{id}"),
        };
        s.push_str(&format!(
            "  {:<4} {what}: {}\n",
            if u.ok { "ok" } else { "FAIL" },
            u.result
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn sleeper() -> std::process::Child {
        Command::new("sleep").arg("30").spawn().unwrap()
    }

    #[test]
    fn start_time_of_self_and_of_no_process() {
        assert!(start_time(std::process::id()).is_some_and(|t| t > 0));
        // Above any pid_max (2^22).
        assert_eq!(start_time(u32::MAX - 1), None);
        assert_ne!(random_u64(), random_u64());
    }

    #[test]
    fn a_dead_owners_knob_is_written_back_and_the_journal_removed() {
        let dir = tempfile::tempdir().unwrap();
        let jdir = dir.path().join("j");
        let knob = dir.path().join("knob");
        fs::write(&knob, "7\n").unwrap();
        let mut owner = sleeper();
        let pid = owner.id();
        let _e = begin_in(
            &jdir,
            pid,
            Change::Knob {
                path: knob.clone(),
                old: "3".into(),
            },
        )
        .unwrap();
        let jpath = jdir.join(format!("{pid}.journal"));
        assert!(jpath.exists());
        // The owner runs: nothing is touched, and it is named.
        assert!(restore_in(&jdir, None).unwrap().is_empty());
        assert_eq!(fs::read_to_string(&knob).unwrap(), "7\n");
        assert_eq!(running_in(&jdir).unwrap(), [(pid, 1)]);
        owner.kill().unwrap();
        owner.wait().unwrap();
        assert!(running_in(&jdir).unwrap().is_empty());
        let r = restore_in(&jdir, None).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].owner, pid);
        assert!(r[0].removed && r[0].undone.len() == 1 && r[0].undone[0].ok);
        assert_eq!(fs::read_to_string(&knob).unwrap(), "3");
        assert!(!jpath.exists());
        assert!(restored_text(&r[0]).contains("knob"));
    }

    #[test]
    fn undone_changes_leave_no_journal_and_restore_runs_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let jdir = dir.path().join("j");
        let knob = dir.path().join("knob");
        fs::write(&knob, "0").unwrap();
        let me = std::process::id();
        let a = begin_in(
            &jdir,
            me,
            Change::Knob {
                path: knob.clone(),
                old: "first".into(),
            },
        )
        .unwrap();
        let b = begin_in(
            &jdir,
            me,
            Change::Knob {
                path: knob.clone(),
                old: "second".into(),
            },
        )
        .unwrap();
        let jpath = jdir.join(format!("{me}.journal"));
        b.done();
        assert!(jpath.exists(), "one change is still outstanding");
        a.done();
        assert!(!jpath.exists());
        // Two outstanding: restoring the (alive) owner explicitly writes the
        // older value last.
        let _a = begin_in(
            &jdir,
            me,
            Change::Knob {
                path: knob.clone(),
                old: "first".into(),
            },
        )
        .unwrap();
        let _b = begin_in(
            &jdir,
            me,
            Change::Knob {
                path: knob.clone(),
                old: "second".into(),
            },
        )
        .unwrap();
        let r = restore_in(&jdir, Some(me)).unwrap();
        assert_eq!(r[0].undone.len(), 2);
        assert_eq!(fs::read_to_string(&knob).unwrap(), "first");
        assert!(!jpath.exists());
    }

    #[test]
    fn a_reused_pid_counts_as_dead_and_a_cut_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let jdir = dir.path().join("j");
        open_dir(&jdir).unwrap();
        let knob = dir.path().join("knob");
        fs::write(&knob, "x").unwrap();
        let me = std::process::id();
        let line = serde_json::to_string(&Line::Begin {
            begin: 1,
            owner_start: start_time(me).unwrap() + 1,
            change: Change::Knob {
                path: knob.clone(),
                old: "old".into(),
            },
        })
        .unwrap();
        fs::write(
            jdir.join(format!("{me}.journal")),
            format!("{line}\n{{\"beg"),
        )
        .unwrap();
        let r = restore_in(&jdir, None).unwrap();
        assert_eq!(r.len(), 1, "our pid with another start time is a dead run");
        assert_eq!(fs::read_to_string(&knob).unwrap(), "old");
    }

    #[test]
    fn a_dead_owners_child_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let jdir = dir.path().join("j");
        let mut owner = sleeper();
        let mut child = sleeper();
        let st = start_time(child.id()).unwrap();
        let _e = begin_in(
            &jdir,
            owner.id(),
            Change::Child {
                pid: child.id(),
                start_time: st,
            },
        )
        .unwrap();
        owner.kill().unwrap();
        owner.wait().unwrap();
        let r = restore_in(&jdir, None).unwrap();
        assert_eq!(r[0].undone[0].result, "killed");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
        // A child whose pid now names another process is left alone.
        let mut other = sleeper();
        let _e = begin_in(
            &jdir,
            u32::MAX - 1,
            Change::Child {
                pid: other.id(),
                start_time: 1,
            },
        );
        assert!(_e.is_err(), "an owner that is not running cannot journal");
        assert_eq!(
            undo(&Change::Child {
                pid: other.id(),
                start_time: 1
            })
            .unwrap(),
            "already gone"
        );
        assert!(other.try_wait().unwrap().is_none());
        other.kill().unwrap();
        other.wait().unwrap();
    }

    #[test]
    fn restore_leaves_what_the_lab_did_not_make() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("swaptrace-swap-0123");
        fs::write(&f, "data").unwrap();
        fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        assert!(undo(&Change::SwapFile { path: f.clone() }).is_err());
        let other = dir.path().join("precious");
        fs::write(&other, "data").unwrap();
        fs::set_permissions(&other, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        assert!(undo(&Change::SwapFile {
            path: other.clone()
        })
        .is_err());
        assert!(f.exists() && other.exists());
        assert_eq!(
            undo(&Change::SwapFile {
                path: dir.path().join("swaptrace-swap-gone")
            })
            .unwrap(),
            "already gone"
        );
        assert!(undo(&Change::Cgroup {
            path: dir.path().to_path_buf()
        })
        .is_err());
        assert!(dir.path().exists());
        let line: Line = serde_json::from_str(
            r#"{"begin":5,"owner_start":9,"change":{"kind":"swapon","path":"/dev/loop3"}}"#,
        )
        .unwrap();
        assert!(matches!(
            line,
            Line::Begin {
                begin: 5,
                change: Change::Swapon { .. },
                ..
            }
        ));
    }
}
