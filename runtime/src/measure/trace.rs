//! Chrome trace JSON (the Trace Event Format): opens in Perfetto and chrome://tracing. One
//! process, one thread per rank, one complete ("X") event per record, times in microseconds of
//! the run's clock.

use mheta_format::json::{self, Object, Writer};

use crate::hooks::{
    group_members, io_kind, var_name, CallKind, RankRecords, Record, RecordKind, VarId, NONE,
};

/// The trace of every rank's records, as compact JSON. Every object's keys are in sorted order
/// (as serde_json's maps keep them).
pub fn chrome_trace(ranks: &[RankRecords]) -> String {
    struct Trace<'r>(&'r [RankRecords]);
    impl json::ToJson for Trace<'_> {
        fn write_json(&self, w: &mut Writer) {
            w.object(|o| {
                o.field("displayTimeUnit", "ms");
                o.field_with("traceEvents", |w| events(w, self.0));
            })
        }
    }
    json::compact(&Trace(ranks))
}

/// One metadata event naming each rank's thread, then one complete event per record.
fn events(w: &mut Writer, ranks: &[RankRecords]) {
    struct Event<'r> {
        rank: usize,
        record: Option<&'r Record>,
    }
    impl json::ToJson for Event<'_> {
        fn write_json(&self, w: &mut Writer) {
            let rank = self.rank;
            let Some(r) = self.record else {
                return w.object(|o| {
                    o.field_with("args", |w| {
                        w.object(|o| o.field("name", &format!("rank {rank}")))
                    });
                    o.field("name", "thread_name");
                    o.field("ph", "M");
                    o.field("pid", &1u32);
                    o.field("tid", &rank);
                });
            };
            let (name, cat) = describe(r);
            w.object(|o| {
                o.field_with("args", |w| w.object(|o| args(o, r)));
                o.field("cat", cat);
                o.field("dur", &(r.duration_s() * 1e6).max(0.0));
                o.field("name", &name);
                o.field("ph", "X");
                o.field("pid", &1u32);
                o.field("tid", &rank);
                o.field("ts", &(r.begin_s * 1e6));
            })
        }
    }
    let all = ranks.iter().enumerate().flat_map(|(rank, rr)| {
        std::iter::once(Event { rank, record: None }).chain(rr.records.iter().map(move |r| Event {
            rank,
            record: Some(r),
        }))
    });
    w.array(all);
}

/// A record's name and category.
fn describe(r: &Record) -> (String, &'static str) {
    let key = r.key;
    match r.kind {
        RecordKind::Iteration => (format!("iteration {}", r.id), "iteration"),
        RecordKind::Section => (format!("section {}", r.id), "section"),
        RecordKind::Tile => (format!("tile {}.{}", r.aux, r.id), "tile"),
        RecordKind::Stage => {
            let name = match key.tile {
                Some(t) => format!("stage {}.t{}.{}", key.section, t, key.stage),
                None => format!("stage {}.{}", key.section, key.stage),
            };
            (name, "stage")
        }
        RecordKind::Event => (format!("event {}", r.id), "event"),
        RecordKind::Group => (format!("group {}", r.id), "group"),
        RecordKind::Io => {
            let var = var_name(VarId(r.id)).unwrap_or_else(|| format!("var{}", r.id));
            let op = io_kind(r.aux).map_or("io".to_string(), |k| format!("{k:?}").to_lowercase());
            (format!("{op} {var}"), "io")
        }
        RecordKind::Copy => {
            let var = var_name(VarId(r.id)).unwrap_or_else(|| format!("var{}", r.id));
            (format!("in-core copy {var}"), "io")
        }
        RecordKind::Comm => {
            let call = CallKind::from_code(r.aux).map_or("comm", CallKind::name);
            let name = if r.peer == NONE {
                call.to_string()
            } else {
                format!("{call} {}", r.peer)
            };
            (name, "comm")
        }
    }
}

/// A record's `args`: the bytes of I/O and copies, the traffic of communication calls (and the
/// ranks a collective ran among, when not the whole world, and how many calls a folded poll
/// made).
fn args(o: &mut Object<'_>, r: &Record) {
    match r.kind {
        RecordKind::Io | RecordKind::Copy => o.field("bytes", &r.bytes),
        RecordKind::Comm => {
            let t = r.traffic;
            o.field("blocked_us", &(t.blocked_s * 1e6));
            o.field("bytes_received", &t.bytes_received);
            o.field("bytes_sent", &t.bytes_sent);
            // Calls of a poll made one after another, folded into this event (its duration is
            // theirs added up, `Record::repeats`).
            o.optional("calls", &(r.repeats > 0).then(|| u64::from(r.repeats) + 1));
            o.field("event", &(r.event != NONE).then_some(r.event));
            // The world ranks of a collective on a communicator split off the world.
            o.optional("group", &r.group_id().and_then(group_members));
            o.field("messages_received", &t.messages_received);
            o.field("messages_sent", &t.messages_sent);
            o.optional("source", &(r.id != NONE).then_some(r.id));
        }
        _ => {}
    }
}
