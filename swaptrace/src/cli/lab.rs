//! `swaptrace lab`: the lab's journaled changes for scripts
//! (examples/lib.sh), and `lab restore` for what a killed run left.

use anyhow::{bail, Result};
use std::path::PathBuf;
use swaptrace::lab::{self, journal};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Subcommand)]
enum Cmd {
    /// Undo what dead runs left (swap, loop devices, cgroups, knobs,
    /// processes), as journaled under /run/swaptrace. With --owner, undo
    /// that pid's changes even while it runs (a script's own cleanup).
    Restore {
        /// Restore this owner's journal, alive or not.
        #[arg(long)]
        owner: Option<u32>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write a sysfs/procfs knob; its old value is journaled for --owner.
    Knob {
        path: PathBuf,
        value: String,
        /// The process the change belongs to (default: the parent, i.e. the
        /// calling script); it is undone once that process is gone.
        #[arg(long)]
        owner: Option<u32>,
    },
    /// Turn on a swap file (or a loop device over one) of SIZE; prints what
    /// was swapon'ed.
    Swap {
        #[arg(value_parser = super::parse_size_arg)]
        size: u64,
        /// Put the swap on a loop device marked rotational (1) or not (0).
        #[arg(long, value_parser = clap::value_parser!(u8).range(0..=1))]
        rotational: Option<u8>,
        /// Swap on a new zram device of SIZE instead (compressed RAM, read
        /// synchronously: no readahead for unshared pages).
        #[arg(long, conflicts_with_all = ["rotational", "dir"])]
        zram: bool,
        /// Swap priority (0 to 32767).
        #[arg(long)]
        prio: Option<i32>,
        /// Where the swap file is made (a block-backed filesystem).
        #[arg(long, default_value = "/var/tmp")]
        dir: PathBuf,
        /// As for `knob`.
        #[arg(long)]
        owner: Option<u32>,
    },
    /// Record workload shapes under cluster and VMA readahead, replay
    /// each trace through both policies, and print how close each comes
    /// to its own runs and to the other policy's (root; several minutes).
    Fidelity(super::fidelity::Args),
    /// Make a memory cgroup (v1) limited to BYTES; prints its path.
    Cgroup {
        #[arg(value_parser = super::parse_size_arg)]
        bytes: u64,
        /// As for `knob`.
        #[arg(long)]
        owner: Option<u32>,
    },
}

/// Journal for `owner`, the parent by default; it must be running.
fn own(owner: Option<u32>) -> Result<()> {
    lab::require_root()?;
    // SAFETY: getppid has no preconditions.
    let pid = owner.unwrap_or_else(|| unsafe { libc::getppid() } as u32);
    if journal::start_time(pid).is_none() {
        bail!("owner pid {pid} is not running");
    }
    journal::restore_dead_reporting();
    journal::set_owner(pid);
    Ok(())
}

pub fn run(a: Args) -> Result<()> {
    match a.cmd {
        Cmd::Restore { owner, json } => {
            lab::require_root()?;
            let done = match owner {
                Some(pid) => journal::restore_owner(pid)?,
                None => journal::restore_dead()?,
            };
            if json {
                super::print_json(&done)?;
            } else if done.is_empty() {
                println!("nothing to restore");
            } else {
                for r in &done {
                    print!("{}", journal::restored_text(r));
                }
            }
            if owner.is_none() {
                for (pid, n) in journal::running_owners()? {
                    eprintln!(
                        "swaptrace lab: pid {pid} is running and has {n} change(s) not undone; left alone (`lab restore --owner {pid}` undoes them)"
                    );
                }
            }
            if done.iter().any(|r| !r.removed) {
                bail!("some changes could not be undone; they stay in the journal");
            }
        }
        Cmd::Knob { path, value, owner } => {
            own(owner)?;
            lab::Knob::set(&path, &value)?.keep();
        }
        Cmd::Swap {
            size,
            rotational,
            zram,
            prio,
            dir,
            owner,
        } => {
            own(owner)?;
            if zram {
                let z = lab::Zram::swap_on(size, prio)?;
                println!("{}", z.path().display());
                z.keep();
                return Ok(());
            }
            std::fs::create_dir_all(&dir)?;
            let sf = match rotational {
                Some(r) => lab::SwapFile::on_loop(&dir, size, r == 1, prio)?,
                None => lab::SwapFile::create(&dir, size, prio)?,
            };
            println!("{}", sf.path().display());
            sf.keep();
        }
        Cmd::Fidelity(f) => super::fidelity::run(f)?,
        Cmd::Cgroup { bytes, owner } => {
            own(owner)?;
            let cg = lab::MemCgroup::create("swaptrace-lab-", bytes)?;
            println!("{}", cg.path().display());
            cg.keep();
        }
    }
    Ok(())
}
