//! Every file swaptrace writes goes through here: a temporary file in the
//! target directory (O_CREAT|O_EXCL|O_NOFOLLOW, an unpredictable name,
//! retried on collision), renamed into place when complete (a recording:
//! when it starts, so that a killed one leaves its trace). rename(2) and
//! link(2) replace or refuse a symlink at the target, never follow it, so a
//! link planted in a sticky directory is not written through; as root one
//! is refused outright. An output that is one of the command's inputs (same
//! device and inode, or the same canonical path) is refused, and an existing
//! file is only replaced with `force`.

use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{path}: {err}")]
    Io { path: String, err: std::io::Error },
    #[error("{path} exists (give --force to replace it)")]
    Exists { path: String },
    #[error("{path} is also an input ({input}): refusing to write over it")]
    IsInput { path: String, input: String },
    #[error("{path} is a symbolic link: refusing to write through it as root")]
    Symlink { path: String },
}

/// How an output may be written.
#[derive(Clone, Debug, Default)]
pub struct OutputPolicy {
    /// Replace an existing file.
    pub force: bool,
    /// The command's inputs: never written over.
    pub inputs: Vec<PathBuf>,
}

impl OutputPolicy {
    /// Replaces whatever is at the path (but still never an input or a
    /// symlink as root): what a library caller without a `--force` gets.
    pub fn replace() -> OutputPolicy {
        OutputPolicy {
            force: true,
            inputs: Vec::new(),
        }
    }

    pub fn new(force: bool, inputs: &[&Path]) -> OutputPolicy {
        OutputPolicy {
            force,
            inputs: inputs.iter().map(|p| p.to_path_buf()).collect(),
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OutputError + '_ {
    move |err| OutputError::Io {
        path: path.display().to_string(),
        err,
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Refuses `path` when writing it would break `policy`. Called before any
/// work is done, and again when the file is put in place.
pub fn check(path: &Path, policy: &OutputPolicy) -> Result<(), OutputError> {
    let shown = || path.display().to_string();
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => return Err(io(path)(e)),
    };
    let target = std::fs::metadata(path).ok();
    let canon = std::fs::canonicalize(path).ok();
    for input in &policy.inputs {
        let same_inode = match (&target, std::fs::metadata(input)) {
            (Some(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        };
        let same_path = canon.is_some() && canon == std::fs::canonicalize(input).ok();
        if same_inode || same_path || path == input.as_path() {
            return Err(OutputError::IsInput {
                path: shown(),
                input: input.display().to_string(),
            });
        }
    }
    let Some(meta) = meta else { return Ok(()) };
    if meta.file_type().is_symlink() && is_root() {
        return Err(OutputError::Symlink { path: shown() });
    }
    if special(path) {
        return Ok(());
    }
    if !policy.force {
        return Err(OutputError::Exists { path: shown() });
    }
    Ok(())
}

/// An existing output that is neither a regular file nor a directory (a
/// device such as /dev/null, a FIFO): written in place, never renamed over.
fn special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.file_type().is_file() && !m.is_dir())
}

/// A file being written: a temporary name until [`OutputFile::commit`];
/// removed if dropped before. A device or FIFO is written in place.
#[derive(Debug)]
pub struct OutputFile {
    file: File,
    at: At,
    path: PathBuf,
    policy: OutputPolicy,
}

/// Where an [`OutputFile`]'s bytes go.
#[derive(Debug)]
enum At {
    /// A temporary file beside the target, renamed over it at commit.
    Temp(PathBuf),
    /// The target itself, an existing device or FIFO: never synced or renamed.
    Special,
    /// The target, renamed into place early ([`OutputFile::publish`]).
    Placed,
}

impl OutputFile {
    /// Checks `path` against `policy` and creates the temporary file beside
    /// it with `mode` (0600 for traces).
    pub fn create(
        path: &Path,
        policy: &OutputPolicy,
        mode: u32,
    ) -> Result<OutputFile, OutputError> {
        check(path, policy)?;
        if special(path) {
            let file = OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_CLOEXEC)
                .open(path)
                .map_err(io(path))?;
            return Ok(OutputFile {
                file,
                at: At::Special,
                path: path.to_path_buf(),
                policy: policy.clone(),
            });
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "out".into());
        let seed = std::collections::hash_map::RandomState::new();
        for attempt in 0u32..64 {
            let mut h = seed.build_hasher();
            h.write_u32(attempt);
            h.write_u32(std::process::id());
            let tmp = dir.join(format!(".{name}.{:016x}.tmp", h.finish()));
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&tmp)
            {
                Ok(file) => {
                    return Ok(OutputFile {
                        file,
                        at: At::Temp(tmp),
                        path: path.to_path_buf(),
                        policy: policy.clone(),
                    })
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io(path)(e)),
            }
        }
        Err(io(path)(std::io::Error::new(
            ErrorKind::AlreadyExists,
            "no free temporary name after 64 tries",
        )))
    }

    pub fn file(&self) -> &File {
        &self.file
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Syncs the data and puts the file in place: rename(2), or when nothing
    /// may be replaced renameat2(RENAME_NOREPLACE) (link(2) where the file
    /// system lacks it), which fails if something appeared meanwhile.
    pub fn commit(mut self) -> Result<(), OutputError> {
        if let At::Special = self.at {
            // fsync(2) of a device or FIFO is EINVAL, and there is nothing to rename.
            return Ok(());
        }
        self.file.sync_all().map_err(io(&self.path))?;
        self.place()
    }

    /// Puts the file in place now, while it is still written: a recording,
    /// so that a killed run leaves its trace under its name, readable up to
    /// its last chunk. [`OutputFile::commit`] then only syncs it.
    pub fn publish(&mut self) -> Result<(), OutputError> {
        self.place()
    }

    /// Renames the temporary file over the target (nothing to do otherwise).
    fn place(&mut self) -> Result<(), OutputError> {
        let At::Temp(tmp) = &self.at else {
            return Ok(());
        };
        check(&self.path, &self.policy)?;
        let placed = if self.policy.force {
            std::fs::rename(tmp, &self.path)
        } else {
            rename_noreplace(tmp, &self.path)
        };
        match placed {
            Ok(()) => {
                self.at = At::Placed;
                Ok(())
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Err(OutputError::Exists {
                path: self.path.display().to_string(),
            }),
            Err(e) => Err(io(&self.path)(e)),
        }
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if let At::Temp(tmp) = &self.at {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(ErrorKind::InvalidInput, e))
    };
    let (a, b) = (c(from)?, c(to)?);
    // The raw system call: musl (the static build) has no renameat2().
    // SAFETY: both are valid NUL-terminated paths that outlive the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::ENOSYS) => {
            std::fs::hard_link(from, to).and_then(|()| std::fs::remove_file(from))
        }
        _ => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    /// Files in `dir`: the outputs, and any temporary file left beside them.
    fn entries(dir: &Path) -> usize {
        std::fs::read_dir(dir).unwrap().count()
    }

    #[test]
    fn a_file_that_appears_meanwhile_is_not_replaced_and_nothing_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.swt");
        let out = OutputFile::create(&path, &OutputPolicy::default(), 0o600).unwrap();
        out.file().write_all(b"new").unwrap();
        std::fs::write(&path, b"theirs").unwrap();
        assert!(matches!(out.commit(), Err(OutputError::Exists { .. })));
        assert_eq!(std::fs::read(&path).unwrap(), b"theirs");
        assert_eq!(entries(dir.path()), 1, "the temporary file is removed");
    }

    #[test]
    fn a_committed_file_has_its_mode_and_a_dropped_one_vanishes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.swt");
        let out = OutputFile::create(&path, &OutputPolicy::default(), 0o600).unwrap();
        out.file().write_all(b"data").unwrap();
        out.commit().unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let other = dir.path().join("u.swt");
        drop(OutputFile::create(&other, &OutputPolicy::default(), 0o600).unwrap());
        assert_eq!(entries(dir.path()), 1);
    }

    /// A FIFO (as /dev/null or a pipe) is written in place, without
    /// --force: never renamed over, nothing left beside it.
    #[test]
    fn a_fifo_or_device_is_written_in_place_not_replaced() {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pipe");
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let path = path.clone();
            std::thread::spawn(move || std::fs::read(path).unwrap())
        };
        let mut out = OutputFile::create(&path, &OutputPolicy::default(), 0o600).unwrap();
        out.file().write_all(b"through").unwrap();
        // As a recording does: published early, then committed (no fsync).
        out.publish().unwrap();
        out.commit().unwrap();
        assert_eq!(reader.join().unwrap(), b"through");
        assert!(std::fs::metadata(&path).unwrap().file_type().is_fifo());
        assert_eq!(entries(dir.path()), 1, "a temporary file was left");
    }

    /// A published file (a recording) is in place while it is written, is
    /// kept if the writer dies before committing, and still refuses to
    /// replace what it may not.
    #[test]
    fn a_published_file_is_in_place_at_once_and_survives_a_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.swt");
        let mut out = OutputFile::create(&path, &OutputPolicy::default(), 0o600).unwrap();
        out.file().write_all(b"head").unwrap();
        out.publish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"head");
        out.file().write_all(b"+more").unwrap();
        drop(out);
        assert_eq!(std::fs::read(&path).unwrap(), b"head+more");
        assert_eq!(entries(dir.path()), 1, "a temporary file was left");
        // Without force, a file that appeared meanwhile is not replaced.
        let other = dir.path().join("u.swt");
        let mut strict = OutputFile::create(&other, &OutputPolicy::default(), 0o600).unwrap();
        std::fs::write(&other, b"theirs").unwrap();
        assert!(matches!(strict.publish(), Err(OutputError::Exists { .. })));
        drop(strict);
        assert_eq!(std::fs::read(&other).unwrap(), b"theirs");
        assert_eq!(entries(dir.path()), 2, "a temporary file was left");
    }
}
