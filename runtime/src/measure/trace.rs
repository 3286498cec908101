//! Chrome trace JSON (the Trace Event Format): opens in Perfetto and chrome://tracing. One
//! process, one thread per rank, one complete ("X") event per record, times in microseconds of
//! the run's clock.

use serde_json::{json, Value};

use crate::hooks::{io_kind, var_name, CallKind, RankRecords, Record, RecordKind, VarId, NONE};

/// The trace of every rank's records.
pub fn chrome_trace(ranks: &[RankRecords]) -> Value {
    let mut events = Vec::new();
    for (rank, rr) in ranks.iter().enumerate() {
        events.push(json!({
            "name": "thread_name", "ph": "M", "pid": 1, "tid": rank,
            "args": { "name": format!("rank {rank}") }
        }));
        for r in &rr.records {
            let (name, cat, args) = describe(r);
            events.push(json!({
                "name": name, "cat": cat, "ph": "X", "pid": 1, "tid": rank,
                "ts": r.begin_s * 1e6, "dur": (r.duration_s() * 1e6).max(0.0), "args": args
            }));
        }
    }
    json!({ "traceEvents": events, "displayTimeUnit": "ms" })
}

fn describe(r: &Record) -> (String, &'static str, Value) {
    let key = r.key;
    match r.kind {
        RecordKind::Iteration => (format!("iteration {}", r.id), "iteration", json!({})),
        RecordKind::Section => (format!("section {}", r.id), "section", json!({})),
        RecordKind::Tile => (format!("tile {}.{}", r.aux, r.id), "tile", json!({})),
        RecordKind::Stage => {
            let name = match key.tile {
                Some(t) => format!("stage {}.t{}.{}", key.section, t, key.stage),
                None => format!("stage {}.{}", key.section, key.stage),
            };
            (name, "stage", json!({}))
        }
        RecordKind::Event => (format!("event {}", r.id), "event", json!({})),
        RecordKind::Group => (format!("group {}", r.id), "group", json!({})),
        RecordKind::Io => {
            let var = var_name(VarId(r.id)).unwrap_or_else(|| format!("var{}", r.id));
            let op = io_kind(r.aux).map_or("io".to_string(), |k| format!("{k:?}").to_lowercase());
            (format!("{op} {var}"), "io", json!({ "bytes": r.bytes }))
        }
        RecordKind::Copy => {
            let var = var_name(VarId(r.id)).unwrap_or_else(|| format!("var{}", r.id));
            (
                format!("in-core copy {var}"),
                "io",
                json!({ "bytes": r.bytes }),
            )
        }
        RecordKind::Comm => {
            let call = CallKind::from_code(r.aux).map_or("comm", CallKind::name);
            let name = if r.peer == NONE {
                call.to_string()
            } else {
                format!("{call} {}", r.peer)
            };
            let t = r.traffic;
            let event = if r.event == NONE {
                Value::Null
            } else {
                json!(r.event)
            };
            (
                name,
                "comm",
                json!({
                    "event": event, "bytes_sent": t.bytes_sent, "bytes_received": t.bytes_received,
                    "messages_sent": t.messages_sent, "messages_received": t.messages_received,
                    "blocked_us": t.blocked_s * 1e6
                }),
            )
        }
    }
}
