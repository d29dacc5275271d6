//! Kernel knobs, swap, memory cgroups for experiments and live tests.
//! Every change is undone by a Drop guard, also when a test panics, and is
//! journaled first (see [`journal`]) so that `swaptrace lab restore` undoes
//! it when the process was killed.

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr};
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use serde::{Deserialize, Serialize};

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("`{cmd}` failed ({status}): {stderr}")]
    Command {
        cmd: String,
        status: String,
        stderr: String,
    },
    #[error("must run as root")]
    NotRoot,
    #[error("unsupported: {0}")]
    Unsupported(String),
    #[error("cannot parse {what}: {detail}")]
    Parse { what: String, detail: String },
}

pub type Result<T, E = LabError> = std::result::Result<T, E>;

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> LabError {
    let what = what.into();
    move |source| LabError::Io { what, source }
}

pub fn require_root() -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        Ok(())
    } else {
        Err(LabError::NotRoot)
    }
}

/// Process-wide lock for live tests: hold it for the whole live test, so
/// that no two live tests (swap, cgroups, knobs) ever run in parallel. What
/// dead runs left (see [`journal`]) is restored first.
pub fn live_test_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    let g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    journal::restore_dead_reporting();
    g
}

/// The child of `cmd` gets SIGKILL when this thread exits, however it
/// exits (PR_SET_PDEATHSIG survives exec), so a killed run leaves no
/// workload behind.
pub fn die_with_parent(cmd: &mut Command) {
    // SAFETY: getpid before fork; the closure makes only async-signal-safe
    // calls (prctl, getppid, _exit).
    let parent = unsafe { libc::getpid() };
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // The parent died before prctl: nobody would send the signal.
            if libc::getppid() != parent {
                libc::_exit(137);
            }
            Ok(())
        })
    };
}

/// Find a system tool also when /sbin is not on PATH.
fn tool(name: &str) -> PathBuf {
    for dir in ["/usr/sbin", "/sbin", "/usr/bin", "/bin"] {
        let p = Path::new(dir).join(name);
        if p.exists() {
            return p;
        }
    }
    PathBuf::from(name)
}

/// Run a tool, return its stdout; non-zero exit is an error.
fn run_tool(name: &str, args: &[&OsStr]) -> Result<String> {
    let cmdline = std::iter::once(name.to_string())
        .chain(args.iter().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ");
    let out = Command::new(tool(name))
        .args(args)
        .output()
        .map_err(io_err(format!("running `{cmdline}`")))?;
    if !out.status.success() {
        return Err(LabError::Command {
            cmd: cmdline,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn write_file(path: &Path, value: &str) -> Result<()> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(io_err(format!("opening {} for writing", path.display())))?;
    f.write_all(value.as_bytes())
        .map_err(io_err(format!("writing {value:?} to {}", path.display())))
}

fn read_file(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(io_err(format!("reading {}", path.display())))
}

pub mod journal;
mod swap;

pub use swap::{loops_of, parse_proc_swaps, swap_devices, SwapDevice, SwapFile, Zram};

// ---------------------------------------------------------------- knobs

/// A sysctl/sysfs value changed while the guard lives; Drop writes the old
/// value back.
#[derive(Debug)]
pub struct Knob {
    path: PathBuf,
    old: String,
    entry: Option<journal::Entry>,
    keep: bool,
}

impl Knob {
    /// Journals the old value, then writes `value`.
    pub fn set(path: impl AsRef<Path>, value: &str) -> Result<Knob> {
        let path = path.as_ref().to_path_buf();
        let old = restorable(&read_file(&path)?);
        let entry = journal::begin(journal::Change::Knob {
            path: path.clone(),
            old: old.clone(),
        })?;
        let k = Knob {
            path,
            old,
            entry,
            keep: false,
        };
        write_file(&k.path, value)?;
        Ok(k)
    }

    /// Leave the value for the journal's owner to restore.
    pub fn keep(mut self) {
        self.keep = true;
        self.entry = None;
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The value Drop restores.
    pub fn old(&self) -> &str {
        &self.old
    }

    /// Read the current value (trimmed).
    pub fn read(path: impl AsRef<Path>) -> Result<String> {
        Ok(read_file(path.as_ref())?.trim().to_string())
    }
}

/// A value that can be written back: "always [madvise] never" → "madvise".
fn restorable(s: &str) -> String {
    let t = s.trim();
    if let (Some(a), Some(b)) = (t.find('['), t.find(']')) {
        if a < b {
            return t[a + 1..b].to_string();
        }
    }
    t.to_string()
}

impl Drop for Knob {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        match write_file(&self.path, &self.old) {
            Ok(()) => journal::done(self.entry.take()),
            Err(e) => eprintln!("swaptrace lab: restoring knob: {e}"),
        }
    }
}

// ---------------------------------------------------------------- memcg

const MEMCG_ROOT: &str = "/sys/fs/cgroup/memory";

/// A cgroup v1 memory cgroup with a memory limit (swap stays unlimited).
/// Drop: move remaining tasks to the parent, rmdir.
#[derive(Debug)]
pub struct MemCgroup {
    path: PathBuf,
    entry: Option<journal::Entry>,
}

impl MemCgroup {
    pub fn create(name_prefix: &str, limit_bytes: u64) -> Result<MemCgroup> {
        require_root()?;
        // `lab restore` removes only cgroups named so.
        if name_prefix.contains('/') || !name_prefix.starts_with("swaptrace-") {
            return Err(LabError::Unsupported(format!(
                "cgroup name prefix {name_prefix:?}: must start with \"swaptrace-\" and hold no '/'"
            )));
        }
        let root = Path::new(MEMCG_ROOT);
        if !root.join("memory.limit_in_bytes").exists() {
            return Err(LabError::Unsupported(format!(
                "no cgroup v1 memory controller at {MEMCG_ROOT}"
            )));
        }
        let (path, entry) = loop {
            let p = root.join(format!("{name_prefix}{:016x}", journal::random_u64()));
            let entry = journal::begin(journal::Change::Cgroup { path: p.clone() })?;
            match fs::create_dir(&p) {
                Ok(()) => break (p, entry),
                Err(e) => {
                    journal::done(entry);
                    if e.kind() != io::ErrorKind::AlreadyExists {
                        return Err(io_err(format!("mkdir {}", p.display()))(e));
                    }
                }
            }
        };
        let cg = MemCgroup { path, entry };
        write_file(
            &cg.path.join("memory.limit_in_bytes"),
            &limit_bytes.to_string(),
        )?;
        Ok(cg)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Name relative to the memory hierarchy root, as in /proc/PID/cgroup.
    pub fn name(&self) -> String {
        self.path
            .strip_prefix(MEMCG_ROOT)
            .map(|p| format!("/{}", p.display()))
            .unwrap_or_else(|_| self.path.display().to_string())
    }

    /// st_ino of the cgroup directory.
    pub fn inode(&self) -> Result<u64> {
        fs::metadata(&self.path)
            .map(|m| m.ino())
            .map_err(io_err(format!("stat {}", self.path.display())))
    }

    pub fn add_pid(&self, pid: u32) -> Result<()> {
        write_file(&self.path.join("cgroup.procs"), &pid.to_string())
    }

    pub fn pids(&self) -> Result<Vec<u32>> {
        Ok(read_file(&self.path.join("cgroup.procs"))?
            .split_whitespace()
            .filter_map(|s| s.parse().ok())
            .collect())
    }

    /// Read a file of the cgroup, e.g. "memory.max_usage_in_bytes".
    pub fn read(&self, file: &str) -> Result<String> {
        read_file(&self.path.join(file))
    }

    /// Spawn `cmd` inside the cgroup: the child joins it before exec, and
    /// dies with this process.
    pub fn spawn(&self, cmd: &mut Command) -> io::Result<Child> {
        enter_cgroup_on_exec(cmd, &self.path);
        die_with_parent(cmd);
        cmd.spawn()
    }

    /// Leave the cgroup for the journal's owner to remove.
    pub fn keep(mut self) {
        self.entry = None;
        self.path = PathBuf::new();
    }
}

/// Makes the child of `cmd` join the cgroup `dir` (v1 or v2) before exec.
/// Spawning fails if it cannot.
pub fn enter_cgroup_on_exec(cmd: &mut Command, dir: &Path) {
    let procs = CString::new(dir.join("cgroup.procs").as_os_str().as_bytes()).ok();
    // SAFETY: the closure only makes async-signal-safe calls (open, write,
    // close) on a string prepared before fork.
    unsafe {
        cmd.pre_exec(move || {
            let Some(procs) = &procs else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "NUL in cgroup path",
                ));
            };
            // "0" means the writing task itself (v1 and v2).
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let n = libc::write(fd, b"0".as_ptr().cast(), 1);
            let err = io::Error::last_os_error();
            libc::close(fd);
            if n != 1 {
                return Err(err);
            }
            Ok(())
        })
    };
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        if self.path.as_os_str().is_empty() {
            return;
        }
        match remove_cgroup(&self.path, false) {
            Ok(_) => journal::done(self.entry.take()),
            Err(e) => eprintln!("swaptrace lab: {e}"),
        }
    }
}

/// rmdir a lab-made memory cgroup. Its tasks are killed first when `kill`
/// (a dead run's workload), else moved to the parent.
pub(crate) fn remove_cgroup(path: &Path, kill: bool) -> Result<String> {
    let name_ok = path.parent() == Some(Path::new(MEMCG_ROOT))
        && path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("swaptrace-"));
    if !name_ok {
        return Err(LabError::Unsupported(format!(
            "{} is not a cgroup the lab makes; left alone",
            path.display()
        )));
    }
    let parent_procs = Path::new(MEMCG_ROOT).join("cgroup.procs");
    let pids = |p: &Path| -> Vec<u32> {
        fs::read_to_string(p.join("cgroup.procs"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|s| s.parse().ok())
            .collect()
    };
    let mut killed = 0;
    let mut delay = Duration::from_millis(5);
    for attempt in 0..30 {
        for pid in pids(path) {
            if kill {
                // SAFETY: plain kill(2); the task is in the lab's cgroup.
                if unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) } == 0 {
                    killed += 1;
                }
            } else {
                // ESRCH: already gone.
                let _ = write_file(&parent_procs, &pid.to_string());
            }
        }
        match fs::remove_dir(path) {
            Ok(()) if killed > 0 => return Ok(format!("killed {killed} task(s), rmdir")),
            Ok(()) => return Ok("rmdir".into()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok("already gone".into()),
            Err(e) if attempt == 29 => {
                return Err(io_err(format!("rmdir {}", path.display()))(e));
            }
            Err(_) => {
                std::thread::sleep(delay);
                delay = (delay * 2).min(Duration::from_millis(200));
            }
        }
    }
    Ok("rmdir".into())
}

// ---------------------------------------------------------------- vmstat

/// A snapshot of /proc/vmstat.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmStat(pub BTreeMap<String, u64>);

impl VmStat {
    pub fn read() -> Result<VmStat> {
        Self::parse(&read_file(Path::new("/proc/vmstat"))?)
    }

    pub fn parse(text: &str) -> Result<VmStat> {
        let mut m = BTreeMap::new();
        for line in text.lines() {
            let mut it = line.split_whitespace();
            let (Some(k), Some(v)) = (it.next(), it.next()) else {
                continue;
            };
            let v = v.parse::<u64>().map_err(|_| LabError::Parse {
                what: "/proc/vmstat".into(),
                detail: format!("bad line {line:?}"),
            })?;
            m.insert(k.to_string(), v);
        }
        Ok(VmStat(m))
    }

    /// Value of a counter (0 if this kernel lacks it).
    pub fn get(&self, name: &str) -> u64 {
        self.0.get(name).copied().unwrap_or(0)
    }

    /// `later - self` for every counter in either snapshot.
    pub fn delta(&self, later: &VmStat) -> BTreeMap<String, i64> {
        self.0
            .keys()
            .chain(later.0.keys())
            .map(|k| {
                let d = later.get(k) as i128 - self.get(k) as i128;
                (
                    k.clone(),
                    d.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
                )
            })
            .collect()
    }
}

// ---------------------------------------------------------------- tracefs

const TRACEFS: &str = "/sys/kernel/tracing";

fn tracefs_mounted() -> bool {
    fs::read_to_string("/proc/self/mountinfo")
        .map(|m| {
            m.lines().any(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let sep = f.iter().position(|x| *x == "-");
                f.get(4) == Some(&TRACEFS) && sep.and_then(|i| f.get(i + 1)) == Some(&"tracefs")
            })
        })
        .unwrap_or(false)
}

/// Mount tracefs at /sys/kernel/tracing unless it already is (idempotent).
pub fn mount_tracefs() -> Result<()> {
    if tracefs_mounted() {
        return Ok(());
    }
    require_root()?;
    let src = CString::new("tracefs").expect("no NUL");
    let target = CString::new(TRACEFS).expect("no NUL");
    // SAFETY: valid NUL-terminated strings, no data.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            src.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EBUSY) && tracefs_mounted() {
            return Ok(());
        }
        return Err(LabError::Io {
            what: format!("mount -t tracefs tracefs {TRACEFS}"),
            source: e,
        });
    }
    Ok(())
}

/// A `Key:   N kB` field of a /proc file such as /proc/meminfo or
/// /proc/self/status, in KiB.
pub fn proc_kib(path: &str, key: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests;
