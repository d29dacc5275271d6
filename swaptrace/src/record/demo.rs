//! A recording of the built-in workload (or a given command) under real
//! memory pressure: a temporary swap file and a memory cgroup, both removed
//! afterwards.

use super::live::{record, RecordError, RecordOptions, Recorded};
use crate::lab::{MemCgroup, SwapFile};
use crate::workload::WorkloadSpec;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct DemoOptions {
    pub workload: WorkloadSpec,
    /// A command to run instead of the built-in workload.
    pub command: Option<Vec<String>>,
    /// memory.limit_in_bytes of the cgroup the workload runs in.
    pub limit_bytes: u64,
    pub swap_bytes: u64,
    /// Where the temporary swap file goes (a block-backed filesystem, not tmpfs).
    pub swap_dir: PathBuf,
    pub output: PathBuf,
    /// Put swap on a non-rotational loop device (VMA readahead) instead of a plain file.
    pub loop_device: bool,
    pub progress: bool,
}

/// The command line that runs the built-in workload in a child process.
pub fn workload_command(exe: &Path, w: &WorkloadSpec) -> Vec<String> {
    let mut cmd = vec![
        exe.display().to_string(),
        "workload".into(),
        "--size".into(),
        w.size_bytes.to_string(),
        "--pattern".into(),
        w.pattern.to_string(),
        "--passes".into(),
        w.passes.to_string(),
        "--seed".into(),
        w.seed.to_string(),
        "--zero-every".into(),
        w.zero_every.to_string(),
    ];
    for (on, flag) in [
        (w.hold, "--hold"),
        (w.pageout, "--pageout"),
        (w.thp, "--thp"),
        (w.hold_after, "--hold-after"),
        (w.shared, "--shared"),
        (w.huge, "--huge"),
    ] {
        if on {
            cmd.push(flag.into());
        }
    }
    if w.procs > 1 {
        cmd.extend(["--procs".into(), w.procs.to_string()]);
    }
    if w.read_order != crate::workload::ReadOrder::Address {
        cmd.extend(["--read-order".into(), w.read_order.to_string()]);
    }
    if w.fork_read {
        cmd.push("--fork-read".into());
    }
    if w.regions > 1 {
        cmd.extend(["--regions".into(), w.regions.to_string()]);
    }
    if w.fill > 0 {
        cmd.extend(["--fill".into(), w.fill.to_string()]);
    }
    if !w.skip_every.is_empty() {
        let list: Vec<String> = w.skip_every.iter().map(u32::to_string).collect();
        cmd.extend(["--skip-every".into(), list.join(",")]);
    }
    if w.threads > 1 {
        cmd.extend(["--threads".into(), w.threads.to_string()]);
    }
    if w.rounds > 1 {
        cmd.extend(["--rounds".into(), w.rounds.to_string()]);
    }
    if w.moves > 0 {
        cmd.extend(["--moves".into(), w.moves.to_string()]);
    }
    if w.purge > 0 {
        cmd.extend(["--purge".into(), w.purge.to_string()]);
    }
    if w.populate > 0 {
        cmd.extend(["--populate".into(), w.populate.to_string()]);
    }
    if w.willneed > 0 {
        cmd.extend(["--willneed".into(), w.willneed.to_string()]);
    }
    cmd
}

/// Sets up swap and the cgroup, records the workload run by `exe` (or
/// `o.command`), restores.
pub fn run_demo(exe: &Path, o: &DemoOptions) -> Result<Recorded, RecordError> {
    crate::lab::require_root()?;
    crate::lab::journal::restore_dead_reporting();
    std::fs::create_dir_all(&o.swap_dir).map_err(|source| RecordError::Io {
        what: o.swap_dir.display().to_string(),
        source,
    })?;
    let _swap = if o.loop_device {
        SwapFile::on_loop(&o.swap_dir, o.swap_bytes, false, None)?
    } else {
        SwapFile::create(&o.swap_dir, o.swap_bytes, None)?
    };
    let cg = MemCgroup::create("swaptrace-demo-", o.limit_bytes)?;
    record(&RecordOptions {
        output: o.output.clone(),
        command: o
            .command
            .clone()
            .unwrap_or_else(|| workload_command(exe, &o.workload)),
        spawn_cgroup: Some(cg.path().to_path_buf()),
        progress: o.progress,
        // Its summary line joins ours on stderr: stdout may carry JSON.
        stdout_to_stderr: true,
        ..RecordOptions::default()
    })
}

#[cfg(test)]
mod tests {
    use super::workload_command;
    use crate::workload::{Pattern, ReadOrder, WorkloadSpec};
    use std::path::Path;

    /// Every field of the spec reaches the child's command line: a spec
    /// that differs from the default in one field gives another command.
    #[test]
    fn every_workload_setting_reaches_the_command() {
        let base = WorkloadSpec::default();
        let changed: Vec<(&str, WorkloadSpec)> = vec![
            (
                "size",
                WorkloadSpec {
                    size_bytes: 1 << 20,
                    ..base.clone()
                },
            ),
            (
                "pattern",
                WorkloadSpec {
                    pattern: Pattern::Sequential,
                    ..base.clone()
                },
            ),
            (
                "passes",
                WorkloadSpec {
                    passes: 2,
                    ..base.clone()
                },
            ),
            (
                "seed",
                WorkloadSpec {
                    seed: 9,
                    ..base.clone()
                },
            ),
            (
                "zero_every",
                WorkloadSpec {
                    zero_every: 3,
                    ..base.clone()
                },
            ),
            (
                "hold",
                WorkloadSpec {
                    hold: true,
                    ..base.clone()
                },
            ),
            (
                "pageout",
                WorkloadSpec {
                    pageout: true,
                    ..base.clone()
                },
            ),
            (
                "fill",
                WorkloadSpec {
                    fill: 2,
                    ..base.clone()
                },
            ),
            (
                "skip_every",
                WorkloadSpec {
                    skip_every: vec![2, 5],
                    ..base.clone()
                },
            ),
            (
                "thp",
                WorkloadSpec {
                    thp: true,
                    ..base.clone()
                },
            ),
            (
                "hold_after",
                WorkloadSpec {
                    hold_after: true,
                    ..base.clone()
                },
            ),
            (
                "procs",
                WorkloadSpec {
                    procs: 2,
                    ..base.clone()
                },
            ),
            (
                "read_order",
                WorkloadSpec {
                    read_order: ReadOrder::Random,
                    ..base.clone()
                },
            ),
            (
                "fork_read",
                WorkloadSpec {
                    fork_read: true,
                    ..base.clone()
                },
            ),
            (
                "regions",
                WorkloadSpec {
                    regions: 2,
                    ..base.clone()
                },
            ),
            (
                "rounds",
                WorkloadSpec {
                    rounds: 2,
                    ..base.clone()
                },
            ),
            (
                "shared",
                WorkloadSpec {
                    shared: true,
                    ..base.clone()
                },
            ),
            (
                "threads",
                WorkloadSpec {
                    threads: 2,
                    ..base.clone()
                },
            ),
            (
                "moves",
                WorkloadSpec {
                    moves: 2,
                    ..base.clone()
                },
            ),
            (
                "huge",
                WorkloadSpec {
                    huge: true,
                    ..base.clone()
                },
            ),
            (
                "purge",
                WorkloadSpec {
                    purge: 32,
                    ..base.clone()
                },
            ),
            (
                "populate",
                WorkloadSpec {
                    populate: 16,
                    ..base.clone()
                },
            ),
            (
                "willneed",
                WorkloadSpec {
                    willneed: 16,
                    ..base.clone()
                },
            ),
        ];
        // As many as the spec has fields (its JSON keys).
        let fields = serde_json::to_value(&base)
            .unwrap()
            .as_object()
            .unwrap()
            .len();
        assert_eq!(
            changed.len(),
            fields,
            "a field of WorkloadSpec is not tried here"
        );
        let exe = Path::new("/x");
        let plain = workload_command(exe, &base);
        for (name, spec) in changed {
            assert_ne!(
                workload_command(exe, &spec),
                plain,
                "{name} is not passed on"
            );
        }
    }
}
