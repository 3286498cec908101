//! `mheta analyze PATH [--format json|text|dot] [--out FILE] [--trace]`.
//!
//! Prints diagnostics rustc-style on stderr. Exit status 0 means the structure was written (some
//! solver has a main loop; warnings and errors elsewhere allowed); 1 means no solver has one, and
//! nothing is written.

use std::path::PathBuf;

use mheta_analyzer::emit;

#[derive(Debug, clap::Args)]
pub struct AnalyzeArgs {
    /// A crate directory (with Cargo.toml) or a single .rs file.
    pub path: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    pub format: Format,
    /// Write the output to FILE instead of stdout (atomically).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print every token of the automaton with the state before and after it (on stderr).
    #[arg(long)]
    pub trace: bool,
}

/// The output formats of `--format` (`emit::Format`; the analysis library has no clap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Json,
    Text,
    Dot,
}

impl From<Format> for emit::Format {
    fn from(format: Format) -> Self {
        match format {
            Format::Json => emit::Format::Json,
            Format::Text => emit::Format::Text,
            Format::Dot => emit::Format::Dot,
        }
    }
}

pub fn run(args: &AnalyzeArgs) -> anyhow::Result<()> {
    if !args.path.exists() {
        anyhow::bail!("`{}` does not exist", args.path.display());
    }
    let options = mheta_analyzer::Options { trace: args.trace };
    let analysis = mheta_analyzer::analyze_path(&args.path, &options);
    if args.trace {
        eprint!("{}", analysis.render_trace());
    }
    let rendered = analysis.render_diagnostics();
    if !rendered.is_empty() {
        eprint!("{rendered}");
    }
    // A structure is written whenever some solver has a main loop; the diagnostics above say
    // where it is coarser than the program. Without one there is nothing to write.
    if !analysis.has_structure() {
        let n = analysis
            .diagnostics
            .iter()
            .filter(|d| d.level == mheta_runtime::format::Level::Error)
            .count();
        return Err(super::Reported(format!(
            "analysis of `{}` found no solver ({n} error(s)); no structure written",
            args.path.display()
        ))
        .into());
    }
    let output = emit::render(&analysis.structure, args.format.into());
    match &args.out {
        Some(path) => super::write_atomic(path, &output)?,
        None => super::stdout(&output)?,
    }
    Ok(())
}
