//! No import circles between the modules of a crate (issue 20; ARCHITECTURE.md "Layers").
//!
//! Every `.rs` file of a workspace library is a module (`src/a.rs` and `src/a/mod.rs` are `a`,
//! `src/a/b.rs` is `a::b`). A module *uses* another when it names a path into it: `use
//! crate::a::..`, `super::..`, `self::..` or such a path in code. A module and its ancestors are
//! one unit of nesting (a child naming its parent's items, a parent its children's, is how modules
//! split a subject), so those pairs are not counted; every other pair is. Tests (`#[cfg(test)]`
//! modules, `tests.rs` files) may use anything and are left out. The test fails on a
//! cycle among the rest, naming the modules around it: `load → binding → ir → load` was such a
//! circle, and so were `comm::mpi::collective ⇄ comm::mpi::transport` and `launch ⇄ comm::mpi::run`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The library source directories of the workspace's product crates.
const CRATES: &[&str] = &[
    "src",
    "analyzer/src",
    "analyzer/cli/src",
    "macros/src",
    "runtime/src",
    "runtime/format/src",
    "runtime/model/src",
];

type Module = Vec<String>;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every module file under `src` (binaries under `src/bin` are crates of their own).
fn module_files(src: &Path) -> BTreeMap<Module, PathBuf> {
    fn walk(dir: &Path, src: &Path, out: &mut BTreeMap<Module, PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                if path != src.join("bin") {
                    walk(&path, src, out);
                }
                continue;
            }
            if path.extension().map_or(true, |e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(src).expect("under src");
            let mut module: Module = relative
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                module.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                module.pop();
            }
            // Test modules (`tests.rs`, `x/tests/..`) may use anything.
            if module.iter().any(|m| m == "tests") {
                continue;
            }
            out.insert(module, path);
        }
    }
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out
}

/// The absolute module paths (`crate::`-relative segments) a file names.
fn named_paths(module: &Module, file: &syn::File) -> Vec<Module> {
    struct Paths<'m> {
        module: &'m Module,
        out: Vec<Module>,
    }
    impl Paths<'_> {
        fn absolute(&mut self, segments: Vec<String>) {
            let mut at = match segments.first().map(String::as_str) {
                Some("crate") => Vec::new(),
                Some("super" | "self") => self.module.clone(),
                _ => return,
            };
            let mut rest = segments.into_iter().peekable();
            if rest.peek().is_some_and(|s| s == "crate") {
                rest.next();
            }
            while let Some(s) = rest.next_if(|s| s == "super" || s == "self") {
                if s == "super" {
                    at.pop();
                }
            }
            at.extend(rest);
            self.out.push(at);
        }
    }
    fn use_tree(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                use_tree(&p.tree, prefix, out);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut path = prefix.clone();
                if n.ident != "self" {
                    path.push(n.ident.to_string());
                }
                out.push(path);
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                path.push(r.ident.to_string());
                out.push(path);
            }
            syn::UseTree::Glob(_) => out.push(prefix.clone()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| use_tree(t, prefix, out)),
        }
    }
    impl<'ast> Visit<'ast> for Paths<'_> {
        fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
            let mut paths = Vec::new();
            use_tree(&u.tree, &mut Vec::new(), &mut paths);
            for path in paths {
                self.absolute(path);
            }
        }
        fn visit_path(&mut self, p: &'ast syn::Path) {
            self.absolute(p.segments.iter().map(|s| s.ident.to_string()).collect());
            syn::visit::visit_path(self, p);
        }
        // Inline modules name their own file's module; `#[cfg(test)]` ones are tests, which
        // may use anything.
        fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
            if m.content.is_none() || is_test(&m.attrs) {
                return;
            }
            let mut module = self.module.clone();
            module.push(m.ident.to_string());
            let mut inner = Paths {
                module: &module,
                out: Vec::new(),
            };
            syn::visit::visit_item_mod(&mut inner, m);
            let own = self.module.len();
            for mut path in inner.out {
                // A path into the inline module itself stays in this file.
                if path.len() > own && path[..own] == self.module[..] && m.ident == path[own] {
                    path.truncate(own);
                }
                self.out.push(path);
            }
        }
    }
    let mut paths = Paths {
        module,
        out: Vec::new(),
    };
    paths.visit_file(file);
    paths.out
}

/// `#[cfg(test)]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test")
    })
}

/// The module file a path lands in: its longest prefix that is one.
fn resolve<'m>(path: &[String], modules: &'m BTreeMap<Module, PathBuf>) -> Option<&'m Module> {
    (0..=path.len())
        .rev()
        .find_map(|n| modules.get_key_value(&path[..n]).map(|(k, _)| k))
}

fn nested(a: &Module, b: &Module) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// Every cycle of `edges`: each strongly connected set of more than one module, sorted.
fn cycles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    let mut graph = petgraph::Graph::<&Module, ()>::new();
    let index: BTreeMap<&Module, _> = edges.keys().map(|m| (m, graph.add_node(m))).collect();
    for (from, targets) in edges {
        for to in targets {
            graph.add_edge(index[from], index[to], ());
        }
    }
    let mut found: Vec<Vec<Module>> = petgraph::algo::tarjan_scc(&graph)
        .into_iter()
        .filter(|set| set.len() > 1)
        .map(|set| {
            let mut modules: Vec<Module> = set.iter().map(|&n| graph[n].clone()).collect();
            modules.sort();
            modules
        })
        .collect();
    found.sort();
    found
}

fn show(m: &Module) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

/// The import graph of one crate: module → modules it names, ancestors and descendants left out.
fn import_graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let modules = module_files(src);
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, path) in &modules {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let file = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("cannot parse {}: {e}", path.display()));
        let targets = edges.entry(module.clone()).or_default();
        for named in named_paths(module, &file) {
            if let Some(target) = resolve(&named, &modules) {
                if !nested(module, target) {
                    targets.insert(target.clone());
                }
            }
        }
    }
    edges
}

#[test]
fn no_crate_has_an_import_circle_between_its_modules() {
    let mut found = Vec::new();
    for src in CRATES {
        let graph = import_graph(&root().join(src));
        for cycle in cycles(&graph) {
            let names: Vec<String> = cycle.iter().map(show).collect();
            found.push(format!("{src}: {}", names.join(", ")));
            for from in &cycle {
                let to: Vec<String> = graph[from]
                    .iter()
                    .filter(|m| cycle.contains(m))
                    .map(show)
                    .collect();
                found.push(format!("    {} -> {}", show(from), to.join(", ")));
            }
        }
    }
    assert!(
        found.is_empty(),
        "modules that import each other in a circle (each set, then its edges):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_a_circle_and_ignores_nesting() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a; mod b; mod c; use a::X;").unwrap();
    // a names b through `crate::`, b names c in code, c names a with a `use` group.
    std::fs::write(
        src.join("a/mod.rs"),
        "mod inner; use crate::b::Y; pub struct X;",
    )
    .unwrap();
    std::fs::write(src.join("a/inner.rs"), "use super::X;").unwrap();
    std::fs::write(src.join("b.rs"), "pub struct Y; fn f() { crate::c::g(); }").unwrap();
    std::fs::write(src.join("c.rs"), "use crate::{a::{self}, b}; pub fn g() {}").unwrap();
    let graph = import_graph(src);
    let m = |s: &str| -> Module { s.split("::").map(String::from).collect() };
    assert_eq!(cycles(&graph), vec![vec![m("a"), m("b"), m("c")]]);
    // The parent and its child name each other: nesting, not a circle.
    assert!(!graph[&m("a::inner")].contains(&m("a")));
    // Without c's uses, nothing is circular.
    std::fs::write(src.join("c.rs"), "pub fn g() {}").unwrap();
    assert!(cycles(&import_graph(src)).is_empty());
}
