//! Classification per stage (DESIGN §3.7; seeds 000 §5.2.1, 001 §2.2).
//!
//! From the tokens a stage recorded: its span, loop nest depth, reads and writes, I/O
//! operations, the affine index coefficients of its array accesses in the loop variables, the
//! representative variable (distributed first, then written, then deepest loop nest),
//! `access = stencil | independent` (neighbouring-row accesses in the distributed dimension) and
//! `load = fixed | variable` (an inner loop bound depends on an outer loop variable).

use std::collections::{BTreeMap, BTreeSet};

use mheta_format::{Access, AffineAccess, AffineIndex, IoOp, Load, Stage, VarClass};

use crate::automaton::StageOut;
use crate::body::Facts;
use crate::diagnostics::Loc;
use crate::ir::{IndexAccess, LoopKind};
use crate::lower::{Lowered, Token};
use crate::sources::SourceMap;

/// The class of every variable the solver declares, after mheta.toml overrides. A slice or
/// vector parameter is distributed when the main loop writes it and walks it by a loop bounded by
/// this node's partition (`for i in 1..=rows { u[i * n + j] .. }` with `rows = counts[rank]`):
/// its caller allocated the local block.
pub fn variable_classes(
    facts: &Facts,
    config: &crate::config::Config,
    lowered: &Lowered,
) -> BTreeMap<String, VarClass> {
    let walked = walked_by_partition(facts, lowered);
    let mut out = BTreeMap::new();
    for v in &facts.variables {
        let forced_dist = config.variables.distributed.contains(&v.name);
        let forced_repl = config.variables.replicated.contains(&v.name);
        let class = if forced_repl {
            VarClass::Replicated
        } else if v.distributed || forced_dist || (v.param && walked.contains(&v.name)) {
            VarClass::Distributed
        } else {
            VarClass::Replicated
        };
        out.insert(v.name.clone(), class);
    }
    out
}

/// Arrays the main loop writes and indexes by the variable of a loop whose bounds read a
/// partition size. (A read-only array indexed so is the whole input read at global positions:
/// `sequence[rows.start + i - 1]`.)
fn walked_by_partition(facts: &Facts, lowered: &Lowered) -> BTreeSet<String> {
    let written: BTreeSet<&String> = lowered.stmts.iter().flat_map(|s| &s.writes).collect();
    let mut out = BTreeSet::new();
    // The variables of the open loops bounded by the partition.
    let mut open: Vec<(usize, Vec<String>)> = Vec::new();
    let mut defs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for &t in &lowered.tokens {
        match t {
            Token::LoopStart(i) => {
                if let Some(l) = lowered.loops.get(i) {
                    if l.bound_reads.iter().any(|r| facts.dist_sizes.contains(r)) {
                        open.push((i, l.vars.clone()));
                    }
                }
            }
            Token::LoopEnd(i) if open.last().is_some_and(|(o, _)| *o == i) => {
                open.pop();
            }
            Token::Stmt(i) if !open.is_empty() => {
                let Some(s) = lowered.stmts.get(i) else {
                    continue;
                };
                // Index aliases (`let c = i * n + j; u[c - n]`) stand for their definitions.
                for (name, def) in &s.defs {
                    defs.insert(name.clone(), crate::syntax::expr_idents(def));
                }
                let walks = |w: &String| open.iter().any(|(_, vars)| vars.contains(w));
                for a in &s.accesses {
                    let by_loop = a.dims.first().is_some_and(|d| {
                        crate::syntax::expr_idents(d)
                            .iter()
                            .any(|w| walks(w) || defs.get(w).is_some_and(|ws| ws.iter().any(walks)))
                    });
                    if by_loop && written.contains(&a.var) {
                        out.insert(a.var.clone());
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Builds the structure-file stage for `stage` (its `id` within its container).
pub fn stage(
    id: u32,
    stage: &StageOut,
    lowered: &Lowered,
    classes: &BTreeMap<String, VarClass>,
    sources: &SourceMap,
) -> Stage {
    // Where the stage's code is written, token by token (see `parts`).
    let mut loc: Vec<Loc> = Vec::new();
    // Where the same stage runs in the other arm of an alternating branch.
    let mut alt: Option<Loc> = None;
    let mut depth = 0u32;
    let mut max_depth = 0u32;
    let mut open: Vec<usize> = Vec::new();
    let mut tainted: BTreeSet<String> = BTreeSet::new();
    let mut variable_load = false;
    let mut loop_vars: BTreeSet<String> = BTreeSet::new();
    let mut locals: BTreeSet<String> = BTreeSet::new();
    let mut reads: Vec<String> = Vec::new();
    let mut writes: Vec<String> = Vec::new();
    let mut accesses: Vec<(&IndexAccess, u32)> = Vec::new();
    let mut io = Vec::new();
    let mut var_depth: BTreeMap<String, u32> = BTreeMap::new();
    let mut defs: BTreeMap<&str, &syn::Expr> = BTreeMap::new();
    // Arrays an iterator chain writes whose closure names its element after the array
    // (`Zip::from(v.slice_mut(..)).for_each(|v, ..| *v = ..)`, `v.iter_mut().for_each(|v| ..)`):
    // the loop variable shadows the array, whose write stays.
    let mut shadowed_writes: Vec<String> = Vec::new();

    for &t in &stage.tokens {
        match t {
            Token::LoopStart(i) => {
                let Some(l) = lowered.loops.get(i) else {
                    continue;
                };
                loc.push(l.loc);
                widen(&mut alt, l.alt);
                if l.bound_reads.iter().any(|r| tainted.contains(r)) && !open.is_empty() {
                    variable_load = true;
                }
                extend(&mut reads, &l.header.reads);
                extend(&mut writes, &l.header.writes);
                if l.kind == LoopKind::Iterator {
                    for w in &l.header.writes {
                        let shadowed = l.vars.contains(w)
                            && classes.contains_key(w.as_str())
                            && !loop_vars.contains(w.as_str());
                        if shadowed && !shadowed_writes.contains(w) {
                            shadowed_writes.push(w.clone());
                        }
                    }
                }
                depth += 1;
                max_depth = max_depth.max(depth);
                open.push(i);
                loop_vars.extend(l.vars.iter().cloned());
                tainted.extend(l.vars.iter().cloned());
            }
            Token::LoopEnd(_) => {
                depth = depth.saturating_sub(1);
                open.pop();
            }
            Token::Stmt(i) => {
                let Some(s) = lowered.stmts.get(i) else {
                    continue;
                };
                if let Some(l) = s.loc {
                    loc.push(l);
                }
                widen(&mut alt, s.alt);
                if depth > 0 {
                    locals.extend(s.declares.iter().cloned());
                    if s.reads.iter().any(|r| tainted.contains(r)) {
                        tainted.extend(s.writes.iter().cloned());
                    }
                }
                extend(&mut reads, &s.reads);
                extend(&mut writes, &s.writes);
                if depth > 0 {
                    // Per-iteration aliases only: `let c = i * cols + j;` inside the loop nest.
                    defs.extend(
                        s.defs
                            .iter()
                            .filter(|(n, _)| !loop_vars.contains(n))
                            .map(|(n, e)| (n.as_str(), e)),
                    );
                }
                for a in &s.accesses {
                    accesses.push((a, depth));
                }
                for v in s.reads.iter().chain(&s.writes) {
                    match var_depth.get_mut(v) {
                        Some(d) => *d = (*d).max(depth),
                        None => {
                            var_depth.insert(v.clone(), depth);
                        }
                    }
                }
            }
            Token::Io(i) => {
                let Some(op) = lowered.io.get(i) else {
                    continue;
                };
                loc.push(op.loc);
                io.push(IoOp {
                    op: op.op,
                    var: op.var.clone(),
                    span: sources.span(op.loc),
                });
            }
            Token::Comm(i) => {
                if let Some(e) = lowered.events.get(i) {
                    loc.push(e.draft.loc);
                }
            }
            Token::IterEnd => {}
        }
    }
    // A capitalised name is a constant (`N`, `CELLS`) unless it is one of the program's
    // variables (`let A = ..`, the matrix of a solver written after the maths).
    let keep = |v: &String| {
        !loop_vars.contains(v)
            && !locals.contains(v)
            && (!v.starts_with(char::is_uppercase) || classes.contains_key(v))
            && v != "self"
    };
    reads.retain(keep);
    writes.retain(keep);
    extend(&mut writes, &shadowed_writes);

    let loop_var_list: Vec<String> = loop_vars.iter().cloned().collect();
    let outermost: Option<&String> = stage.tokens.iter().find_map(|t| match t {
        Token::LoopStart(i) => lowered.loops.get(*i).and_then(|l| l.vars.first()),
        _ => None,
    });
    let mut affine: Vec<AffineAccess> = Vec::new();
    for (a, _) in &accesses {
        let dims: Option<Vec<AffineIndex>> = a
            .dims
            .iter()
            .map(|d| affine_index_with(d, &loop_var_list, &defs))
            .collect();
        if let Some(dims) = dims {
            let entry = AffineAccess {
                var: a.var.clone(),
                dims,
                write: a.write,
            };
            if !affine.contains(&entry) {
                affine.push(entry);
            }
        }
    }
    let any_distributed = affine
        .iter()
        .any(|a| classes.get(&a.var) == Some(&mheta_format::VarClass::Distributed));
    let stencil = affine.iter().enumerate().any(|(i, a)| {
        let eligible = !any_distributed || classes.get(&a.var) == Some(&VarClass::Distributed);
        eligible
            && affine[i + 1..]
                .iter()
                .any(|b| b.var == a.var && neighbouring_rows(a, b, outermost))
    });

    let parts = parts(&loc, sources);
    let io_vars: Vec<String> = io.iter().map(|o| o.var.clone()).collect();
    let representative = representative(&reads, &writes, &io_vars, classes, &var_depth);
    Stage {
        id,
        kind: stage.kind,
        span: parts.first().map(|l| sources.span(*l)).unwrap_or_default(),
        loop_depth: max_depth,
        reads,
        writes,
        representative,
        io,
        access: if stencil {
            Access::Stencil
        } else {
            Access::Independent
        },
        load: if variable_load {
            Load::Variable
        } else {
            Load::Fixed
        },
        affine,
        alternates: alt
            .into_iter()
            .chain(parts.iter().skip(1).copied())
            .map(|l| sources.span(l))
            .collect(),
    }
}

fn extend(into: &mut Vec<String>, from: &[String]) {
    for v in from {
        if !into.contains(v) {
            into.push(v.clone());
        }
    }
}

/// Distributed first, then the target of the stage's I/O (an out-of-core array), then written,
/// then the one used in the deepest loop nest.
fn representative(
    reads: &[String],
    writes: &[String],
    io: &[String],
    classes: &BTreeMap<String, VarClass>,
    depth: &BTreeMap<String, u32>,
) -> Option<String> {
    let all: Vec<&String> = writes
        .iter()
        .chain(reads.iter().filter(|r| !writes.contains(r)))
        .collect();
    let known: Vec<&String> = all
        .iter()
        .copied()
        .filter(|v| classes.contains_key(*v))
        .collect();
    let pool = if known.is_empty() { all.clone() } else { known };
    let score = |v: &String| {
        let dist = classes.get(v) == Some(&VarClass::Distributed);
        let written = writes.contains(v);
        (
            dist,
            io.contains(v),
            written,
            depth.get(v).copied().unwrap_or(0),
        )
    };
    let mut best: Option<&String> = None;
    for v in pool {
        if best.map_or(true, |b| score(v) > score(b)) {
            best = Some(v);
        }
    }
    best.cloned()
}

/// Two accesses of one array whose loop-variable coefficients agree and whose offsets differ in
/// the distributed (first, row) dimension.
fn neighbouring_rows(a: &AffineAccess, b: &AffineAccess, outermost: Option<&String>) -> bool {
    if a.dims.len() != b.dims.len() || a.dims.is_empty() {
        return false;
    }
    let (x, y) = (&a.dims[0], &b.dims[0]);
    if x.coefficients != y.coefficients || x.coefficients.is_empty() {
        return false;
    }
    if a.dims.len() > 1 {
        return x.constant != y.constant || x.symbols != y.symbols;
    }
    if x.symbols != y.symbols {
        // A flattened `i * cols + j`: the row stride is symbolic.
        return true;
    }
    // A one-dimensional array indexed by the outermost loop variable.
    let plain_outer = outermost.is_some_and(|o| x.coefficients.iter().any(|(k, _)| k == o));
    plain_outer && x.constant != y.constant
}

/// A polynomial: monomial (sorted names) → integer coefficient.
pub(crate) type Poly = BTreeMap<Vec<String>, i64>;

/// The affine form of an index expression in `loop_vars`, if it is affine.
pub fn affine_index(e: &syn::Expr, loop_vars: &[String]) -> Option<AffineIndex> {
    affine_index_with(e, loop_vars, &BTreeMap::new())
}

/// [`affine_index`], seeing through local aliases (`let c = i * cols + j;` then `a[c - cols]`).
pub fn affine_index_with(
    e: &syn::Expr,
    loop_vars: &[String],
    defs: &BTreeMap<&str, &syn::Expr>,
) -> Option<AffineIndex> {
    let poly = poly_with(e, defs, 0)?;
    let mut coefficients = Vec::new();
    let mut symbols = Vec::new();
    let mut constant = 0;
    for (mono, c) in poly {
        if c == 0 {
            continue;
        }
        let vars: Vec<&String> = mono.iter().filter(|m| loop_vars.contains(m)).collect();
        match vars.len() {
            0 if mono.is_empty() => constant = c,
            0 => symbols.push((mono.join("*"), c)),
            1 => {
                let mut key = vec![vars[0].clone()];
                key.extend(mono.iter().filter(|m| !loop_vars.contains(m)).cloned());
                coefficients.push((key.join("*"), c));
            }
            _ => return None,
        }
    }
    Some(AffineIndex {
        coefficients,
        constant,
        symbols,
    })
}

pub(crate) fn poly(e: &syn::Expr) -> Option<Poly> {
    poly_with(e, &BTreeMap::new(), 0)
}

/// How many aliases deep `poly_with` substitutes (guards against `let i = i + 1` chains).
const MAX_ALIAS_DEPTH: u32 = 4;

fn poly_with(e: &syn::Expr, defs: &BTreeMap<&str, &syn::Expr>, depth: u32) -> Option<Poly> {
    use syn::{BinOp, Expr};
    let poly = |e: &syn::Expr| poly_with(e, defs, depth);
    match e {
        Expr::Path(p) if depth < MAX_ALIAS_DEPTH => {
            let name = p.path.get_ident()?.to_string();
            match defs.get(name.as_str()) {
                Some(def) => poly_with(def, defs, depth + 1),
                None => Some(BTreeMap::from([(vec![name], 1)])),
            }
        }
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => Some(BTreeMap::from([(vec![], i.base10_parse().ok()?)])),
        Expr::Path(p) => Some(BTreeMap::from([(vec![p.path.get_ident()?.to_string()], 1)])),
        Expr::Paren(p) => poly(&p.expr),
        Expr::Group(g) => poly(&g.expr),
        Expr::Cast(c) => poly(&c.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => Some(scale(poly(&u.expr)?, -1)),
        Expr::Binary(b) => {
            let (l, r) = (poly(&b.left)?, poly(&b.right)?);
            match b.op {
                BinOp::Add(_) => Some(add(l, r, 1)),
                BinOp::Sub(_) => Some(add(l, r, -1)),
                BinOp::Mul(_) => Some(mul(&l, &r)),
                _ => None,
            }
        }
        _ => None,
    }
}

fn scale(p: Poly, k: i64) -> Poly {
    p.into_iter()
        .map(|(m, c)| (m, c.saturating_mul(k)))
        .collect()
}

pub(crate) fn add(mut l: Poly, r: Poly, sign: i64) -> Poly {
    for (m, c) in r {
        let e = l.entry(m).or_insert(0);
        *e = e.saturating_add(c.saturating_mul(sign));
    }
    l
}

fn mul(l: &Poly, r: &Poly) -> Poly {
    let mut out = Poly::new();
    for (ml, cl) in l {
        for (mr, cr) in r {
            let mut m: Vec<String> = ml.iter().chain(mr).cloned().collect();
            m.sort();
            let e = out.entry(m).or_insert(0);
            *e = e.saturating_add(cl.saturating_mul(*cr));
        }
    }
    out
}

/// Where a stage is written, from its tokens' locations: one extent per function body it lies
/// in (file and inline site), in the order first reached; the first is the stage's span. A
/// stage that begins in an inlined callee and goes on in the caller after the call returns
/// (`rtrans = ddot(..); let beta = rtrans / old; p = ..;`) has its caller's part too, which the
/// macro times where it cannot enter the callee. A statement holding the call into another part
/// (`let alpha = rho / dot(..)`) is left out of its part: timed whole, it would also time the
/// callee's own stages and events.
fn parts(locs: &[Loc], sources: &SourceMap) -> Vec<Loc> {
    let mut bodies: Vec<u32> = locs.iter().map(|l| l.via).collect();
    bodies.sort_unstable();
    bodies.dedup();
    // Per body the stage lies in, its calls into the others (none when it lies in one).
    let calls: Vec<(u32, Loc)> = bodies
        .iter()
        .flat_map(|&here| {
            bodies
                .iter()
                .filter(move |&&other| other != here)
                .filter_map(move |&other| sources.call_in(other, here).map(|c| (here, c)))
        })
        .collect();
    let holds_call = |l: &Loc| {
        calls.iter().any(|(here, c)| {
            *here == l.via && c.file == l.file && l.start <= c.start && c.end <= l.end
        })
    };
    let mut parts: Vec<Loc> = Vec::new();
    for l in locs.iter().filter(|l| !holds_call(l)) {
        match parts
            .iter_mut()
            .find(|p| p.file == l.file && p.via == l.via)
        {
            Some(p) => *p = p.to(*l),
            None => parts.push(*l),
        }
    }
    parts
}

/// Widens `acc` to cover `l`.
fn widen(acc: &mut Option<Loc>, l: Option<Loc>) {
    if let Some(l) = l {
        *acc = Some(acc.map_or(l, |x| x.to(l)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Capitalised names are constants, left out of a stage's reads and writes, unless they are
    /// the program's variables (`let A = ..`).
    #[test]
    fn capitalised_variables_are_read_and_written() {
        let src = "use mpi::traits::*;\nconst N: usize = 100;\n#[allow(non_snake_case)]\nfn main() {\n \
                   let universe = mpi::initialize().unwrap();\n let world = universe.world();\n \
                   let A = vec![1.0; N];\n let mut Ap = vec![0.0; N];\n let mut s = 0.0;\n \
                   for _ in 0..100 {\n for i in 0..N { Ap[i] = 2.0 * A[i]; }\n \
                   world.all_reduce_into(&Ap[0], &mut s, mpi::collective::SystemOperation::sum());\n }\n}\n";
        let analysis = crate::analyze_source("t.rs", src, &crate::Options::default());
        let text = crate::emit::render(&analysis.structure, crate::emit::Format::Text);
        assert!(text.contains("reads [A] writes [Ap]"), "{text}");
    }

    /// A macro's named argument (`x = v`) reads `v` and writes nothing.
    #[test]
    fn named_macro_arguments_are_not_writes() {
        let src = "use mpi::traits::*;\nfn main() {\n let universe = mpi::initialize().unwrap();\n \
                   let world = universe.world();\n let mut u = vec![1.0f64; 100];\n let mut total = 0.0;\n \
                   for it in 0..100 {\n println!(\"{it} {t}\", t = total);\n \
                   tracing::debug!(iteration = it, residual = total);\n for x in u.iter_mut() { *x *= 0.5; }\n \
                   world.all_reduce_into(&u[0], &mut total, mpi::collective::SystemOperation::sum());\n }\n}\n";
        let analysis = crate::analyze_source("t.rs", src, &crate::Options::default());
        let text = crate::emit::render(&analysis.structure, crate::emit::Format::Text);
        assert!(text.contains("reads [total, it] writes []"), "{text}");
    }

    fn aff(src: &str, vars: &[&str]) -> Option<AffineIndex> {
        let vars: Vec<String> = vars.iter().map(|s| s.to_string()).collect();
        affine_index(&syn::parse_str(src).unwrap(), &vars)
    }

    #[test]
    fn affine_coefficients_of_flattened_and_plain_indices() {
        let a = aff("(i - 1) * cols + j", &["i", "j"]).unwrap();
        assert_eq!(
            a.coefficients,
            vec![("i*cols".to_string(), 1), ("j".to_string(), 1)]
        );
        assert_eq!(a.symbols, vec![("cols".to_string(), -1)]);
        assert_eq!(a.constant, 0);
        let b = aff("2 * i + 3", &["i"]).unwrap();
        assert_eq!(
            (b.coefficients, b.constant),
            (vec![("i".to_string(), 2)], 3)
        );
        assert!(aff("i * j", &["i", "j"]).is_none());
        assert!(aff("idx[i]", &["i"]).is_none());
    }

    #[test]
    fn neighbouring_rows_are_a_stencil_columns_alone_are_not() {
        let acc = |src: &str| AffineAccess {
            var: "a".into(),
            dims: vec![aff(src, &["i", "j"]).unwrap()],
            write: false,
        };
        let i = "i".to_string();
        assert!(neighbouring_rows(
            &acc("(i - 1) * n + j"),
            &acc("i * n + j"),
            Some(&i)
        ));
        assert!(!neighbouring_rows(
            &acc("i * n + j - 1"),
            &acc("i * n + j"),
            Some(&i)
        ));
        let one = |src: &str| AffineAccess {
            var: "u".into(),
            dims: vec![aff(src, &["i"]).unwrap()],
            write: false,
        };
        assert!(neighbouring_rows(&one("i - 1"), &one("i + 1"), Some(&i)));
    }
}
