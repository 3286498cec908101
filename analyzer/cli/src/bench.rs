//! `mheta bench [--json] [--budget 1s] [--nodes 8,64,128,1024]`: model evaluation and search
//! speed on synthetic heterogeneous workloads (see `mheta_model::search::bench`).

use std::time::Duration;

use mheta_model::search::bench::{self, BenchConfig};

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Time budget of every search run, e.g. `1s`.
    #[arg(long, default_value = "1s", value_parser = super::parse_budget)]
    pub budget: Duration,
    /// Node counts to benchmark (each 1 to 65536).
    #[arg(long, value_delimiter = ',', default_values_t = [8usize, 64, 128, 1024], value_parser = parse_nodes)]
    pub nodes: Vec<usize>,
}

/// The most nodes `--nodes` takes: every synthetic workload allocates per node and per row, and
/// 100,000,000 nodes asked for 19 GB before failing.
const MAX_NODES: usize = 65_536;

fn parse_nodes(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_NODES).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{text}` is not a node count from 1 to {MAX_NODES}"
        )),
    }
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
