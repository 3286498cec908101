//! The automaton, transition by transition (one test per row of DESIGN §3.6), on token streams
//! written in a small notation: `s` statement, `i` I/O, `c` communication, `r` receive-like
//! communication, `(` stage loop, `[` tile loop, `{` nested iteration, `)` loop end.

use mheta_format::{Level, Pattern, StageKind};

use super::*;
use crate::diagnostics::Loc;
use crate::events::{Described, EventDraft};
use crate::ir::{LoopKind, Stmt};
use crate::lower::{Event, LoopInfo, LoopRole, Lowered, Token};

fn loc() -> Loc {
    Loc {
        file: 0,
        start: (1, 0),
        end: (1, 1),
        via: 0,
    }
}

/// Builds a lowered body from the notation (an `IterEnd` is appended).
fn lowered(spec: &str) -> Lowered {
    let mut l = Lowered::default();
    let mut open = Vec::new();
    for ch in spec.chars() {
        match ch {
            's' => {
                l.stmts.push(Stmt {
                    loc: Some(loc()),
                    ..Stmt::default()
                });
                l.tokens.push(Token::Stmt(l.stmts.len() - 1));
            }
            'i' => {
                l.io.push(crate::ir::IoCall {
                    op: mheta_format::IoKind::Read,
                    var: "a".into(),
                    loc: loc(),
                });
                l.tokens.push(Token::Io(l.io.len() - 1));
            }
            'c' | 'r' => {
                let draft = EventDraft {
                    rule: mheta_format::EventRule::SingleCall,
                    calls: vec![],
                    loc: loc(),
                    ranges: vec![],
                    computes: None,
                    alt: vec![],
                    guard: None,
                };
                let described = Described {
                    pattern: Pattern::PointToPoint,
                    participants: vec![],
                    message: None,
                    elem_type: None,
                    receive_like: ch == 'r',
                };
                l.events.push(Event {
                    draft,
                    described,
                    frequency: 1.0,
                    condition: None,
                });
                l.tokens.push(Token::Comm(l.events.len() - 1));
            }
            '(' | '[' | '{' => {
                let role = match ch {
                    '(' => LoopRole::Plain,
                    '[' => LoopRole::Tile,
                    _ => LoopRole::Nested,
                };
                l.loops.push(LoopInfo {
                    loc: loc(),
                    kind: LoopKind::For,
                    vars: vec![],
                    bound_reads: vec![],
                    header_text: String::new(),
                    trip_count: "2".into(),
                    header: Stmt::default(),
                    role,
                    alt: None,
                });
                open.push(l.loops.len() - 1);
                l.tokens.push(Token::LoopStart(l.loops.len() - 1));
            }
            ')' | ']' | '}' => l
                .tokens
                .push(Token::LoopEnd(open.pop().expect("balanced spec"))),
            other => panic!("unknown token {other}"),
        }
    }
    l.tokens.push(Token::IterEnd);
    l
}

/// A compact rendering of the outline: sections as `S[items]→comm`, stages as `impl`/`loop`,
/// tiles as `T(recv;stages;send)`, and `G` for group membership.
fn shape(o: &Outline) -> String {
    let stage = |s: &StageOut| match s.kind {
        StageKind::Implicit => format!("impl{}", s.tokens.len()),
        StageKind::Loop => format!("loop{}", s.tokens.len()),
    };
    o.sections
        .iter()
        .map(|s| {
            let items: Vec<String> = s
                .items
                .iter()
                .map(|it| match it {
                    ItemOut::Stage(st) => stage(st),
                    ItemOut::Tiles(t) => {
                        let stages: Vec<String> = t.stages.iter().map(stage).collect();
                        format!("T({:?};{};{:?})", t.recv, stages.join(","), t.send)
                    }
                })
                .collect();
            let group = s.group.map(|g| format!("G{g}:")).unwrap_or_default();
            format!("{group}S[{}]→{:?}", items.join(","), s.comm)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn run_spec(spec: &str) -> Outline {
    run(&lowered(spec))
}

/// The (state before, state after) of every consumed token and ε move, as names.
fn states(o: &Outline) -> Vec<(&'static str, &'static str)> {
    o.trace
        .iter()
        .map(|t| (t.before.state.name(), t.after.state.name()))
        .collect()
}

#[test]
fn section_stmt_opens_an_implicit_stage() {
    let o = run_spec("sc");
    assert_eq!(shape(&o), "S[impl1]→Some(0)");
    assert_eq!(states(&o)[0], ("SECTION", "STAGE"));
    assert!(o.trace[0].after.vars.implicit);
}

#[test]
fn section_io_opens_an_implicit_stage() {
    assert_eq!(shape(&run_spec("ic")), "S[impl1]→Some(0)");
}

#[test]
fn section_loopstart_with_receive_lookahead_opens_a_tile() {
    let o = run_spec("[r(s)c]");
    assert_eq!(shape(&o), "S[T(Some(0);loop3;Some(1))]→None");
    assert_eq!(states(&o)[0], ("SECTION", "TILE_START"));
    assert_eq!(states(&o)[1], ("TILE_START", "TILE"));
}

#[test]
fn tile_role_without_a_comm_lookahead_is_a_stage_loop() {
    // The lookahead is the deterministic resolution: no Comm next, no tile.
    assert_eq!(shape(&run_spec("[s]c")), "S[loop3]→Some(0)");
}

#[test]
fn section_loopstart_of_a_nested_iteration_runs_a_group() {
    let o = run_spec("s{(s)c}c");
    assert_eq!(shape(&o), "S[impl1]→None G0:S[loop3]→Some(0) S[]→Some(1)");
    assert_eq!(o.groups.len(), 1);
    assert_eq!(o.groups[0].parent, None);
}

#[test]
fn nested_groups_record_their_parent() {
    let o = run_spec("{{sc}c}");
    assert_eq!(shape(&o), "G1:S[impl1]→Some(0) G0:S[]→Some(1)");
    assert_eq!(o.groups[1].parent, Some(0));
}

#[test]
fn section_loopstart_opens_a_loop_stage() {
    let o = run_spec("(s)c");
    assert_eq!(shape(&o), "S[loop3]→Some(0)");
    assert_eq!(
        &states(&o)[..2],
        &[("SECTION", "LOOP_START"), ("LOOP_START", "LOOP")]
    );
    assert!(!o.trace[0].after.vars.implicit);
}

#[test]
fn section_comm_closes_the_section_through_section_next() {
    let o = run_spec("cc");
    assert_eq!(shape(&o), "S[]→Some(0) S[]→Some(1)");
    assert_eq!(
        &states(&o)[..2],
        &[("SECTION", "SECTION_NEXT"), ("SECTION_NEXT", "SECTION")]
    );
    assert!(o.trace[0].after.vars.next);
    assert!(!o.trace[1].after.vars.next);
    assert_eq!(o.trace[1].after.vars.section, 1);
}

#[test]
fn section_iterend_drops_an_empty_section() {
    let o = run_spec("(s)c");
    assert_eq!(o.sections.len(), 1);
    assert_eq!(o.trace.last().map(|t| t.after.state), Some(State::Done));
}

#[test]
fn stage_records_statements_and_io() {
    assert_eq!(shape(&run_spec("sisc")), "S[impl3]→Some(0)");
}

#[test]
fn stage_loopstart_of_a_tile_closes_the_stage_and_retries_in_section() {
    let o = run_spec("s[r(s)c]");
    assert_eq!(shape(&o), "S[impl1,T(Some(0);loop3;Some(1))]→None");
    assert!(states(&o).contains(&("STAGE", "SECTION")));
}

#[test]
fn stage_loopstart_of_a_nested_iteration_closes_the_stage() {
    assert_eq!(
        shape(&run_spec("s{sc}")),
        "S[impl1]→None G0:S[impl1]→Some(0)"
    );
}

#[test]
fn stage_loopstart_while_implicit_starts_a_loop_stage() {
    let o = run_spec("s(s)c");
    assert_eq!(shape(&o), "S[impl1,loop3]→Some(0)");
    assert_eq!(states(&o)[1], ("STAGE", "LOOP_START"));
    assert_eq!(o.trace[1].after.vars.stage, 1);
}

#[test]
fn stage_comm_closes_stage_and_section() {
    let o = run_spec("sc");
    assert_eq!(states(&o)[1], ("STAGE", "SECTION_NEXT"));
}

#[test]
fn stage_iterend_closes_the_stage_and_keeps_the_section() {
    let o = run_spec("cs");
    assert_eq!(shape(&o), "S[]→Some(0) S[impl1]→None");
}

#[test]
fn loop_records_nested_loops_and_leaves_at_depth_zero() {
    let o = run_spec("((s)i)c");
    assert_eq!(shape(&o), "S[loop6]→Some(0)");
    let s = states(&o);
    assert!(s.contains(&("LOOP", "LOOP_START")));
    assert!(
        s.contains(&("LOOP_END", "LOOP")),
        "loops > 0 returns to LOOP"
    );
    assert!(
        s.contains(&("LOOP_END", "SECTION")),
        "loops = 0 closes the stage"
    );
    let max_loops = o.trace.iter().map(|t| t.after.vars.loops).max();
    assert_eq!(max_loops, Some(2));
}

#[test]
fn loop_comm_is_a_diagnostic_and_stays_in_the_stage() {
    let o = run_spec("(sc)");
    assert_eq!(shape(&o), "S[loop4]→None");
    assert_eq!(o.diags.len(), 1);
    assert_eq!(o.diags[0].level, Level::Warning);
    assert!(o.diags[0]
        .message
        .contains("communication inside a stage loop"));
}

#[test]
fn tile_holds_several_stages_and_one_send() {
    let o = run_spec("[rs(s)c]c");
    assert_eq!(shape(&o), "S[T(Some(0);impl1,loop3;Some(1))]→Some(2)");
    assert!(o.trace.iter().any(|t| t.after.vars.in_tile));
    let closing = o
        .trace
        .iter()
        .find(|t| t.token == Some(Token::LoopEnd(0)))
        .expect("the tile loop ends");
    assert_eq!(
        (closing.before.state, closing.after.state),
        (State::Tile, State::Section)
    );
    assert!(!closing.after.vars.in_tile);
}

#[test]
fn tile_second_send_is_a_diagnostic() {
    let o = run_spec("[r(s)cc]");
    assert_eq!(shape(&o), "S[T(Some(0);loop3;Some(1))]→None");
    assert!(o.diags.iter().any(|d| d.message.contains("send only once")));
}

#[test]
fn tile_computation_after_the_send_is_a_diagnostic() {
    let o = run_spec("[r(s)cs]");
    assert!(o
        .diags
        .iter()
        .any(|d| d.message.contains("middle of a tile")));
}

#[test]
fn tile_loopend_closes_the_tile_and_counts_it() {
    let o = run_spec("[rsc][rsc]c");
    assert_eq!(
        shape(&o),
        "S[T(Some(0);impl1;Some(1)),T(Some(2);impl1;Some(3))]→Some(4)"
    );
    let tiles = o.trace.iter().map(|t| t.after.vars.tile).max();
    assert_eq!(tiles, Some(2));
}

#[test]
fn stage_ids_restart_in_every_section() {
    let o = run_spec("s(s)cs(s)c");
    let stage_after_comm = o
        .trace
        .iter()
        .find(|t| t.before.state == State::SectionNext)
        .map(|t| t.after.vars.stage);
    assert_eq!(stage_after_comm, Some(0));
    assert_eq!(shape(&o), "S[impl1,loop3]→Some(0) S[impl1,loop3]→Some(1)");
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    /// Balanced token notations built from random choices.
    fn spec() -> impl Strategy<Value = String> {
        proptest::collection::vec(0u8..9, 0..60).prop_map(|choices| {
            let mut out = String::new();
            let mut depth = 0;
            for c in choices {
                match c {
                    0 | 1 => out.push('s'),
                    2 => out.push('i'),
                    3 => out.push('c'),
                    4 => out.push('r'),
                    5 => {
                        out.push('(');
                        depth += 1;
                    }
                    6 => {
                        out.push_str("[r");
                        depth += 1;
                    }
                    7 => {
                        out.push('{');
                        depth += 1;
                    }
                    _ if depth > 0 => {
                        out.push(')');
                        depth -= 1;
                    }
                    _ => out.push('s'),
                }
            }
            out.extend(std::iter::repeat(')').take(depth));
            out
        })
    }

    proptest! {
        /// Whatever the tokens, the automaton terminates in DONE and records every statement
        /// and I/O token in exactly one stage.
        #[test]
        fn every_statement_lands_in_exactly_one_stage(spec in spec()) {
            let l = lowered(&spec);
            let o = run(&l);
            prop_assert_eq!(o.trace.last().map(|t| t.after.state), Some(State::Done));
            let mut seen = Vec::new();
            for s in &o.sections {
                for item in &s.items {
                    let stages: Vec<&StageOut> = match item {
                        ItemOut::Stage(st) => vec![st],
                        ItemOut::Tiles(t) => t.stages.iter().collect(),
                    };
                    for st in stages {
                        seen.extend(st.tokens.iter().filter(|t| matches!(t, Token::Stmt(_) | Token::Io(_))).copied());
                    }
                }
            }
            let mut expected: Vec<Token> = l.tokens.iter().filter(|t| matches!(t, Token::Stmt(_) | Token::Io(_))).copied().collect();
            seen.sort_by_key(|t| format!("{t:?}"));
            expected.sort_by_key(|t| format!("{t:?}"));
            prop_assert_eq!(seen, expected);
        }

        /// Section ids are consecutive and groups are referenced only when they exist.
        #[test]
        fn sections_and_groups_are_consistent(spec in spec()) {
            let o = run(&lowered(&spec));
            for s in &o.sections {
                if let Some(g) = s.group {
                    prop_assert!((g as usize) < o.groups.len());
                }
            }
            let comms: Vec<usize> = o.sections.iter().filter_map(|s| s.comm).collect();
            let mut sorted = comms.clone();
            sorted.sort_unstable();
            prop_assert_eq!(comms, sorted, "closing events come in token order");
        }
    }
}
