//! What both front ends run (`mheta` and `cargo mheta`): parse the command line, run the
//! subcommand on a large stack, print the error.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser as _;

use crate::{Cli, Reported};

/// The stack every subcommand runs on. Analysis builds and walks syntax trees recursively (syn
/// and every pass), so deeply nested input (thousands of nested parentheses, a sum of 30,000
/// terms, a chain of 100,000 method calls) needs far more than the main thread's 8 MiB, and
/// overflowing a stack aborts the process. The address space is reserved, not used: only the
/// pages a deep input touches are committed.
const STACK_BYTES: usize = 1 << 30;

/// Runs the command line `argv` (the first item is the program name clap prints in help and
/// errors); the process's exit code.
pub fn main(argv: Vec<OsString>) -> ExitCode {
    // Like other Unix filters, end quietly when the reader of stdout goes away
    // (`mheta analyze … | head`): Rust ignores SIGPIPE, which turns every later `println!` into
    // a panic.
    #[cfg(unix)]
    // SAFETY: called first thing in both binaries' `main`, before any thread exists; SIG_DFL is
    // a valid action.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        // `--help` and `--version` go to stdout, which may refuse them like any other output.
        Err(e) if !e.use_stderr() => {
            if let Err(io) = e
                .print()
                .and_then(|()| std::io::Write::flush(&mut std::io::stdout()))
            {
                eprintln!("error: cannot write to standard output: {io}");
                return ExitCode::from(1);
            }
            return ExitCode::SUCCESS;
        }
        Err(e) => e.exit(),
    };
    let outcome = on_big_stack(move || cli.run());
    // A SIGINT, SIGTERM or SIGHUP being cleaned up (`tune`'s programs ended, its files removed)
    // ends the process by that signal: not with the error its ended child made of it.
    mheta_runtime::cleanup::await_signal();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            report(&e);
            ExitCode::from(1)
        }
    }
}

/// Prints `e` as the front ends do: `error: ` and the message with its causes.
pub fn report(e: &anyhow::Error) {
    match e.downcast_ref::<Reported>() {
        Some(r) => eprintln!("error: {r}"),
        None => eprintln!("error: {}", describe(e)),
    }
}

/// Runs `f` on a thread with [`STACK_BYTES`] of stack, or on this one should the system refuse
/// to create it; a panic in `f` goes on unwinding here.
fn on_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let mut f = Some(f);
    let spawned = std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .name("mheta".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, || f.take().expect("runs once")());
        thread.ok().map(|handle| {
            handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    });
    spawned.unwrap_or_else(|| f.take().expect("not run when the thread was refused")())
}

/// The error and its causes joined by `: ` (as `{:#}` does), leaving out a cause whose text the
/// message already holds: errors that print their source, and also return it as their
/// `source()`, said "No such file or directory (os error 2)" twice.
fn describe(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}
