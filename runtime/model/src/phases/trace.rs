//! Reading a Chrome trace as the runtime writes it (`mheta_runtime::measure::trace`): one `tid`
//! per rank, one complete ("X") event per record, times in microseconds. Only what the
//! dependency graph needs is kept: every rank's communication calls (`cat` "comm"), its
//! main-loop iterations (`cat` "iteration") and the span of its records.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::ModelError;

/// One communication call of one rank, as the trace records it.
#[derive(Debug, Clone, PartialEq)]
pub struct CommCall {
    /// The call's name (`send`, `receive`, `all_reduce`, ...: `CallKind::name` in the runtime).
    pub call: String,
    /// The peer or root, when the call names one (`"send 3"`).
    pub peer: Option<u32>,
    /// The rank an exchange received from, when that is not its peer (`args.source`:
    /// `send_receive_into(&x, &right, &mut y, &left)` sends to `right` and receives from
    /// `left`).
    pub source: Option<u32>,
    /// The structure event the call belongs to (`args.event`), when it belongs to one.
    pub event: Option<u32>,
    /// The ranks a collective ran among when they are not every rank (`args.group`: the world
    /// ranks of a communicator split off the world, in its own rank order); `None` for every
    /// rank.
    pub group: Option<Vec<u32>>,
    /// Messages the call sent and received (`args.messages_sent`, `args.messages_received`;
    /// 0 when absent). An rsmpi `send_receive` is recorded as a `receive` that also sent.
    pub messages_sent: u64,
    pub messages_received: u64,
    /// Start, in seconds of the run's clock.
    pub begin_s: f64,
    /// End, in seconds of the run's clock.
    pub end_s: f64,
}

impl CommCall {
    /// True for a point-to-point call: a send or a receive (which may also have sent, as an
    /// rsmpi `send_receive` does).
    pub fn is_point_to_point(&self) -> bool {
        matches!(self.call.as_str(), "send" | "immediate_send" | "receive")
    }

    /// True for a point-to-point call that sent to its peer (its message edge starts at the
    /// block before it).
    pub fn is_send(&self) -> bool {
        matches!(self.call.as_str(), "send" | "immediate_send")
            || (self.call == "receive" && self.messages_sent > 0)
    }

    /// True for a point-to-point call that received from its peer, or from its `source` (its
    /// message edge ends at the block after it).
    pub fn is_receive(&self) -> bool {
        self.call == "receive"
    }

    /// True for a request's completion (rsmpi's `wait`, `test`), which the runtime records as a
    /// `receive` naming no peer and moving no message: it ends a block but has no message edge
    /// (the message belongs to the immediate call that posted the request).
    pub fn is_completion(&self) -> bool {
        self.call == "receive"
            && self.peer.is_none()
            && self.messages_sent == 0
            && self.messages_received == 0
    }

    /// The rank a receiving call received from: its `source`, else its peer.
    pub fn received_from(&self) -> Option<u32> {
        self.source.or(self.peer)
    }
}

/// Everything one rank recorded that the phases need.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RankTrace {
    /// Communication calls in the order they started.
    pub calls: Vec<CommCall>,
    /// When each recorded main-loop iteration (`cat` "iteration") ended, seconds, ascending.
    pub iteration_ends: Vec<f64>,
    /// Start of the rank's first record, seconds.
    pub begin_s: f64,
    /// End of the rank's last record, seconds.
    pub end_s: f64,
}

/// A parsed trace: index = rank (`tid`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    /// Every rank from 0 to the largest `tid`.
    pub ranks: Vec<RankTrace>,
}

impl RankTrace {
    /// Main-loop iterations recorded.
    pub fn iterations(&self) -> usize {
        self.iteration_ends.len()
    }

    /// The iteration a call starting at `t` belongs to: how many recorded iterations ended by
    /// then (0 in the first iteration, and before it).
    pub fn iteration_at(&self, t: f64) -> usize {
        self.iteration_ends.partition_point(|&e| e <= t)
    }
}

impl Trace {
    /// The run up to the end of each rank's `k`-th main-loop iteration: the calls that began
    /// before it (the set-up's and those of the first `k` iterations). A rank that recorded
    /// `k` iterations or fewer is kept whole. Phase detection costs grow with the square of
    /// the blocks, so a long run is analysed through its first iterations.
    pub fn first_iterations(&self, k: usize) -> Trace {
        let ranks = self
            .ranks
            .iter()
            .map(|rank| {
                if k == 0 || rank.iterations() <= k {
                    return rank.clone();
                }
                let cut = rank.iteration_ends[k - 1];
                RankTrace {
                    calls: rank
                        .calls
                        .iter()
                        .filter(|c| c.begin_s < cut)
                        .cloned()
                        .collect(),
                    iteration_ends: rank.iteration_ends[..k].to_vec(),
                    begin_s: rank.begin_s,
                    end_s: cut,
                }
            })
            .collect();
        Trace { ranks }
    }

    /// Parses the JSON text of a Chrome trace; `file` names it in errors. Errors name the event
    /// index and the field (`traceEvents[12].ts`). The events are read one at a time: a long
    /// run's trace is hundreds of megabytes, and its whole JSON tree took ten times that.
    pub fn parse(text: &str, file: &str) -> Result<Trace, ModelError> {
        let err = |at: String, message: String| ModelError::Trace {
            file: file.to_string(),
            at,
            message,
        };
        let mut reader = EventReader {
            file,
            ranks: BTreeMap::new(),
            first_event: BTreeMap::new(),
            count: 0,
            failed: None,
            at: Place::Document,
            has_events: false,
            bytes: text.len(),
            beyond: false,
        };
        let mut de = serde_json::Deserializer::from_str(text);
        let read = serde::de::DeserializeSeed::deserialize(Document(&mut reader), &mut de)
            .and_then(|()| de.end());
        if let Some(e) = reader.failed.take() {
            return Err(e);
        }
        if let Err(e) = read {
            return Err(match (e.classify(), reader.at) {
                (serde_json::error::Category::Data, Place::Document) => err(
                    "the document".into(),
                    "is neither an object with `traceEvents` nor an array of events".into(),
                ),
                (serde_json::error::Category::Data, Place::Events) => {
                    err("traceEvents".into(), "is not an array".into())
                }
                _ => err("the document".into(), format!("is not JSON: {e}")),
            });
        }
        if !reader.has_events {
            return Err(err(
                "traceEvents".into(),
                "is missing (not a Chrome trace written by `--trace`)".into(),
            ));
        }
        let count = reader.count;
        let beyond = reader
            .first_event
            .range(count..)
            .min_by_key(|(_, &i)| i)
            .map(|(&tid, &i)| (tid, i));
        if let Some((tid, i)) = beyond {
            return Err(err(
                format!("traceEvents[{i}].tid"),
                format!("is {tid}, more ranks than the trace has events ({count})"),
            ));
        }
        let last = reader.ranks.keys().next_back().map_or(0, |&t| t + 1);
        let mut ranks: Vec<RankTrace> = vec![RankTrace::default(); last];
        for (tid, rank) in std::mem::take(&mut reader.ranks) {
            ranks[tid] = rank;
        }
        if ranks.is_empty() {
            return Err(err(
                "traceEvents".into(),
                "has no complete (\"X\") events: the run recorded nothing".into(),
            ));
        }
        for rank in &mut ranks {
            // A stable sort keeps file order for calls that start at the same time.
            rank.calls.sort_by(|a, b| a.begin_s.total_cmp(&b.begin_s));
            rank.iteration_ends.sort_by(f64::total_cmp);
        }
        Ok(Trace { ranks })
    }
}

/// Where the reader is in the document, for what a type error there means.
#[derive(Debug, Clone, Copy)]
enum Place {
    Document,
    Events,
    Event,
}

/// Reads a trace's events as they are parsed (see [`Trace::parse`]).
struct EventReader<'f> {
    file: &'f str,
    /// Ranks by number, as their events come.
    ranks: BTreeMap<usize, RankTrace>,
    /// The first event of each rank number, for the error when a number exceeds the count.
    first_event: BTreeMap<usize, usize>,
    /// Events read.
    count: usize,
    /// The first error, which stops the parse.
    failed: Option<ModelError>,
    at: Place,
    /// The document held events: an array, or an object with `traceEvents`.
    has_events: bool,
    /// The document's length in bytes.
    bytes: usize,
    /// An event named a rank beyond any count of events: the others are only counted.
    beyond: bool,
}

impl EventReader<'_> {
    /// Reads event `i` into its rank's calls, iterations and span.
    fn event(&mut self, i: usize, event: &Value) -> Result<(), ModelError> {
        let field = |name: &str| format!("traceEvents[{i}].{name}");
        let file = self.file;
        let err = |at: String, message: String| ModelError::Trace {
            file: file.to_string(),
            at,
            message,
        };
        let obj = event
            .as_object()
            .ok_or_else(|| err(format!("traceEvents[{i}]"), "is not an object".into()))?;
        let ph = obj
            .get("ph")
            .and_then(Value::as_str)
            .ok_or_else(|| err(field("ph"), "is missing or not a string".into()))?;
        if ph != "X" {
            return Ok(());
        }
        let tid = obj
            .get("tid")
            .and_then(Value::as_u64)
            .ok_or_else(|| err(field("tid"), "is missing or not a rank number".into()))?;
        // Every rank writes at least one event, so a rank beyond the event count is corrupt:
        // checked at the end, when the count is known (ranks are kept by number meanwhile).
        let tid = usize::try_from(tid).unwrap_or(usize::MAX);
        self.first_event.entry(tid).or_insert(i);
        // A document of n bytes holds fewer than n events: the rest are only counted.
        if tid >= self.bytes {
            self.beyond = true;
            return Ok(());
        }
        let number = |name: &str| -> Result<f64, ModelError> {
            obj.get(name)
                .and_then(Value::as_f64)
                .filter(|x| x.is_finite())
                .ok_or_else(|| err(field(name), "is missing or not a finite number".into()))
        };
        let ts = number("ts")?;
        let dur = number("dur")?;
        if dur < 0.0 {
            return Err(err(field("dur"), format!("is {dur}, a negative duration")));
        }
        let cat = obj
            .get("cat")
            .and_then(Value::as_str)
            .ok_or_else(|| err(field("cat"), "is missing or not a string".into()))?;
        let (begin_s, end_s) = (ts * 1e-6, (ts + dur) * 1e-6);
        let rank = match self.ranks.entry(tid) {
            std::collections::btree_map::Entry::Occupied(o) => {
                let rank = o.into_mut();
                rank.begin_s = rank.begin_s.min(begin_s);
                rank.end_s = rank.end_s.max(end_s);
                rank
            }
            std::collections::btree_map::Entry::Vacant(v) => v.insert(RankTrace {
                begin_s,
                end_s,
                ..RankTrace::default()
            }),
        };
        match cat {
            "iteration" => rank.iteration_ends.push(end_s),
            "comm" => {
                let name = obj
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| err(field("name"), "is missing or not a string".into()))?;
                let mut words = name.split(' ');
                let call = words.next().unwrap_or_default().to_string();
                if call.is_empty() {
                    return Err(err(field("name"), "is empty, expected a call name".into()));
                }
                let peer = match words.next() {
                    None => None,
                    Some(p) => Some(p.parse::<u32>().map_err(|_| {
                        err(
                            field("name"),
                            format!("is \"{name}\", expected \"<call>\" or \"<call> <peer>\""),
                        )
                    })?),
                };
                if words.next().is_some() {
                    return Err(err(
                        field("name"),
                        format!("is \"{name}\", expected \"<call>\" or \"<call> <peer>\""),
                    ));
                }
                let id = |key: &str, what: &str| -> Result<Option<u32>, ModelError> {
                    match obj.get("args").and_then(|a| a.get(key)) {
                        None | Some(Value::Null) => Ok(None),
                        Some(v) => Ok(Some(
                            v.as_u64()
                                .filter(|&e| e < u64::from(u32::MAX))
                                .ok_or_else(|| {
                                    err(
                                        field(&format!("args.{key}")),
                                        format!("is {v}, expected {what} or null"),
                                    )
                                })? as u32,
                        )),
                    }
                };
                let event = id("event", "an event id")?;
                let source = id("source", "a rank")?;
                let count = |key: &str| -> Result<u64, ModelError> {
                    match obj.get("args").and_then(|a| a.get(key)) {
                        None | Some(Value::Null) => Ok(0),
                        Some(v) => v
                            .as_u64()
                            .or_else(|| {
                                v.as_f64()
                                    .filter(|x| x.fract() == 0.0 && *x >= 0.0 && *x < 1e15)
                                    .map(|x| x as u64)
                            })
                            .ok_or_else(|| {
                                err(
                                    field(&format!("args.{key}")),
                                    format!("is {v}, expected a count of messages"),
                                )
                            }),
                    }
                };
                let (messages_sent, messages_received) =
                    (count("messages_sent")?, count("messages_received")?);
                let group = match obj.get("args").and_then(|a| a.get("group")) {
                    None | Some(Value::Null) => None,
                    Some(v) => {
                        let bad = || {
                            err(
                                field("args.group"),
                                format!("is {v}, expected a list of distinct ranks or null"),
                            )
                        };
                        let ranks = v.as_array().ok_or_else(bad)?;
                        let mut members = Vec::with_capacity(ranks.len());
                        for r in ranks {
                            let r = r
                                .as_u64()
                                .and_then(|r| u32::try_from(r).ok())
                                .filter(|r| !members.contains(r))
                                .ok_or_else(bad)?;
                            members.push(r);
                        }
                        if members.is_empty() {
                            return Err(bad());
                        }
                        Some(members)
                    }
                };
                rank.calls.push(CommCall {
                    call,
                    peer,
                    source,
                    event,
                    group,
                    messages_sent,
                    messages_received,
                    begin_s,
                    end_s,
                });
            }
            _ => {}
        }
        Ok(())
    }
}

/// The document: an object whose `traceEvents` are the events, or the array of events.
struct Document<'r, 'f>(&'r mut EventReader<'f>);

impl<'de> serde::de::DeserializeSeed<'de> for Document<'_, '_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Document<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object with `traceEvents` or an array of events")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "traceEvents" {
                self.0.at = Place::Events;
                map.next_value_seed(Events(&mut *self.0))?;
                self.0.at = Place::Document;
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        self.0.at = Place::Events;
        serde::de::Visitor::visit_seq(Events(self.0), seq)
    }
}

/// The array of events, each parsed alone and read.
struct Events<'r, 'f>(&'r mut EventReader<'f>);

impl<'de> serde::de::DeserializeSeed<'de> for Events<'_, '_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Events<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of events")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.has_events = true;
        self.0.at = Place::Event;
        while let Some(event) = seq.next_element::<Value>()? {
            let i = self.0.count;
            self.0.count += 1;
            if self.0.beyond {
                continue;
            }
            if let Err(e) = self.0.event(i, &event) {
                self.0.failed = Some(e);
                return Err(serde::de::Error::custom("stopped at an invalid event"));
            }
        }
        self.0.at = Place::Events;
        Ok(())
    }
}
