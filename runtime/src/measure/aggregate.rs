//! One node's measurements from its records (seed §5.2.2–5.2.3).
//!
//! - Stage compute `T_φ` = stage time − time of the I/O and communication recorded inside the
//!   stage. A wait record is not I/O: it spans the compute overlapping its prefetch.
//! - I/O per (stage, variable): counts, bytes, seconds; `T_A` = time between a prefetch's end and
//!   its wait's begin, less the I/O and communication in between (seed Fig. 5.5, 5.6).
//! - In-core copy cost per byte: the `Copy` records' seconds over their bytes (zero
//!   without any); those records are not the stage's computation either.
//! - Per event: messages, bytes, send and receive overheads (call time − blocked time, split by
//!   messages for collectives), blocked time `T_w`, total time, and the ranks actually talked to.
//! - Tile trips per tile loop, trips per repeated group, iteration time.
//! - A tiled stage's computation by its tile's position in the pass (the trips of its tile
//!   loop since its section, or the iteration, began): the first tile of a pass can cost
//!   several times a later one (caches cold after the section's wait), and a pipeline's fill
//!   runs through the first tiles (`model::pipeline`).
//!
//! Every figure is per iteration over the steady iterations: all recorded iterations but the
//! run's warm-up ones (`format::Timings::warm_up_of`).

use std::collections::HashMap;

use crate::comm::Traffic;
use crate::format::{
    EventMeasurement, GroupMeasurement, IoMeasurement, NodeMeasurements, PeerOp, StageKey,
    StageMeasurement, TileMeasurement,
};
use crate::hooks::{
    group_members, io_kind, var_name, CallKind, IoKind, RankRecords, Record, RecordKind, VarId,
    NONE,
};

#[derive(Default)]
struct StageAcc {
    count: f64,
    time: f64,
    io: f64,
    /// Communication calls made while the stage was open (a stage region that reaches into
    /// the section's closing event): waiting and message handling, not computation.
    comm: f64,
    /// A tiled stage's computation by the position of its tile in the pass of the tile loop.
    tiles: Vec<f64>,
    /// The position of the stage's open instance in `tiles`.
    at: Option<usize>,
}

impl StageAcc {
    /// Time of I/O or communication inside the stage's open instance: not computation.
    fn exclude(&mut self, seconds: f64) {
        if let Some(at) = self.at {
            self.tiles[at] -= seconds;
        }
    }
}

#[derive(Default)]
struct EventAcc {
    m: Option<EventMeasurement>,
    sent_to: SortedMap<u32, ()>,
    received_from: SortedMap<u32, ()>,
    order: OrderAcc,
}

/// A map kept as a vector sorted by key, iterated in key order like a `BTreeMap`. The maps here
/// hold a few dozen entries; a `BTreeMap` instantiated for each of their key and value types was
/// an eighth of the runtime's compiled code, which every program builds.
struct SortedMap<K, V>(Vec<(K, V)>);

impl<K, V> Default for SortedMap<K, V> {
    fn default() -> Self {
        SortedMap(Vec::new())
    }
}

impl<K: Ord, V> SortedMap<K, V> {
    /// The value at `key`, inserted from `make` if absent.
    fn entry_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.0.binary_search_by(|(k, _)| k.cmp(&key)) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (key, make()));
                i
            }
        };
        &mut self.0[i].1
    }

    /// The value at `key`, inserted as the default if absent.
    fn entry(&mut self, key: K) -> &mut V
    where
        V: Default,
    {
        self.entry_with(key, V::default)
    }

    fn into_keys(self) -> impl Iterator<Item = K> {
        self.0.into_iter().map(|(k, _)| k)
    }

    fn into_values(self) -> impl Iterator<Item = V> {
        self.0.into_iter().map(|(_, v)| v)
    }
}

impl<K, V> IntoIterator for SortedMap<K, V> {
    type Item = (K, V);
    type IntoIter = std::vec::IntoIter<(K, V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// An event's point-to-point calls in program order, iteration by iteration: kept when every
/// steady iteration that ran the event made the same calls in the same order.
#[derive(Default)]
struct OrderAcc {
    iteration: Option<usize>,
    current: Vec<PeerOp>,
    first: Option<Vec<PeerOp>>,
    /// A call that is not one send or one receive with a single peer, or iterations that differ.
    unknown: bool,
}

impl OrderAcc {
    fn push(&mut self, iteration: usize, op: Option<PeerOp>) {
        if self.iteration != Some(iteration) {
            self.close();
            self.iteration = Some(iteration);
        }
        match op {
            Some(op) => self.current.push(op),
            None => self.unknown = true,
        }
    }

    fn close(&mut self) {
        if self.iteration.is_none() {
            return;
        }
        let calls = std::mem::take(&mut self.current);
        match &self.first {
            None => self.first = Some(calls),
            Some(first) => self.unknown |= *first != calls,
        }
    }

    fn finish(mut self) -> Vec<PeerOp> {
        self.close();
        match self.first {
            Some(order) if !self.unknown => order,
            _ => Vec::new(),
        }
    }
}

/// The call as one entry of an event's order: a send or receive of exactly one message with a
/// known peer (a receive completed by a separate wait records no message at its wait, so it
/// has no place in the order).
fn peer_op(call: CallKind, peer: Option<usize>, t: &Traffic) -> Option<PeerOp> {
    let peer = peer? as u32;
    match (call, t.messages_sent, t.messages_received) {
        (CallKind::Send | CallKind::ImmediateSend, 1, 0) => Some(PeerOp::Send(peer)),
        (CallKind::Receive, 0, 1) => Some(PeerOp::Receive(peer)),
        _ => None,
    }
}

/// Aggregate one rank's records. Fails if the rank recorded no iteration.
pub fn aggregate_node(
    rank: usize,
    size: usize,
    rows: u64,
    rr: &RankRecords,
    warm_up: usize,
) -> Result<NodeMeasurements, String> {
    let mut records: Vec<&Record> = rr.records.iter().collect();
    records.sort_by_key(|r| r.open);
    let iterations: Vec<&Record> = records
        .iter()
        .copied()
        .filter(|r| r.kind == RecordKind::Iteration)
        .collect();
    if iterations.is_empty() {
        return Err(format!(
            "rank {rank} recorded no iteration: wrap each trip of the main loop in `hooks::iteration(i)`"
        ));
    }
    // The first `warm_up` iterations (the run's, `format::Timings::warm_up_of`) are left out:
    // they pay for first-touch page faults, growing buffers and cold caches (several times a
    // later iteration's compute on small problems), which the model, a steady-state
    // prediction, must not scale up.
    let warm_up = warm_up.min(iterations.len() - 1);
    let n = (iterations.len() - warm_up) as f64;
    // The steady iteration a record lies inside (its index among the recorded ones), if any.
    let steady_iteration = |r: &Record| {
        let i = iterations.partition_point(|it| it.open < r.open);
        (i > warm_up && r.is_inside(iterations[i - 1])).then_some(i)
    };

    let mut stages: SortedMap<StageKey, StageAcc> = SortedMap::default();
    let mut io: SortedMap<(StageKey, u32), IoMeasurement> = SortedMap::default();
    let mut events: SortedMap<u32, EventAcc> = SortedMap::default();
    let mut tiles: SortedMap<(u32, u32), f64> = SortedMap::default();
    // Trips of each tile loop (section, tile loop) since its section last began.
    let mut tile_trips: HashMap<(u32, u32), usize> = HashMap::new();
    let mut groups: SortedMap<u32, f64> = SortedMap::default();
    let mut pending_prefetch: HashMap<u32, (f64, f64, StageKey)> = HashMap::new();
    let mut busy = 0.0; // I/O and communication seconds so far, for T_A.
    let mut reads: Vec<(f64, f64)> = Vec::new();
    let mut writes: Vec<(f64, f64)> = Vec::new();
    let mut copies = (0.0, 0.0); // bytes and seconds of in-core copies

    // Each steady iteration's computation: its stages' time less the I/O, copies and
    // communication inside them (as `compute_s` counts it).
    let mut per_iteration = vec![0.0; iterations.len() - warm_up];

    for (iteration, r) in records
        .iter()
        .filter_map(|&r| Some((steady_iteration(r)?, r)))
    {
        let dur = r.duration_s();
        // `steady_iteration` counts from 1 and only past the warm-up.
        let computed = &mut per_iteration[iteration - warm_up - 1];
        match r.kind {
            RecordKind::Iteration => tile_trips.clear(),
            RecordKind::Section => tile_trips.retain(|&(section, _), _| section != r.id),
            RecordKind::Stage => {
                *computed += dur;
                let s = stages.entry(r.key);
                s.count += 1.0;
                s.time += dur;
                // Records are in opening order: the stage's tile opened before it.
                s.at = r
                    .key
                    .tile
                    .and_then(|t| tile_trips.get(&(r.key.section, t)))
                    .map(|trips| trips - 1);
                if let Some(at) = s.at {
                    if s.tiles.len() <= at {
                        s.tiles.resize(at + 1, 0.0);
                    }
                    s.tiles[at] += dur;
                }
            }
            RecordKind::Tile => {
                *tiles.entry((r.aux, r.id)) += 1.0;
                *tile_trips.entry((r.aux, r.id)).or_default() += 1;
            }
            RecordKind::Group => *groups.entry(r.id) += 1.0,
            RecordKind::Event => {
                event_entry(&mut events, r.id).total_s += dur;
            }
            RecordKind::Copy => {
                if r.in_stage {
                    let s = stages.entry(r.key);
                    s.io += dur;
                    s.exclude(dur);
                    *computed -= dur;
                }
                copies.0 += r.bytes as f64;
                copies.1 += dur;
                busy += dur;
            }
            RecordKind::Io => {
                let Some(op) = io_kind(r.aux) else { continue };
                // A wait record spans the compute since its prefetch returned (T_A), not I/O: an
                // instrumented wait does no I/O (seed Fig. 5.6).
                if r.in_stage && op != IoKind::Wait {
                    let s = stages.entry(r.key);
                    s.io += dur;
                    s.exclude(dur);
                    *computed -= dur;
                }
                let m = io.entry_with((r.key, r.id), || empty_io(r.key, r.id));
                match op {
                    IoKind::Read | IoKind::Prefetch => {
                        if op == IoKind::Read {
                            m.reads += 1.0;
                        } else {
                            m.prefetches += 1.0;
                            pending_prefetch.insert(r.id, (r.end_s, busy + dur, r.key));
                        }
                        m.bytes_read += r.bytes as f64;
                        m.read_s += dur;
                        reads.push((r.bytes as f64, dur));
                    }
                    IoKind::Write => {
                        m.writes += 1.0;
                        m.bytes_written += r.bytes as f64;
                        m.write_s += dur;
                        writes.push((r.bytes as f64, dur));
                    }
                    IoKind::Wait => {
                        // The wait record runs from the prefetch's return to the entry into
                        // the wait; T_A is that span less the I/O and communication inside it.
                        if let Some((end, busy_then, key)) = pending_prefetch.remove(&r.id) {
                            let overlap = (r.end_s - end - (busy - busy_then)).max(0.0);
                            io.entry_with((key, r.id), || empty_io(key, r.id)).overlap_s += overlap;
                        }
                        continue;
                    }
                }
                busy += dur;
            }
            RecordKind::Comm => {
                busy += dur;
                if r.in_stage {
                    let s = stages.entry(r.key);
                    s.comm += dur;
                    s.exclude(dur);
                    *computed -= dur;
                }
                if r.event == NONE {
                    continue;
                }
                let Some(call) = CallKind::from_code(r.aux) else {
                    continue;
                };
                let t = r.traffic;
                let acc = events.entry(r.event);
                let m = acc.m.get_or_insert_with(|| empty_event(r.event));
                m.messages_sent += f64::from(t.messages_sent);
                m.messages_received += f64::from(t.messages_received);
                m.bytes_sent += t.bytes_sent as f64;
                m.bytes_received += t.bytes_received as f64;
                m.blocked_s += t.blocked_s;
                let overhead = (dur - t.blocked_s).max(0.0);
                let total_msgs = f64::from(t.messages_sent + t.messages_received);
                let send_share = if call.is_send() {
                    1.0
                } else if total_msgs > 0.0 {
                    f64::from(t.messages_sent) / total_msgs
                } else {
                    0.0
                };
                m.send_overhead_s += overhead * send_share;
                m.recv_overhead_s += overhead * (1.0 - send_share);
                let peer = (r.peer != NONE).then_some(r.peer as usize);
                acc.order.push(iteration, peer_op(call, peer, &t));
                let group = r.group_id().and_then(group_members);
                for p in call_peers(call, rank, size, group.as_deref(), peer) {
                    if t.messages_sent > 0 {
                        acc.sent_to.entry(p as u32);
                    }
                    if t.messages_received > 0 {
                        acc.received_from.entry(p as u32);
                    }
                }
            }
        }
    }

    let (read_overhead_s, read_per_byte_s) = fit(&reads);
    let (write_overhead_s, write_per_byte_s) = fit(&writes);
    let mut node = NodeMeasurements {
        rank: rank as u32,
        rows,
        iteration_s: iterations[warm_up..]
            .iter()
            .map(|r| r.duration_s())
            .sum::<f64>()
            / n,
        read_overhead_s,
        write_overhead_s,
        async_overhead_s: 0.0,
        read_per_byte_s,
        write_per_byte_s,
        // Timed inside the iterations, under the run's own caches and CPU contention.
        copy_per_byte_s: if copies.0 > 0.0 {
            copies.1 / copies.0
        } else {
            0.0
        },
        stages: stages
            .into_iter()
            .map(|(key, s)| StageMeasurement {
                key,
                count: s.count / n,
                compute_s: (s.time - s.io - s.comm).max(0.0) / n,
                io_s: s.io / n,
                tiles: s.tiles.iter().map(|t| t.max(0.0) / n).collect(),
                in_core_tiles: Vec::new(),
                in_core: Vec::new(),
            })
            .collect(),
        io: io.into_values().map(|m| per_iteration_io(m, n)).collect(),
        events: events
            .into_iter()
            .map(|(id, acc)| {
                let mut m = acc.m.unwrap_or_else(|| empty_event(id));
                for x in [
                    &mut m.messages_sent,
                    &mut m.messages_received,
                    &mut m.bytes_sent,
                    &mut m.bytes_received,
                    &mut m.send_overhead_s,
                    &mut m.recv_overhead_s,
                    &mut m.blocked_s,
                    &mut m.total_s,
                ] {
                    *x /= n;
                }
                m.sent_to = acc.sent_to.into_keys().collect();
                m.received_from = acc.received_from.into_keys().collect();
                m.order = acc.order.finish();
                m
            })
            .collect(),
        tiles: tiles
            .into_iter()
            .map(|((section, tile), c)| TileMeasurement {
                section,
                tile,
                count: c / n,
            })
            .collect(),
        groups: groups
            .into_iter()
            .map(|(group, c)| GroupMeasurement {
                group,
                trips: c / n,
            })
            .collect(),
        iteration_compute_s: per_iteration.into_iter().map(|c| c.max(0.0)).collect(),
    };
    if let Some(c) = rr.calibration {
        c.store_in(&mut node);
    }
    Ok(node)
}

/// The ranks a call of `call` on `rank` exchanges messages with, under the linear collective
/// algorithms of `comm::collectives`: point-to-point calls talk to `peer`; the root of a rooted
/// collective (the first member for barrier, all-reduce, all-gather and scan) talks to every
/// other member and the others to the root; all-to-all talks to every other member. The members
/// are `group`'s world ranks (a communicator split off the world), else all `size` ranks.
pub fn call_peers(
    call: CallKind,
    rank: usize,
    size: usize,
    group: Option<&[u32]>,
    peer: Option<usize>,
) -> Vec<usize> {
    let members = || -> Box<dyn Iterator<Item = usize> + '_> {
        match group {
            Some(g) => Box::new(g.iter().map(|&m| m as usize)),
            None => Box::new(0..size),
        }
    };
    let others = || members().filter(|&r| r != rank).collect::<Vec<_>>();
    match call {
        CallKind::Send | CallKind::ImmediateSend | CallKind::Receive => peer.into_iter().collect(),
        CallKind::AllToAll => others(),
        _ => {
            let hub = peer.or_else(|| members().next()).unwrap_or(0);
            if hub == rank {
                others()
            } else {
                vec![hub]
            }
        }
    }
}

fn event_entry(events: &mut SortedMap<u32, EventAcc>, id: u32) -> &mut EventMeasurement {
    events.entry(id).m.get_or_insert_with(|| empty_event(id))
}

fn empty_event(event: u32) -> EventMeasurement {
    EventMeasurement {
        event,
        messages_sent: 0.0,
        messages_received: 0.0,
        bytes_sent: 0.0,
        bytes_received: 0.0,
        send_overhead_s: 0.0,
        recv_overhead_s: 0.0,
        blocked_s: 0.0,
        total_s: 0.0,
        sent_to: Vec::new(),
        received_from: Vec::new(),
        order: Vec::new(),
        overheads: Vec::new(),
    }
}

fn empty_io(key: StageKey, var: u32) -> IoMeasurement {
    IoMeasurement {
        key,
        var: var_name(VarId(var)).unwrap_or_else(|| format!("var{var}")),
        reads: 0.0,
        writes: 0.0,
        prefetches: 0.0,
        bytes_read: 0.0,
        bytes_written: 0.0,
        read_s: 0.0,
        write_s: 0.0,
        overlap_s: 0.0,
    }
}

fn per_iteration_io(mut m: IoMeasurement, n: f64) -> IoMeasurement {
    for x in [
        &mut m.reads,
        &mut m.writes,
        &mut m.prefetches,
        &mut m.bytes_read,
        &mut m.bytes_written,
        &mut m.read_s,
        &mut m.write_s,
        &mut m.overlap_s,
    ] {
        *x /= n;
    }
    m
}

/// Least-squares fit `seconds = overhead + bytes × per_byte` over (bytes, seconds) samples. With
/// fewer than two distinct sizes the overhead cannot be separated: it is taken as zero and the
/// per-byte cost is total seconds / total bytes.
fn fit(samples: &[(f64, f64)]) -> (f64, f64) {
    if samples.is_empty() {
        return (0.0, 0.0);
    }
    let n = samples.len() as f64;
    let (sx, sy) = samples
        .iter()
        .fold((0.0, 0.0), |(a, b), &(x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let sxx: f64 = samples.iter().map(|&(x, _)| (x - mx) * (x - mx)).sum();
    if sxx <= f64::EPSILON * mx * mx.max(1.0) {
        return (0.0, if sx > 0.0 { sy / sx } else { 0.0 });
    }
    let sxy: f64 = samples.iter().map(|&(x, y)| (x - mx) * (y - my)).sum();
    let slope = (sxy / sxx).max(0.0);
    ((my - slope * mx).max(0.0), slope)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_recovers_a_line() {
        let (o, b) = fit(&[
            (100.0, 0.002 + 100.0 * 1e-6),
            (1000.0, 0.002 + 1000.0 * 1e-6),
        ]);
        assert!(
            (o - 0.002).abs() < 1e-12 && (b - 1e-6).abs() < 1e-15,
            "{o} {b}"
        );
        assert_eq!(fit(&[(10.0, 1.0), (10.0, 3.0)]), (0.0, 0.2));
        assert_eq!(fit(&[]), (0.0, 0.0));
    }

    /// A record of `kind` spanning `begin..end` on the clock and `open..close` in sequence.
    fn record(kind: RecordKind, id: u32, aux: u32, span: (f64, f64), seq: (u32, u32)) -> Record {
        Record {
            kind,
            id,
            aux,
            key: StageKey {
                section: 0,
                tile: None,
                stage: 1,
            },
            in_stage: kind != RecordKind::Iteration,
            event: NONE,
            peer: NONE,
            group: NONE,
            traffic: Default::default(),
            bytes: 100,
            begin_s: span.0,
            end_s: span.1,
            open: seq.0,
            close: seq.1,
            repeats: 0,
        }
    }

    #[test]
    fn prefetch_wait_span_is_compute_and_its_overlap_is_t_a() {
        // One stage of 10 s: a prefetch of var 0 (0–2 s), a write of var 1 (3–4 s) and the
        // wait for var 0, whose record spans the prefetch's return to the wait's entry (2–7 s).
        let rr = RankRecords {
            records: vec![
                record(RecordKind::Iteration, 0, 0, (0.0, 10.0), (0, 9)),
                record(RecordKind::Stage, 0, 0, (0.0, 10.0), (1, 8)),
                record(
                    RecordKind::Io,
                    0,
                    crate::hooks::io_code(IoKind::Prefetch),
                    (0.0, 2.0),
                    (2, 3),
                ),
                record(
                    RecordKind::Io,
                    1,
                    crate::hooks::io_code(IoKind::Write),
                    (3.0, 4.0),
                    (4, 5),
                ),
                record(
                    RecordKind::Io,
                    0,
                    crate::hooks::io_code(IoKind::Wait),
                    (2.0, 7.0),
                    (6, 7),
                ),
            ],
            ..RankRecords::default()
        };
        let node = aggregate_node(0, 1, 10, &rr, 0).unwrap();
        // Stage time 10 less the prefetch (2) and the write (1); the wait is not I/O.
        assert_eq!(node.stages.len(), 1);
        assert_eq!(node.stages[0].compute_s, 7.0);
        assert_eq!(node.stages[0].io_s, 3.0);
        // T_A: 7 − 2 from the prefetch's end to the wait, less the 1 s write in between.
        let prefetched = node.io.iter().find(|m| m.prefetches > 0.0).unwrap();
        assert_eq!(prefetched.overlap_s, 4.0);
        assert_eq!(prefetched.read_s, 2.0);
    }

    #[test]
    fn in_core_copies_are_not_compute_and_give_the_copy_cost() {
        // A 10 s stage whose block write (1–3 s) was preceded by its timed in-core copy of
        // 100 B (0.5–1 s): compute 10 − 2 − 0.5, copy cost 0.5 s / 100 B.
        let rr = RankRecords {
            records: vec![
                record(RecordKind::Iteration, 0, 0, (0.0, 10.0), (0, 7)),
                record(RecordKind::Stage, 0, 0, (0.0, 10.0), (1, 6)),
                record(RecordKind::Copy, 0, 0, (0.5, 1.0), (2, 3)),
                record(
                    RecordKind::Io,
                    0,
                    crate::hooks::io_code(IoKind::Write),
                    (1.0, 3.0),
                    (4, 5),
                ),
            ],
            ..RankRecords::default()
        };
        let node = aggregate_node(0, 1, 10, &rr, 0).unwrap();
        assert_eq!(node.stages[0].compute_s, 7.5);
        assert_eq!(node.copy_per_byte_s, 0.005);
        assert_eq!(node.io.len(), 1);
        assert_eq!((node.io[0].writes, node.io[0].write_s), (1.0, 2.0));
    }

    #[test]
    fn each_measured_iterations_computation_is_kept_in_order() {
        // Three iterations, the first a warm-up. Iteration two (10–20 s): two stages of 4 s and
        // 3 s, the first with a 1 s read inside. Iteration three (20–30 s): one stage of 6 s
        // with a 2 s communication call inside. Computation: 4 − 1 + 3 = 6, then 6 − 2 = 4;
        // the stages' per-iteration mean is their mean, 5.
        let mut comm = record(RecordKind::Comm, 0, 0, (22.0, 24.0), (14, 15));
        comm.aux = crate::hooks::CallKind::Send as u32;
        let rr = RankRecords {
            records: vec![
                record(RecordKind::Iteration, 0, 0, (0.0, 10.0), (0, 3)),
                record(RecordKind::Stage, 0, 0, (0.0, 9.0), (1, 2)),
                record(RecordKind::Iteration, 1, 0, (10.0, 20.0), (4, 11)),
                record(RecordKind::Stage, 0, 0, (10.0, 14.0), (5, 8)),
                record(
                    RecordKind::Io,
                    0,
                    crate::hooks::io_code(IoKind::Read),
                    (11.0, 12.0),
                    (6, 7),
                ),
                record(RecordKind::Stage, 0, 0, (14.0, 17.0), (9, 10)),
                record(RecordKind::Iteration, 2, 0, (20.0, 30.0), (12, 17)),
                record(RecordKind::Stage, 0, 0, (20.0, 26.0), (13, 16)),
                comm,
            ],
            ..RankRecords::default()
        };
        let node = aggregate_node(0, 1, 10, &rr, 1).unwrap();
        assert_eq!(node.iteration_compute_s, vec![6.0, 4.0]);
        let per_iteration: f64 = node.stages.iter().map(|s| s.compute_s).sum();
        assert_eq!(per_iteration, 5.0);
    }

    #[test]
    fn a_tiled_stages_computation_is_kept_by_tile_position_in_each_pass() {
        // One iteration with two passes of section 0, each of two tiles of loop 0. Pass one:
        // tile 0's stage takes 0–4 s with a 1 s read inside, tile 1's 4–6 s; pass two: 10–13 s
        // and 13–14 s. Position 0 computed 3 + 3 s, position 1 2 + 1 s.
        let tiled = |kind, id, span, seq| Record {
            key: StageKey {
                section: 0,
                tile: Some(0),
                stage: 1,
            },
            ..record(kind, id, 0, span, seq)
        };
        let read = crate::hooks::io_code(IoKind::Read);
        let rr = RankRecords {
            records: vec![
                tiled(RecordKind::Iteration, 0, (0.0, 20.0), (0, 23)),
                tiled(RecordKind::Section, 0, (0.0, 6.0), (1, 12)),
                tiled(RecordKind::Tile, 0, (0.0, 4.0), (2, 7)),
                tiled(RecordKind::Stage, 0, (0.0, 4.0), (3, 6)),
                Record {
                    aux: read,
                    ..tiled(RecordKind::Io, 0, (1.0, 2.0), (4, 5))
                },
                tiled(RecordKind::Tile, 0, (4.0, 6.0), (8, 11)),
                tiled(RecordKind::Stage, 0, (4.0, 6.0), (9, 10)),
                tiled(RecordKind::Section, 0, (10.0, 14.0), (13, 22)),
                tiled(RecordKind::Tile, 0, (10.0, 13.0), (14, 17)),
                tiled(RecordKind::Stage, 0, (10.0, 13.0), (15, 16)),
                tiled(RecordKind::Tile, 0, (13.0, 14.0), (18, 21)),
                tiled(RecordKind::Stage, 0, (13.0, 14.0), (19, 20)),
            ],
            ..RankRecords::default()
        };
        let node = aggregate_node(0, 1, 10, &rr, 0).unwrap();
        assert_eq!(node.stages.len(), 1);
        let stage = &node.stages[0];
        assert_eq!((stage.count, stage.compute_s, stage.io_s), (4.0, 9.0, 1.0));
        assert_eq!(stage.tiles, vec![6.0, 3.0]);
        assert_eq!(node.tiles[0].count, 4.0);
    }

    #[test]
    fn collective_peers() {
        assert_eq!(
            call_peers(CallKind::Reduce, 2, 4, None, Some(2)),
            vec![0, 1, 3]
        );
        assert_eq!(call_peers(CallKind::Reduce, 1, 4, None, Some(2)), vec![2]);
        assert_eq!(call_peers(CallKind::AllReduce, 3, 4, None, None), vec![0]);
        assert_eq!(call_peers(CallKind::AllToAll, 1, 3, None, None), vec![0, 2]);
        assert_eq!(call_peers(CallKind::Send, 1, 3, None, Some(2)), vec![2]);
        // On a communicator of the odd world ranks: its first member is the hub.
        let odd = Some(&[1, 3, 5][..]);
        assert_eq!(call_peers(CallKind::AllReduce, 5, 6, odd, None), vec![1]);
        assert_eq!(call_peers(CallKind::AllReduce, 1, 6, odd, None), vec![3, 5]);
        assert_eq!(call_peers(CallKind::Scan, 3, 6, odd, None), vec![1]);
        assert_eq!(call_peers(CallKind::AllToAll, 3, 6, odd, None), vec![1, 5]);
    }
}
