//! The `mheta` command line (a thin front end over `mheta_analyzer::cli`).

use std::process::ExitCode;

use clap::Parser;
use mheta_analyzer::cli::{Cli, Reported};

fn main() -> ExitCode {
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
