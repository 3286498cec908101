//! What a struct's constructor says about its fields: which hold this node's block of rows and
//! which count them. A solver written around a struct (`let mut g = Grid::new(n, rank, size)`,
//! or a method `fn run(&mut self)` of the struct) keeps its distributed arrays in fields, which
//! no `let` of the solver declares; the constructor does, as the solver would:
//!
//! ```text
//! fn new(global: usize, rank: usize, size: usize) -> Grid {
//!     let rows = global / size;             // a partition size
//!     let u = vec![0.0; (rows + 2) * cols]; // an array sized by it: distributed
//!     Grid { rows, next: u.clone(), u }
//! }
//! ```
//!
//! The constructor is built like any body (its own facts, no callee expanded) and each field of
//! the struct literal it returns takes what its `let` was: `rows` a partition size, `u` and
//! `next` distributed arrays of `f64`.

use std::collections::BTreeSet;
use std::rc::Rc;

use syn::visit::Visit;

use crate::load::Program;

pub use crate::ir::Layout;

/// The layout of struct `ty` (its name), from the first function of its `impl` that returns a
/// struct literal of it; `None` when no such function sizes any field by the partition. Memoised
/// in the program; a struct whose constructor builds the struct again is read once.
pub fn of(program: &Program, ty: &str) -> Option<Rc<Layout>> {
    if !program.structs.contains(ty) {
        return None;
    }
    memoised(&program.layouts, ty.to_string(), || read(program, ty))
}

/// The element type of the first array struct `ty` holds this node's block in (`Some(None)`
/// when its type is not shown), if its constructor sizes one by the partition.
pub fn block_elem(program: &Program, ty: &str) -> Option<Option<String>> {
    let layout = of(program, ty)?;
    let (_, elem) = layout.distributed.first()?;
    Some(elem.clone())
}

/// The answer for `key` in `memo`, worked out by `read` the first time. While `read` runs the
/// key reads as `None`, so a question that comes back to itself (a constructor building its own
/// struct, a call cycle) gets no answer instead of recursing.
fn memoised<K: std::hash::Hash + Eq + Clone, V>(
    memo: &crate::load::Memo<K, Option<Rc<V>>>,
    key: K,
    read: impl FnOnce() -> Option<V>,
) -> Option<Rc<V>> {
    if let Some(known) = memo.borrow().get(&key) {
        return known.clone();
    }
    memo.borrow_mut().insert(key.clone(), None);
    let answer = read().map(Rc::new);
    memo.borrow_mut().insert(key, answer.clone());
    answer
}

fn read(program: &Program, ty: &str) -> Option<Layout> {
    let (index, literal) = program.functions.iter().enumerate().find_map(|(i, f)| {
        (super::inline::impl_type(&f.path) == Some(ty))
            .then(|| struct_literal(&f.block, ty))
            .flatten()
            .map(|l| (i, l))
    })?;
    let mut facts = super::Facts::default();
    let mut b = super::Builder::of_function(program, index, &|_| false, &mut facts);
    let _ = b.block(&program.functions[index].block);
    let mut layout = Layout::default();
    for field in &literal.fields {
        let syn::Member::Named(member) = &field.member else {
            continue;
        };
        let member = member.to_string();
        match whole_var(&field.expr) {
            // `Grid { rows, next: u.clone(), u }`: what the local is.
            Some(local) => {
                if let Some(v) = b.facts.variables.iter().find(|v| v.name == local) {
                    if v.distributed {
                        layout.distributed.push((member, v.elem_type.clone()));
                    }
                } else if b.facts.dist_sizes.contains(&local) {
                    layout.sizes.push(member);
                }
            }
            // `Heat { u: vec![0.0; n + 2], .. }`: an array made in place.
            None => {
                if let Some(elem) = b.array_made(&field.expr) {
                    if b.array_is_distributed(&field.expr) {
                        layout.distributed.push((member, elem));
                    }
                }
            }
        }
    }
    (!layout.distributed.is_empty() || !layout.sizes.is_empty()).then_some(layout)
}

/// The first struct literal of `ty` (or `Self`) in a body.
fn struct_literal<'a>(block: &'a syn::Block, ty: &str) -> Option<&'a syn::ExprStruct> {
    struct Find<'t, 'ast> {
        ty: &'t str,
        found: Option<&'ast syn::ExprStruct>,
    }
    impl<'ast> Visit<'ast> for Find<'_, 'ast> {
        fn visit_expr_struct(&mut self, s: &'ast syn::ExprStruct) {
            if self.found.is_none()
                && s.path
                    .segments
                    .last()
                    .is_some_and(|seg| seg.ident == self.ty || seg.ident == "Self")
            {
                self.found = Some(s);
            }
            syn::visit::visit_expr_struct(self, s);
        }
    }
    let mut find = Find { ty, found: None };
    find.visit_block(block);
    find.found
}

/// The fields of `self` a method reads and writes, through the methods of `self` it calls in
/// turn (each read once): `(reads, writes)`, in the order first seen. A write is a field
/// assigned (`self.u[i] = ..`, `self.t += ..`), borrowed mutably (`&mut self.u`) or called a
/// mutating method on (`self.next[1..].iter_mut()`, `self.u.fill(0.0)`).
pub fn self_fields(program: &Program, method: usize) -> Rc<crate::load::SelfFields> {
    if let Some(known) = program.self_fields.borrow().get(&method) {
        return known.clone();
    }
    let fields = Rc::new(read_self_fields(program, method));
    program
        .self_fields
        .borrow_mut()
        .insert(method, fields.clone());
    fields
}

fn read_self_fields(program: &Program, method: usize) -> crate::load::SelfFields {
    let mut seen = BTreeSet::from([method]);
    let mut queue = vec![method];
    let mut v = SelfFields::default();
    while let Some(i) = queue.pop() {
        let Some(f) = program.functions.get(i) else {
            continue;
        };
        v.calls.clear();
        v.visit_block(&f.block);
        let ty = super::inline::impl_type(&f.path);
        for name in std::mem::take(&mut v.calls) {
            for &g in program.by_name.get(&name).into_iter().flatten() {
                let same_type = super::inline::impl_type(&program.functions[g].path) == ty;
                if same_type && program.functions[g].sig.receiver().is_some() && seen.insert(g) {
                    queue.push(g);
                }
            }
        }
    }
    (v.reads, v.writes)
}

#[derive(Default)]
struct SelfFields {
    reads: Vec<String>,
    writes: Vec<String>,
    /// Methods called on `self`, to read next.
    calls: Vec<String>,
}

impl SelfFields {
    fn write(&mut self, place: &syn::Expr) {
        if let Some(field) = self_field(place) {
            if !self.writes.contains(&field) {
                self.writes.push(field);
            }
        }
    }
}

/// The field of `self` a field access is in (`self.grid.u`: `grid`).
fn field_of_self(f: &syn::ExprField) -> Option<String> {
    match (&*f.base, &f.member) {
        (syn::Expr::Path(p), syn::Member::Named(m)) if p.path.is_ident("self") => {
            Some(m.to_string())
        }
        _ => self_field(&f.base),
    }
}

/// The field of `self` a place is in (`self.u[i]`, `self.u[a..b]`, `(self.u)`): `u`.
fn self_field(place: &syn::Expr) -> Option<String> {
    match place {
        syn::Expr::Field(f) => field_of_self(f),
        syn::Expr::Index(i) => self_field(&i.expr),
        syn::Expr::Paren(p) => self_field(&p.expr),
        syn::Expr::Unary(u) => self_field(&u.expr),
        syn::Expr::MethodCall(m) => self_field(&m.receiver),
        _ => None,
    }
}

impl<'ast> Visit<'ast> for SelfFields {
    fn visit_expr_field(&mut self, f: &'ast syn::ExprField) {
        if let Some(field) = field_of_self(f) {
            if !self.reads.contains(&field) {
                self.reads.push(field);
            }
        }
        syn::visit::visit_expr_field(self, f);
    }
    fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
        self.write(&a.left);
        syn::visit::visit_expr_assign(self, a);
    }
    fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
        if crate::glue::is_compound(&b.op) {
            self.write(&b.left);
        }
        syn::visit::visit_expr_binary(self, b);
    }
    fn visit_expr_reference(&mut self, r: &'ast syn::ExprReference) {
        if r.mutability.is_some() {
            self.write(&r.expr);
        }
        syn::visit::visit_expr_reference(self, r);
    }
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        let name = m.method.to_string();
        if crate::scan::mutates(&name) {
            self.write(&m.receiver);
        }
        if matches!(&*m.receiver, syn::Expr::Path(p) if p.path.is_ident("self")) {
            self.calls.push(name);
        }
        syn::visit::visit_expr_method_call(self, m);
    }
}

/// What the callers of function `callee` pass it: for each parameter position, whether every
/// call passes this node's block (a distributed array of the caller) or a partition size of the
/// caller (`solve(&world, &b, rows)` with `b = vec![1.0; rows]`, `rows = n / size`). `None` when
/// nothing calls it by a free-function call. Each caller is built like any body, once per
/// analysis; a caller being built when asked (a call cycle) passes nothing.
pub fn given_by_callers(program: &Program, callee: usize) -> Option<Rc<crate::load::Given>> {
    memoised(&program.given, callee, || read_given(program, callee))
}

fn read_given(program: &Program, callee: usize) -> Option<crate::load::Given> {
    let sig = &program.functions.get(callee)?.sig;
    // A method's receiver is no argument of its calls; a function without parameters (`main`)
    // is given nothing, and needs no look at the program's calls.
    if sig.receiver().is_some() || sig.inputs.is_empty() {
        return None;
    }
    let arity = sig.inputs.len();
    let sites = call_sites(program);
    let sites = sites.get(&callee)?;
    let mut given = crate::load::Given {
        blocks: vec![true; arity],
        sizes: vec![true; arity],
    };
    for (caller, args) in sites {
        let facts = caller_facts(program, *caller);
        for k in 0..arity {
            let var = args.get(k).cloned().flatten();
            let passed = |set: &BTreeSet<String>| var.as_ref().is_some_and(|v| set.contains(v));
            let (blocks, sizes) = match &facts {
                Some(f) => (passed(&f.0), passed(&f.1)),
                None => (false, false),
            };
            given.blocks[k] &= blocks;
            given.sizes[k] &= sizes;
        }
    }
    Some(given)
}

/// Every free-function call of the program's functions, by callee: the caller and the
/// variable each argument passes whole. Read once per analysis.
fn call_sites(program: &Program) -> Rc<crate::load::CallSites> {
    if let Some(known) = program.call_sites.borrow().as_ref() {
        return known.clone();
    }
    struct Sites<'p> {
        program: &'p Program,
        here: usize,
        out: crate::load::CallSites,
    }
    impl<'a> Visit<'a> for Sites<'_> {
        fn visit_expr_call(&mut self, c: &'a syn::ExprCall) {
            if let Some(callee) = super::inline::resolve_call(self.program, self.here, c) {
                let args = c.args.iter().map(whole_var).collect();
                self.out.entry(callee).or_default().push((self.here, args));
            }
            syn::visit::visit_expr_call(self, c);
        }
    }
    let mut sites = Sites {
        program,
        here: 0,
        out: Default::default(),
    };
    for (g, f) in program.functions.iter().enumerate() {
        sites.here = g;
        sites.visit_block(&f.block);
    }
    let sites = Rc::new(sites.out);
    *program.call_sites.borrow_mut() = Some(sites.clone());
    sites
}

/// A caller's distributed arrays and partition sizes, from its body built like any (once per
/// analysis; `None` while it is being built).
fn caller_facts(program: &Program, caller: usize) -> Option<Rc<crate::load::CallerFacts>> {
    memoised(&program.caller_facts, caller, || {
        let mut facts = super::Facts::default();
        let mut b = super::Builder::of_function(program, caller, &|_| false, &mut facts);
        let _ = b.block(&program.functions[caller].block);
        let distributed = facts
            .variables
            .iter()
            .filter(|v| v.distributed)
            .map(|v| v.name.clone())
            .collect();
        Some((distributed, facts.dist_sizes.iter().cloned().collect()))
    })
}

/// The variable an expression stands for whole, as a struct field's value or a call's argument:
/// `u`, `&u`, `&mut u`, `&u[..]`, `u.as_slice()`, or a copy, `u.clone()`, `u.to_vec()`.
fn whole_var(e: &syn::Expr) -> Option<String> {
    match e {
        syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        syn::Expr::Reference(r) => whole_var(&r.expr),
        syn::Expr::Paren(p) => whole_var(&p.expr),
        syn::Expr::Index(i) if matches!(&*i.index, syn::Expr::Range(r) if r.start.is_none() && r.end.is_none()) => {
            whole_var(&i.expr)
        }
        syn::Expr::MethodCall(m)
            if m.args.is_empty()
                && matches!(
                    m.method.to_string().as_str(),
                    "as_slice"
                        | "as_mut_slice"
                        | "as_mut"
                        | "as_ref"
                        | "clone"
                        | "to_vec"
                        | "to_owned"
                ) =>
        {
            whole_var(&m.receiver)
        }
        _ => None,
    }
}
