//! `mheta study`: the accuracy study of seed §6.2 over every fixture and cluster description.
//!
//! For each clock setting (the wall clock at 2 ranks, what two cores can run honestly, and the
//! virtual clock at 8 ranks), each fixture and each cluster family (the seed's DC, IO, HY1, HY2,
//! HY3, and four a user would write: sliver, fastsmall, slowdisk, net), it
//! runs `mheta tune` with `--report` into its own directory, then writes a table of mean and min
//! accuracy, the speedup of the chosen distribution over Block and how far the chosen one is from
//! the best actual time: `README.md` and `study.json` in the output directory, rewritten after
//! every case so an interrupted study keeps what it measured. A case that fails is a row saying
//! why, and the study goes on.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context as _};
use serde::{Deserialize, Serialize};

use super::tune::document::TuneDocument;

#[derive(Debug, clap::Args)]
pub struct StudyArgs {
    /// Where every case's tune report, the table (README.md) and study.json go.
    #[arg(long, value_name = "DIR", default_value = "study")]
    pub out: PathBuf,
    /// The directory holding the fixture crates and `clusters/`.
    #[arg(long, value_name = "DIR", default_value = "fixtures")]
    pub fixtures_dir: PathBuf,
    /// Only these fixtures (comma-separated) [default: all five].
    #[arg(long, value_delimiter = ',')]
    pub fixtures: Vec<String>,
    /// Only these cluster families (comma-separated: dc, io, hy1, hy2, hy3, sliver, fastsmall,
    /// slowdisk, net) [default: all].
    #[arg(long, value_delimiter = ',')]
    pub families: Vec<String>,
    /// Only these settings (comma-separated: wall-2, virtual-8, charged-2, charged-8)
    /// [default: wall-2 and virtual-8]. The charged clock counts no CPU time, only the emulated
    /// disks and network, and its runs repeat bit for bit: it checks the model's structure
    /// (placement, I/O and communication) apart from the machine's noise, one run per
    /// distribution.
    #[arg(long, value_delimiter = ',')]
    pub settings: Vec<String>,
    /// Iterations of every compared run [default: tune's choice, at least 0.2 s of steady
    /// state per run].
    #[arg(long, value_name = "K")]
    pub iterations: Option<u32>,
    /// Runs of every compared distribution, each a separate process (`mheta tune --repeat`).
    #[arg(long, value_name = "R", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Runs of every compared distribution at most, while a median is not known to ±3 %
    /// (`mheta tune --max-repeat`) [default: --repeat, no more rounds].
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_repeat: Option<u32>,
    /// Search time budget of every case.
    #[arg(long, default_value = "1s")]
    pub budget: String,
    /// Measure nothing: predict every measured case of the study in `--out` again with this
    /// build's model, from the structure and measurements the case saved, against the same
    /// runs, and print the recorded figures beside the new ones. Changes no file. A model change
    /// is then judged on identical data, free of the machine's noise between studies.
    #[arg(long)]
    pub repredict: bool,
}

impl StudyArgs {
    fn selects_fixture(&self, name: &str) -> bool {
        self.fixtures.is_empty() || self.fixtures.iter().any(|n| n == name)
    }

    fn selects_family(&self, family: &str) -> bool {
        self.families.is_empty() || self.families.iter().any(|n| n == family)
    }

    /// An error naming every fixture, family or setting asked for that the study does not
    /// know (a typo would otherwise run, or re-predict, less than asked without a word).
    fn check_names(&self) -> anyhow::Result<()> {
        let settings = SETTINGS.map(|(clock, ranks)| setting_name(clock, ranks));
        let fixtures = FIXTURES.map(|f| f.name.to_string());
        let families = FAMILIES.map(str::to_string);
        for (option, noun, asked, known) in [
            ("--fixtures", "fixture", &self.fixtures, &fixtures[..]),
            ("--families", "family", &self.families, &families[..]),
            ("--settings", "setting", &self.settings, &settings[..]),
        ] {
            let unknown: Vec<&str> = asked
                .iter()
                .filter(|a| !known.contains(a))
                .map(String::as_str)
                .collect();
            if !unknown.is_empty() {
                bail!(
                    "{option}: no {noun} `{}` (known: {})",
                    unknown.join("`, `"),
                    known.join(", ")
                );
            }
        }
        Ok(())
    }

    /// Whether the study runs setting `clock`-`ranks`: `--settings` names it, or it is one of
    /// the [`DEFAULT_SETTINGS`] when `--settings` is not given.
    fn runs_setting(&self, clock: &str, ranks: usize) -> bool {
        match self.settings.is_empty() {
            true => DEFAULT_SETTINGS.contains(&setting_name(clock, ranks).as_str()),
            false => self.names_setting(clock, ranks),
        }
    }

    /// Whether `--settings` names setting `clock`-`ranks`.
    fn names_setting(&self, clock: &str, ranks: usize) -> bool {
        self.settings.contains(&setting_name(clock, ranks))
    }

    /// Whether `--fixtures`, `--families` and `--settings` select a recorded case (its
    /// cluster is named `{family}-{ranks}`).
    fn selects(&self, case: &Case) -> bool {
        let family = case.cluster.rsplit_once('-').map_or("", |(f, _)| f);
        self.selects_fixture(&case.fixture)
            && self.selects_family(family)
            && (self.settings.is_empty() || self.names_setting(&case.clock, case.ranks))
    }
}

/// A fixture and the problem size the study runs it at: big enough that the small-memory nodes
/// of every cluster hold their share out of core, small enough for a 2-core machine.
struct Fixture {
    name: &'static str,
    rows: u64,
}

const FIXTURES: [Fixture; 5] = [
    // 16 KB per row (1000 columns, two f64 arrays): 32 MB in all.
    Fixture {
        name: "jacobi",
        rows: 2000,
    },
    Fixture {
        name: "jacobi-prefetch",
        rows: 2000,
    },
    // 208 bytes per row of the sparse matrix: 41.6 MB.
    Fixture {
        name: "cg",
        rows: 200_000,
    },
    // The matrix is rows × rows f64: 32 MB.
    Fixture {
        name: "lanczos",
        rows: 2000,
    },
    // 4 KB per row (1000 columns of i32): 32 MB.
    Fixture {
        name: "rna",
        rows: 8000,
    },
];

/// The seed's families (§6.1), then clusters a user would write (`fixtures/clusters/README.md`):
/// a memory that holds one array and a sliver, fast nodes with little memory beside slow ones
/// with plenty, one slow disk among small memories, a slow network.
const FAMILIES: [&str; 9] = [
    "dc",
    "io",
    "hy1",
    "hy2",
    "hy3",
    "sliver",
    "fastsmall",
    "slowdisk",
    "net",
];

/// A clock and the rank count it runs at.
const SETTINGS: [(&str, usize); 4] = [("wall", 2), ("virtual", 8), ("charged", 2), ("charged", 8)];

/// A setting's name, as `--settings` takes it and the case directories begin: `virtual-8`.
fn setting_name(clock: &str, ranks: usize) -> String {
    format!("{clock}-{ranks}")
}

/// The settings a study runs unless `--settings` names others: the two that measure time.
const DEFAULT_SETTINGS: [&str; 2] = ["wall-2", "virtual-8"];

/// One row of the table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Case {
    pub clock: String,
    pub ranks: usize,
    pub fixture: String,
    pub cluster: String,
    pub rows: u64,
    /// The case's directory (its tune.json and index.html), relative to the study's.
    pub dir: String,
    #[serde(flatten)]
    pub outcome: Outcome,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    Measured {
        mean_accuracy: f64,
        min_accuracy: f64,
        /// The distribution with the lowest accuracy.
        worst: String,
        /// Block's actual time over the chosen distribution's.
        speedup_over_block: f64,
        /// How much slower the chosen distribution ran than the fastest one run, in percent.
        chosen_vs_best_percent: f64,
        /// The lowest agreement between repeated runs of one distribution
        /// (`TuneDocument::repeatability`): the accuracy no model can be shown to beat here.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_to_run: Option<f64>,
        /// The farthest any prediction lies outside its runs' min–max, relative to the end it
        /// passed (`accuracy::Spread::outside`; 0: every prediction inside).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        worst_outside: Option<f64>,
        /// The 1-minute load average when the case began.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        load: Option<f64>,
    },
    Failed {
        error: String,
    },
}

pub fn run(args: &StudyArgs) -> anyhow::Result<()> {
    args.check_names()?;
    // Checked once here, not by every case's tune.
    super::tune::max_repeat(args.repeat, args.max_repeat)?;
    if args.repredict {
        return repredict(args);
    }
    let fixtures: Vec<&Fixture> = FIXTURES
        .iter()
        .filter(|f| args.selects_fixture(f.name))
        .collect();
    let families: Vec<&str> = FAMILIES
        .iter()
        .copied()
        .filter(|f| args.selects_family(f))
        .collect();
    let settings: Vec<(&str, usize)> = SETTINGS
        .iter()
        .copied()
        .filter(|&(clock, ranks)| args.runs_setting(clock, ranks))
        .collect();
    if fixtures.is_empty() || families.is_empty() || settings.is_empty() {
        bail!(
            "nothing to run: fixtures are {}, families {}, settings {}",
            FIXTURES.map(|f| f.name).join(", "),
            FAMILIES.join(", "),
            SETTINGS
                .map(|(clock, ranks)| setting_name(clock, ranks))
                .join(", ")
        );
    }
    // Every case would fail the same way: say it once, before anything runs.
    let clusters = args.fixtures_dir.join("clusters");
    if !clusters.is_dir() {
        bail!(
            "--fixtures-dir `{}` has no `clusters/` directory (the fixture crates and their \
             cluster descriptions live in the repository's `fixtures/`)",
            args.fixtures_dir.display()
        );
    }
    for fixture in &fixtures {
        let manifest = args.fixtures_dir.join(fixture.name).join("Cargo.toml");
        if !manifest.is_file() {
            bail!("--fixtures-dir: no fixture crate `{}`", manifest.display());
        }
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create `{}`", args.out.display()))?;
    let mheta = std::env::current_exe().context("cannot find the mheta executable")?;
    // Cases of an earlier study in the same directory stay (a partial re-run replaces only the
    // cases it runs), so the table can be built up setting by setting.
    let mut cases = earlier_cases(&args.out)?;
    let (mut ran, mut failed) = (0, 0);
    for &(clock, ranks) in &settings {
        for fixture in &fixtures {
            for family in &families {
                let case = run_case(&mheta, args, clock, ranks, fixture, family);
                eprintln!("study: {}", case.line());
                ran += 1;
                failed += usize::from(matches!(case.outcome, Outcome::Failed { .. }));
                match cases.iter_mut().find(|c| c.same_case(&case)) {
                    Some(earlier) => *earlier = case,
                    None => cases.push(case),
                }
                write(&args.out, &cases)?;
            }
        }
    }
    eprintln!(
        "study: table written to {}",
        args.out.join("README.md").display()
    );
    if failed > 0 {
        bail!("{failed} of the {ran} cases run failed (their rows in the table say why)");
    }
    Ok(())
}

fn run_case(
    mheta: &Path,
    args: &StudyArgs,
    clock: &str,
    ranks: usize,
    fixture: &Fixture,
    family: &str,
) -> Case {
    let cluster = format!("{family}-{ranks}");
    let dir = format!("{clock}-{ranks}/{}-{cluster}", fixture.name);
    let case = |outcome| Case {
        clock: clock.to_string(),
        ranks,
        fixture: fixture.name.to_string(),
        cluster: cluster.clone(),
        rows: fixture.rows,
        dir: dir.clone(),
        outcome,
    };
    match tune_case(
        mheta,
        args,
        clock,
        ranks,
        fixture,
        &cluster,
        &args.out.join(&dir),
    ) {
        Ok(doc) => case(measured(&doc)),
        Err(e) => case(Outcome::Failed {
            error: format!("{e:#}"),
        }),
    }
}

fn tune_case(
    mheta: &Path,
    args: &StudyArgs,
    clock: &str,
    ranks: usize,
    fixture: &Fixture,
    cluster: &str,
    dir: &Path,
) -> anyhow::Result<TuneDocument> {
    let cluster_file = args
        .fixtures_dir
        .join("clusters")
        .join(format!("{cluster}.toml"));
    let mut command = Command::new(mheta);
    command.arg("tune");
    if let Some(k) = args.iterations {
        command.args(["--iterations", &k.to_string()]);
    }
    if let Some(r) = args.max_repeat.filter(|_| clock != "charged") {
        command.args(["--max-repeat", &r.to_string()]);
    }
    command
        .arg(args.fixtures_dir.join(fixture.name))
        .arg("--cluster")
        .arg(&cluster_file)
        .args(["--ranks", &ranks.to_string(), "--clock", clock])
        .args(["--rows", &fixture.rows.to_string()])
        // The charged clock's runs repeat bit for bit: one of each suffices.
        .args([
            "--repeat",
            &if clock == "charged" { 1 } else { args.repeat }.to_string(),
        ])
        .args(["--budget", &args.budget])
        .arg("--report")
        .arg(dir);
    let output =
        super::output(&mut command).with_context(|| format!("cannot run `{}`", mheta.display()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last: Vec<&str> = stderr.lines().rev().take(6).collect();
        bail!(
            "mheta tune failed ({}): {}",
            output.status,
            last.into_iter().rev().collect::<Vec<_>>().join(" | ")
        );
    }
    super::read_json(&dir.join("tune.json"))
}

/// The table's figures from one tune document.
fn measured(doc: &TuneDocument) -> Outcome {
    let actual = |name: &str| {
        doc.distributions
            .iter()
            .find(|d| d.name == name)
            .map(|d| d.actual_s)
    };
    let chosen = doc.best.actual_s;
    let fastest = doc
        .distributions
        .iter()
        .map(|d| d.actual_s)
        .fold(f64::INFINITY, f64::min);
    let worst = doc
        .distributions
        .iter()
        .min_by(|a, b| a.accuracy.total_cmp(&b.accuracy))
        .map(|d| d.name.clone())
        .unwrap_or_default();
    Outcome::Measured {
        mean_accuracy: doc.accuracy.mean,
        min_accuracy: doc.accuracy.min,
        worst,
        speedup_over_block: actual("block").map_or(f64::NAN, |b| b / chosen),
        chosen_vs_best_percent: 100.0 * (chosen / fastest - 1.0),
        run_to_run: doc.repeatability(),
        worst_outside: doc
            .distributions
            .iter()
            .filter_map(|d| d.spread.map(|s| s.outside))
            .reduce(f64::max),
        load: doc.load.as_ref().and_then(|l| l.load_average),
    }
}

/// `--repredict`: the study's measured cases (those `--fixtures`, `--families` and `--settings`
/// select), each predicted again from its saved `structure.json` and `measurements.json`, with
/// the instrumented in-core runs merged into it again from their own files ([`remerged`]), so
/// that a change to what those runs give the model shows too.
fn repredict(args: &StudyArgs) -> anyhow::Result<()> {
    use mheta_model::Model;
    use mheta_runtime::format::Structure;

    let cases = earlier_cases(&args.out)?;
    // Per setting: (recorded, re-predicted) outcomes.
    let mut settings: BTreeMap<String, Vec<(Outcome, Outcome)>> = BTreeMap::new();
    for case in cases.iter().filter(|c| args.selects(c)) {
        let Some((was, was_min)) = case.outcome.accuracy() else {
            continue;
        };
        let dir = args.out.join(&case.dir);
        let file = |name: &str| dir.join(name);
        let mut doc: TuneDocument = super::read_json(&file("tune.json"))?;
        let structure: Structure = super::read_json(&file("structure.json"))?;
        let measurements = remerged(&dir, super::read_json(&file("measurements.json"))?)?;
        let model = Model::new(&structure, &measurements, &measurements.cluster)
            .with_context(|| format!("`{}`: cannot build the model", dir.display()))?;
        for d in &mut doc.distributions {
            let predicted = model
                .predict(&d.rows)
                .with_context(|| format!("`{}`: cannot predict {}", dir.display(), d.name))?
                .iteration_s;
            d.predicted_s = predicted;
            d.accuracy = super::tune::accuracy::accuracy(predicted, d.actual_s);
            d.spread = super::tune::accuracy::spread(predicted, &d.runs_s);
        }
        doc.accuracy = TuneDocument::summarize(&doc.distributions);
        let again = measured(&doc);
        let (now, now_min) = again.accuracy().expect("a re-predicted case is measured");
        let outside = |o: &Outcome| match o {
            Outcome::Measured {
                worst_outside: Some(x),
                ..
            } => format!("{:.1}%", 100.0 * x),
            _ => "-".into(),
        };
        super::stdout(&format!(
            "{}-{} {} on {}: mean {:.1}% -> {:.1}%, min {:.1}% -> {:.1}%, outside {} -> {}\n",
            case.clock,
            case.ranks,
            case.fixture,
            case.cluster,
            100.0 * was,
            100.0 * now,
            100.0 * was_min,
            100.0 * now_min,
            outside(&case.outcome),
            outside(&again)
        ))?;
        settings
            .entry(format!("{}-{}", case.clock, case.ranks))
            .or_default()
            .push((case.outcome.clone(), again));
    }
    if settings.is_empty() {
        bail!(
            "`{}` holds no measured case to predict again (run the study first)",
            args.out.join("study.json").display()
        );
    }
    for (setting, pairs) in &settings {
        let recorded = Figures::of(pairs.iter().map(|p| &p.0));
        let again = Figures::of(pairs.iter().map(|p| &p.1));
        super::stdout(&format!(
            "{setting}, {} cases, recorded:     {recorded}\n",
            pairs.len()
        ))?;
        super::stdout(&format!(
            "{setting}, {} cases, re-predicted: {again}\n",
            pairs.len()
        ))?;
    }
    Ok(())
}

/// `measurements` (a case's `measurements.json`: the forced runs' median with every in-core run
/// merged into it) with the in-core runs merged again from the files tune kept of them,
/// `measurements-<sample>-<k>.json` beside it (the forced runs are `measurements-forced-<k>`),
/// in the order of their names (each node's measured iterations cut back to the forced run's
/// own first). Files older than the case's first forced run are left out: an
/// earlier tune into the same directory left them (it sampled other distributions). Without
/// such files the measurements stand as saved.
fn remerged(
    dir: &Path,
    mut measurements: mheta_runtime::format::Measurements,
) -> anyhow::Result<mheta_runtime::format::Measurements> {
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let since = modified(&dir.join("measurements-forced-0.json"));
    let mut kept: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list `{}`", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with("measurements-")
                    && n.ends_with(".json")
                    && !n.starts_with("measurements-forced-")
            })
        })
        .filter(|path| since.is_none() || modified(path) >= since)
        .collect();
    if kept.is_empty() {
        return Ok(measurements);
    }
    kept.sort();
    // The forced run's own iterations come first; the merged runs' follow and are merged again.
    let own = (measurements.iterations as usize).saturating_sub(measurements.warm_up as usize);
    for node in &mut measurements.nodes {
        node.iteration_compute_s.truncate(own);
        for stage in &mut node.stages {
            stage.in_core.clear();
            stage.in_core_tiles.clear();
        }
        for event in &mut node.events {
            event.overheads.clear();
        }
    }
    for path in &kept {
        let run: mheta_runtime::format::Measurements = super::read_json(path)?;
        measurements
            .merge_in_core_compute(&run)
            .map_err(|e| anyhow::anyhow!("`{}`: {e}", path.display()))?;
    }
    Ok(measurements)
}

/// The targets' figures over a set of measured cases.
struct Figures {
    mean: f64,
    agreeing: usize,
    agreeing_min_95: usize,
    within_5: usize,
}

impl Figures {
    fn of<'a>(outcomes: impl Iterator<Item = &'a Outcome>) -> Figures {
        let mut f = Figures {
            mean: 0.0,
            agreeing: 0,
            agreeing_min_95: 0,
            within_5: 0,
        };
        let mut count = 0;
        for o in outcomes {
            let Outcome::Measured {
                mean_accuracy,
                min_accuracy,
                run_to_run,
                worst_outside,
                ..
            } = o
            else {
                continue;
            };
            count += 1;
            f.mean += mean_accuracy;
            if run_to_run.is_some_and(|r| r >= 0.95) {
                f.agreeing += 1;
                f.agreeing_min_95 += usize::from(*min_accuracy >= 0.95);
            }
            f.within_5 += usize::from(worst_outside.is_some_and(|o| o <= 0.05));
        }
        f.mean /= count.max(1) as f64;
        f
    }
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "mean of means {:.1}%, min >= 95% in {} of the {} cases whose runs agree to 95%, \
             every prediction within 5% of its runs' range in {}",
            100.0 * self.mean,
            self.agreeing_min_95,
            self.agreeing,
            self.within_5
        )
    }
}

/// The cases recorded in `out/study.json`, if there is one.
fn earlier_cases(out: &Path) -> anyhow::Result<Vec<Case>> {
    let path = out.join("study.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).with_context(|| {
            format!(
                "`{}` is not a study (remove it to start afresh)",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("cannot read `{}`", path.display())),
    }
}

impl Outcome {
    /// Mean and min accuracy of a measured case.
    fn accuracy(&self) -> Option<(f64, f64)> {
        match self {
            Outcome::Measured {
                mean_accuracy,
                min_accuracy,
                ..
            } => Some((*mean_accuracy, *min_accuracy)),
            Outcome::Failed { .. } => None,
        }
    }
}

impl Case {
    fn same_case(&self, other: &Case) -> bool {
        (self.clock == other.clock && self.ranks == other.ranks)
            && (self.fixture == other.fixture && self.cluster == other.cluster)
    }

    fn line(&self) -> String {
        let head = format!(
            "{}-{} {} on {}",
            self.clock, self.ranks, self.fixture, self.cluster
        );
        match &self.outcome {
            Outcome::Measured {
                mean_accuracy,
                min_accuracy,
                ..
            } => format!(
                "{head}: mean {:.1}%, min {:.1}%",
                100.0 * mean_accuracy,
                100.0 * min_accuracy
            ),
            Outcome::Failed { error } => format!("{head}: failed: {error}"),
        }
    }
}

/// `README.md` (the table, then the notes of the README it replaces: [`kept_notes`]) and
/// `study.json`, both written atomically.
fn write(out: &Path, cases: &[Case]) -> anyhow::Result<()> {
    super::write_atomic(
        &out.join("study.json"),
        &serde_json::to_string_pretty(cases)?,
    )?;
    let readme = out.join("README.md");
    let previous = match std::fs::read_to_string(&readme) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", readme.display())),
    };
    let mut text = table(cases);
    text.push('\n');
    text.push_str(kept_notes(&previous));
    super::write_atomic(&readme, &text)
}

/// The line after which a study's README holds notes written by hand (how and when its rows
/// were measured), which `mheta study` keeps when it writes the table again.
pub const NOTES_MARKER: &str = "<!-- notes below this line are kept by `mheta study` -->";

/// The notes of a README `mheta study` wrote before: from [`NOTES_MARKER`] to the end, or the
/// marker alone when there are none.
fn kept_notes(previous: &str) -> &str {
    previous
        .find(NOTES_MARKER)
        .map_or(NOTES_MARKER, |at| &previous[at..])
}

/// The Markdown table, one section per clock setting, plus the overall figures.
pub fn table(cases: &[Case]) -> String {
    let mut s = String::from(
        "# Accuracy study (seed §6.2)\n\n\
         Written by `mheta study` (see the repository README). Accuracy of one distribution is\n\
         1 − |predicted − actual| / min(predicted, actual); mean and min are over the chosen\n\
         distribution and the spectrum Block, Balanced, In-Core, In-Core-Balanced (and the\n\
         search's pick, `searched`, when the model with every sample chose another). Each case's\n\
         directory holds its `tune.json` and an HTML report with the plots; its `actual_method`\n\
         says how actual times were measured (runs, iterations, repetitions). Run-to-run is the\n\
         lowest agreement between repeated runs of one distribution, 1 − (slowest − fastest) /\n\
         fastest: the machine's own noise, which bounds the accuracy that can be measured.\n\
         Outside is how far the worst prediction lies beyond its runs' min-max (`inside`: every\n\
         prediction lies within its runs); load is the 1-minute load average when the case\n\
         began (tune waits up to a minute for a quiet machine first). A study is a measurement:\n\
         run it with nothing else on the machine.\n",
    );
    let mut settings: Vec<(String, usize)> = Vec::new();
    for c in cases {
        if !settings.contains(&(c.clock.clone(), c.ranks)) {
            settings.push((c.clock.clone(), c.ranks));
        }
    }
    for (clock, ranks) in settings {
        let rows: Vec<&Case> = cases
            .iter()
            .filter(|c| c.clock == clock && c.ranks == ranks)
            .collect();
        let _ = write!(s, "\n## {clock} clock, {ranks} ranks\n\n");
        s.push_str(
            "| fixture | cluster | rows | mean accuracy | min accuracy | worst | run-to-run | outside | chosen vs Block | chosen vs fastest run | load |\n\
             |---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|\n",
        );
        for c in &rows {
            let link = format!("[{}]({}/index.html)", c.cluster, c.dir);
            match &c.outcome {
                Outcome::Measured {
                    mean_accuracy,
                    min_accuracy,
                    worst,
                    speedup_over_block,
                    chosen_vs_best_percent,
                    run_to_run,
                    worst_outside,
                    load,
                } => {
                    let outside = match worst_outside {
                        Some(o) if *o == 0.0 => "inside".to_string(),
                        Some(o) => format!("{:.1}%", 100.0 * o),
                        None => "–".into(),
                    };
                    let load = load.map_or("–".into(), |l| format!("{l:.2}"));
                    let _ = writeln!(
                        s,
                        "| {} | {link} | {} | {:.1}% | {:.1}% | {worst} | {} | {outside} | {:.2}× faster | +{:.1}% | {load} |",
                        c.fixture,
                        c.rows,
                        100.0 * mean_accuracy,
                        100.0 * min_accuracy,
                        percent(*run_to_run),
                        speedup_over_block,
                        chosen_vs_best_percent
                    );
                }
                Outcome::Failed { error } => {
                    let _ = writeln!(
                        s,
                        "| {} | {} | {} | failed: {} | | | | | | | |",
                        c.fixture,
                        c.cluster,
                        c.rows,
                        error.replace('|', "/").replace('\n', " ")
                    );
                }
            }
        }
        let measured: Vec<(f64, f64, Option<f64>)> = rows
            .iter()
            .filter_map(|c| match c.outcome {
                Outcome::Measured {
                    mean_accuracy,
                    min_accuracy,
                    run_to_run,
                    ..
                } => Some((mean_accuracy, min_accuracy, run_to_run)),
                Outcome::Failed { .. } => None,
            })
            .collect();
        if !measured.is_empty() {
            let mean = measured.iter().map(|m| m.0).sum::<f64>() / measured.len() as f64;
            let min = measured.iter().map(|m| m.1).fold(f64::INFINITY, f64::min);
            let run_to_run = measured.iter().filter_map(|m| m.2).reduce(f64::min);
            let _ = writeln!(
                s,
                "\nOver the {} measured cases: mean of means {:.1}%, lowest min {:.1}%, lowest \
                 run-to-run {}; {} failed.",
                measured.len(),
                100.0 * mean,
                100.0 * min,
                percent(run_to_run),
                rows.len() - measured.len()
            );
        }
    }
    s
}

/// `97.5%`, or `–` for a figure not measured.
fn percent(x: Option<f64>) -> String {
    x.map_or_else(|| "–".into(), |x| format!("{:.1}%", 100.0 * x))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn study_args(line: &[&str]) -> Result<StudyArgs, clap::Error> {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            study: StudyArgs,
        }
        use clap::Parser;
        Cli::try_parse_from(std::iter::once("study").chain(line.iter().copied())).map(|c| c.study)
    }

    #[test]
    fn the_charged_settings_run_only_when_named() {
        let default = study_args(&[]).unwrap();
        let runs = |a: &StudyArgs| {
            SETTINGS
                .iter()
                .filter(|&&(clock, ranks)| a.runs_setting(clock, ranks))
                .map(|&(clock, ranks)| setting_name(clock, ranks))
                .collect::<Vec<_>>()
        };
        assert_eq!(runs(&default), ["wall-2", "virtual-8"]);
        let charged = study_args(&["--settings", "charged-8,wall-2"]).unwrap();
        assert_eq!(runs(&charged), ["wall-2", "charged-8"]);
        // A recorded case is re-predicted whatever its setting unless --settings says otherwise.
        let mut recorded = case(
            "jacobi",
            Outcome::Failed {
                error: String::new(),
            },
        );
        recorded.clock = "charged".into();
        assert!(default.selects(&recorded));
        assert!(!study_args(&["--settings", "virtual-8"])
            .unwrap()
            .selects(&recorded));
    }

    #[test]
    fn unknown_fixtures_families_and_settings_are_errors_naming_them() {
        assert!(
            study_args(&["--settings", "charged-8", "--fixtures", "cg,rna"])
                .unwrap()
                .check_names()
                .is_ok()
        );
        for (line, says) in [
            (
                ["--settings", "wall-2,charged-4"],
                "--settings: no setting `charged-4`",
            ),
            (
                ["--fixtures", "jacobi,jacobbi"],
                "--fixtures: no fixture `jacobbi`",
            ),
            (
                ["--families", "hy4"],
                "--families: no family `hy4` (known: dc, io,",
            ),
        ] {
            let err = study_args(&line)
                .unwrap()
                .check_names()
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(says), "{err}");
        }
    }

    fn case(fixture: &str, outcome: Outcome) -> Case {
        Case {
            clock: "virtual".into(),
            ranks: 8,
            fixture: fixture.into(),
            cluster: "hy1-8".into(),
            rows: 10,
            dir: format!("virtual-8/{fixture}-hy1-8"),
            outcome,
        }
    }

    #[test]
    fn the_table_lists_every_case_and_the_overall_figures() {
        let cases = [
            case(
                "jacobi",
                Outcome::Measured {
                    mean_accuracy: 0.99,
                    min_accuracy: 0.97,
                    worst: "in-core".into(),
                    speedup_over_block: 5.0,
                    chosen_vs_best_percent: 1.5,
                    run_to_run: Some(0.96),
                    worst_outside: Some(0.0),
                    load: Some(0.15),
                },
            ),
            case(
                "cg",
                Outcome::Measured {
                    mean_accuracy: 0.95,
                    min_accuracy: 0.90,
                    worst: "block".into(),
                    speedup_over_block: 2.0,
                    chosen_vs_best_percent: 0.0,
                    run_to_run: None,
                    worst_outside: Some(0.042),
                    load: None,
                },
            ),
            case(
                "rna",
                Outcome::Failed {
                    error: "step 2 | build".into(),
                },
            ),
        ];
        let t = table(&cases);
        assert!(t.contains("## virtual clock, 8 ranks"), "{t}");
        assert!(
            t.contains(
                "| jacobi | [hy1-8](virtual-8/jacobi-hy1-8/index.html) | 10 | 99.0% | 97.0% | in-core | 96.0% | inside | 5.00× faster | +1.5% | 0.15 |"
            ),
            "{t}"
        );
        assert!(t.contains("| – | 4.2% | 2.00× faster | +0.0% | – |"), "{t}");
        assert!(t.contains("failed: step 2 / build"), "{t}");
        assert!(
            t.contains(
                "Over the 2 measured cases: mean of means 97.0%, lowest min 90.0%, lowest run-to-run 96.0%; 1 failed."
            ),
            "{t}"
        );
    }

    #[test]
    fn writing_the_table_again_keeps_the_notes_below_the_marker() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [case(
            "rna",
            Outcome::Failed {
                error: "step 2".into(),
            },
        )];
        // A first study writes the marker, with nothing below it.
        write(dir.path(), &cases).unwrap();
        let first = std::fs::read_to_string(dir.path().join("README.md")).unwrap();
        assert!(first.ends_with(NOTES_MARKER), "{first}");
        // Notes written by hand below it survive the next study; the table above is new.
        let notes = "\n\n## How this table was made\n\nBy hand, at 02:27 UTC.\n";
        std::fs::write(
            dir.path().join("README.md"),
            format!("an old table\n{NOTES_MARKER}{notes}"),
        )
        .unwrap();
        write(dir.path(), &cases).unwrap();
        let second = std::fs::read_to_string(dir.path().join("README.md")).unwrap();
        assert!(!second.contains("an old table"), "{second}");
        assert!(second.starts_with("# Accuracy study"), "{second}");
        assert!(
            second.ends_with(&format!("{NOTES_MARKER}{notes}")),
            "{second}"
        );
    }

    #[test]
    fn figures_come_from_the_tune_document() {
        let text = include_str!("../tests/data/tune-document.json");
        let mut doc: TuneDocument = serde_json::from_str(text).unwrap();
        // Hand-set times: best 0.2 s actual, block 1.0 s, the fastest run (in-core) 0.16 s,
        // balanced the least accurate (predicted 0.5 against 1.0 actual: accuracy 0).
        for (d, (predicted, actual)) in doc.distributions.iter_mut().zip([
            (0.2, 0.2),
            (1.0, 1.0),
            (0.5, 1.0),
            (0.16, 0.16),
            (0.3, 0.3),
        ]) {
            *d = super::super::tune::document::DistributionResult::new(
                &d.name,
                d.rows.clone(),
                predicted,
                actual,
            );
        }
        // Block ran three times, 0.9–1.1 s (median 1.0, as set): run-to-run 1 − 0.2 / 0.9.
        let block = &doc.distributions[1];
        doc.distributions[1] = super::super::tune::document::DistributionResult::measured(
            &block.name,
            block.rows.clone(),
            1.0,
            vec![1.1, 0.9, 1.0],
        );
        doc.best.actual_s = 0.2;
        doc.accuracy = TuneDocument::summarize(&doc.distributions);
        let Outcome::Measured {
            mean_accuracy,
            min_accuracy,
            worst,
            speedup_over_block,
            chosen_vs_best_percent,
            run_to_run,
            worst_outside,
            load,
        } = measured(&doc)
        else {
            panic!("measured")
        };
        assert_eq!(worst, "balanced");
        assert!((min_accuracy - 0.0).abs() < 1e-12, "{min_accuracy}");
        assert!((mean_accuracy - 0.8).abs() < 1e-12, "{mean_accuracy}");
        assert!(
            (speedup_over_block - 5.0).abs() < 1e-12,
            "{speedup_over_block}"
        );
        assert!(
            (chosen_vs_best_percent - 25.0).abs() < 1e-9,
            "{chosen_vs_best_percent}"
        );
        assert!((run_to_run.unwrap() - (1.0 - 0.2 / 0.9)).abs() < 1e-12);
        // Block's prediction (1.0) lies inside its runs (0.9–1.1); the others have one run.
        assert_eq!(worst_outside, Some(0.0));
        assert_eq!(load, None);
    }
}
