//! Guards close in scope order on every exit path: normal end, `?`, `break`, `continue` and
//! `return`, restoring the enclosing stage and event context each time.

use super::*;
use crate::clock::{self, ClockMode};

const fn key(section: u32, stage: u32) -> StageKey {
    StageKey {
        section,
        tile: None,
        stage,
    }
}

/// Runs `f` on a fresh rank thread with recording on (charged clock) and returns its records.
fn recorded(f: impl FnOnce() + Send + 'static) -> Vec<Record> {
    recorded_on(ClockMode::Charged, f)
}

/// [`recorded`] on the clock `mode`.
fn recorded_on(mode: ClockMode, f: impl FnOnce() + Send + 'static) -> Vec<Record> {
    std::thread::spawn(move || {
        clock::install(mode, 1.0);
        install(HookConfig {
            instrument: true,
            slowdown: false,
            timing: false,
        });
        set_recording(true);
        f();
        let records = uninstall().records;
        clock::uninstall();
        records
    })
    .join()
    .expect("the rank thread runs")
}

/// `(kind, id)` of each record, in close order.
fn kinds(records: &[Record]) -> Vec<(RecordKind, u32)> {
    records.iter().map(|r| (r.kind, r.id)).collect()
}

fn io_now(var: VarId) {
    let t = clock::now();
    record_io(var, IoKind::Read, 8, t, t);
}

#[test]
fn early_exits_close_every_open_region_and_restore_the_context() {
    fn failing_stage(var: VarId) -> Result<(), ()> {
        let _s = stage(key(0, 1));
        let _e = event(7);
        io_now(var);
        Err::<(), ()>(())?;
        unreachable!("`?` left the stage");
    }
    let records = recorded(|| {
        let var = register_var("early_exit_test");
        let _section = section(0);
        assert!(failing_stage(var).is_err());
        // Back in the section: no stage or event is open any more.
        io_now(var);
        for trip in 0..3u32 {
            let _g = group(trip);
            let _s = stage(key(0, 2));
            if trip == 0 {
                continue;
            }
            if trip == 1 {
                break;
            }
        }
        io_now(var);
    });
    let v = records[0].id;
    assert_eq!(
        kinds(&records),
        [
            (RecordKind::Io, v),
            (RecordKind::Event, 7),
            (RecordKind::Stage, 1),
            (RecordKind::Io, v),
            (RecordKind::Stage, 2),
            (RecordKind::Group, 0),
            (RecordKind::Stage, 2),
            (RecordKind::Group, 1),
            (RecordKind::Io, v),
            (RecordKind::Section, 0),
        ]
    );
    let io: Vec<&Record> = records
        .iter()
        .filter(|r| r.kind == RecordKind::Io)
        .collect();
    // Inside the stage and its event; then outside any stage or event, attributed to the last
    // stage that ran.
    assert!(io[0].in_stage && io[0].event == 7 && io[0].key == key(0, 1));
    assert!(!io[1].in_stage && io[1].event == NONE && io[1].key == key(0, 1));
    assert!(!io[2].in_stage && io[2].event == NONE && io[2].key == key(0, 2));
    // Every record nests inside the section, and the event inside its stage.
    let section = records.last().unwrap();
    assert!(records[..records.len() - 1]
        .iter()
        .all(|r| r.is_inside(section)));
    assert!(records[1].is_inside(&records[2]));
}

#[test]
fn a_return_from_a_nested_region_closes_inner_before_outer() {
    // The `return` from inside the stage's block is what is tested.
    #[allow(clippy::needless_return)]
    fn solver() -> u32 {
        let _it = iteration(4);
        let _s = section(3);
        {
            let _st = stage(key(3, 0));
            return 1;
        }
    }
    let records = recorded(|| assert_eq!(solver(), 1));
    assert_eq!(
        kinds(&records),
        [
            (RecordKind::Stage, 0),
            (RecordKind::Section, 3),
            (RecordKind::Iteration, 4)
        ]
    );
    assert!(records[0].is_inside(&records[1]) && records[1].is_inside(&records[2]));
}

#[test]
fn disabled_guards_record_nothing_and_a_later_install_starts_clean() {
    let records = std::thread::spawn(|| {
        // No hooks on this thread: guards are inert, whatever other threads do.
        drop(stage(key(0, 0)));
        let outer = section(0);
        clock::install(ClockMode::Charged, 1.0);
        install(HookConfig {
            instrument: true,
            slowdown: false,
            timing: false,
        });
        set_recording(true);
        drop(stage(key(0, 1)));
        let records = take_records();
        // `outer` was opened before the install: its drop finds no frame of its own.
        drop(outer);
        assert!(take_records().is_empty());
        uninstall();
        clock::uninstall();
        records
    })
    .join()
    .unwrap();
    assert_eq!(kinds(&records), [(RecordKind::Stage, 1)]);
}

/// A solver-shaped script: iterations of a section with `tiles` tiles, stages, an event with
/// calls, I/O inside and outside stages, and an early exit; `trips` iterations.
fn script(trips: u64, tiles: u32) {
    let var = register_var("stream_test");
    for it in 0..trips {
        let _it = iteration(it);
        let _section = section(0);
        for t in 0..tiles {
            let _tile = tile(0, 0);
            let _s = stage(StageKey {
                section: 0,
                tile: Some(0),
                stage: t,
            });
            io_now(var);
        }
        {
            let _s = stage(key(1, 0));
            let _e = event(4);
            let start = comm_begin();
            comm_end(start, CallKind::AllReduce, Some(0), &Traffic::sent(8));
        }
        io_now(var);
        let early = || -> Result<(), ()> {
            let _g = group(2);
            let _s = stage(key(1, 1));
            Err(())
        };
        assert!(early().is_err());
    }
}

/// The records of `script(trips, tiles)` on a fresh rank thread with `mode`'s clock, and
/// whether that rank recorded in stream mode.
fn scripted(mode: ClockMode, trips: u64, tiles: u32) -> (Vec<Record>, bool) {
    std::thread::spawn(move || {
        clock::install(mode, 1.0);
        install(HookConfig {
            instrument: true,
            slowdown: false,
            timing: false,
        });
        set_recording(true);
        let streaming = with_recorder(|r| r.fast).unwrap();
        script(trips, tiles);
        let records = uninstall().records;
        clock::uninstall();
        (records, streaming)
    })
    .join()
    .expect("the rank thread runs")
}

#[test]
fn stream_mode_records_what_the_direct_path_records() {
    // 29 ticks and 17 records per trip: 2,000 trips fill half the stream seven times, so it is
    // replayed between iterations. A trip of 4,000 tiles (20,000 ticks) holds more than the
    // whole stream, so it is replayed inside an iteration too.
    for (trips, tiles, records) in [(2000, 3, 17), (3, 4000, 12008)] {
        let (direct, streamed_direct) = scripted(ClockMode::Charged, trips, tiles);
        let (stream, streamed) = scripted(ClockMode::Wall, trips, tiles);
        assert!(!streamed_direct && streamed);
        assert_eq!(stream.len() as u64, records * trips);
        same_records_but_times(&stream, &direct);
    }
}

/// `stream` (recorded on the wall clock) and `direct` are the same records but for their
/// times, and `stream`'s times are consistent.
fn same_records_but_times(stream: &[Record], direct: &[Record]) {
    let untimed = |records: &[Record]| -> Vec<Record> {
        records
            .iter()
            .map(|r| Record {
                begin_s: 0.0,
                end_s: 0.0,
                traffic: Traffic {
                    blocked_s: 0.0,
                    ..r.traffic
                },
                ..*r
            })
            .collect()
    };
    assert_eq!(untimed(stream), untimed(direct));
    // The streamed times are wall-clock times: each region lies inside its enclosing ones,
    // and regions end in order.
    for pair in stream.windows(2) {
        assert!(pair[0].end_s <= pair[1].end_s);
    }
    for r in stream {
        assert!(r.begin_s <= r.end_s && r.begin_s > 0.0);
    }
    let first_trips = &stream[..stream.len().min(340)];
    for r in first_trips {
        for outer in first_trips.iter().filter(|o| r.is_inside(o)) {
            assert!(outer.begin_s <= r.begin_s && r.end_s <= outer.end_s);
        }
    }
}

/// An exchange records the rank it received from when that is not its peer (a ring shift's
/// `send_receive_into(&x, &right, &mut y, &left)`), in `id`, and the Chrome trace writes it as
/// `args.source`; a call whose source is its peer, and any other call, records `NONE` and
/// writes none.
#[test]
fn an_exchange_records_its_source_and_the_trace_writes_it() {
    let records = recorded(|| {
        let _s = stage(key(0, 0));
        let both = Traffic {
            messages_received: 1,
            bytes_received: 16,
            ..Traffic::sent(16)
        };
        comm_end_from(
            comm_begin(),
            CallKind::Receive,
            Some(2),
            Some(0),
            None,
            &both,
        );
        comm_end_from(
            comm_begin(),
            CallKind::Receive,
            Some(2),
            Some(2),
            None,
            &both,
        );
        comm_end(comm_begin(), CallKind::Send, Some(2), &Traffic::sent(8));
    });
    let comm: Vec<(u32, u32)> = records
        .iter()
        .filter(|r| r.kind == RecordKind::Comm)
        .map(|r| (r.peer, r.id))
        .collect();
    assert_eq!(comm, vec![(2, 0), (2, NONE), (2, NONE)]);
    let trace = crate::measure::chrome_trace(&[RankRecords {
        records,
        ..Default::default()
    }]);
    assert_eq!(trace.matches("\"source\":0").count(), 1, "{trace}");
    assert_eq!(trace.matches("\"source\"").count(), 1, "{trace}");
}

/// A collective on a communicator split off the world records the world ranks it ran among
/// (interned, in `group`), and the Chrome trace writes them as `args.group`; a collective of
/// the whole world, and any other call, records `NONE` and writes none.
#[test]
fn a_collective_records_the_ranks_it_ran_among_and_the_trace_writes_them() {
    let evens = register_group(&[0, 2]);
    let records = recorded(move || {
        let _s = stage(key(0, 0));
        comm_end_from(
            comm_begin(),
            CallKind::AllReduce,
            None,
            None,
            Some(evens),
            &Traffic::sent(8),
        );
        comm_end(comm_begin(), CallKind::AllReduce, None, &Traffic::sent(8));
    });
    let groups: Vec<u32> = records
        .iter()
        .filter(|r| r.kind == RecordKind::Comm)
        .map(|r| r.group)
        .collect();
    assert_eq!(groups, vec![evens.0, NONE]);
    assert_eq!(register_group(&[0, 2]), evens, "interned once");
    assert_eq!(group_members(evens), Some(vec![0, 2]));
    let trace = crate::measure::chrome_trace(&[RankRecords {
        records,
        ..Default::default()
    }]);
    assert_eq!(trace.matches("\"group\":[0,2]").count(), 1, "{trace}");
    assert_eq!(trace.matches("\"group\"").count(), 1, "{trace}");
}

/// A communication call recorded with no event region open, during a call site's hint (a
/// callee `#[mheta::solver]` could not copy, whose MPI calls the profiling interface records),
/// belongs to the first hinted event, from the last one a call went to, that makes its kind
/// of call; an open event region decides instead; after the hint, no event. The same on the
/// charged clock (records built as guards close) and on the wall clock (the stream mode).
#[test]
fn calls_during_a_call_site_hint_belong_to_its_events() {
    fn call(kind: CallKind) {
        let start = comm_begin();
        comm_end(start, kind, Some(1), &Traffic::default());
    }
    const HINT: &[(u32, &[CallKind])] = &[
        (3, &[CallKind::ImmediateSend, CallKind::Receive]),
        (5, &[CallKind::AllReduce]),
    ];
    for mode in [ClockMode::Charged, ClockMode::Wall] {
        let records = recorded_on(mode, || {
            {
                let _s = stage(key(0, 0));
                let _site = site(HINT);
                call(CallKind::ImmediateSend);
                call(CallKind::Receive);
                call(CallKind::AllReduce);
                // The cursor is at event 5; a receive goes round to event 3.
                call(CallKind::Receive);
                // A kind no hinted event makes: no event.
                call(CallKind::Broadcast);
                {
                    let _e = event(9);
                    call(CallKind::AllReduce);
                }
                let _single = site(&[(7, &[CallKind::Send])]);
                // The innermost hint; with one event, every call is its.
                call(CallKind::Barrier);
            }
            call(CallKind::Send);
        });
        let events: Vec<u32> = records
            .iter()
            .filter(|r| r.kind == RecordKind::Comm)
            .map(|r| r.event)
            .collect();
        assert_eq!(events, [3, 3, 5, 3, NONE, 9, 7, NONE], "{mode:?}");
    }
}

/// A poll repeated at once (`while !req.test() {}`: the same call, moving no message, with
/// nothing recorded between) is one record that counts its calls and lasts as long as they do
/// together, in the direct path and in stream mode, so a rank that polls a million times keeps
/// one record, not a million. A call that moves a message, or a guard between two polls,
/// starts a new record; the trace writes the count.
#[test]
fn a_poll_repeated_at_once_is_one_record_counting_its_calls() {
    for mode in [ClockMode::Charged, ClockMode::Wall] {
        let records = recorded_on(mode, || {
            let poll = || {
                let start = comm_begin().blocking(true);
                comm_end(start, CallKind::Receive, None, &Traffic::default());
            };
            let _s = stage(key(0, 0));
            {
                let _e = event(3);
                for _ in 0..1000 {
                    poll();
                }
                let message = Traffic {
                    messages_received: 1,
                    bytes_received: 8,
                    ..Traffic::default()
                };
                comm_end(comm_begin(), CallKind::Receive, Some(1), &message);
                for _ in 0..5 {
                    poll();
                }
            }
            let _e = event(4);
            for _ in 0..3 {
                poll();
            }
        });
        let comm: Vec<&Record> = records
            .iter()
            .filter(|r| r.kind == RecordKind::Comm)
            .collect();
        let seen: Vec<(u32, u32, u32)> =
            comm.iter().map(|r| (r.event, r.peer, r.repeats)).collect();
        assert_eq!(
            seen,
            [(3, NONE, 999), (3, 1, 0), (3, NONE, 4), (4, NONE, 2)],
            "{mode:?}"
        );
        // The folded polls block for as long as they last (their durations added up).
        for r in comm.iter().filter(|r| r.peer == NONE) {
            assert!(
                (r.traffic.blocked_s - r.duration_s()).abs() < 1e-9,
                "{mode:?}: {r:?}"
            );
        }
        let trace = crate::measure::chrome_trace(&[RankRecords {
            records,
            ..Default::default()
        }]);
        assert_eq!(trace.matches("\"calls\":1000").count(), 1, "{trace}");
        assert_eq!(trace.matches("\"calls\"").count(), 3, "{trace}");
    }
}
