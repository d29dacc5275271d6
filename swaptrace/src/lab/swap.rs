//! Temporary swap: a swap file, or a loop device over one, journaled before
//! every step and undone by a Drop guard; and /proc/swaps.

use std::ffi::{CString, OsStr};
use std::fs;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::journal::{self, Change, Entry};
use super::{io_err, read_file, require_root, run_tool, write_file, Knob, LabError, Result};

/// Prefix of every swap file the lab makes; restore deletes only such files.
const SWAP_PREFIX: &str = "swaptrace-swap-";
/// swapon(2) flags (include/linux/swap.h).
const SWAP_FLAG_PREFER: libc::c_int = 0x8000;
const SWAP_FLAG_PRIO_MASK: libc::c_int = 0x7fff;

/// A swap file (or a loop device over one) that is on while the guard lives.
/// Drop: swapoff, detach the loop device, delete the file; each step is
/// journaled before it is made (see [`journal`]).
#[derive(Debug)]
pub struct SwapFile {
    file: PathBuf,
    /// The swap file as created (O_EXCL|O_NOFOLLOW): later steps use
    /// /proc/PID/fd/N of it, not its path.
    fd: Option<fs::File>,
    loop_dev: Option<PathBuf>,
    device_name: String,
    active: bool,
    rotational: Option<Knob>,
    j_file: Option<Entry>,
    j_loop: Option<Entry>,
    j_swapon: Option<Entry>,
}

impl SwapFile {
    /// Swap file of `size_bytes` in `dir` (must be on a block-backed filesystem).
    pub fn create(dir: &Path, size_bytes: u64, priority: Option<i32>) -> Result<SwapFile> {
        require_root()?;
        let mut sf = Self::make_file(dir, size_bytes)?;
        let fd_path = sf.fd_path()?;
        let md = sf
            .fd()?
            .metadata()
            .map_err(io_err(format!("stat {}", sf.file.display())))?;
        sf.device_name = block_dev_name(md.dev());
        run_tool("mkswap", &[fd_path.as_os_str()])?;
        // swapon(2) of /proc/self/fd/N: the file we created, whatever its
        // path now points to; /proc/swaps lists its real path.
        let own = PathBuf::from(format!("/proc/self/fd/{}", sf.fd()?.as_raw_fd()));
        sf.swapon(&own, priority)?;
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
        let fd_path = sf.fd_path()?;
        sf.j_loop = journal::begin(Change::Loop {
            file: sf.file.clone(),
        })?;
        let out = run_tool(
            "losetup",
            &[OsStr::new("-f"), OsStr::new("--show"), fd_path.as_os_str()],
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
        sf.rotational = Some(Knob::set(&rot, if rotational { "1" } else { "0" })?);
        run_tool("mkswap", &[dev.as_os_str()])?;
        sf.swapon(&dev, priority)?;
        Ok(sf)
    }

    fn fd(&self) -> Result<&fs::File> {
        self.fd
            .as_ref()
            .ok_or_else(|| LabError::Unsupported("swap file not open".into()))
    }

    /// /proc/PID/fd/N of the open swap file, for the tools we run.
    fn fd_path(&self) -> Result<PathBuf> {
        Ok(PathBuf::from(format!(
            "/proc/{}/fd/{}",
            std::process::id(),
            self.fd()?.as_raw_fd()
        )))
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
        let mut sf = SwapFile {
            file: PathBuf::new(),
            fd: None,
            loop_dev: None,
            device_name: String::new(),
            active: false,
            rotational: None,
            j_file: None,
            j_loop: None,
            j_swapon: None,
        };
        // An unpredictable name, created O_EXCL|O_NOFOLLOW: nobody can
        // block it or plant a symlink there; a collision draws again.
        for attempt in 0..16 {
            let file = dir.join(format!("{SWAP_PREFIX}{:016x}", journal::random_u64()));
            let entry = journal::begin(Change::SwapFile { path: file.clone() })?;
            let opened = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&file);
            match opened {
                Ok(f) => {
                    sf.file = file;
                    sf.fd = Some(f);
                    sf.j_file = entry;
                    break;
                }
                Err(e) => {
                    // Not ours: the journal must not list it.
                    journal::done(entry);
                    if e.kind() != io::ErrorKind::AlreadyExists || attempt == 15 {
                        return Err(io_err(format!("creating {}", file.display()))(e));
                    }
                }
            }
        }
        // From here the guard deletes the file on any error.
        let f = sf.fd()?;
        // The umask may have narrowed it; never widened: 0600 exactly.
        // SAFETY: valid fd.
        if unsafe { libc::fchmod(f.as_raw_fd(), 0o600) } != 0 {
            return Err(io_err(format!("chmod 600 {}", sf.file.display()))(
                io::Error::last_os_error(),
            ));
        }
        allocate(f, size).map_err(io_err(format!(
            "allocating {size} bytes in {}",
            sf.file.display()
        )))?;
        Ok(sf)
    }

    fn swapon(&mut self, target: &Path, priority: Option<i32>) -> Result<()> {
        let shown = self.path().to_path_buf();
        swapon_journaled(target, &shown, priority, &mut self.j_swapon)?;
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

    /// Leave everything in place for the journal's owner to undo (the
    /// `swaptrace lab swap` command, whose owner is the calling script).
    pub fn keep(mut self) {
        self.active = false;
        self.loop_dev = None;
        self.j_file = None;
        self.j_loop = None;
        self.j_swapon = None;
        if let Some(k) = self.rotational.take() {
            k.keep();
        }
        self.file = PathBuf::new();
    }
}

fn cstring(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| LabError::Unsupported(format!("NUL in path {}", p.display())))
}

impl Drop for SwapFile {
    fn drop(&mut self) {
        if self.active {
            let target = match (&self.loop_dev, &self.fd) {
                (Some(d), _) => d.clone(),
                (None, Some(f)) => PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd())),
                (None, None) => self.file.clone(),
            };
            match cstring(&target).and_then(|c| {
                // SAFETY: valid NUL-terminated path.
                if unsafe { libc::swapoff(c.as_ptr()) } == 0 {
                    Ok(())
                } else {
                    Err(io_err(format!("swapoff {}", self.path().display()))(
                        io::Error::last_os_error(),
                    ))
                }
            }) {
                Ok(()) => journal::done(self.j_swapon.take()),
                Err(e) => eprintln!("swaptrace lab: {e}"),
            }
        } else {
            journal::done(self.j_swapon.take());
        }
        // Before the loop device goes.
        drop(self.rotational.take());
        if let Some(dev) = &self.loop_dev {
            match run_tool("losetup", &[OsStr::new("-d"), dev.as_os_str()]) {
                Ok(_) => journal::done(self.j_loop.take()),
                Err(e) => eprintln!("swaptrace lab: {e}"),
            }
        } else {
            journal::done(self.j_loop.take());
        }
        if self.file.as_os_str().is_empty() {
            return;
        }
        // Unlink only the file we created: its path may have been swapped.
        let same = match (&self.fd, fs::symlink_metadata(&self.file)) {
            (Some(f), Ok(md)) => f
                .metadata()
                .is_ok_and(|o| o.ino() == md.ino() && o.dev() == md.dev()),
            _ => false,
        };
        if !same {
            eprintln!(
                "swaptrace lab: {} is no longer the swap file made; left alone",
                self.file.display()
            );
            journal::done(self.j_file.take());
            return;
        }
        match fs::remove_file(&self.file) {
            Ok(()) => journal::done(self.j_file.take()),
            Err(e) => eprintln!("swaptrace lab: removing {}: {e}", self.file.display()),
        }
    }
}

/// swapoff of a dead run's swap if /proc/swaps still lists it.
pub(super) fn swapoff_path(path: &Path) -> Result<String> {
    let listed = parse_proc_swaps(&read_file(Path::new("/proc/swaps"))?)?
        .into_iter()
        .any(|d| {
            d.path == path || {
                let mut s = path.as_os_str().to_os_string();
                s.push(" (deleted)");
                d.path.as_os_str() == s
            }
        });
    if !listed {
        return Ok("not on".into());
    }
    let c = cstring(path)?;
    // SAFETY: valid NUL-terminated path.
    if unsafe { libc::swapoff(c.as_ptr()) } != 0 {
        return Err(io_err(format!("swapoff {}", path.display()))(
            io::Error::last_os_error(),
        ));
    }
    Ok("swapoff".into())
}

const ZRAM_CONTROL: &str = "/sys/class/zram-control";

/// Swap on a new zram device (compressed RAM; SWP_SYNCHRONOUS_IO) while
/// the guard lives. Drop: swapoff, then the device removed
/// (`hot_remove`). Both are journaled: the device right after
/// `hot_add` names it, the swapon before it is made.
#[derive(Debug)]
pub struct Zram {
    id: u32,
    path: PathBuf,
    active: bool,
    j_dev: Option<Entry>,
    j_swapon: Option<Entry>,
}

impl Zram {
    /// A zram device of `size_bytes` (uncompressed), swapped on at
    /// `priority`.
    pub fn swap_on(size_bytes: u64, priority: Option<i32>) -> Result<Zram> {
        require_root()?;
        let control = Path::new(ZRAM_CONTROL);
        if !control.exists() {
            return Err(LabError::Unsupported(
                "no zram here (/sys/class/zram-control: modprobe zram)".into(),
            ));
        }
        let id: u32 = read_file(&control.join("hot_add"))?
            .trim()
            .parse()
            .map_err(|_| LabError::Parse {
                what: "zram hot_add".into(),
                detail: "not a device number".into(),
            })?;
        let mut z = Zram {
            id,
            path: PathBuf::from(format!("/dev/zram{id}")),
            active: false,
            j_dev: journal::begin(Change::Zram { id })?,
            j_swapon: None,
        };
        write_file(
            &Path::new("/sys/block")
                .join(format!("zram{id}"))
                .join("disksize"),
            &size_bytes.to_string(),
        )?;
        run_tool("mkswap", &[z.path.as_os_str()])?;
        swapon_journaled(&z.path, &z.path, priority, &mut z.j_swapon)?;
        z.active = true;
        Ok(z)
    }

    /// `/dev/zramN`, as /proc/swaps lists it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Leave it on for the journal's owner to undo (`swaptrace lab swap
    /// --zram`, whose owner is the calling script).
    pub fn keep(mut self) {
        self.active = false;
        self.j_dev = None;
        self.j_swapon = None;
        self.id = u32::MAX;
    }
}

impl Drop for Zram {
    fn drop(&mut self) {
        if self.active {
            match swapoff_path(&self.path) {
                Ok(_) => journal::done(self.j_swapon.take()),
                Err(e) => eprintln!("swaptrace lab: {e}"),
            }
        } else {
            journal::done(self.j_swapon.take());
        }
        if self.id == u32::MAX {
            return;
        }
        match remove_zram(self.id) {
            Ok(_) => journal::done(self.j_dev.take()),
            Err(e) => eprintln!("swaptrace lab: {e}"),
        }
    }
}

/// zram device `id` removed (`hot_remove`), if it is still there.
pub(super) fn remove_zram(id: u32) -> Result<String> {
    if !Path::new("/sys/block").join(format!("zram{id}")).exists() {
        return Ok("already gone".into());
    }
    write_file(&Path::new(ZRAM_CONTROL).join("hot_remove"), &id.to_string())?;
    Ok("removed".into())
}

/// swapon(2) of `target` at `priority`, journaled in `entry` as `shown`
/// (what /proc/swaps lists) before it is made.
fn swapon_journaled(
    target: &Path,
    shown: &Path,
    priority: Option<i32>,
    entry: &mut Option<Entry>,
) -> Result<()> {
    let flags = match priority {
        None => 0,
        Some(p) if (0..=SWAP_FLAG_PRIO_MASK).contains(&p) => SWAP_FLAG_PREFER | p,
        Some(p) => {
            return Err(LabError::Unsupported(format!(
                "swap priority {p} (0 to {SWAP_FLAG_PRIO_MASK})"
            )))
        }
    };
    *entry = journal::begin(Change::Swapon {
        path: shown.to_path_buf(),
    })?;
    let c = cstring(target)?;
    // SAFETY: valid NUL-terminated path.
    if unsafe { libc::swapon(c.as_ptr(), flags) } != 0 {
        return Err(io_err(format!("swapon {}", shown.display()))(
            io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// Loop devices whose backing file is `file` (/sys/block/loopN/loop/backing_file).
pub fn loops_of(file: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    let Ok(rd) = fs::read_dir("/sys/block") else {
        return v;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("loop") {
            continue;
        }
        let Ok(b) = fs::read_to_string(e.path().join("loop/backing_file")) else {
            continue;
        };
        let b = b.trim_end_matches('\n');
        let b = b.strip_suffix(" (deleted)").unwrap_or(b);
        if Path::new(b) == file {
            v.push(Path::new("/dev").join(name));
        }
    }
    v.sort();
    v
}

/// Detach every loop device over a dead run's swap file.
pub(super) fn detach_loops_of(file: &Path) -> Result<String> {
    let devs = loops_of(file);
    if devs.is_empty() {
        return Ok("none attached".into());
    }
    for d in &devs {
        run_tool("losetup", &[OsStr::new("-d"), d.as_os_str()])?;
    }
    Ok(format!(
        "detached {}",
        devs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    ))
}

/// Delete a dead run's swap file: only a regular file named as the lab
/// names them, owned by root, mode 0600 (never what someone put there).
pub(super) fn remove_swap_file(path: &Path) -> Result<String> {
    let md = match fs::symlink_metadata(path) {
        Ok(md) => md,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok("already gone".into()),
        Err(e) => return Err(io_err(format!("stat {}", path.display()))(e)),
    };
    let named = path
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(SWAP_PREFIX));
    if !named || !md.file_type().is_file() || md.uid() != 0 || md.mode() & 0o7777 != 0o600 {
        return Err(LabError::Unsupported(format!(
            "{} is not a swap file the lab made (type, owner or mode); left alone",
            path.display()
        )));
    }
    fs::remove_file(path).map_err(io_err(format!("removing {}", path.display())))?;
    Ok("deleted".into())
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

/// Whether a block device's driver marks it synchronous
/// (BLK_FEAT_SYNCHRONOUS, which sysfs does not show): zram, brd (`ram`N)
/// and pmem, by the whole disk's name; a partition is its disk's.
fn synchronous_of(dev: u64) -> Option<bool> {
    let dir = sys_block_dir(dev)?;
    let disk = if dir.join("partition").exists() {
        dir.parent()?.to_path_buf()
    } else {
        dir
    };
    Some(synchronous_name(&disk.file_name()?.to_string_lossy()))
}

pub(super) fn synchronous_name(disk: &str) -> bool {
    let numbered = |prefix: &str| {
        disk.strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    numbered("zram") || numbered("ram") || disk.starts_with("pmem")
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
    /// A device whose reads complete synchronously (zram, brd, pmem: the
    /// kernel's SWP_SYNCHRONOUS_IO): `do_swap_page()` reads a page not
    /// shared by fork alone, without readahead or the swap cache. None
    /// where unknown (older traces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synchronous: Option<bool>,
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
            synchronous: None,
        });
    }
    Ok(v)
}

/// Active swap devices from /proc/swaps, with their rotational flag.
pub fn swap_devices() -> Result<Vec<SwapDevice>> {
    let mut v = parse_proc_swaps(&read_file(Path::new("/proc/swaps"))?)?;
    for d in &mut v {
        let dev = fs::metadata(&d.path).ok().map(|md| {
            if d.kind == "file" {
                md.dev()
            } else {
                md.rdev()
            }
        });
        d.rotational = dev.and_then(rotational_of);
        d.synchronous = dev.and_then(synchronous_of);
    }
    Ok(v)
}
