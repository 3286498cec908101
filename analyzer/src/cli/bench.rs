//! `mheta bench [--json] [--budget 1s] [--nodes 8,64,128,1024]`: model evaluation and search
//! speed on synthetic heterogeneous workloads (see `mheta_runtime::search::bench`).

use std::time::Duration;

use mheta_runtime::search::bench::{self, BenchConfig};

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Time budget of every search run, e.g. `1s`.
    #[arg(long, default_value = "1s", value_parser = super::parse_budget)]
    pub budget: Duration,
    /// Node counts to benchmark.
    #[arg(long, value_delimiter = ',', default_values_t = [8usize, 64, 128, 1024])]
    pub nodes: Vec<usize>,
}

pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    let config = BenchConfig {
        nodes: args.nodes.clone(),
        budget: args.budget,
        ..BenchConfig::default()
    };
    let report = bench::run(&config)?;
    if args.json {
        super::stdout(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
    } else {
        super::stdout(&format!("{report}"))?;
    }
    Ok(())
}
