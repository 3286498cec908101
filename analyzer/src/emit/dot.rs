//! Graphviz DOT (`--format dot`) through petgraph: solvers contain sections; sections contain
//! stages, tile loops and their closing event; dependency edges run from each section's event
//! to the next section (and from a tile's receive through its stages to its send); a repeated
//! group (nested iteration) loops back from its last section to its first, labelled with its
//! trip count.

use petgraph::dot::Dot;
use petgraph::graph::{DiGraph, NodeIndex};

use mheta_format::{CommEvent, SectionItem, Stage, Structure};

/// The structure as a Graphviz DOT digraph (see the module documentation for its nodes and
/// edges).
pub fn render(structure: &Structure) -> String {
    let mut g: DiGraph<String, String> = DiGraph::new();
    for s in &structure.solvers {
        let root = g.add_node(format!("solver {}", s.name));
        let mut prev: Option<NodeIndex> = None;
        // Per group: its first section's node and the last node of its last section.
        let mut groups: Vec<(u32, NodeIndex, NodeIndex)> = Vec::new();
        for sec in &s.sections {
            let group = sec
                .group
                .map(|g| format!(" (group {g})"))
                .unwrap_or_default();
            let sn = g.add_node(format!("section {}{group}", sec.id));
            g.add_edge(root, sn, "contains".into());
            if let Some(p) = prev {
                g.add_edge(p, sn, String::new());
            }
            let mut last = sn;
            for item in &sec.items {
                match item {
                    SectionItem::Stage(st) => {
                        let n = g.add_node(stage_label(st));
                        g.add_edge(last, n, String::new());
                        last = n;
                    }
                    SectionItem::Tiles(t) => {
                        let tn = g.add_node(format!("tiles {}", t.id));
                        g.add_edge(last, tn, String::new());
                        let mut inner = tn;
                        if let Some(e) = &t.recv {
                            let n = g.add_node(event_label("recv", e));
                            g.add_edge(inner, n, String::new());
                            inner = n;
                        }
                        for st in &t.stages {
                            let n = g.add_node(stage_label(st));
                            g.add_edge(inner, n, String::new());
                            inner = n;
                        }
                        if let Some(e) = &t.send {
                            let n = g.add_node(event_label("send", e));
                            g.add_edge(inner, n, String::new());
                        }
                        last = tn;
                    }
                }
            }
            let end = match &sec.comm {
                Some(e) => {
                    let n = g.add_node(event_label("comm", e));
                    g.add_edge(last, n, String::new());
                    n
                }
                None => last,
            };
            if let Some(gid) = sec.group {
                match groups.iter_mut().find(|(id, _, _)| *id == gid) {
                    Some(entry) => entry.2 = end,
                    None => groups.push((gid, sn, end)),
                }
            }
            prev = Some(end);
        }
        // A repeated group loops back from its end to its first section.
        for (gid, first, end) in groups {
            let trip = s
                .groups
                .get(gid as usize)
                .map(|x| x.trip_count.clone())
                .unwrap_or_default();
            g.add_edge(end, first, format!("repeat {trip}"));
        }
    }
    format!("{}", Dot::with_config(&g, &[]))
}

fn stage_label(st: &Stage) -> String {
    format!(
        "stage {} {:?} depth {} {:?}",
        st.id, st.kind, st.loop_depth, st.access
    )
}

fn event_label(role: &str, e: &CommEvent) -> String {
    format!(
        "{role} event {} {}",
        e.id,
        crate::lower::pattern_name(e.pattern)
    )
}
