//! The three experiments of §3.3 and the thesis's own numbers to set ours beside.

use super::jobs::MixSpec;
use super::methods::Method;
use super::{simulate_all, Config, GangError, Mode, Outcome};

/// An experiment of §3.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Experiment {
    /// §3.3.1, Table 3.3: CN over `(1, N_S^p)`, 100 iterations.
    Baseline,
    /// §3.3.2, Table 3.4: CN over `(1, N_S^p / 2)` and `(1, 2 N_S^p)`.
    CnRange,
    /// §3.3.3, Table 3.5: the iterations (so the I/O frequency) halved and doubled.
    IoFrequency,
}

impl Experiment {
    pub fn name(self) -> &'static str {
        match self {
            Experiment::Baseline => "baseline",
            Experiment::CnRange => "cn-range",
            Experiment::IoFrequency => "io-frequency",
        }
    }

    /// The variants the experiment runs: a name (the first column of the thesis's table) and
    /// the mix.
    pub fn variants(self, processors: u32) -> Vec<(&'static str, MixSpec)> {
        let base = MixSpec::baseline(processors);
        let n = f64::from(processors);
        match self {
            Experiment::Baseline => vec![("baseline", base)],
            Experiment::CnRange => vec![
                (
                    "half",
                    MixSpec {
                        cn_max: n / 2.0,
                        ..base.clone()
                    },
                ),
                (
                    "twice",
                    MixSpec {
                        cn_max: 2.0 * n,
                        ..base
                    },
                ),
            ],
            Experiment::IoFrequency => vec![
                (
                    "half",
                    MixSpec {
                        iterations: base.iterations / 2,
                        ..base.clone()
                    },
                ),
                (
                    "double",
                    MixSpec {
                        iterations: base.iterations * 2,
                        ..base
                    },
                ),
            ],
        }
    }

    /// Runs every variant on the mix drawn from `seed`.
    pub fn run(self, seed: u64, config: &Config) -> Result<Vec<VariantResult>, GangError> {
        self.variants(config.processors)
            .into_iter()
            .map(|(variant, spec)| {
                Ok(VariantResult {
                    variant,
                    rows: simulate_all(&spec.generate(seed), config)?,
                })
            })
            .collect()
    }
}

/// One variant's eight runs.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantResult {
    pub variant: &'static str,
    pub rows: Vec<Outcome>,
}

/// A row of the thesis's Tables 3.3–3.5: ATT and end time, STU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThesisRow {
    pub variant: &'static str,
    pub mode: Mode,
    pub method: Method,
    pub att: f64,
    pub end_time: f64,
}

const fn row(variant: &'static str, mode: Mode, method: Method, att: f64, end: f64) -> ThesisRow {
    ThesisRow {
        variant,
        mode,
        method,
        att,
        end_time: end,
    }
}

use Method::{ABased as A, CBased as C, CpBased as CP, PBased as P};
use Mode::{Enhanced as E, Schark as S};

/// The thesis's reported numbers (seed Tables 3.3–3.5), to compare against; the thesis does
/// not list Enhanced a-based (the same as Schark's, §3.3.1). Nothing in the simulator reads
/// them.
pub fn thesis(experiment: Experiment) -> &'static [ThesisRow] {
    match experiment {
        Experiment::Baseline => BASELINE,
        Experiment::CnRange => CN_RANGE,
        Experiment::IoFrequency => IO_FREQUENCY,
    }
}

const BASELINE: &[ThesisRow] = &[
    row("baseline", S, P, 15912.0, 40007.0),
    row("baseline", S, A, 4455.0, 5912.0),
    row("baseline", S, CP, 4109.0, 5513.0),
    row("baseline", S, C, 3074.0, 4302.0),
    row("baseline", E, P, 14132.0, 22666.0),
    row("baseline", E, CP, 3706.0, 5532.0),
    row("baseline", E, C, 2597.0, 4792.0),
];

const CN_RANGE: &[ThesisRow] = &[
    row("half", S, P, 8007.0, 20464.0),
    row("half", S, A, 4455.0, 5912.0),
    row("half", S, CP, 4036.0, 5260.0),
    row("half", S, C, 1864.0, 2682.0),
    row("half", E, P, 6976.0, 12072.0),
    row("half", E, CP, 3416.0, 5392.0),
    row("half", E, C, 1752.0, 3642.0),
    row("twice", S, P, 31708.0, 79124.0),
    row("twice", S, A, 13305.0, 24170.0),
    row("twice", S, CP, 13179.0, 23908.0),
    row("twice", S, C, 12726.0, 23388.0),
    row("twice", E, P, 28021.0, 43877.0),
    row("twice", E, CP, 13033.0, 23990.0),
    row("twice", E, C, 12123.0, 23608.0),
];

const IO_FREQUENCY: &[ThesisRow] = &[
    row("half", S, P, 8277.0, 20484.0),
    row("half", S, A, 4455.0, 5912.0),
    row("half", S, CP, 4109.0, 5515.0),
    row("half", S, C, 3079.0, 4317.0),
    row("half", E, P, 7177.0, 12066.0),
    row("half", E, CP, 3705.0, 5532.0),
    row("half", E, C, 2603.0, 4812.0),
    row("double", S, P, 31191.0, 79152.0),
    row("double", S, A, 4455.0, 5912.0),
    row("double", S, CP, 4089.0, 5493.0),
    row("double", S, C, 3082.0, 4338.0),
    row("double", E, P, 27597.0, 43878.0),
    row("double", E, CP, 3706.0, 5532.0),
    row("double", E, C, 2597.0, 4792.0),
];
