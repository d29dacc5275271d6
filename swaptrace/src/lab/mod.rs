//! Kernel knobs for experiments and live tests. Every change is undone by a
//! Drop guard, also when a test panics.

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr};
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU64, Ordering};
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
/// that no two live tests (swap, cgroups, knobs) ever run in parallel.
pub fn live_test_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
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

// ---------------------------------------------------------------- swap

static UNIQUE: AtomicU64 = AtomicU64::new(0);

fn unique_suffix() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    )
}

/// A swap file (or a loop device over one) that is on while the guard lives.
/// Drop: swapoff, detach the loop device, delete the file.
#[derive(Debug)]
pub struct SwapFile {
    file: PathBuf,
    loop_dev: Option<PathBuf>,
    device_name: String,
    active: bool,
}

impl SwapFile {
    /// Swap file of `size_bytes` in `dir` (must be on a block-backed filesystem).
    pub fn create(dir: &Path, size_bytes: u64, priority: Option<i32>) -> Result<SwapFile> {
        require_root()?;
        let mut sf = Self::make_file(dir, size_bytes)?;
        let md = fs::metadata(&sf.file).map_err(io_err(format!("stat {}", sf.file.display())))?;
        sf.device_name = block_dev_name(md.dev());
        run_tool("mkswap", &[sf.file.as_os_str()])?;
        sf.swapon(priority)?;
        Ok(sf)
    }

    /// Swap on a loop device over a file in `dir`, marked (non-)rotational
    /// before swapon: non-rotational gets VMA readahead, rotational cluster.
    pub fn on_loop(
        dir: &Path,
        size_bytes: u64,
        rotational: bool,
        priority: Option<i32>,
    ) -> Result<SwapFile> {
        require_root()?;
        let mut sf = Self::make_file(dir, size_bytes)?;
        let out = run_tool(
            "losetup",
            &[OsStr::new("-f"), OsStr::new("--show"), sf.file.as_os_str()],
        )?;
        let dev = PathBuf::from(out.trim());
        sf.loop_dev = Some(dev.clone());
        sf.device_name = dev
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| LabError::Parse {
                what: "losetup output".into(),
                detail: out.clone(),
            })?;
        let rot = Path::new("/sys/block")
            .join(&sf.device_name)
            .join("queue/rotational");
        write_file(&rot, if rotational { "1" } else { "0" })?;
        run_tool("mkswap", &[dev.as_os_str()])?;
        sf.swapon(priority)?;
        Ok(sf)
    }

    fn make_file(dir: &Path, size_bytes: u64) -> Result<SwapFile> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
        let size = size_bytes / page * page;
        if size < 16 * page {
            return Err(LabError::Unsupported(format!(
                "swap size {size_bytes} bytes is too small (need at least {} bytes)",
                16 * page
            )));
        }
        let dir = dir
            .canonicalize()
            .map_err(io_err(format!("resolving {}", dir.display())))?;
        let file = dir.join(format!("swaptrace-swap-{}", unique_suffix()));
        let f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&file)
            .map_err(io_err(format!("creating {}", file.display())))?;
        // From here the guard deletes the file on any error.
        let sf = SwapFile {
            file: file.clone(),
            loop_dev: None,
            device_name: String::new(),
            active: false,
        };
        fs::set_permissions(&file, fs::Permissions::from_mode(0o600))
            .map_err(io_err(format!("chmod 600 {}", file.display())))?;
        allocate(&f, size).map_err(io_err(format!(
            "allocating {size} bytes in {}",
            file.display()
        )))?;
        Ok(sf)
    }

    fn swapon(&mut self, priority: Option<i32>) -> Result<()> {
        let target = self.path().to_path_buf();
        let prio = priority.map(|p| p.to_string());
        let mut args: Vec<&OsStr> = Vec::new();
        if let Some(p) = &prio {
            args.push(OsStr::new("-p"));
            args.push(OsStr::new(p));
        }
        args.push(target.as_os_str());
        run_tool("swapon", &args)?;
        self.active = true;
        Ok(())
    }

    /// What was swapon'ed: the loop device or the (absolute) file path, as
    /// /proc/swaps lists it.
    pub fn path(&self) -> &Path {
        self.loop_dev.as_deref().unwrap_or(&self.file)
    }

    /// The backing file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Kernel block device name: `loopN` for a loop device; for a swap file
    /// the device of its filesystem (e.g. `vda`, `vda1`, or `MAJ:MIN`).
    pub fn device_name(&self) -> &str {
        &self.device_name
    }

    pub fn is_loop(&self) -> bool {
        self.loop_dev.is_some()
    }
}

impl Drop for SwapFile {
    fn drop(&mut self) {
        if self.active {
            if let Err(e) = run_tool("swapoff", &[self.path().as_os_str()]) {
                eprintln!("swaptrace lab: {e}");
            }
        }
        if let Some(dev) = &self.loop_dev {
            if let Err(e) = run_tool("losetup", &[OsStr::new("-d"), dev.as_os_str()]) {
                eprintln!("swaptrace lab: {e}");
            }
        }
        if let Err(e) = fs::remove_file(&self.file) {
            eprintln!("swaptrace lab: removing {}: {e}", self.file.display());
        }
    }
}

/// fallocate, or write zeros where the filesystem cannot.
fn allocate(f: &fs::File, size: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: valid fd, plain mode-0 allocation.
    let rc = unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, size as libc::off_t) };
    if rc != 0 {
        let mut w = io::BufWriter::new(f);
        let zeros = vec![0u8; 1 << 20];
        let mut left = size;
        while left > 0 {
            let n = left.min(zeros.len() as u64) as usize;
            w.write_all(&zeros[..n])?;
            left -= n as u64;
        }
        w.flush()?;
    }
    f.sync_all()
}

fn dev_major_minor(dev: u64) -> (u64, u64) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major, minor)
}

/// /sys/dev/block/MAJ:MIN, resolved (None for anonymous devices).
fn sys_block_dir(dev: u64) -> Option<PathBuf> {
    let (ma, mi) = dev_major_minor(dev);
    fs::canonicalize(format!("/sys/dev/block/{ma}:{mi}")).ok()
}

fn block_dev_name(dev: u64) -> String {
    sys_block_dir(dev)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| {
            let (ma, mi) = dev_major_minor(dev);
            format!("{ma}:{mi}")
        })
}

/// queue/rotational of a block device; a partition uses its parent's.
fn rotational_of(dev: u64) -> Option<bool> {
    let dir = sys_block_dir(dev)?;
    let own = dir.join("queue/rotational");
    let f = if own.exists() {
        own
    } else {
        dir.parent()?.join("queue/rotational")
    };
    match fs::read_to_string(f).ok()?.trim() {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// One line of /proc/swaps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwapDevice {
    pub path: PathBuf,
    /// "file" or "partition" (any block device, loop and zram included).
    pub kind: String,
    pub size_kib: u64,
    pub used_kib: u64,
    pub priority: i32,
    /// The block device's queue/rotational; for a file, its filesystem's device.
    pub rotational: Option<bool>,
}

/// Undo the kernel's octal escapes (`\040` for space) in /proc paths.
fn unescape_octal(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// Parse the text of /proc/swaps (rotational left as None).
pub fn parse_proc_swaps(text: &str) -> Result<Vec<SwapDevice>> {
    let bad = |line: &str| LabError::Parse {
        what: "/proc/swaps".into(),
        detail: format!("bad line {line:?}"),
    };
    let mut v = Vec::new();
    for line in text.lines().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 5 {
            return Err(bad(line));
        }
        let num = |s: &str| s.parse::<u64>().map_err(|_| bad(line));
        v.push(SwapDevice {
            path: PathBuf::from(OsStr::from_bytes(&unescape_octal(f[0]))),
            kind: f[1].to_string(),
            size_kib: num(f[2])?,
            used_kib: num(f[3])?,
            priority: f[4].parse().map_err(|_| bad(line))?,
            rotational: None,
        });
    }
    Ok(v)
}

/// Active swap devices from /proc/swaps, with their rotational flag.
pub fn swap_devices() -> Result<Vec<SwapDevice>> {
    let mut v = parse_proc_swaps(&read_file(Path::new("/proc/swaps"))?)?;
    for d in &mut v {
        d.rotational = fs::metadata(&d.path).ok().and_then(|md| {
            if d.kind == "file" {
                rotational_of(md.dev())
            } else {
                rotational_of(md.rdev())
            }
        });
    }
    Ok(v)
}

// ---------------------------------------------------------------- knobs

/// A sysctl/sysfs value changed while the guard lives; Drop writes the old
/// value back.
#[derive(Debug)]
pub struct Knob {
    path: PathBuf,
    old: String,
}

impl Knob {
    pub fn set(path: impl AsRef<Path>, value: &str) -> Result<Knob> {
        let path = path.as_ref().to_path_buf();
        let old = restorable(&read_file(&path)?);
        write_file(&path, value)?;
        Ok(Knob { path, old })
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
        if let Err(e) = write_file(&self.path, &self.old) {
            eprintln!("swaptrace lab: restoring knob: {e}");
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
}

impl MemCgroup {
    pub fn create(name_prefix: &str, limit_bytes: u64) -> Result<MemCgroup> {
        require_root()?;
        if name_prefix.contains('/') {
            return Err(LabError::Unsupported(format!(
                "cgroup name prefix {name_prefix:?} contains '/'"
            )));
        }
        let root = Path::new(MEMCG_ROOT);
        if !root.join("memory.limit_in_bytes").exists() {
            return Err(LabError::Unsupported(format!(
                "no cgroup v1 memory controller at {MEMCG_ROOT}"
            )));
        }
        let path = loop {
            let p = root.join(format!("{name_prefix}{}", unique_suffix()));
            match fs::create_dir(&p) {
                Ok(()) => break p,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_err(format!("mkdir {}", p.display()))(e)),
            }
        };
        let cg = MemCgroup { path };
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

    /// Spawn `cmd` inside the cgroup: the child joins it before exec.
    pub fn spawn(&self, cmd: &mut Command) -> io::Result<Child> {
        enter_cgroup_on_exec(cmd, &self.path);
        cmd.spawn()
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
        let parent_procs = self
            .path
            .parent()
            .unwrap_or(Path::new(MEMCG_ROOT))
            .join("cgroup.procs");
        let mut delay = Duration::from_millis(5);
        for attempt in 0..20 {
            for pid in self.pids().unwrap_or_default() {
                // ESRCH: already gone.
                let _ = write_file(&parent_procs, &pid.to_string());
            }
            match fs::remove_dir(&self.path) {
                Ok(()) => return,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return,
                Err(e) if attempt == 19 => {
                    eprintln!("swaptrace lab: rmdir {}: {e}", self.path.display());
                }
                Err(_) => {
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_millis(200));
                }
            }
        }
    }
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
