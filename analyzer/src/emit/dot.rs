//! Graphviz DOT (`--format dot`) through petgraph: solvers contain sections; sections contain
//! stages, tile loops and their closing event; dependency edges run from each section's event
//! to the next section (and from a tile's receive through its stages to its send).

use petgraph::dot::{Config, Dot};
use petgraph::graph::{DiGraph, NodeIndex};

use mheta_runtime::format::{CommEvent, SectionItem, Stage, Structure};

pub fn render(structure: &Structure) -> String {
    let mut g: DiGraph<String, &'static str> = DiGraph::new();
    for s in &structure.solvers {
        let root = g.add_node(format!("solver {}", s.name));
        let mut prev: Option<NodeIndex> = None;
        for sec in &s.sections {
            let group = sec
                .group
                .map(|g| format!(" (group {g})"))
                .unwrap_or_default();
            let sn = g.add_node(format!("section {}{group}", sec.id));
            g.add_edge(root, sn, "contains");
            if let Some(p) = prev {
                g.add_edge(p, sn, "then");
            }
            let mut last = sn;
            for item in &sec.items {
                match item {
                    SectionItem::Stage(st) => {
                        let n = g.add_node(stage_label(st));
                        g.add_edge(last, n, "then");
                        last = n;
                    }
                    SectionItem::Tiles(t) => {
                        let tn = g.add_node(format!("tiles {}", t.id));
                        g.add_edge(last, tn, "then");
                        let mut inner = tn;
                        if let Some(e) = &t.recv {
                            let n = g.add_node(event_label("recv", e));
                            g.add_edge(inner, n, "then");
                            inner = n;
                        }
                        for st in &t.stages {
                            let n = g.add_node(stage_label(st));
                            g.add_edge(inner, n, "then");
                            inner = n;
                        }
                        if let Some(e) = &t.send {
                            let n = g.add_node(event_label("send", e));
                            g.add_edge(inner, n, "then");
                        }
                        last = tn;
                    }
                }
            }
            prev = Some(match &sec.comm {
                Some(e) => {
                    let n = g.add_node(event_label("comm", e));
                    g.add_edge(last, n, "then");
                    n
                }
                None => last,
            });
        }
    }
    format!("{:?}", Dot::with_config(&g, &[Config::EdgeNoLabel]))
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
