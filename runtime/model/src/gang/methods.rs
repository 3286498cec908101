//! The four task-count methods of §3.3.1: how many processors `N_i^p` a job asks for before it
//! is scheduled.

use super::jobs::Job;

/// A task-count method (TCM) of §3.3.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Method {
    /// The user's estimate from speedup alone, ignoring I/O.
    #[serde(rename = "p-based")]
    PBased,
    /// Equation (3.5): the critical number, at most the machine.
    #[serde(rename = "c-based")]
    CBased,
    /// Every processor of the machine.
    #[serde(rename = "a-based")]
    ABased,
    /// p-based, but the whole machine when that falls short of the critical number.
    #[serde(rename = "cp-based")]
    CpBased,
}

impl Method {
    /// In the order of the thesis's tables.
    pub const ALL: [Method; 4] = [
        Method::PBased,
        Method::ABased,
        Method::CpBased,
        Method::CBased,
    ];

    /// The name other tools read (`--json`).
    pub fn name(self) -> &'static str {
        match self {
            Method::PBased => "p-based",
            Method::CBased => "c-based",
            Method::ABased => "a-based",
            Method::CpBased => "cp-based",
        }
    }

    /// `N_i^p` of `job` on a machine of `machine` processors.
    pub fn processors(self, job: &Job, machine: u32) -> u32 {
        match self {
            Method::PBased => speedup_estimate(job, machine),
            Method::CBased => job.critical_number.min(machine),
            Method::ABased => machine,
            Method::CpBased => {
                let p = speedup_estimate(job, machine);
                if p < job.critical_number {
                    machine
                } else {
                    p
                }
            }
        }
    }
}

/// The speedup a doubling of `N_i^p` must bring to be taken (§3.3.1: 1.2).
pub const SPEEDUP_THRESHOLD: f64 = 1.2;

/// The p-based count (§3.3.1): start at one processor and double while the doubling speeds the
/// work of equation (3.1) up by at least [`SPEEDUP_THRESHOLD`]; keep the count before the first
/// doubling that does not. "If doubling N_i^p reaches N_S^p, the job receives all processors":
/// the last step is to the machine's size itself, so on a machine that is not a power of two
/// (say 6) the step from 4 goes to 6, not 8.
pub fn speedup_estimate(job: &Job, machine: u32) -> u32 {
    let machine = machine.max(1);
    let mut n = 1;
    while n < machine {
        let next = (2 * n).min(machine);
        if job.work(n) / job.work(next) < SPEEDUP_THRESHOLD {
            break;
        }
        n = next;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::gang::tests::table_job as job;

    #[test]
    fn p_based_doubles_while_the_speedup_is_at_least_1_2() {
        // P = 90: work ∝ 10 + 90/n. n=1→2: 100/55 = 1.82; 2→4: 55/32.5 = 1.69;
        // 4→8: 32.5/21.25 = 1.53; 8→16: 21.25/15.625 = 1.36; 16→32: 15.625/12.8125 = 1.22;
        // 32→64: 12.8125/11.40625 = 1.12 < 1.2 → 32.
        assert_eq!(speedup_estimate(&job(64, 90.0), 128), 32);
        // P = 65: 35 + 65/n. 1→2: 100/67.5 = 1.48; 2→4: 67.5/51.25 = 1.32;
        // 4→8: 51.25/43.125 = 1.19 < 1.2 → 4.
        assert_eq!(speedup_estimate(&job(64, 65.0), 128), 4);
        // P = 100: every doubling halves the work: all processors.
        assert_eq!(speedup_estimate(&job(64, 100.0), 128), 128);
        // The last step goes to the machine's size: 4 → 6 on six processors.
        assert_eq!(speedup_estimate(&job(64, 100.0), 6), 6);
        // P = 0: no doubling helps.
        assert_eq!(speedup_estimate(&job(64, 0.0), 128), 1);
    }

    #[test]
    fn the_four_methods_on_hand_picked_jobs() {
        // Machine of 4 processors. Job A: CN 2, P 80 (p-based: 1→2 1.67, 2→4 1.5 → 4).
        // Job B: CN 8, P 65 (p-based: 1→2 1.48, 2→4 1.32 → 4).
        // Job C: CN 4, P 20: work ∝ 80 + 20/n; 1→2: 100/90 = 1.11 < 1.2 → 1.
        let (a, b, c) = (job(2, 80.0), job(8, 65.0), job(4, 20.0));
        let counts = |m: Method| {
            [
                m.processors(&a, 4),
                m.processors(&b, 4),
                m.processors(&c, 4),
            ]
        };
        assert_eq!(counts(Method::PBased), [4, 4, 1]);
        // c-based: CN, at most the machine (3.5).
        assert_eq!(counts(Method::CBased), [2, 4, 4]);
        assert_eq!(counts(Method::ABased), [4, 4, 4]);
        // cP-based: p-based unless it falls short of CN (C: 1 < 4 → 4; B: 4 < 8 → 4).
        assert_eq!(counts(Method::CpBased), [4, 4, 4]);
        // On 128 processors B's p-based 4 < CN 8, so cP-based gives it all 128.
        assert_eq!(Method::CpBased.processors(&b, 128), 128);
        assert_eq!(Method::CpBased.processors(&job(2, 90.0), 128), 32);
    }
}
