//! Compiling communication: the events closing sections and the messages of tile loops
//! (per-message overheads, message sizes, roots and peers).

use super::{check, Builder};
use crate::comm::{CommCost, RecvEdge, Schedule};
use crate::pipeline::{TileCost, TileWeights};
use crate::ModelError;
use mheta_runtime::format::{
    add_up, per_message, CommEvent, EventMeasurement, Pattern, PeerOp, TileLoop,
};

impl<'a> Builder<'a> {
    pub(super) fn tiles(
        &self,
        section: u32,
        tl: &TileLoop,
        per_pass: f64,
    ) -> Result<TileCost, ModelError> {
        let stages = tl
            .stages
            .iter()
            .map(|s| self.stage(section, Some(tl.id), s, per_pass))
            .collect::<Result<_, _>>()?;
        let counted = self
            .m
            .nodes
            .iter()
            .flat_map(|n| {
                n.tiles
                    .iter()
                    .filter(|t| t.section == section && t.tile == tl.id)
                    .map(|t| t.count)
            })
            .fold(0.0, f64::max);
        let tiles = crate::passes(
            || format!("measured tiles of section {section} tile loop {}", tl.id),
            counted / per_pass,
            1.0,
        )?;
        let recv = tl.recv.as_ref().map(|e| self.event_measurements(e.id));
        let send = tl.send.as_ref().map(|e| self.event_measurements(e.id));
        let micro = &self.m.micro;
        let mut o_send = Vec::with_capacity(self.p);
        let mut o_recv = Vec::with_capacity(self.p);
        for i in 0..self.p {
            let sent = send.as_ref().and_then(|s| s[i]);
            let received = recv.as_ref().and_then(|s| s[i]);
            o_send.push(
                sent.map(|e| overheads(i, e))
                    .transpose()?
                    .and_then(|o| o.0)
                    .unwrap_or(micro.send_overhead_s),
            );
            o_recv.push(
                received
                    .map(|e| overheads(i, e))
                    .transpose()?
                    .and_then(|o| o.1)
                    .unwrap_or(micro.recv_overhead_s),
            );
        }
        let mut bytes = 0.0_f64;
        for (i, e) in send.iter().flatten().enumerate() {
            if let Some(e) = e {
                bytes = bytes.max(sent_per_message(i, e)?.unwrap_or(0.0));
            }
        }
        let weights = self
            .m
            .nodes
            .iter()
            .map(|n| {
                let mut forced = Vec::new();
                let mut in_core = Vec::new();
                for s in n
                    .stages
                    .iter()
                    .filter(|s| s.key.section == section && s.key.tile == Some(tl.id))
                {
                    add_up(&mut forced, &s.tiles);
                    add_up(&mut in_core, &s.in_core_tiles);
                }
                TileWeights {
                    forced: TileWeights::shape(&forced, tiles),
                    in_core: TileWeights::shape(&in_core, tiles),
                }
            })
            .collect();
        Ok(TileCost {
            stages,
            tiles,
            o_send,
            o_recv,
            bytes,
            weights,
        })
    }

    /// Bytes per row of every node's rows but the root's that `senders` send in event `id` per
    /// iteration: from the samples other instrumented runs added where every sender has one
    /// and those nodes held rows (their mean; see [`sent_per_message`]), else from this run; 0
    /// when those nodes hold no rows here either.
    fn sent_per_row(
        &self,
        id: u32,
        ev: &[Option<&EventMeasurement>],
        root: usize,
        senders: &[usize],
    ) -> Result<f64, ModelError> {
        // The rows of every node but the root, as `rows` gives them.
        let others_rows = |rows: &dyn Fn(usize) -> Option<u64>| -> Option<f64> {
            (0..self.p)
                .filter(|&i| i != root)
                .map(|i| rows(i).map(|r| r as f64))
                .sum()
        };
        let samples = senders
            .iter()
            .map(|&i| ev[i].map_or(0, |e| e.overheads.len()))
            .min()
            .unwrap_or(0);
        let mut per_row = Vec::new();
        for k in 0..samples {
            let sample = |i: usize| ev[i].and_then(|e| e.overheads.get(k));
            // What the senders sent in that run: none when one of them did not say.
            let mut sent = Some(0.0);
            for &i in senders {
                sent = match (sent, sample(i).and_then(|s| s.bytes_sent)) {
                    (Some(total), Some(b)) => {
                        let field = format!("nodes[{i}].events[{id}].overheads[{k}].bytes_sent");
                        Some(total + check(&field, b)?)
                    }
                    _ => None,
                };
            }
            // Every node's sample of one run holds its rows there. A run whose other nodes held
            // no rows (all of them on the root) says nothing of the bytes a row costs.
            let rows = others_rows(&|i| sample(i).and_then(|s| s.rows));
            if let (Some(sent), Some(rows)) = (sent, rows.filter(|&r| r > 0.0)) {
                per_row.push(sent / rows);
            }
        }
        if !per_row.is_empty() {
            return Ok(per_row.iter().sum::<f64>() / per_row.len() as f64);
        }
        let sent: f64 = senders
            .iter()
            .map(|&i| ev[i].map_or(0.0, |e| e.bytes_sent))
            .sum();
        let rows = others_rows(&|i| Some(self.m.nodes[i].rows)).unwrap_or(0.0);
        Ok(if rows > 0.0 { sent / rows } else { 0.0 })
    }

    /// The measurements of event `id` on every node (None where the node did not record it).
    fn event_measurements(&self, id: u32) -> Vec<Option<&'a EventMeasurement>> {
        self.m
            .nodes
            .iter()
            .map(|n| n.events.iter().find(|e| e.event == id))
            .collect()
    }

    pub(super) fn comm(&self, event: &CommEvent) -> Result<CommCost, ModelError> {
        let p = self.p;
        // Measurements are per iteration; a conditional event's totals are per run of it.
        let frequency = event.frequency;
        if !(frequency > 0.0 && frequency <= 1.0) {
            return Err(ModelError::BadFrequency {
                event: event.id,
                value: frequency,
            });
        }
        let ev = self.event_measurements(event.id);
        let micro = &self.m.micro;
        let mut o_send: Vec<f64> = Vec::with_capacity(p);
        let mut o_recv: Vec<f64> = Vec::with_capacity(p);
        for (i, e) in ev.iter().enumerate() {
            let (s, r) = match e {
                Some(e) => overheads(i, e)?,
                None => (None, None),
            };
            o_send.push(s.unwrap_or(micro.send_overhead_s));
            o_recv.push(r.unwrap_or(micro.recv_overhead_s));
        }
        for (i, (s, r)) in o_send.iter().zip(&o_recv).enumerate() {
            check(
                &format!("nodes[{i}].events[{}].send_overhead_s", event.id),
                *s,
            )?;
            check(
                &format!("nodes[{i}].events[{}].recv_overhead_s", event.id),
                *r,
            )?;
        }
        let root = root_of(event).min(p - 1);
        let (bytes, bytes_per_row) = match event.pattern {
            Pattern::Gather | Pattern::AllGather | Pattern::Scatter => {
                let senders: Vec<usize> = match event.pattern {
                    Pattern::Scatter => vec![root],
                    _ => (0..p).filter(|&i| i != root).collect(),
                };
                let per_row = self.sent_per_row(event.id, &ev, root, &senders)?;
                (vec![0.0; p], per_row / frequency)
            }
            Pattern::Barrier => (vec![0.0; p], 0.0),
            _ => {
                let mut sizes = Vec::with_capacity(p);
                for (i, e) in ev.iter().enumerate() {
                    sizes.push(match e {
                        Some(e) => sent_per_message(i, e)?.unwrap_or(0.0),
                        None => 0.0,
                    });
                }
                (sizes, 0.0)
            }
        };
        let (n_send, n_recv, recv_start, recv_edges) = self.peers(event, root, &ev);
        let t_reduce = ev[root]
            .map(|e| {
                (e.total_s - e.send_overhead_s - e.recv_overhead_s - e.blocked_s).max(0.0)
                    / frequency
            })
            .unwrap_or(0.0);
        let msg_array = event
            .message
            .as_deref()
            .and_then(|msg| self.message_array(msg));
        let schedule = match event.pattern {
            Pattern::NearestNeighbor | Pattern::PointToPoint | Pattern::Pipeline => {
                let orders: Vec<&[PeerOp]> = ev
                    .iter()
                    .map(|e| e.map_or(&[][..], |e| &e.order[..]))
                    .collect();
                Schedule::from_orders(&orders, |i| {
                    ev[i].is_some_and(|e| e.messages_sent + e.messages_received > 0.0)
                })
            }
            _ => None,
        };
        Ok(CommCost {
            pattern: event.pattern,
            root,
            o_send,
            o_recv,
            bytes,
            bytes_per_row,
            msg_array,
            t_reduce,
            n_send,
            n_recv,
            recv_start,
            recv_edges,
            schedule,
            frequency,
        })
    }

    /// Message counts per node and, for point-to-point patterns, the receive edges with the
    /// positions `N_→(src, i)` and `N_→(i, src)` of Eq. 5.11.
    fn peers(
        &self,
        event: &CommEvent,
        root: usize,
        ev: &[Option<&EventMeasurement>],
    ) -> (Vec<u32>, Vec<u32>, Vec<u32>, Vec<RecvEdge>) {
        let p = self.p;
        let others = (p - 1) as u32;
        let star = |root_send: bool, root_recv: bool| -> (Vec<u32>, Vec<u32>) {
            let mut n_send = vec![u32::from(root_recv); p];
            let mut n_recv = vec![u32::from(root_send); p];
            n_send[root] = if root_send { others } else { 0 };
            n_recv[root] = if root_recv { others } else { 0 };
            (n_send, n_recv)
        };
        let (n_send, n_recv) = match event.pattern {
            Pattern::Reduction | Pattern::Barrier | Pattern::AllGather => star(true, true),
            Pattern::Broadcast | Pattern::Scatter => star(true, false),
            Pattern::Gather => star(false, true),
            _ => {
                let sends = self.send_lists(event, ev);
                let mut recv_lists: Vec<Vec<RecvEdge>> = vec![Vec::new(); p];
                for (src, list) in sends.iter().enumerate() {
                    for (k, &dst) in list.iter().enumerate() {
                        recv_lists[dst as usize].push(RecvEdge {
                            src: src as u32,
                            pos_at_sender: k as u32 + 1,
                            pos_at_receiver: 0,
                        });
                    }
                }
                let mut recv_start = Vec::with_capacity(p + 1);
                let mut recv_edges = Vec::new();
                for (i, edges) in recv_lists.iter_mut().enumerate() {
                    recv_start.push(recv_edges.len() as u32);
                    for e in edges.iter_mut() {
                        let own = &sends[i];
                        e.pos_at_receiver = own
                            .iter()
                            .position(|&d| d == e.src)
                            .map(|k| k as u32 + 1)
                            .unwrap_or(own.len() as u32);
                    }
                    recv_edges.extend_from_slice(edges);
                }
                recv_start.push(recv_edges.len() as u32);
                let n_send = sends.iter().map(|s| s.len() as u32).collect();
                let n_recv = recv_lists.iter().map(|r| r.len() as u32).collect();
                return (n_send, n_recv, recv_start, recv_edges);
            }
        };
        (n_send, n_recv, vec![0; p + 1], Vec::new())
    }

    /// Recipients of every node, in send order: measured peers, or else the structure's
    /// symbolic participants (`rank - 1`, `rank + 1`, a literal rank, `all`).
    fn send_lists(&self, event: &CommEvent, ev: &[Option<&EventMeasurement>]) -> Vec<Vec<u32>> {
        let p = self.p;
        let measured = ev.iter().any(|e| e.is_some_and(|e| !e.sent_to.is_empty()));
        (0..p)
            .map(|i| {
                if measured {
                    return ev[i]
                        .map(|e| {
                            e.sent_to
                                .iter()
                                .copied()
                                .filter(|&d| (d as usize) < p && d as usize != i)
                                .collect()
                        })
                        .unwrap_or_default();
                }
                let mut out = Vec::new();
                for part in &event.participants {
                    for d in symbolic_peers(part, i, p) {
                        if d != i && !out.contains(&(d as u32)) {
                            out.push(d as u32);
                        }
                    }
                }
                if event.pattern == Pattern::AllToAll && out.is_empty() {
                    out = (0..p as u32).filter(|&d| d as usize != i).collect();
                }
                out
            })
            .collect()
    }

    /// The first distributed array named in a message expression (`&a[..]`, `a.row(0)`, ...).
    fn message_array(&self, message: &str) -> Option<usize> {
        message
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .find_map(|word| self.array_index.get(word).copied())
    }
}

/// The root of a rooted collective: the first literal rank among the participants, else 0.
pub(crate) fn root_of(event: &CommEvent) -> usize {
    event
        .participants
        .iter()
        .find_map(|p| p.trim().parse::<usize>().ok())
        .unwrap_or(0)
}

/// Peers of node `i` named by one symbolic participant expression: `all`, a literal rank,
/// `rank - k` / `rank + k` (none past the ends), or the same around a ring (`(rank + 1) % size`,
/// `(rank - 1 + size) % size`, `(rank - 1).rem_euclid(size)`).
fn symbolic_peers(expr: &str, i: usize, p: usize) -> Vec<usize> {
    let e: String = expr.chars().filter(|c| !c.is_whitespace()).collect();
    if e == "all" {
        return (0..p).collect();
    }
    if let Ok(r) = e.parse::<usize>() {
        return if r < p { vec![r] } else { Vec::new() };
    }
    let (inner, ring) = match e
        .strip_suffix("%size")
        .or_else(|| e.strip_suffix(".rem_euclid(size)"))
    {
        Some(inner) => (inner, true),
        None => (e.as_str(), false),
    };
    let inner = inner
        .strip_prefix('(')
        .and_then(|x| x.strip_suffix(')'))
        .unwrap_or(inner);
    // `rank - k + size` and `rank + size - k` are `rank - k` around the ring.
    let inner = match inner.strip_suffix("+size") {
        Some(x) if ring => x.to_string(),
        _ => inner.replacen("+size-", "-", usize::from(ring)),
    };
    let offset = if let Some(k) = inner.strip_prefix("rank-") {
        k.parse::<i64>().ok().map(|k| -k)
    } else if let Some(k) = inner.strip_prefix("rank+") {
        k.parse::<i64>().ok()
    } else {
        None
    };
    match offset {
        Some(k) if ring && p > 0 => vec![(i as i64 + k).rem_euclid(p as i64) as usize],
        Some(k) => {
            let d = i as i64 + k;
            if d >= 0 && (d as usize) < p {
                vec![d as usize]
            } else {
                Vec::new()
            }
        }
        None => Vec::new(),
    }
}

/// Bytes per message node `i` sent in event measurement `e`: the mean over the samples other
/// instrumented runs added that say what the node sent (`EventMeasurement::overheads`), else
/// this run's; `None` when no run sent a message. The in-core runs last as long as the runs the
/// model predicts, and a message that grows with the iteration (Lanczos's reorthogonalisation
/// coefficients, one more each iteration) has there the size it has over those iterations; the
/// forced run measures the first few. Fails, naming the field, on a sample that is not a finite
/// non-negative number.
fn sent_per_message(i: usize, e: &EventMeasurement) -> Result<Option<f64>, ModelError> {
    let mut sizes = Vec::new();
    for (k, sample) in e.overheads.iter().enumerate() {
        let field = |what: &str| format!("nodes[{i}].events[{}].overheads[{k}].{what}", e.event);
        if let (Some(messages), Some(bytes)) = (sample.messages_sent, sample.bytes_sent) {
            let (messages, bytes) = (
                check(&field("messages_sent"), messages)?,
                check(&field("bytes_sent"), bytes)?,
            );
            sizes.extend(per_message(bytes, messages));
        }
    }
    Ok(match sizes.is_empty() {
        true => per_message(e.bytes_sent, e.messages_sent),
        false => Some(sizes.iter().sum::<f64>() / sizes.len() as f64),
    })
}

/// Per-message send and receive overheads of event measurement `e` of node `i`: each the median
/// over this run's own figure and the samples other instrumented runs added
/// (`EventMeasurement::overheads`), `None` where no run had such a message. Fails, naming the
/// field, on an added sample that is not a finite non-negative number.
fn overheads(i: usize, e: &EventMeasurement) -> Result<(Option<f64>, Option<f64>), ModelError> {
    let mut send: Vec<f64> = per_message(e.send_overhead_s, e.messages_sent)
        .into_iter()
        .collect();
    let mut recv: Vec<f64> = per_message(e.recv_overhead_s, e.messages_received)
        .into_iter()
        .collect();
    for (k, sample) in e.overheads.iter().enumerate() {
        let field = |what: &str| format!("nodes[{i}].events[{}].overheads[{k}].{what}", e.event);
        if let Some(v) = sample.send_s {
            send.push(check(&field("send_s"), v)?);
        }
        if let Some(v) = sample.recv_s {
            recv.push(check(&field("recv_s"), v)?);
        }
    }
    let median = |mut v: Vec<f64>| (!v.is_empty()).then(|| mheta_runtime::stats::median(&mut v));
    Ok((median(send), median(recv)))
}

#[cfg(test)]
mod symbolic_tests {
    use super::symbolic_peers;

    /// Neighbours on a bar stop at its ends; around a ring they wrap, however the ring is
    /// written.
    #[test]
    fn neighbours_on_a_bar_and_around_a_ring() {
        assert_eq!(symbolic_peers("rank - 1", 0, 4), Vec::<usize>::new());
        assert_eq!(symbolic_peers("rank + 1", 2, 4), vec![3]);
        assert_eq!(symbolic_peers("(rank + 1) % size", 3, 4), vec![0]);
        assert_eq!(symbolic_peers("(rank - 1 + size) % size", 0, 4), vec![3]);
        assert_eq!(symbolic_peers("(rank + size - 1) % size", 0, 4), vec![3]);
        assert_eq!(symbolic_peers("(rank - 1).rem_euclid(size)", 0, 4), vec![3]);
        assert_eq!(symbolic_peers("(rank + 2).rem_euclid(size)", 3, 4), vec![1]);
        assert_eq!(symbolic_peers("(rank + 1) % size", 1, 4), vec![2]);
        assert_eq!(symbolic_peers("all", 1, 3), vec![0, 1, 2]);
        assert_eq!(symbolic_peers("0", 1, 3), vec![0]);
        assert_eq!(symbolic_peers("neighbours[i]", 1, 3), Vec::<usize>::new());
    }
}
