//! `mheta predict --structure S --measurements M [--cluster C [--retarget]] --distribution D [--json]`:
//! the MHETA prediction of one distribution, with the per-node breakdown.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use mheta_model::{self as model, Model};
use mheta_runtime::clock::ClockMode;
use mheta_runtime::distribution::Distribution;
use mheta_runtime::format::{ClusterSpec, Measurements, Structure};

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
    /// `--cluster` has another number of ranks than the measured run (another process
    /// allocation): give each of its ranks the measurements of a measured rank of the same role
    /// (first, interior, last) on the most similar node, scaled to its Block share of the rows
    /// (`mheta_model::retarget`). Needs measurements of at least 3 ranks.
    #[arg(long, requires = "cluster")]
    pub retarget: bool,
}

pub fn run(args: &PredictArgs) -> anyhow::Result<()> {
    let mut inputs = Inputs::load(&args.structure, &args.measurements, args.cluster.as_deref())?;
    // `--retarget` requires `--cluster` (clap).
    if let (true, Some(cluster)) = (args.retarget, &args.cluster) {
        inputs.measurements = mheta_model::retarget::retarget(
            &inputs.measurements,
            &inputs.structure,
            &inputs.cluster,
        )
        .with_context(|| {
            format!(
                "--retarget: `{}` cannot be re-cast for the ranks of `{}`",
                args.measurements.display(),
                cluster.display()
            )
        })?;
    }
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

/// Refuses a structure and measurements that do not belong together or contradict themselves,
/// naming the file and field: a schema this build does not read, measurements of another
/// structure (the digest the program embedded), a row total that is not the distribution's, a
/// clock this build does not know, a part of a node's iteration longer than the iteration, a
/// measured cluster no cluster.toml could describe, a solver without sections, and measurements
/// of stages or events the structure does not have (the model would drop them unseen).
pub(crate) fn consistent(
    structure: &Structure,
    structure_file: &Path,
    measurements: &Measurements,
    measurements_file: &Path,
) -> anyhow::Result<()> {
    use mheta_runtime::format::{MEASUREMENTS_SCHEMA, STRUCTURE_SCHEMA};
    let (sf, mf) = (structure_file.display(), measurements_file.display());
    if structure.schema != STRUCTURE_SCHEMA {
        bail!(
            "`{sf}`: field `schema` is \"{}\", this mheta reads \"{STRUCTURE_SCHEMA}\"",
            structure.schema
        );
    }
    if measurements.schema != MEASUREMENTS_SCHEMA {
        bail!(
            "`{mf}`: field `schema` is \"{}\", this mheta reads \"{MEASUREMENTS_SCHEMA}\"",
            measurements.schema
        );
    }
    let embedded = &measurements.structure.digest;
    if !embedded.is_empty() && *embedded != structure.digest() {
        bail!(
            "`{mf}`: field `structure.digest` is {embedded}, but `{sf}` has digest {}: the \
             measurements belong to another structure (analyse the source the measured program was \
             built from, or measure again)",
            structure.digest()
        );
    }
    // The structure the digest names is the one the program embedded: its crate too.
    if !embedded.is_empty() && measurements.structure.crate_name != structure.crate_name {
        bail!(
            "`{mf}`: field `structure.crate` is \"{}\", but `{sf}`, the structure its digest \
             names, is of crate \"{}\"",
            measurements.structure.crate_name,
            structure.crate_name
        );
    }
    let arrays = &measurements.arrays;
    for (j, a) in arrays.iter().enumerate() {
        if let Some(first) = arrays[..j].iter().position(|b| b.name == a.name) {
            bail!(
                "`{mf}`: field `arrays[{j}].name` is \"{}\", as is `arrays[{first}].name`: a \
                 program registers each array once",
                a.name
            );
        }
    }
    for (i, n) in measurements.nodes.iter().enumerate() {
        if let Some((k, io)) =
            (n.io.iter().enumerate()).find(|(_, io)| !arrays.iter().any(|a| a.name == io.var))
        {
            let names: Vec<String> = arrays.iter().map(|a| format!("\"{}\"", a.name)).collect();
            bail!(
                "`{mf}`: field `nodes[{i}].io[{k}].var` is \"{}\", which field `arrays` does not \
                 register (it has {}): the model would leave that I/O out",
                io.var,
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            );
        }
    }
    let clocks = <ClockMode as clap::ValueEnum>::value_variants();
    if !clocks.iter().any(|c| c.name() == measurements.clock) {
        let names: Vec<&str> = clocks.iter().map(|c| c.name()).collect();
        bail!(
            "`{mf}`: field `clock` is \"{}\", expected one of {}",
            measurements.clock,
            names.join(", ")
        );
    }
    let distributed: u64 = measurements.distribution.iter().sum();
    if distributed != measurements.rows {
        bail!(
            "`{mf}`: field `rows` is {}, but `distribution` holds {distributed} rows",
            measurements.rows
        );
    }
    for (i, n) in measurements.nodes.iter().enumerate() {
        if measurements.distribution.get(i) != Some(&n.rows) {
            bail!(
                "`{mf}`: field `nodes[{i}].rows` is {}, but `distribution[{i}]` is {}",
                n.rows,
                measurements
                    .distribution
                    .get(i)
                    .map_or("missing".into(), u64::to_string)
            );
        }
    }
    if let Some((field, value)) = measurements.first_negative() {
        bail!(
            "`{mf}`: field `{field}` is {value}: a measured time, count, size or rate cannot be \
             negative"
        );
    }
    if let Some(found) = measurements.first_outside_iteration() {
        let node = found.node;
        let what = match found.part {
            Some(part) => format!("field `nodes[{node}].{part}` is {:?} s", found.seconds),
            None => format!(
                "node {node}'s stages and events add up to {:?} s",
                found.seconds
            ),
        };
        bail!(
            "`{mf}`: {what} per iteration, longer than the node's whole iteration \
             (`nodes[{node}].iteration_s` is {:?} s): a part of an iteration cannot take longer \
             than the iteration",
            measurements.nodes[node].iteration_s
        );
    }
    measurements
        .cluster
        .check()
        .map_err(|(field, problem)| anyhow::anyhow!("`{mf}`: field `cluster.{field}` {problem}"))?;
    let Some(solver) = structure.solver_named(&measurements.structure.solver) else {
        // The model names this error.
        return Ok(());
    };
    if solver.sections.is_empty() {
        bail!(
            "`{sf}`: solver `{}` has no parallel sections (field `sections` is empty): there is \
             nothing to predict",
            solver.name
        );
    }
    let stages: std::collections::HashSet<_> = (solver.sections.iter())
        .flat_map(|section| {
            (section.stages()).map(move |(stage, tile)| (section.id, tile, stage.id))
        })
        .collect();
    let events: std::collections::HashSet<u32> =
        solver.sections.iter().flat_map(|s| s.event_ids()).collect();
    for (i, n) in measurements.nodes.iter().enumerate() {
        let keys = (n.stages.iter().map(|s| s.key).enumerate())
            .map(|(k, key)| ("stages", k, key))
            .chain(
                n.io.iter()
                    .map(|x| x.key)
                    .enumerate()
                    .map(|(k, key)| ("io", k, key)),
            );
        for (field, k, key) in keys {
            if !stages.contains(&(key.section, key.tile, key.stage)) {
                let tile = key.tile.map_or(String::new(), |t| format!(" tile {t}"));
                bail!(
                    "`{mf}`: field `nodes[{i}].{field}[{k}]` names section {}{tile} stage {}, \
                     which solver `{}` in `{sf}` does not have",
                    key.section,
                    key.stage,
                    solver.name
                );
            }
        }
        for (k, e) in n.events.iter().enumerate() {
            if !events.contains(&e.event) {
                bail!(
                    "`{mf}`: field `nodes[{i}].events[{k}]` names event {}, which solver `{}` \
                     in `{sf}` does not have",
                    e.event,
                    solver.name
                );
            }
        }
    }
    Ok(())
}

/// The three model inputs, read from their files.
pub struct Inputs {
    pub structure: Structure,
    pub measurements: Measurements,
    pub cluster: ClusterSpec,
    /// Where each came from, for messages: the files given on the command line (the
    /// cluster's is `None` when it is the one the measurements were taken on).
    files: (PathBuf, PathBuf, Option<PathBuf>),
}

impl Inputs {
    pub fn load(
        structure: &Path,
        measurements: &Path,
        cluster: Option<&Path>,
    ) -> anyhow::Result<Inputs> {
        let structure_file = structure;
        let measurements_file = measurements;
        let structure: Structure = read_json(structure_file)?;
        let measurements: Measurements = read_json(measurements_file)?;
        consistent(&structure, structure_file, &measurements, measurements_file)?;
        let cluster_spec = match cluster {
            Some(path) => ClusterSpec::load(path)?,
            None => measurements.cluster.clone(),
        };
        Ok(Inputs {
            structure,
            measurements,
            cluster: cluster_spec,
            files: (
                structure_file.to_path_buf(),
                measurements_file.to_path_buf(),
                cluster.map(Path::to_path_buf),
            ),
        })
    }

    /// The model; its errors name the files it was built from.
    pub fn model(&self) -> anyhow::Result<Model> {
        let (structure, measurements, cluster) = &self.files;
        Model::new(&self.structure, &self.measurements, &self.cluster).with_context(|| {
            format!(
                "cannot build the model of `{}` from `{}` for {}",
                structure.display(),
                measurements.display(),
                match cluster {
                    Some(c) => format!("the cluster `{}`", c.display()),
                    None => "the cluster it was measured on".to_string(),
                }
            )
        })
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
