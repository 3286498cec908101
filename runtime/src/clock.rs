//! The rank's clock: wall time, or the virtual clock of `--clock virtual` (DESIGN §5).
//!
//! Interface used across the runtime (hooks, out-of-core arrays, communicators):
//! `now()` reads the current rank's clock in seconds; `charge(s)` accounts an emulated cost of
//! `s` seconds (the virtual clock advances by `s`; the wall clock waits `s`).
//!
//! This is the wall-clock-only starting point; the virtual clock replaces it.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Seconds on the current rank's clock.
pub fn now() -> f64 {
    epoch().elapsed().as_secs_f64()
}

/// Account an emulated cost of `seconds` on the current rank.
pub fn charge(seconds: f64) {
    if seconds > 0.0 {
        let until = Instant::now() + Duration::from_secs_f64(seconds);
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
}
