//! The `mheta` command line (a thin front end over `mheta_analyzer::cli`).

use std::process::ExitCode;

use clap::Parser;
use mheta_analyzer::cli::{Cli, Reported};

fn main() -> ExitCode {
    // Like other Unix filters, end quietly when the reader of stdout goes away
    // (`mheta analyze … | head`): Rust ignores SIGPIPE, which turns every later `println!` into
    // a panic.
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any thread exists; SIG_DFL is a valid action.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    match cli.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            match e.downcast_ref::<Reported>() {
                Some(r) => eprintln!("error: {r}"),
                None => eprintln!("error: {e:#}"),
            }
            ExitCode::from(1)
        }
    }
}
