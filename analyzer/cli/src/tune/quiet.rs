//! Is the machine quiet enough to measure on? Before a case, `tune` waits (up to `--wait-quiet`)
//! until the load average is below the core count and no other process uses more than
//! [`BUSY_SHARE`] of a core, then goes on either way and records what it saw ([`Load`]) in
//! tune.json and the report, so a figure measured beside other work says so.
//!
//! Linux only (`/proc/loadavg`, `/proc/<pid>/stat`); elsewhere the load is recorded as unknown.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// A process using more than this share of one core is other work.
pub const BUSY_SHARE: f64 = 0.10;

/// How long one look at the processes' CPU use lasts.
const SAMPLE: Duration = Duration::from_secs(1);

/// The clock ticks per second of `/proc/<pid>/stat` times (`USER_HZ`, 100 on every Linux ABI).
const TICKS_PER_SECOND: f64 = 100.0;

/// What the machine was doing when a case began.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Load {
    /// The 1-minute load average (`None` where it cannot be read).
    pub load_average: Option<f64>,
    pub cores: usize,
    /// Other processes above [`BUSY_SHARE`] of a core, busiest first.
    pub busy: Vec<Busy>,
    /// Seconds waited for the machine to become quiet.
    pub waited_s: f64,
    /// Whether it was quiet when the case began (`None`: unknown).
    pub quiet: Option<bool>,
}

/// Another process's use of the CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Busy {
    pub pid: u32,
    pub command: String,
    /// Share of one core over the sample.
    pub cpu: f64,
}

impl Load {
    /// One line for the table and the report.
    pub fn describe(&self) -> String {
        let Some(average) = self.load_average else {
            return "machine load: unknown (no /proc)".into();
        };
        let mut out = format!(
            "machine load: {average:.2} on {} cores{}",
            self.cores,
            match self.quiet {
                Some(true) => ", quiet",
                Some(false) => ", NOT quiet",
                None => "",
            }
        );
        if !self.busy.is_empty() {
            let busy: Vec<String> = self
                .busy
                .iter()
                .map(|b| format!("{} ({}) {:.0}%", b.command, b.pid, b.cpu * 100.0))
                .collect();
            out.push_str(&format!("; busy: {}", busy.join(", ")));
        }
        if self.waited_s > 0.0 {
            out.push_str(&format!("; waited {:.0} s", self.waited_s));
        }
        out
    }
}

/// Waits up to `limit` for a quiet machine, calling `note` with what keeps it busy; returns
/// the load when it went on.
pub fn wait(limit: Duration, mut note: impl FnMut(&str)) -> Load {
    let start = Instant::now();
    loop {
        let mut load = look();
        load.waited_s = start.elapsed().as_secs_f64();
        let quiet = load.quiet != Some(false);
        if quiet || start.elapsed() >= limit {
            return load;
        }
        note(&format!("waiting for a quiet machine: {}", load.describe()));
        std::thread::sleep(SAMPLE);
    }
}

/// The load now: the load average, and every other process's CPU use over `SAMPLE`.
pub fn look() -> Load {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load_average = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok());
    let Some(average) = load_average else {
        return Load {
            load_average: None,
            cores,
            busy: Vec::new(),
            waited_s: 0.0,
            quiet: None,
        };
    };
    let before = cpu_ticks();
    let began = Instant::now();
    std::thread::sleep(SAMPLE);
    let after = cpu_ticks();
    let seconds = began.elapsed().as_secs_f64();
    let busy = busy(&before, &after, seconds);
    Load {
        load_average,
        cores,
        quiet: Some(average < cores as f64 && busy.is_empty()),
        busy,
        waited_s: 0.0,
    }
}

/// The processes above [`BUSY_SHARE`] between two readings `seconds` apart, busiest first.
fn busy(
    before: &HashMap<u32, (String, u64)>,
    after: &HashMap<u32, (String, u64)>,
    seconds: f64,
) -> Vec<Busy> {
    let mut busy: Vec<Busy> = after
        .iter()
        .filter_map(|(&pid, (command, ticks))| {
            let (_, earlier) = before.get(&pid)?;
            let cpu = ticks.saturating_sub(*earlier) as f64 / TICKS_PER_SECOND / seconds;
            (cpu > BUSY_SHARE).then(|| Busy {
                pid,
                command: command.clone(),
                cpu,
            })
        })
        .collect();
    busy.sort_by(|a, b| b.cpu.total_cmp(&a.cpu).then(a.pid.cmp(&b.pid)));
    busy
}

/// Every other process's command and user + system ticks.
fn cpu_ticks() -> HashMap<u32, (String, u64)> {
    let own = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != own)
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            parse_stat(&stat).map(|s| (pid, s))
        })
        .collect()
}

/// `(command, utime + stime)` of a `/proc/<pid>/stat` line. The command is in parentheses and
/// may hold spaces and parentheses itself, so fields are counted after its last `)`.
fn parse_stat(stat: &str) -> Option<(String, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let command = stat.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    // After the command: state (field 3), … utime (14) and stime (15).
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    Some((command, utime + stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_its_command_and_cpu_ticks() {
        let line = "4242 (tmux: server) S 1 4242 4242 0 -1 4194560 1520 0 0 0 37 12 0 0 20 0 1 0 \
                    1234 9000000 500 18446744073709551615";
        assert_eq!(parse_stat(line), Some(("tmux: server".into(), 49)));
        let odd = "7 (a) b)) R 1 7 7 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 1 1 1 1";
        assert_eq!(parse_stat(odd), Some(("a) b)".into(), 11)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn only_processes_above_a_tenth_of_a_core_are_busy() {
        let before = HashMap::from([
            (1, ("cargo".to_string(), 100)),
            (2, ("sshd".to_string(), 50)),
            (3, ("rustc".to_string(), 0)),
        ]);
        // Over 2 s: cargo 150 ticks (75 %), sshd 10 (5 %), rustc 40 (20 %); 4 is new.
        let after = HashMap::from([
            (1, ("cargo".to_string(), 250)),
            (2, ("sshd".to_string(), 60)),
            (3, ("rustc".to_string(), 40)),
            (4, ("new".to_string(), 900)),
        ]);
        let busy = busy(&before, &after, 2.0);
        let names: Vec<(&str, f64)> = busy.iter().map(|b| (b.command.as_str(), b.cpu)).collect();
        assert_eq!(names, [("cargo", 0.75), ("rustc", 0.2)]);
    }

    #[test]
    fn the_description_names_what_keeps_the_machine_busy() {
        let load = Load {
            load_average: Some(2.5),
            cores: 2,
            busy: vec![Busy {
                pid: 9,
                command: "rustc".into(),
                cpu: 0.97,
            }],
            waited_s: 60.0,
            quiet: Some(false),
        };
        assert_eq!(
            load.describe(),
            "machine load: 2.50 on 2 cores, NOT quiet; busy: rustc (9) 97%; waited 60 s"
        );
    }
}
