//! `mheta phases TRACE [--structure S] [--json] [--dot]`: the independent blocks, dependency
//! graph and phases (seed 003, Gehring) of a run's Chrome trace (`--trace` of either backend),
//! and, given the program's structure file, whether the repeating phase of the main loop shows
//! the structure's events. The work is `mheta_model::phases`; this file reads and prints.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context as _};
use mheta_model::phases::{self, Agreement};
use mheta_runtime::format::{Structure, STRUCTURE_SCHEMA};

#[derive(Debug, clap::Args)]
pub struct PhasesArgs {
    /// The Chrome trace of one run (`--trace FILE` of an instrumented program).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// The program's structure (`mheta analyze` output, `mheta-structure/1`): compare the main
    /// loop's phase with its events and its sections' boundaries.
    #[arg(long, value_name = "FILE")]
    pub structure: Option<PathBuf>,
    /// Print `{"phases": [{"occurrences", "blocks", "seconds", ...}], "agree": true|false|null}`;
    /// each phase also has `ranks`, `labels`, `events`, `main_loop` and, for the main loop's
    /// with `--structure`, `agreement` (events, and the section boundaries in `sections`).
    #[arg(long, conflicts_with = "dot")]
    pub json: bool,
    /// Print the dependency graph in DOT (Graphviz) instead of the phases.
    #[arg(long)]
    pub dot: bool,
    /// The most candidate pairs the detection keeps, and its memory in all (about 300 bytes a
    /// pair). A long pipeline of identical tiles makes it keep nearly every pair of phases;
    /// past this the command stops with an error instead of exhausting memory.
    #[arg(long, value_name = "N", default_value_t = phases::detect::MAX_PAIRS)]
    pub max_pairs: usize,
    /// Analyse the run only up to the end of each rank's K-th main-loop iteration (its set-up
    /// and its first K iterations). The detection's cost grows with the square of the blocks,
    /// so a long run is read through its first iterations; the main loop's phase then occurs K
    /// times.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    pub iterations: Option<u64>,
}

pub fn run(args: &PhasesArgs) -> anyhow::Result<()> {
    let file = args.trace.display().to_string();
    let text =
        std::fs::read_to_string(&args.trace).with_context(|| format!("cannot read `{file}`"))?;
    let mut trace = phases::Trace::parse(&text, &file)?;
    if let Some(k) = args.iterations {
        trace = trace.first_iterations(k as usize);
    }
    let analysis = phases::analyse_within(&trace, &file, args.max_pairs)?;
    if args.dot {
        return super::stdout(&analysis.graph.to_dot());
    }
    if let Some(at) = analysis.detection.exhausted {
        // Fewer iterations help only a trace that has more than two.
        let most = trace
            .ranks
            .iter()
            .map(|r| r.iterations())
            .max()
            .unwrap_or(0);
        let fewer = if most > 2 {
            "analyse fewer iterations (--iterations 2), "
        } else {
            ""
        };
        bail!(
            "`{file}`: the phase detection stopped after {} merges, holding {} candidate pairs \
             and about {} MB (--max-pairs {}: that many pairs, {} MB in all). {} independent \
             blocks on {} ranks are too many for it (a long pipeline of identical tiles, or a \
             halo exchange with no collective, keeps nearly every pair of phases): {fewer}record \
             coarser tiles, or raise --max-pairs",
            analysis.detection.merges.len(),
            at.pairs,
            at.bytes / 1_000_000,
            args.max_pairs,
            args.max_pairs.saturating_mul(phases::detect::PAIR_BYTES) / 1_000_000,
            analysis.graph.len(),
            analysis.graph.ranks.len()
        );
    }
    let agreement = match &args.structure {
        None => None,
        Some(path) => {
            let structure: Structure = super::read_json(path)?;
            if structure.schema != STRUCTURE_SCHEMA {
                bail!(
                    "`{}`: field `schema` is \"{}\", this mheta reads \"{STRUCTURE_SCHEMA}\"",
                    path.display(),
                    structure.schema
                );
            }
            let main = analysis.main_loop.map(|i| &analysis.phases[i]);
            Some(phases::agreement(main, &structure))
        }
    };
    if args.json {
        // Exactly `phases` and `agree` at the top (other tools read these names); the rest goes
        // inside the phase objects: which one is the main loop's, and its agreement details.
        let mut phases = serde_json::to_value(&analysis.phases)?;
        for (i, p) in phases.as_array_mut().into_iter().flatten().enumerate() {
            let main = Some(i) == analysis.main_loop;
            p["main_loop"] = serde_json::Value::Bool(main);
            if let (true, Some(a)) = (main, &agreement) {
                p["agreement"] = serde_json::to_value(a)?;
            }
        }
        let doc = serde_json::json!({
            "phases": phases,
            "agree": agreement.as_ref().map(|a| a.agree),
        });
        return super::stdout(&format!("{}\n", serde_json::to_string_pretty(&doc)?));
    }
    super::stdout(&render(&analysis, agreement.as_ref()))
}

fn render(a: &phases::Analysis, agreement: Option<&Agreement>) -> String {
    let mut out = String::new();
    let g = &a.graph;
    let _ = writeln!(
        out,
        "{} ranks, {} independent blocks, {} edges; {} phases extracted in {} merges{}",
        g.ranks.len(),
        g.len(),
        g.graph.edge_count(),
        a.detection.phases.len(),
        a.detection.merges.len(),
        if a.detection.truncated {
            " (stopped at the |V|² bound)"
        } else {
            ""
        }
    );
    let _ = writeln!(out, "iterations recorded per rank: {:?}", a.iterations);
    let _ = writeln!(
        out,
        "\n{:>4}  {:>11}  {:>6}  {:>12}  occurrences per rank",
        "", "occurrences", "blocks", "seconds"
    );
    for (i, p) in a.phases.iter().enumerate() {
        let mark = if Some(i) == a.main_loop { "main" } else { "" };
        let _ = writeln!(
            out,
            "{mark:>4}  {:>11}  {:>6}  {:>12.6}  {:?}",
            p.occurrences, p.blocks, p.seconds, p.ranks
        );
    }
    match a.main_loop {
        Some(i) => {
            let p = &a.phases[i];
            let _ = writeln!(out, "\nmain-loop phase: events {:?}; blocks:", p.events);
            for l in &p.labels {
                let _ = writeln!(out, "  {l}");
            }
        }
        None => out.push_str("\nno phase repeats on every rank that ran the main loop\n"),
    }
    if let Some(ag) = agreement {
        let _ = writeln!(out, "\nstructure (solver `{}`):", ag.solver);
        for e in &ag.run_only {
            let _ = writeln!(out, "  event {e}: the run shows it, the structure lacks it");
        }
        for e in &ag.structure_only {
            let _ = writeln!(
                out,
                "  event {e}: in the structure, not in the run's main-loop phase"
            );
        }
        for e in &ag.conditional_absent {
            let _ = writeln!(out, "  event {e}: conditional in the structure, not in every iteration (no disagreement)");
        }
        if ag.unattributed_calls > 0 {
            let _ = writeln!(
                out,
                "  {} calls in the main-loop phase belong to no structure event",
                ag.unattributed_calls
            );
        }
        if let Some(s) = &ag.sections {
            let bounds: Vec<String> = s
                .structure
                .iter()
                .map(|(section, event)| format!("{section} (event {event})"))
                .collect();
            let _ = writeln!(
                out,
                "  section boundaries in the structure: {}",
                if bounds.is_empty() {
                    "none a run can show".to_string()
                } else {
                    bounds.join(", ")
                }
            );
            for (rank, seq) in s.run.iter().enumerate() {
                let _ = writeln!(out, "    rank {rank} shows sections {seq:?}");
            }
            for x in &s.run_only {
                let place = x
                    .section
                    .map_or("no section".to_string(), |k| format!("section {k}"));
                let _ = writeln!(
                    out,
                    "  rank {}, {place}: the run shows a boundary (`{}`) the structure lacks",
                    x.rank, x.call
                );
            }
            for k in &s.structure_only {
                let _ = writeln!(
                    out,
                    "  section {k}: its boundary is in the structure, no rank shows it"
                );
            }
            for r in &s.out_of_order {
                let _ = writeln!(
                    out,
                    "  rank {r}: the boundaries come in another order than the structure's sections"
                );
            }
            if !s.order_compared {
                out.push_str("  (repeated groups: the order of the boundaries is not compared)\n");
            }
            let _ = writeln!(
                out,
                "  sections {}",
                if s.agree { "agree" } else { "disagree" }
            );
        }
        let _ = writeln!(out, "  {}", if ag.agree { "agree" } else { "disagree" });
    }
    out
}
