//! `mheta predict --structure S --measurements M [--cluster C] --distribution D [--json]`:
//! the MHETA prediction of one distribution, with the per-node breakdown.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use mheta_runtime::distribution::Distribution;
use mheta_runtime::format::{ClusterSpec, Measurements, Structure};
use mheta_runtime::model::{self, Model};

use super::read_json;

#[derive(Debug, clap::Args)]
pub struct PredictArgs {
    /// The structure file (`mheta analyze` output, `mheta-structure/1`).
    #[arg(long, value_name = "FILE")]
    pub structure: PathBuf,
    /// The measurements of one instrumented run (`mheta-measurements/1`).
    #[arg(long, value_name = "FILE")]
    pub measurements: PathBuf,
    /// The cluster to predict for (`cluster.toml`); default: the one the measurements were taken on.
    #[arg(long, value_name = "FILE")]
    pub cluster: Option<PathBuf>,
    /// block, balanced, in-core, in-core-balanced, a FILE (JSON `{"rows": [..]}` or `r0,r1,...`)
    /// or an inline list `r0,r1,...`.
    #[arg(long, value_name = "D")]
    pub distribution: String,
    /// Print the prediction as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &PredictArgs) -> anyhow::Result<()> {
    let inputs = Inputs::load(&args.structure, &args.measurements, args.cluster.as_deref())?;
    let model = inputs.model()?;
    let dist = inputs.distribution(&args.distribution)?;
    let prediction = model.predict(&dist.rows)?;
    if args.json {
        let doc = serde_json::json!({ "distribution": dist.rows, "prediction": prediction });
        super::stdout(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
    } else {
        super::stdout(&format!("distribution: {dist}\n"))?;
        super::stdout(&format!("{prediction}"))?;
    }
    Ok(())
}

/// The three model inputs, read from their files.
pub struct Inputs {
    pub structure: Structure,
    pub measurements: Measurements,
    pub cluster: ClusterSpec,
}

impl Inputs {
    pub fn load(
        structure: &Path,
        measurements: &Path,
        cluster: Option<&Path>,
    ) -> anyhow::Result<Inputs> {
        let structure: Structure = read_json(structure)?;
        let measurements: Measurements = read_json(measurements)?;
        let cluster = match cluster {
            Some(path) => ClusterSpec::load(path)?,
            None => measurements.cluster.clone(),
        };
        Ok(Inputs {
            structure,
            measurements,
            cluster,
        })
    }

    pub fn model(&self) -> anyhow::Result<Model> {
        Ok(Model::new(
            &self.structure,
            &self.measurements,
            &self.cluster,
        )?)
    }

    /// A named generator, a file or an inline list, validated against S and the cluster.
    pub fn distribution(&self, spec: &str) -> anyhow::Result<Distribution> {
        let rows = self.measurements.rows;
        let bytes_per_row = model::distributed_bytes_per_row(&self.measurements);
        let path = Path::new(spec);
        if path.is_file() {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("cannot read `{spec}`"))?;
            let dist: Distribution = if text.trim_start().starts_with('{') {
                serde_json::from_str(&text)
                    .with_context(|| format!("`{spec}` is not a distribution file"))?
            } else {
                text.trim()
                    .parse()
                    .with_context(|| format!("in `{spec}`"))?
            };
            dist.validate(rows, self.cluster.nodes.len())
                .with_context(|| format!("in `{spec}`"))?;
            return Ok(dist);
        }
        Ok(Distribution::from_spec(
            spec,
            rows,
            bytes_per_row,
            &self.cluster,
        )?)
    }
}
