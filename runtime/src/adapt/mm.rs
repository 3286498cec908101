//! MMlib (seed 004, Ch. 5–6): out-of-core arrays whose in-core panel count follows the memory
//! actually available.
//!
//! A run with `--mmlib` makes every array a node places a *malleable* array: it is cut into
//! [`PANELS`] panels (its blocks, `num_blocks()`), kept on disk in the array's block files, and as
//! many panels as memory allows are cached in memory. Reading a cached panel moves no bytes;
//! reading another reads its block file and caches it, evicting the most recently used panel
//! when the cache is full (MMlib's default, right for cyclic sweeps: the first panels stay, the
//! last slot cycles). A dirty panel is written back when evicted.
//!
//! How many panels to cache (`Panels_in`) is decided whenever a panel is requested, by the rule
//! of seed Fig. 5.10 ([`Adapter::before_request`]) with §6.4.1's test of a real shortage: the
//! resident set the node lets the array keep (here: the node's memory less what its load
//! schedule takes and what its other arrays hold — without an emulated node, what the machine
//! has available, `MemAvailable`, besides the panels — capped by what the array caches, mRSS) is
//! compared with what it caches (dRSS); when it is less, the array gives up the panels that are
//! not resident at once (a *shortage*); when every cached panel is resident and fewer
//! than all are cached, it caches one more — at once if no shortage was ever seen, otherwise only
//! when the time since the last shortage exceeds `base_delay × R_pen`, where `base_delay` is the
//! time the last `P` requests took and `R_pen = (peak − trough) / (peak − rss)` (at most
//! [`R_PEN_MAX`]) weighs how far the last probe fell (`peak`, `trough`) against how close the
//! array is to it now. A probe that asks for more than the node has is paid for in emulated paging
//! (`OocArray::read_block`) until the next request detects the shortage.
//!
//! A fixed placement keeps its in-core arrays whole whatever the load takes, and pages; a
//! malleable one streams the panels that no longer fit through its explicit, sequential block
//! reads instead.

use std::collections::VecDeque;

/// Panels a malleable array is cut into (seed §7.3.1 found 20–40 panels best on its codes:
/// fewer adapt too coarsely, more cost bookkeeping and I/O calls).
pub const PANELS: u64 = 20;

/// The most `R_pen` may weigh the time since the last shortage (seed §5.4.2: 10 worked well and
/// larger values change little).
pub const R_PEN_MAX: f64 = 10.0;

/// What [`Adapter::before_request`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Panels to cache from now on.
    pub capacity: u64,
    /// Whether this request detected a shortage.
    pub shortage: bool,
}

/// The panel-count rule of seed Fig. 5.10, in panels and seconds on the rank's clock.
#[derive(Debug, Clone)]
pub struct Adapter {
    /// Panels of the array, P.
    panels: u64,
    /// Panels to cache, `Panels_in`.
    capacity: u64,
    /// The highest resident count since the last surplus step, `max_since_last_surplus`.
    max_since_surplus: u64,
    /// The resident count before the last shortage, `peakRSS`.
    peak: u64,
    /// The lowest resident count since the last shortage, `troughRSS`.
    trough: u64,
    /// When the last shortage was detected.
    last_shortage_at: Option<f64>,
    /// When the last `panels` requests were made, oldest first.
    requests: VecDeque<f64>,
}

impl Adapter {
    /// An array of `panels` panels (at least 1) starting with `capacity` of them cached.
    pub fn new(panels: u64, capacity: u64) -> Adapter {
        let panels = panels.max(1);
        Adapter {
            panels,
            capacity: capacity.clamp(1, panels),
            max_since_surplus: 0,
            peak: 0,
            trough: 0,
            last_shortage_at: None,
            requests: VecDeque::new(),
        }
    }

    /// Panels to cache.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// A panel is requested at `now` while `cached` panels are cached and the node leaves room
    /// for `room` of them; returns the capacity to keep (evict down to it).
    pub fn before_request(&mut self, now: f64, cached: u64, room: u64) -> Decision {
        if self.requests.len() as u64 >= self.panels {
            self.requests.pop_front();
        }
        self.requests.push_back(now);
        // The resident panels (mRSS): what the node leaves room for of what is cached. The
        // panels cached (dRSS) beyond it are being paged.
        let rss = cached.min(room);
        self.max_since_surplus = self.max_since_surplus.max(rss);
        self.trough = self.trough.min(rss);
        let mut shortage = false;
        if rss < cached && self.capacity > 1 {
            // Shortage (mRSS < dRSS, seed §6.4.1): give up what is not resident, at once.
            self.capacity = rss.max(1);
            self.peak = self.max_since_surplus;
            self.trough = rss;
            self.last_shortage_at = Some(now);
            shortage = true;
        } else if rss == cached && cached >= self.capacity && self.capacity < self.panels {
            // Every cached panel is resident: probe for one more when the last shortage is
            // long enough ago.
            let grow = match self.last_shortage_at {
                None => true,
                Some(at) => {
                    let base_delay = now - self.requests.front().copied().unwrap_or(now);
                    now - at > base_delay * self.penalty_ratio(rss)
                }
            };
            if grow {
                self.capacity += 1;
                self.max_since_surplus = rss;
            }
        }
        Decision {
            capacity: self.capacity,
            shortage,
        }
    }

    /// `R_pen = (peak − trough) / (peak − rss)`, at most [`R_PEN_MAX`]; when the array is as close
    /// to the last peak as that, the peak is taken as all panels (the node likely has more
    /// memory now than when the probe failed).
    fn penalty_ratio(&mut self, rss: u64) -> f64 {
        let ratio = |peak: u64, trough: u64| {
            if peak <= rss {
                f64::INFINITY
            } else {
                peak.saturating_sub(trough) as f64 / (peak - rss) as f64
            }
        };
        let r = ratio(self.peak, self.trough);
        if r > R_PEN_MAX {
            self.peak = self.panels;
            ratio(self.peak, self.trough).min(R_PEN_MAX)
        } else {
            r
        }
    }
}

/// The panel cache of a malleable array: which panels are in memory and whether they changed
/// since read, and their use order. (The panels' data live at their places in one buffer of the
/// whole array, on huge pages like an in-core array's: cut into separately allocated panels of
/// a megabyte or so, rna's tiles computed 35 % slower on an emulated slow node.)
#[derive(Debug)]
pub(crate) struct PanelCache {
    pub(crate) adapter: Adapter,
    /// Per panel: `Some(dirty)` while cached.
    pub(crate) slots: Vec<Option<bool>>,
    /// Cached panels, least recently used first.
    pub(crate) order: Vec<usize>,
}

impl PanelCache {
    pub(crate) fn new(panels: usize, capacity: u64) -> PanelCache {
        PanelCache {
            adapter: Adapter::new(panels as u64, capacity),
            slots: (0..panels).map(|_| None).collect(),
            order: Vec::new(),
        }
    }

    pub(crate) fn cached(&self) -> u64 {
        self.order.len() as u64
    }

    /// Marks panel `i` most recently used.
    pub(crate) fn touch(&mut self, i: usize) {
        self.order.retain(|&p| p != i);
        self.order.push(i);
    }

    /// The panel to evict to make room: the most recently used (MMlib's default).
    pub(crate) fn victim(&self) -> Option<usize> {
        self.order.last().copied()
    }

    /// Takes panel `i` out of the cache: whether it was dirty (`None`: it was not cached).
    pub(crate) fn take(&mut self, i: usize) -> Option<bool> {
        self.order.retain(|&p| p != i);
        self.slots.get_mut(i).and_then(Option::take)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_shortage_the_cache_grows_a_panel_per_request_to_all() {
        let mut a = Adapter::new(4, 1);
        let mut cached = 0;
        for t in 0..6 {
            let d = a.before_request(t as f64, cached, 100);
            assert!(!d.shortage);
            cached = (cached + 1).min(d.capacity);
        }
        assert_eq!(a.capacity(), 4);
    }

    #[test]
    fn a_shortage_gives_up_what_was_taken_at_once_and_probes_after_the_delay() {
        // 10 panels, all cached and resident; at 1 s the node leaves room for 6.
        let mut a = Adapter::new(10, 10);
        assert_eq!(a.before_request(0.0, 10, 10).capacity, 10);
        let d = a.before_request(1.0, 10, 6);
        assert_eq!(
            d,
            Decision {
                capacity: 6,
                shortage: true
            }
        );
        // Then memory comes back and a panel is requested every 0.1 s. peak 10, trough 6 and
        // rss 6 give R_pen = (10 − 6) / (10 − 6) = 1, so the array probes once the time since
        // the shortage exceeds base_delay, the span of the last 10 requests: at 1.8 s that is
        // 1.8 s (the first request is in the window), at 1.9 s 0.9 s (0.9 s since the shortage:
        // not more), at 2.0 s 0.9 s (1.0 s since the shortage): grow to 7.
        let mut capacity = 6;
        let mut grew_at = None;
        for k in 1..=10 {
            let now = 1.0 + k as f64 * 0.1;
            let next = a.before_request(now, capacity, 10).capacity;
            if next > capacity && grew_at.is_none() {
                grew_at = Some((k, next));
            }
            capacity = next;
        }
        assert_eq!(grew_at, Some((10, 7)));
    }

    #[test]
    fn the_penalty_ratio_is_capped_and_the_peak_forgotten_near_it() {
        let mut a = Adapter::new(10, 10);
        a.before_request(0.0, 10, 10);
        a.before_request(1.0, 10, 8); // peak 10, trough 8
                                      // rss 9: (10 − 8) / (10 − 9) = 2.
        assert_eq!(a.penalty_ratio(9), 2.0);
        // rss 10 reaches the peak: the ratio would be infinite, so the peak becomes P = 10 and
        // the ratio is capped at R_PEN_MAX.
        assert_eq!(a.penalty_ratio(10), R_PEN_MAX);
    }

    #[test]
    fn one_panel_always_stays() {
        let mut a = Adapter::new(5, 5);
        a.before_request(0.0, 5, 5);
        assert_eq!(a.before_request(1.0, 5, 0).capacity, 1);
    }
}
