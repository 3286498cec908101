//! `mheta search --structure S --measurements M [--cluster C] [--algorithm gbs|gs|ga|sa|exact]
//! [--budget 1s] [--json]`: the best distribution one search finds within its budget.

use std::path::PathBuf;
use std::time::Duration;

use mheta_model::search::{self, Algorithm, SearchConfig};

use super::predict::Inputs;

#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    #[arg(long, value_name = "FILE")]
    pub structure: PathBuf,
    #[arg(long, value_name = "FILE")]
    pub measurements: PathBuf,
    /// Default: the cluster the measurements were taken on.
    #[arg(long, value_name = "FILE")]
    pub cluster: Option<PathBuf>,
    /// gbs, gs, ga, sa or exact (GBS, GS and exact are followed by a refinement on the full model).
    #[arg(long, default_value = "gbs", value_parser = parse_algorithm)]
    pub algorithm: Algorithm,
    /// Time budget, e.g. `1s`, `250ms`.
    #[arg(long, default_value = "1s", value_parser = super::parse_budget)]
    pub budget: Duration,
    /// Seed of the random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print the result (with its best-so-far trace) as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &SearchArgs) -> anyhow::Result<()> {
    let inputs = Inputs::load(&args.structure, &args.measurements, args.cluster.as_deref())?;
    let model = inputs.model()?;
    let config = SearchConfig {
        budget: args.budget,
        seed: args.seed,
        start: None,
    };
    let result = search::search_model(&model, args.algorithm, &config);
    if args.json {
        super::stdout(&format!("{}\n", serde_json::to_string_pretty(&result)?))?;
    } else {
        super::stdout(&format!("{result}"))?;
    }
    Ok(())
}

fn parse_algorithm(s: &str) -> Result<Algorithm, String> {
    s.parse()
}
