//! The `swaptrace` binary: parses the command line and dispatches to one
//! file per subcommand under `cli/`.

use clap::Parser;

mod cli;

fn main() {
    // Exit quietly when the reader of stdout goes away (`| head`), as CLI tools do.
    // SAFETY: restoring the default disposition of SIGPIPE before any threads.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    if let Err(e) = cli::run(cli::Cli::parse()) {
        eprintln!("swaptrace: {}", chain(&e));
        std::process::exit(1);
    }
}

/// The error and its causes joined by ": ", each cause once: a cause whose
/// text the message already holds (an OS error kept in both) is left out.
fn chain(e: &anyhow::Error) -> String {
    let mut out = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !out.contains(&c) {
            out.push_str(": ");
            out.push_str(&c);
        }
    }
    out
}
