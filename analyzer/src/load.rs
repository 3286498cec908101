//! Loading: a crate directory or a single `.rs` file into parsed sources and an item index.
//!
//! A crate directory is read through its `Cargo.toml` (package name, `[lib] path`, `[[bin]]`
//! paths, the default `src/lib.rs` / `src/main.rs`), then every `mod x;` is followed, including
//! `#[path = ".."]` and inline `mod x { .. }` (DESIGN §3.1). Problems (unreadable or unparsable
//! files, unresolved modules) become diagnostics; loading never fails as a whole.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::sources::{FileId, Loc, SourceMap};
use crate::syntax::type_name;

/// How deep `mod` declarations are followed before giving up (guards against path cycles).
const MAX_MODULE_DEPTH: usize = 32;

/// Answers an analysis works out once, by key.
pub type Memo<K, V> = std::cell::RefCell<crate::hash::HashMap<K, V>>;

/// The fields of `self` a method reads and the fields it writes.
pub type SelfFields = (Vec<String>, Vec<String>);

/// The free-function calls of a program by callee: each caller and the variable each argument
/// passes whole, if it passes one.
pub type CallSites = crate::hash::HashMap<usize, Vec<(usize, Vec<Option<String>>)>>;

/// A function's distributed arrays and its partition sizes, by name.
pub type CallerFacts = (
    std::collections::BTreeSet<String>,
    std::collections::BTreeSet<String>,
);

/// What every caller of a function passes at each parameter position.
#[derive(Debug)]
pub struct Given {
    /// This node's block: a distributed array of the caller.
    pub blocks: Vec<bool>,
    /// A partition size of the caller (its rows).
    pub sizes: Vec<bool>,
}

impl Given {
    /// Whether some parameter is given a block or a partition size.
    pub fn any(&self) -> bool {
        self.blocks.iter().chain(&self.sizes).any(|&b| b)
    }
}

/// A loaded program: sources, the functions and struct fields found in them, and the config.
#[derive(Default)]
pub struct Program {
    /// The package name from Cargo.toml (the directory's name when it has none), or the stem of
    /// a single file's name.
    pub crate_name: String,
    /// The text of every file loaded, parsed or not.
    pub sources: SourceMap,
    /// Every free function and every method of an `impl` block, in the order loaded.
    pub functions: Vec<Function>,
    /// Struct fields `(name, type)` of every struct in the program (for communicator fields).
    pub fields: Vec<(String, syn::Type)>,
    /// The names of the program's structs (whose constructors `body::layout` reads).
    pub structs: crate::hash::HashSet<String>,
    /// The fields of `self` each method reads and writes, by function index, once asked
    /// (`body::layout::self_fields`).
    pub self_fields: Memo<usize, std::rc::Rc<SelfFields>>,
    /// What the callers of each function pass it, by function index, once asked
    /// (`body::layout::given_by_callers`).
    pub given: Memo<usize, Option<std::rc::Rc<Given>>>,
    /// Every free-function call, by callee, once asked (`body::layout`).
    pub call_sites: std::cell::RefCell<Option<std::rc::Rc<CallSites>>>,
    /// Each caller's distributed arrays and partition sizes, once asked (`body::layout`).
    pub caller_facts: Memo<usize, Option<std::rc::Rc<CallerFacts>>>,
    /// What each struct's constructor says about its fields, once asked (`body::layout`).
    pub layouts: Memo<String, Option<std::rc::Rc<crate::ir::Layout>>>,
    /// Function indices by name (filled by the analysis), for call resolution.
    pub by_name: crate::hash::HashMap<String, Vec<usize>>,
    /// The fields among `fields` whose type is a communicator (filled by the analysis).
    pub comm_fields: crate::hash::HashMap<String, crate::binding::CommValue>,
    /// The crate's `mheta.toml`; the default when there is none or a single file is loaded.
    pub config: Config,
    /// Numeric constants (`const OUTPUT_EVERY: usize = 10;`, at module level or at the top of a
    /// function body) whose value is a literal, by name; `None` for a name given different
    /// values in different places.
    pub consts: crate::hash::HashMap<String, Option<f64>>,
    /// Names brought in by `use` anywhere in the program: local name → full path
    /// (`p2p` → `mpi::point_to_point`, `send_receive_into` → `mpi::point_to_point::send_receive_into`).
    pub imports: std::rc::Rc<crate::hash::HashMap<String, String>>,
    /// Type aliases that name a closure type (`type Reporter<'a> = dyn FnMut(usize) + 'a;`), by
    /// name: a parameter of such a type is a closure.
    pub closure_aliases: crate::hash::HashSet<String>,
    /// The names each file's `use` items bring in (its inline modules' included), as
    /// `imports`: which function a call of a name imported from one of two modules means.
    pub file_imports:
        crate::hash::HashMap<crate::sources::FileId, crate::hash::HashMap<String, String>>,
}

/// A function or method with the module path it lives at.
#[derive(Clone)]
pub struct Function {
    /// The function's own name (the last segment of `path`).
    pub name: String,
    /// `module::name` or `module::Type::name`, without the crate name.
    pub path: String,
    /// The file it is written in.
    pub file: FileId,
    /// Its attributes, where `#[mheta::solver]`, `#[mheta::comm]` and the like are looked for.
    pub attrs: Vec<syn::Attribute>,
    /// Its signature; parameters whose type names a communicator are bound as communicators.
    pub sig: syn::Signature,
    /// Its body.
    pub block: syn::Block,
    /// Whether the file imports `mheta::solver` (so a bare `#[solver]` means ours).
    pub solver_imported: bool,
}

/// Loads a crate directory or a single `.rs` file.
pub fn load_path(path: &Path, diags: &mut Diagnostics) -> Program {
    let mut program = Program::default();
    if path.is_dir() {
        load_crate(path, &mut program, diags);
    } else {
        program.crate_name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let name = path.display().to_string();
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let mut loader = Loader {
                    program: &mut program,
                    diags,
                    root: dir.clone(),
                    visited: BTreeSet::new(),
                    in_root: BTreeSet::new(),
                    path_base: dir.clone(),
                    single_file: true,
                };
                loader.add_file(name, text, dir, String::new(), 0);
            }
            Err(e) => diags.push(Diagnostic::error(
                format!("cannot read `{name}`: {e}"),
                None,
            )),
        }
    }
    program
}

/// Loads one in-memory file (no `mod x;` is followed).
pub fn load_source(file_name: &str, source: &str, diags: &mut Diagnostics) -> Program {
    let mut program = Program {
        crate_name: Path::new(file_name)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        ..Program::default()
    };
    let mut loader = Loader {
        program: &mut program,
        diags,
        root: PathBuf::new(),
        visited: BTreeSet::new(),
        in_root: BTreeSet::new(),
        path_base: PathBuf::new(),
        single_file: true,
    };
    loader.add_file(
        file_name.to_string(),
        source.to_string(),
        PathBuf::new(),
        String::new(),
        MAX_MODULE_DEPTH,
    );
    program
}

fn load_crate(dir: &Path, program: &mut Program, diags: &mut Diagnostics) {
    let manifest_path = dir.join("Cargo.toml");
    let manifest = match std::fs::read_to_string(&manifest_path) {
        Ok(text) => text,
        Err(e) => {
            diags.push(Diagnostic::error(
                format!("cannot read `{}`: {e}", manifest_path.display()),
                None,
            ));
            return;
        }
    };
    let doc = match mheta_format::document::parse(&manifest) {
        Ok(doc) => doc,
        Err(problem) => {
            let (line, column) = problem.line_column(&manifest);
            diags.push(Diagnostic::error(
                format!(
                    "{}: line {line}, column {column}: {}",
                    manifest_path.display(),
                    problem.message
                ),
                None,
            ));
            return;
        }
    };
    let manifest = doc.get_ref();
    program.crate_name = manifest
        .get("package")
        .and_then(|p| p.get_ref().get("name"))
        .and_then(|n| n.get_ref().as_str())
        .map(str::to_string)
        .unwrap_or_else(|| {
            dir.file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
    program.config = crate::config::load(dir, diags);

    let mut roots: Vec<String> = Vec::new();
    let lib = manifest
        .get("lib")
        .and_then(|l| l.get_ref().get("path"))
        .and_then(|p| p.get_ref().as_str());
    roots.push(lib.unwrap_or("src/lib.rs").to_string());
    roots.push("src/main.rs".to_string());
    if let Some(bins) = manifest.get("bin").and_then(|b| b.get_ref().as_array()) {
        for bin in bins {
            if let Some(p) = bin.get_ref().get("path").and_then(|p| p.get_ref().as_str()) {
                roots.push(p.to_string());
            }
        }
    }
    // The binaries Cargo finds by itself: `src/bin/x.rs` and `src/bin/x/main.rs`, unless the
    // package turns that off (`autobins = false`).
    let autobins = manifest
        .get("package")
        .and_then(|p| p.get_ref().get("autobins"))
        .and_then(|a| a.get_ref().as_bool())
        .unwrap_or(true);
    if autobins {
        roots.extend(discovered_bins(dir));
    }
    let mut loader = Loader {
        program,
        diags,
        root: dir.to_path_buf(),
        visited: BTreeSet::new(),
        in_root: BTreeSet::new(),
        path_base: PathBuf::new(),
        single_file: false,
    };
    let mut found = false;
    for root in roots {
        let file = dir.join(&root);
        if !file.is_file() || loader.visited.contains(&file) {
            continue;
        }
        found = true;
        loader.in_root.clear();
        loader.load_file(&file, String::new(), 0, None);
    }
    if !found {
        let msg = format!(
            "`{}` has no src/lib.rs, src/main.rs or [[bin]] path to start from",
            manifest_path.display()
        );
        loader.diags.push(Diagnostic::error(msg, None));
        return;
    }
    // A solver named in mheta.toml that names no function would be ignored in silence, and the
    // heuristic would pick another loop (or none) instead.
    for entry in &program.config.solver.functions {
        let named = program
            .functions
            .iter()
            .any(|f| crate::config::names(entry, &f.path));
        if !named {
            diags.push(Diagnostic::error(
                format!(
                    "`{}`: [solver] functions names `{entry}`, but the crate has no function \
                     with that name or path",
                    dir.join("mheta.toml").display()
                ),
                None,
            ));
        }
    }
}

/// `src/bin/*.rs` and `src/bin/*/main.rs` of the crate at `dir`, relative to it, sorted.
fn discovered_bins(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir.join("src/bin")) else {
        return Vec::new();
    };
    let mut bins: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = e.path();
            if path.is_file() && name.ends_with(".rs") {
                Some(format!("src/bin/{name}"))
            } else if path.join("main.rs").is_file() {
                Some(format!("src/bin/{name}/main.rs"))
            } else {
                None
            }
        })
        .collect();
    bins.sort();
    bins
}

struct Loader<'a> {
    program: &'a mut Program,
    diags: &'a mut Diagnostics,
    root: PathBuf,
    visited: BTreeSet<PathBuf>,
    /// The files loaded from the crate root being loaded (`src/lib.rs`, `src/main.rs`, a
    /// `[[bin]]`): each root is a crate of its own, so a module file both declare (`mod grid;`
    /// in the library and in the binary) is loaded once, and only a second declaration within
    /// one root is a duplicate.
    in_root: BTreeSet<PathBuf>,
    /// The directory a `#[path = ".."]` of the items being indexed is relative to: the file's
    /// own directory for its top-level items (Rust reads it so even in `src/physics.rs`, whose
    /// plain `mod x;` lives in `src/physics/`), an inline module's directory inside it.
    path_base: PathBuf,
    /// One file analysed on its own (not through Cargo.toml): its modules may live anywhere.
    single_file: bool,
}

impl Loader<'_> {
    fn display_name(&self, file: &Path) -> String {
        file.strip_prefix(&self.root)
            .unwrap_or(file)
            .display()
            .to_string()
    }

    /// Reads and parses `file` as module `module`; `from` is the `mod` declaration that led here.
    fn load_file(&mut self, file: &Path, module: String, depth: usize, from: Option<Loc>) {
        self.visited.insert(file.to_path_buf());
        self.in_root.insert(file.to_path_buf());
        let name = self.display_name(file);
        match std::fs::read_to_string(file) {
            Ok(text) => {
                let is_mod_root = matches!(
                    file.file_name().and_then(|n| n.to_str()),
                    Some("mod.rs" | "lib.rs" | "main.rs")
                ) || depth == 0;
                let parent = file.parent().unwrap_or(Path::new("")).to_path_buf();
                let child_dir = if is_mod_root {
                    parent.clone()
                } else {
                    parent.join(file.file_stem().unwrap_or_default())
                };
                let outer = std::mem::replace(&mut self.path_base, parent);
                self.add_file(name, text, child_dir, module, depth);
                self.path_base = outer;
            }
            Err(e) => self.diags.push(Diagnostic::error(
                format!("cannot read `{name}`: {e}"),
                from,
            )),
        }
    }

    /// Parses one file's text and indexes its items; `child_dir` is where its `mod x;` files live.
    fn add_file(
        &mut self,
        name: String,
        text: String,
        child_dir: PathBuf,
        module: String,
        depth: usize,
    ) {
        let parsed = syn::parse_file(&text);
        let file = self.program.sources.add(name.clone(), text);
        match parsed {
            Ok(ast) => {
                let solver_imported = ast.items.iter().any(imports_mheta_solver);
                let dir = child_dir;
                self.index_items(ast.items, file, &module, &dir, depth, solver_imported);
            }
            Err(e) => {
                let loc = Loc::of(file, e.span());
                // The lexer's own message says nothing about the cause; name the usual one.
                let what = match e.to_string().as_str() {
                    "cannot parse string into token stream" => {
                        "unbalanced delimiters or an invalid token".to_string()
                    }
                    other => other.to_string(),
                };
                self.diags.push(
                    Diagnostic::error(format!("cannot parse `{name}`: {what}"), Some(loc))
                        .with_label(what),
                );
            }
        }
    }

    /// Indexes a module's items, moving their functions' syntax into the program.
    /// Records `c` among the program's constants when its value is a numeric literal.
    fn constant(&mut self, c: &syn::ItemConst) {
        let Some(value) = crate::syntax::number(&c.expr) else {
            return;
        };
        self.program
            .consts
            .entry(c.ident.to_string())
            .and_modify(|v| {
                if *v != Some(value) {
                    *v = None;
                }
            })
            .or_insert(Some(value));
    }

    /// Records the constants at the top of a function body (`const STEPS: usize = 100;`).
    fn body_constants(&mut self, block: &syn::Block) {
        for stmt in &block.stmts {
            if let syn::Stmt::Item(syn::Item::Const(c)) = stmt {
                self.constant(c);
            }
        }
    }

    fn index_items(
        &mut self,
        items: Vec<syn::Item>,
        file: FileId,
        module: &str,
        dir: &Path,
        depth: usize,
        imported: bool,
    ) {
        for item in items {
            // Unit tests (`#[test]`, a `#[cfg(test)]` module) are not the program that runs.
            if is_test_item(&item) {
                continue;
            }
            match item {
                syn::Item::Const(c) => self.constant(&c),
                syn::Item::Fn(f) => {
                    self.body_constants(&f.block);
                    self.program.functions.push(Function {
                        name: f.sig.ident.to_string(),
                        path: join(module, &f.sig.ident.to_string()),
                        file,
                        attrs: f.attrs,
                        sig: f.sig,
                        block: *f.block,
                        solver_imported: imported,
                    })
                }
                syn::Item::Impl(imp) => {
                    let ty = type_name(&imp.self_ty);
                    for it in imp.items {
                        if let syn::ImplItem::Fn(f) = it {
                            self.body_constants(&f.block);
                            self.program.functions.push(Function {
                                name: f.sig.ident.to_string(),
                                path: join(&join(module, &ty), &f.sig.ident.to_string()),
                                file,
                                attrs: f.attrs,
                                sig: f.sig,
                                block: f.block,
                                solver_imported: imported,
                            });
                        }
                    }
                }
                syn::Item::Type(t)
                    if crate::syntax::is_closure_type(
                        &t.ty,
                        &t.generics,
                        &self.program.closure_aliases,
                    ) =>
                {
                    self.program.closure_aliases.insert(t.ident.to_string());
                }
                syn::Item::Struct(s) => {
                    self.program.structs.insert(s.ident.to_string());
                    for field in s.fields {
                        if let Some(id) = &field.ident {
                            self.program.fields.push((id.to_string(), field.ty));
                        }
                    }
                }
                syn::Item::Mod(m) => self.module(m, file, module, dir, depth, imported),
                syn::Item::Use(u) => {
                    use_names(
                        &u.tree,
                        &mut Vec::new(),
                        std::rc::Rc::make_mut(&mut self.program.imports),
                    );
                    use_names(
                        &u.tree,
                        &mut Vec::new(),
                        self.program.file_imports.entry(file).or_default(),
                    );
                }
                _ => {}
            }
        }
    }

    fn module(
        &mut self,
        m: syn::ItemMod,
        file: FileId,
        module: &str,
        dir: &Path,
        depth: usize,
        imported: bool,
    ) {
        let name = m.ident.to_string();
        let path = join(module, &name);
        let explicit = path_attr(&m.attrs);
        if let Some((_, items)) = m.content {
            let child_dir = match &explicit {
                Some(p) => self.path_base.join(p),
                None => dir.join(&name),
            };
            let outer = std::mem::replace(&mut self.path_base, child_dir.clone());
            self.index_items(items, file, &path, &child_dir, depth, imported);
            self.path_base = outer;
            return;
        }
        if is_cfg_test(&m.attrs) {
            return;
        }
        let loc = Loc::of(file, m.ident.span());
        if depth >= MAX_MODULE_DEPTH {
            if self.root.as_os_str().is_empty() && depth == MAX_MODULE_DEPTH {
                // In-memory sources have no directory to resolve `mod x;` against.
                let msg = format!(
                    "module `{name}` is declared but its file is not part of the analysed source"
                );
                self.diags
                    .push(Diagnostic::warning(msg, Some(loc)).with_label("not loaded"));
            } else {
                self.diags.push(Diagnostic::error(
                    format!("module `{name}` nests too deeply"),
                    Some(loc),
                ));
            }
            return;
        }
        let candidates = match &explicit {
            Some(p) => vec![self.path_base.join(p)],
            None => vec![
                dir.join(format!("{name}.rs")),
                dir.join(&name).join("mod.rs"),
            ],
        };
        match candidates.iter().find(|c| c.is_file()) {
            // Declared by another crate root too: its items are loaded already.
            Some(found) if self.visited.contains(found) && !self.in_root.contains(found) => {}
            Some(found) if self.visited.contains(found) => {
                let msg = format!(
                    "module `{name}` resolves to `{}`, which is already loaded",
                    self.display_name(found)
                );
                self.diags.push(Diagnostic::warning(msg, Some(loc)));
            }
            Some(found) => {
                let found = found.clone();
                self.load_file(&found, path, depth + 1, Some(loc));
            }
            None => {
                let tried: Vec<String> = candidates.iter().map(|c| self.display_name(c)).collect();
                let msg = format!("unresolved module `{name}`");
                // A file analysed on its own is often one file of a crate: its modules'
                // functions are then unknown calls, and the analysis goes on.
                let diag = if self.single_file {
                    Diagnostic::warning(msg, Some(loc))
                } else {
                    Diagnostic::error(msg, Some(loc))
                };
                let diag = diag
                    .with_label("no file for this module")
                    .with_note(format!("looked for {}", tried.join(" and ")));
                self.diags.push(diag);
            }
        }
    }
}

/// Records the names a `use` tree brings in, with the paths they stand for.
fn use_names(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut crate::hash::HashMap<String, String>,
) {
    let full = |prefix: &[String], last: &syn::Ident| {
        let mut p = prefix.to_vec();
        if last != "self" {
            p.push(last.to_string());
        }
        p.join("::")
    };
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_names(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let local = if n.ident == "self" {
                prefix.last().cloned().unwrap_or_default()
            } else {
                n.ident.to_string()
            };
            out.insert(local, full(prefix, &n.ident));
        }
        syn::UseTree::Rename(r) => {
            out.insert(r.rename.to_string(), full(prefix, &r.ident));
        }
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| use_names(t, prefix, out)),
        syn::UseTree::Glob(_) => {}
    }
}

/// Whether an item is compiled for tests only: a `#[test]` function or a `#[cfg(test)]` item.
fn is_test_item(item: &syn::Item) -> bool {
    let attrs = match item {
        syn::Item::Fn(f) => &f.attrs,
        syn::Item::Mod(m) => &m.attrs,
        syn::Item::Impl(i) => &i.attrs,
        _ => return false,
    };
    attrs.iter().any(|a| {
        a.path().is_ident("test")
            || (a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test"))
    })
}

fn join(module: &str, name: &str) -> String {
    if module.is_empty() {
        name.to_string()
    } else {
        format!("{module}::{name}")
    }
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs
        .iter()
        .find(|a| a.path().is_ident("path"))
        .and_then(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .map(|l| l.tokens.to_string().contains("test"))
                .unwrap_or(false)
    })
}

/// Whether a `use` item brings `mheta::solver` (or `mheta::*`) into scope.
fn imports_mheta_solver(item: &syn::Item) -> bool {
    fn walk(tree: &syn::UseTree, under_mheta: bool) -> bool {
        match tree {
            syn::UseTree::Path(p) => walk(&p.tree, under_mheta || p.ident == "mheta"),
            syn::UseTree::Name(n) => under_mheta && n.ident == "solver",
            syn::UseTree::Rename(r) => under_mheta && r.ident == "solver",
            syn::UseTree::Glob(_) => under_mheta,
            syn::UseTree::Group(g) => g.items.iter().any(|t| walk(t, under_mheta)),
        }
    }
    matches!(item, syn::Item::Use(u) if walk(&u.tree, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Numeric constants at module level and at the top of function and method bodies; a name
    /// given two values is no constant; a non-literal one is left out.
    #[test]
    fn numeric_constants_by_name() {
        let src = "const EVERY: usize = 10;\nconst TWICE: u32 = 1;\nconst NAME: &str = \"x\";\n\
                   fn f() { const STEP: f64 = 0.5; const TWICE: u32 = 2; }\n\
                   struct S;\nimpl S { fn g(&self) { const WSTEP: f64 = 400.0; } }\n";
        let mut diags = Diagnostics::default();
        let p = load_source("x.rs", src, &mut diags);
        let mut consts: Vec<(&str, Option<f64>)> =
            p.consts.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        consts.sort_by(|a, b| a.0.cmp(b.0));
        assert_eq!(
            consts,
            [
                ("EVERY", Some(10.0)),
                ("STEP", Some(0.5)),
                ("TWICE", None),
                ("WSTEP", Some(400.0))
            ]
        );
    }

    #[test]
    fn indexes_functions_methods_and_inline_modules() {
        let src =
            "fn a() {} struct S { comm: u8 } impl S { fn m(&self) {} } mod inner { fn b() {} }";
        let mut diags = Diagnostics::default();
        let p = load_source("x.rs", src, &mut diags);
        let paths: Vec<&str> = p.functions.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["a", "S::m", "inner::b"]);
        assert_eq!(p.fields.len(), 1);
        assert!(diags.0.is_empty());
    }

    #[test]
    fn syntax_error_is_a_diagnostic_with_location() {
        let mut diags = Diagnostics::default();
        let p = load_source("bad.rs", "fn main() {\n    let x = ;\n}\n", &mut diags);
        assert!(diags.has_errors());
        let span = p.sources.span(diags.0[0].loc.unwrap());
        assert_eq!((span.file.as_str(), span.line), ("bad.rs", 2));
    }

    #[test]
    fn bare_solver_attribute_needs_the_import() {
        let mut diags = Diagnostics::default();
        let p = load_source(
            "x.rs",
            "use mheta::{solver, Context};\nfn f() {}",
            &mut diags,
        );
        assert!(p.functions[0].solver_imported);
        let p = load_source("x.rs", "use other::solver;\nfn f() {}", &mut diags);
        assert!(!p.functions[0].solver_imported);
    }

    #[test]
    fn snippet_collapses_whitespace() {
        let mut map = SourceMap::default();
        let f = map.add("a.rs".into(), "let x =\n    rank  - 1;".into());
        let loc = Loc {
            file: f,
            start: (1, 8),
            end: (2, 13),
            via: 0,
        };
        assert_eq!(map.snippet(loc).as_deref(), Some("rank - 1"));
    }
}
