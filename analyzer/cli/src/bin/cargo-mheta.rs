//! `cargo mheta <subcommand>`: the `mheta` subcommands, run from inside a crate
//! (`mheta_cli::cargo`).

fn main() -> std::process::ExitCode {
    mheta_cli::cargo::main(std::env::args_os().collect())
}
