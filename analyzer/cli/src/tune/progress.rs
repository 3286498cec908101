//! Progress of a tune run on stderr: an indicatif bar on a terminal, one plain line per step
//! otherwise (logs, CI, tests).

use std::io::IsTerminal as _;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

pub struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    step: u64,
    start: Instant,
}

impl Progress {
    /// A progress report over `total` steps.
    pub fn new(total: u64) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            let style = ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            bar.set_style(style);
            bar
        });
        Progress {
            bar,
            total,
            step: 0,
            start: Instant::now(),
        }
    }

    /// Starts the next step, described by `message`.
    pub fn step(&mut self, message: &str) {
        self.step += 1;
        if let Some(bar) = &self.bar {
            bar.set_position(self.step - 1);
        }
        self.note(message);
    }

    /// Reports `message` within the current step.
    pub fn note(&self, message: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(message.to_string()),
            None => eprintln!(
                "tune: [{}/{}] {message} ({:.1} s)",
                self.step,
                self.total,
                self.start.elapsed().as_secs_f64()
            ),
        }
    }

    /// Finishes (and clears) the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
