//! Robustness run: the analyzer over every `.rs` file under a directory (by default the local
//! cargo registry, thousands of real files nobody here wrote).
//!
//! Each file goes through `analyze_source` under `catch_unwind`. The run prints the number of
//! files and bytes, the wall time, every panic (file and message), the files that took longer than
//! the slow threshold, how many files yielded a structure with at least one solver, and the
//! diagnostics by level. It exits with status 1 if anything panicked.
//!
//! Real-world files rarely communicate, so by themselves they only reach parsing and the solver
//! search. With `--force-solvers` every function is first marked `#[mheta::solver]` and the first
//! loop in statement position `#[mheta::iterate]` (inserted at their source positions,
//! so the layout is kept), so that lowering, the automaton and the classification run on real
//! code too.
//!
//! ```sh
//! cargo run --release -p mheta-analyzer --example robustness -- [DIR] [--slow SECONDS] [--progress] [--force-solvers]
//! ```

use std::collections::HashMap;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mheta_analyzer::{analyze_source, Options};
use mheta_format::Level;
use proc_macro2::LineColumn;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};

/// What the command line asks for.
struct Settings {
    root: PathBuf,
    slow: Duration,
    progress: bool,
    force_solvers: bool,
}

/// Running totals over all files.
#[derive(Default)]
struct Tally {
    files: usize,
    bytes: u64,
    unreadable: Vec<(PathBuf, String)>,
    panics: Vec<(PathBuf, String)>,
    slow: Vec<(PathBuf, Duration)>,
    with_solver: usize,
    solvers: usize,
    with_errors: usize,
    with_warnings: usize,
    errors: usize,
    warnings: usize,
    slowest: Option<(PathBuf, Duration)>,
    /// Loops marked `#[mheta::iterate]` by `--force-solvers`.
    marked_loops: usize,
    /// Diagnostic messages with quoted names removed, by level, with their counts.
    kinds: HashMap<(Level, String), usize>,
}

fn main() -> ExitCode {
    let settings = match parse_args(std::env::args().skip(1)) {
        Ok(s) => s,
        Err(message) => {
            eprintln!("robustness: {message}");
            eprintln!("usage: robustness [DIR] [--slow SECONDS] [--progress] [--force-solvers]");
            return ExitCode::from(2);
        }
    };

    let mut files = Vec::new();
    if let Err(e) = collect_rs_files(&settings.root, &mut files) {
        eprintln!("robustness: cannot walk {}: {e}", settings.root.display());
        return ExitCode::from(2);
    }
    files.sort();

    // Panics are caught and reported below; keep the default hook from printing each one, but
    // remember its message.
    let last_panic = Arc::new(Mutex::new(String::new()));
    let hook_slot = Arc::clone(&last_panic);
    panic::set_hook(Box::new(move |info| {
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic payload".to_string());
        if let Ok(mut slot) = hook_slot.lock() {
            *slot = format!("{payload}{at}");
        }
    }));

    let options = Options::default();
    let mut tally = Tally::default();
    let started = Instant::now();
    for path in &files {
        if settings.progress {
            eprintln!("{}", path.display());
        }
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => {
                tally.unreadable.push((path.clone(), e.to_string()));
                continue;
            }
        };
        tally.bytes += bytes.len() as u64;
        let Ok(source) = String::from_utf8(bytes) else {
            tally
                .unreadable
                .push((path.clone(), "not UTF-8".to_string()));
            continue;
        };
        let source = if settings.force_solvers {
            // Unparsable files go through unchanged: the analyzer must report them.
            match force_solvers(&source) {
                Some((marked, loops)) => {
                    tally.marked_loops += loops;
                    marked
                }
                None => source,
            }
        } else {
            source
        };
        tally.files += 1;
        let name = path.display().to_string();

        let t0 = Instant::now();
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            analyze_source(&name, &source, &options)
        }));
        let took = t0.elapsed();
        if took > settings.slow {
            tally.slow.push((path.clone(), took));
        }
        if tally.slowest.as_ref().map_or(true, |(_, d)| took > *d) {
            tally.slowest = Some((path.clone(), took));
        }

        match outcome {
            Err(_) => {
                let message = last_panic.lock().map(|m| m.clone()).unwrap_or_default();
                tally.panics.push((path.clone(), message));
            }
            Ok(analysis) => {
                let solvers = &analysis.structure.solvers;
                if !solvers.is_empty() {
                    tally.with_solver += 1;
                    tally.solvers += solvers.len();
                }
                for d in &analysis.diagnostics {
                    *tally
                        .kinds
                        .entry((d.level, message_kind(&d.message)))
                        .or_default() += 1;
                }
                let levels: Vec<Level> = analysis.diagnostics.iter().map(|d| d.level).collect();
                let errors = levels.iter().filter(|l| **l == Level::Error).count();
                let warnings = levels.len() - errors;
                tally.errors += errors;
                tally.warnings += warnings;
                tally.with_errors += usize::from(errors > 0 || analysis.has_errors());
                tally.with_warnings += usize::from(warnings > 0);
            }
        }
    }
    let wall = started.elapsed();
    let _ = panic::take_hook();

    report(&settings, &tally, wall);
    if tally.panics.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn report(settings: &Settings, t: &Tally, wall: Duration) {
    println!("root:              {}", settings.root.display());
    let mode = if settings.force_solvers {
        "every fn a solver (--force-solvers)"
    } else {
        "as written"
    };
    println!("mode:              {mode}");
    println!("files analysed:    {}", t.files);
    println!(
        "bytes:             {} ({:.1} MiB)",
        t.bytes,
        t.bytes as f64 / (1024.0 * 1024.0)
    );
    println!(
        "wall time:         {:.3} s ({:.1} MiB/s)",
        wall.as_secs_f64(),
        t.bytes as f64 / (1024.0 * 1024.0) / wall.as_secs_f64().max(1e-9)
    );
    println!(
        "skipped:           {} (unreadable or not UTF-8)",
        t.unreadable.len()
    );
    println!("panics:            {}", t.panics.len());
    for (path, message) in &t.panics {
        println!("  PANIC {}: {message}", path.display());
    }
    println!(
        "files with solver: {} ({} solvers)",
        t.with_solver, t.solvers
    );
    if settings.force_solvers {
        println!("marked main loops: {}", t.marked_loops);
    }
    println!(
        "diagnostics:       {} errors in {} files, {} warnings in {} files",
        t.errors, t.with_errors, t.warnings, t.with_warnings
    );
    let mut kinds: Vec<_> = t.kinds.iter().collect();
    kinds.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0 .1.cmp(&b.0 .1)));
    for ((level, kind), count) in kinds.into_iter().take(10) {
        let level = if *level == Level::Error {
            "error"
        } else {
            "warning"
        };
        println!("  {count:>6} {level}: {kind}");
    }
    if let Some((path, took)) = &t.slowest {
        println!(
            "slowest file:      {:.3} s  {}",
            took.as_secs_f64(),
            path.display()
        );
    }
    println!(
        "files over {:.1} s:  {}",
        settings.slow.as_secs_f64(),
        t.slow.len()
    );
    for (path, took) in &t.slow {
        println!("  SLOW {:.3} s  {}", took.as_secs_f64(), path.display());
    }
}

/// `source` with `#[mheta::solver] ` inserted before every function and `#[mheta::iterate] `
/// before its first loop in statement position, at their source positions (the layout
/// is kept), and the number of loops marked; `None` when it does not parse.
fn force_solvers(source: &str) -> Option<(String, usize)> {
    let file = syn::parse_file(source).ok()?;
    let mut marks = Vec::new();
    collect_marks(&file.items, &mut marks);
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(source.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let mut inserts: Vec<(usize, &str)> = marks
        .into_iter()
        .filter_map(|(at, text)| {
            let line_start = *line_starts.get(at.line.checked_sub(1)?)?;
            let rest = &source[line_start..];
            let byte = rest
                .char_indices()
                .nth(at.column)
                .map_or(rest.len(), |(b, _)| b);
            Some((line_start + byte, text))
        })
        .collect();
    let loops = inserts.iter().filter(|(_, text)| *text == ITERATE).count();
    inserts.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    let mut out = source.to_string();
    for (at, text) in inserts {
        out.insert_str(at, text);
    }
    Some((out, loops))
}

const SOLVER: &str = "#[mheta::solver] ";
const ITERATE: &str = "#[mheta::iterate] ";

fn collect_marks(items: &[syn::Item], marks: &mut Vec<(LineColumn, &'static str)>) {
    for item in items {
        match item {
            syn::Item::Fn(f) => mark_function(f.span().start(), &f.block, marks),
            syn::Item::Impl(block) => {
                for member in &block.items {
                    if let syn::ImplItem::Fn(m) = member {
                        mark_function(m.span().start(), &m.block, marks);
                    }
                }
            }
            syn::Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    collect_marks(items, marks);
                }
            }
            _ => {}
        }
    }
}

fn mark_function(
    start: LineColumn,
    block: &syn::Block,
    marks: &mut Vec<(LineColumn, &'static str)>,
) {
    marks.push((start, SOLVER));
    let mut finder = FirstLoop(None);
    finder.visit_block(block);
    if let Some(at) = finder.0 {
        marks.push((at, ITERATE));
    }
}

/// Finds the first loop in statement position (where an attribute is allowed), outside closures
/// and nested items, in source order.
struct FirstLoop(Option<LineColumn>);

impl<'ast> Visit<'ast> for FirstLoop {
    fn visit_stmt(&mut self, stmt: &'ast syn::Stmt) {
        if self.0.is_some() {
            return;
        }
        if let syn::Stmt::Expr(
            e @ (syn::Expr::ForLoop(_) | syn::Expr::While(_) | syn::Expr::Loop(_)),
            _,
        ) = stmt
        {
            self.0 = Some(e.span().start());
            return;
        }
        visit::visit_stmt(self, stmt);
    }

    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}

    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

/// A diagnostic message with every `quoted` name replaced by `…`, so that messages of one kind
/// count together.
fn message_kind(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut quoted = false;
    for c in message.chars() {
        if c == '`' {
            if !quoted {
                out.push_str("`…`");
            }
            quoted = !quoted;
        } else if !quoted {
            out.push(c);
        }
    }
    out.chars().take(100).collect()
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Settings, String> {
    let mut root = None;
    let mut slow = Duration::from_secs(1);
    let mut progress = false;
    let mut force_solvers = false;
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--slow" => {
                let value = args.next().ok_or("--slow needs a number of seconds")?;
                let secs: f64 = value
                    .parse()
                    .map_err(|_| format!("--slow: `{value}` is not a number of seconds"))?;
                if !(secs.is_finite() && secs > 0.0) {
                    return Err(format!(
                        "--slow: `{value}` must be a positive number of seconds"
                    ));
                }
                slow = Duration::from_secs_f64(secs);
            }
            "--progress" => progress = true,
            "--force-solvers" => force_solvers = true,
            flag if flag.starts_with("--") => return Err(format!("unknown flag `{flag}`")),
            dir => {
                if root.replace(PathBuf::from(dir)).is_some() {
                    return Err("more than one directory given".to_string());
                }
            }
        }
    }
    let root = match root {
        Some(r) => r,
        None => default_registry()?,
    };
    Ok(Settings {
        root,
        slow,
        progress,
        force_solvers,
    })
}

/// `$CARGO_HOME/registry/src`, else `~/.cargo/registry/src`.
fn default_registry() -> Result<PathBuf, String> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .ok_or("neither CARGO_HOME nor HOME is set; pass a directory")?;
    Ok(cargo_home.join("registry").join("src"))
}

/// Every regular `.rs` file under `dir`, not following symbolic links.
fn collect_rs_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let path = entry.path();
        if kind.is_dir() {
            collect_rs_files(&path, out)?;
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}
