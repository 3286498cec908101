//! The `mheta` command line (a thin front end over the `mheta_cli` library).

fn main() -> std::process::ExitCode {
    mheta_cli::entry::main(std::env::args_os().collect())
}
