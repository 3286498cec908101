//! `mheta report DIR`: the HTML report of a tune run, from the `tune.json` that
//! `mheta tune --report DIR` saved there (also written by tune itself).

pub mod html;
pub mod svg;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};

use super::tune::document::TuneDocument;

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// A directory holding `tune.json` (from `mheta tune --report DIR`); `index.html` is
    /// written next to it.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

pub fn run(args: &ReportArgs) -> anyhow::Result<()> {
    let doc: TuneDocument = super::read_json(&args.dir.join("tune.json")).with_context(|| {
        format!(
            "no tune document in `{}` (`mheta tune CRATE --cluster C --report {0}` writes one)",
            args.dir.display()
        )
    })?;
    if doc.distributions.is_empty() {
        bail!(
            "`{}`: field `distributions` is empty: there is nothing to report",
            args.dir.join("tune.json").display()
        );
    }
    write(&args.dir, &doc)?;
    super::stdout(&format!("{}\n", args.dir.join("index.html").display()))?;
    Ok(())
}

/// Writes `DIR/index.html` for `doc`.
pub fn write(dir: &Path, doc: &TuneDocument) -> anyhow::Result<()> {
    super::write_atomic(&dir.join("index.html"), &html::render(doc))
}
