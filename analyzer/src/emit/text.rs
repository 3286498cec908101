//! The indented text tree (`--format text`).

use std::fmt::Write;

use mheta_format::{CommEvent, Section, SectionItem, Span, Stage, Structure};

/// The structure as an indented tree: the crate and its diagnostics, then each solver with its
/// sections, their stages, tile loops and events.
pub fn render(structure: &Structure) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "crate {}", structure.crate_name);
    for d in &structure.diagnostics {
        let _ = writeln!(out, "  {:?}: {}{}", d.level, d.message, at(d.span.as_ref()));
    }
    for s in &structure.solvers {
        let _ = writeln!(
            out,
            "solver {} (found by {}){}",
            s.name,
            s.found_by,
            at(Some(&s.span))
        );
        let _ = writeln!(
            out,
            "  main loop: {}{}",
            s.main_loop.kind,
            at(Some(&s.main_loop.span))
        );
        for v in &s.variables {
            let ty = v.elem_type.as_deref().unwrap_or("?");
            let _ = writeln!(out, "  variable {}: {:?} {ty}", v.name, v.class);
        }
        let mut open_group: Option<u32> = None;
        for sec in &s.sections {
            if sec.group != open_group {
                if let Some(g) = sec.group.and_then(|g| s.groups.get(g as usize)) {
                    let _ = writeln!(
                        out,
                        "  group {} repeated {} times{}",
                        g.id,
                        g.trip_count,
                        at(Some(&g.span))
                    );
                }
                open_group = sec.group;
            }
            let indent = if sec.group.is_some() { "    " } else { "  " };
            section(&mut out, sec, indent, &s.main_loop.span);
        }
        for d in &s.diagnostics {
            let _ = writeln!(out, "  {:?}: {}{}", d.level, d.message, at(d.span.as_ref()));
        }
    }
    out
}

/// ` @ file:line:column`, and for inlined code the calls that reach it (` via line:column`,
/// outermost first).
fn at(span: Option<&Span>) -> String {
    let Some(s) = span else {
        return String::new();
    };
    let mut out = format!(" @ {}:{}:{}", s.file, s.line, s.column);
    for call in &s.via {
        let _ = write!(out, " via {}:{}", call.line, call.column);
    }
    out
}

fn section(out: &mut String, sec: &Section, indent: &str, main: &Span) {
    let _ = writeln!(out, "{indent}section {}", sec.id);
    for item in &sec.items {
        match item {
            SectionItem::Stage(st) => stage(out, st, &format!("{indent}  ")),
            SectionItem::Tiles(t) => {
                let _ = writeln!(out, "{indent}  tiles {}{}", t.id, at(Some(&t.span)));
                if let Some(e) = &t.recv {
                    event(out, "recv", e, &format!("{indent}    "), main);
                }
                for st in &t.stages {
                    stage(out, st, &format!("{indent}    "));
                }
                if let Some(e) = &t.send {
                    event(out, "send", e, &format!("{indent}    "), main);
                }
            }
        }
    }
    match &sec.comm {
        Some(e) => event(out, "comm", e, &format!("{indent}  "), main),
        None => {
            let _ = writeln!(out, "{indent}  comm: none");
        }
    }
}

fn stage(out: &mut String, st: &Stage, indent: &str) {
    let _ = writeln!(
        out,
        "{indent}stage {} {:?} depth {} {:?} {:?}{}",
        st.id,
        st.kind,
        st.loop_depth,
        st.access,
        st.load,
        at(Some(&st.span))
    );
    let _ = writeln!(
        out,
        "{indent}  reads [{}] writes [{}]",
        st.reads.join(", "),
        st.writes.join(", ")
    );
    if let Some(r) = &st.representative {
        let _ = writeln!(out, "{indent}  representative {r}");
    }
    for io in &st.io {
        let _ = writeln!(
            out,
            "{indent}  io {:?} {}{}",
            io.op,
            io.var,
            at(Some(&io.span))
        );
    }
    for alt in &st.alternates {
        let _ = writeln!(out, "{indent}  also{}", at(Some(alt)));
    }
}

fn event(out: &mut String, role: &str, e: &CommEvent, indent: &str, main: &Span) {
    let apis: Vec<&str> = e.calls.iter().map(|c| c.api.as_str()).collect();
    let _ = writeln!(
        out,
        "{indent}{role} event {} {} by {} with [{}]: {}{}",
        e.id,
        crate::lower::pattern_name(e.pattern),
        serde_json::to_value(e.rule)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        e.participants.join(", "),
        apis.join(", "),
        at(Some(&e.span))
    );
    if let Some(c) = &e.condition {
        let _ = writeln!(out, "{indent}  when {c} (frequency {})", e.frequency);
    }
    for alt in &e.alternates {
        let _ = writeln!(out, "{indent}  also{}", at(Some(alt)));
    }
    // `#[mheta::solver]` times the regions written in the main loop and those in callees the
    // analysis inlined from it, when they are the solver's file's (an instrumented copy of the
    // callee: `macros/src/inline.rs`); another callee is timed as a whole with its call. Every
    // MPI call is recorded either way (the runtime's MPI profiling interface).
    let inside = |s: &Span| {
        s.file == main.file && main.line <= s.line && s.line <= main.end_line.max(main.line)
    };
    let recorded = |s: &Span| match s.via.first() {
        None => inside(s),
        Some(root) => {
            inside(root) && s.file == main.file && s.via.iter().all(|v| v.file == main.file)
        }
    };
    for c in e
        .calls
        .iter()
        .filter(|c| c.api.starts_with("mpi::") && !recorded(&c.span))
    {
        let _ = writeln!(
            out,
            "{indent}  in a callee timed as a whole with its call (the call itself is recorded): {}{}",
            c.api,
            at(Some(&c.span))
        );
    }
}
