//! The `swaptrace` binary: parses the command line and dispatches to one
//! file per subcommand under `cli/`.

use clap::Parser;

mod cli;

fn main() {
    // Exit quietly when the reader of stdout goes away (`| head`), as CLI tools do.
    // SAFETY: restoring the default disposition of SIGPIPE before any threads.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    if let Err(e) = cli::run(cli::Cli::parse()) {
        eprintln!("swaptrace: {e:#}");
        std::process::exit(1);
    }
}
