//! Glue (DESIGN §3.4): code that only prepares or unpacks a message envelope — rank/size/tag
//! arithmetic, small iterator chains over ranges of ranks, slicing a buffer, allocating a message
//! buffer (`vec![0; n]`), binding a receive target (`let mut sum = 0.0`), reading an index table,
//! unpacking a received value into its slot, calling a local glue closure, and control flow
//! (`break`, `if done { break }`) over such values. Element reads of data arrays, calls of user
//! functions, loops over data and buffer swaps are not glue.

use std::collections::BTreeSet;

use crate::syntax::{base_var, macro_args};

/// Methods that leave data untouched or only touch envelope-sized values.
#[rustfmt::skip]
const GLUE_METHODS: &[&str] = &[
    "rank", "size", "len", "is_empty", "min", "max", "abs", "pow", "powi", "powf", "sqrt", "clone", "to_vec",
    "to_owned", "as_slice", "as_mut_slice", "as_ref", "as_mut", "unwrap", "unwrap_or", "unwrap_or_default",
    "expect", "saturating_sub", "saturating_add", "wrapping_add", "wrapping_sub", "checked_add", "checked_sub",
    "rem_euclid", "div_ceil", "start", "end", "is_some", "is_none", "is_ok", "is_err", "ok", "into", "try_into",
    "get", "first", "last", "iter", "into_iter", "filter", "map", "rev", "step_by", "collect", "count", "chain",
    "take", "skip", "enumerate", "contains", "find", "global_rows", "local_rows", "iterations", "partition", "rows_of",
    "blocks", "source_rank", "tag", "split_at", "split_at_mut", "to_string", "is_finite", "is_nan", "eq", "ne",
    "lt", "gt", "process_at_rank", "any_process", "this_process", "world", "comm", "cloned", "copied",
    // Copying between a data array and a message buffer (packing and unpacking).
    "copy_from_slice", "clone_from_slice", "swap_with_slice", "extend_from_slice",
    // ndarray: views of rows, columns and slices (`u.row(1).to_vec()`), copying into one
    // (`u.row_mut(0).assign(&ghost)`), and shapes.
    "row", "column", "view", "slice", "row_mut", "column_mut", "view_mut", "slice_mut", "assign", "nrows",
    "ncols", "dim", "shape",
    // Request bookkeeping.
    "add", "incomplete", "is_complete",
    // An optional neighbour: `(rank + 1 < size).then_some(rank + 1)`.
    "then_some", "then",
];

/// Whether an expression is glue (see the module documentation), with no local closures known.
pub fn is_glue(e: &syn::Expr) -> bool {
    Glue {
        closures: &BTreeSet::new(),
        data: &BTreeSet::new(),
    }
    .expr(e)
}

/// The glue predicate, knowing which local closures are glue.
pub struct Glue<'a> {
    /// Local closures whose bodies are glue (`let lo = |k| k * n;`): calling one is glue.
    pub closures: &'a BTreeSet<String>,
    /// Arrays holding the program's data: reading one of their elements is not glue, slicing
    /// them is.
    pub data: &'a BTreeSet<String>,
}

impl Glue<'_> {
    /// Whether an expression is glue.
    pub fn expr(&self, e: &syn::Expr) -> bool {
        use syn::Expr::*;
        let g = |e: &syn::Expr| self.expr(e);
        match e {
            Lit(_) | Path(_) | Continue(_) => true,
            Range(r) => r.start.as_deref().map_or(true, g) && r.end.as_deref().map_or(true, g),
            Break(b) => b.expr.as_deref().map_or(true, g),
            Return(r) => r.expr.as_deref().map_or(true, g),
            Paren(p) => g(&p.expr),
            Group(x) => g(&x.expr),
            Unary(u) => g(&u.expr),
            // A counter or a field of a value (`self.step += 1`), never an element's field
            // (`cells[i].heat += 0.5` is arithmetic on data).
            Binary(b) if is_compound(&b.op) => {
                matches!(&*b.left, Path(_) | Field(_)) && element(&b.left).is_none() && g(&b.right)
            }
            Binary(b) => g(&b.left) && g(&b.right),
            Cast(c) => g(&c.expr),
            Field(f) => g(&f.base),
            // Slicing a buffer or reading an index table is glue; reading an element of a
            // data array is not.
            Index(i) => {
                let data = base_var(&i.expr).is_some_and(|v| self.data.contains(&v));
                (matches!(&*i.index, Range(_)) || !data) && g(&i.expr) && g(&i.index)
            }
            Reference(r) => g(&r.expr),
            Tuple(t) => t.elems.iter().all(g),
            Array(a) => a.elems.iter().all(g),
            Repeat(r) => g(&r.expr) && g(&r.len),
            Try(t) => g(&t.expr),
            Let(l) => g(&l.expr),
            Assign(a) => match (&*a.left, element(&a.left)) {
                (Path(_) | Field(_), None) => g(&a.right),
                // Unpacking a received value into its slot (an element, or an element's field:
                // `cells[k].halo = v`): a plain move, no arithmetic.
                // An element moved between a data array and a message buffer (`buf[k] = u[k *
                // nx + 1]`): a copy, no arithmetic on the value.
                (Index(_) | Field(_), Some(i)) => {
                    // A conversion is no arithmetic: `bodies[j].x = buf as f64`.
                    let moved = match crate::syntax::strip_casts(&a.right) {
                        Path(_) | Lit(_) | Field(_) => true,
                        Index(r) => g(&r.expr) && index_is_simple(&r.index, self),
                        _ => false,
                    };
                    moved && g(&i.expr) && index_is_simple(&i.index, self)
                }
                _ => false,
            },
            If(i) => {
                g(&i.cond)
                    && self.block(&i.then_branch)
                    && i.else_branch.as_ref().map_or(true, |(_, e)| g(e))
            }
            Match(m) => g(&m.expr) && m.arms.iter().all(|a| g(&a.body)),
            Block(b) => self.block(&b.block),
            Unsafe(u) => self.block(&u.block),
            Closure(c) => g(&c.body),
            Macro(m) => self.macro_call(&m.mac),
            MethodCall(m) => self.method_call(m),
            Call(c) => self.call(c),
            _ => false,
        }
    }

    /// Whether a macro invocation is glue: `vec![..]` or an assertion, of glue arguments.
    pub fn macro_call(&self, m: &syn::Macro) -> bool {
        let name = m
            .path
            .segments
            .last()
            .map(|s| crate::syntax::Name::of(&s.ident));
        matches!(
            name.as_deref().unwrap_or_default(),
            "vec" | "assert" | "assert_eq" | "assert_ne" | "debug_assert" | "debug_assert_eq"
        ) && macro_args(m).iter().all(|e| self.expr(e))
    }

    /// Whether a method call is glue: an envelope-sized or copying method, iterating only over
    /// a range or a literal list of ranks, with glue receiver and arguments.
    pub fn method_call(&self, m: &syn::ExprMethodCall) -> bool {
        let name = crate::syntax::Name::of(&m.method);
        // Iterating is glue only over a range (ranks, tags), never over data.
        let iterates = matches!(name.as_str(), "iter" | "into_iter" | "iter_mut");
        let over_range = match strip_parens(&m.receiver) {
            syn::Expr::Range(_) | syn::Expr::Array(_) => true,
            // A literal list: `vec![rank - 1, rank + 1]`.
            syn::Expr::Macro(mac) => {
                mac.mac.path.is_ident("vec")
                    && !matches!(macro_args(&mac.mac).first(), Some(syn::Expr::Repeat(_)))
            }
            _ => false,
        };
        // A copy's source is a whole row or slice (`u[..].copy_from_slice(&ghosts[k])`), never
        // one element's arithmetic.
        let copies = matches!(
            name.as_str(),
            "copy_from_slice" | "clone_from_slice" | "swap_with_slice" | "extend_from_slice"
        );
        let arg = |a: &syn::Expr| match a {
            syn::Expr::Reference(r) if copies => match strip_parens(&r.expr) {
                syn::Expr::Index(i) => self.expr(&i.expr) && self.expr(&i.index),
                other => self.expr(other),
            },
            other => self.expr(other),
        };
        // Only a slice has these methods, so an indexed receiver is a slice whatever its index
        // (`u[recv].copy_from_slice(&ghost)` with `recv` a range).
        let receiver = match strip_parens(&m.receiver) {
            syn::Expr::Index(i) if copies => self.expr(&i.expr) && self.expr(&i.index),
            other => self.expr(other),
        };
        GLUE_METHODS.contains(&name.as_str())
            && (!iterates || over_range)
            && receiver
            && m.args.iter().all(arg)
    }

    /// Whether a function call is glue: a constructor or conversion ([`wraps`]) or a glue
    /// closure, with glue arguments.
    pub fn call(&self, c: &syn::ExprCall) -> bool {
        let closure = matches!(&*c.func, syn::Expr::Path(p) if p.path.get_ident().is_some_and(|i| self.closures.contains(&i.to_string())));
        (wraps(c) || closure) && c.args.iter().all(|a| self.expr(a))
    }

    fn block(&self, b: &syn::Block) -> bool {
        b.stmts.iter().all(|s| match s {
            syn::Stmt::Local(l) => l.init.as_ref().map_or(true, |i| self.expr(&i.expr)),
            syn::Stmt::Expr(e, _) => self.expr(e),
            syn::Stmt::Macro(m) => self.macro_call(&m.mac),
            syn::Stmt::Item(_) => true,
        })
    }
}

/// A constructor or a type's associated function (`Some(..)`, `WaitGuard::from(..)`,
/// `usize::from(..)`): it only wraps or converts its arguments.
pub fn wraps(c: &syn::ExprCall) -> bool {
    let syn::Expr::Path(p) = &*c.func else {
        return false;
    };
    let segs: Vec<String> = crate::syntax::path_idents(&p.path);
    let last = segs.last().map(String::as_str).unwrap_or("");
    let parent = if segs.len() >= 2 {
        segs[segs.len() - 2].as_str()
    } else {
        ""
    };
    last.starts_with(char::is_uppercase)
        || parent.starts_with(char::is_uppercase)
        || matches!(
            parent,
            "usize" | "u32" | "i32" | "i64" | "u64" | "f64" | "f32"
        )
        // Reinterpreting a buffer as another type moves nothing (`transmute::<&mut [f64; 32],
        // &mut [u64; 32]>(&mut row)`, `slice::from_raw_parts(p, n)`).
        || matches!(last, "transmute" | "from_raw_parts" | "from_raw_parts_mut")
}

pub(crate) fn is_compound(op: &syn::BinOp) -> bool {
    use syn::BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitXorAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
            | ShlAssign(_)
            | ShrAssign(_)
    )
}

/// An index that is itself envelope arithmetic (`status.source_rank() as usize`, `k`).
fn index_is_simple(e: &syn::Expr, glue: &Glue<'_>) -> bool {
    glue.expr(e)
}

/// The element a place expression is in: `cells[i]` of `cells[i].heat` or of `cells[i]`.
fn element(place: &syn::Expr) -> Option<&syn::ExprIndex> {
    match strip_parens(place) {
        syn::Expr::Index(i) => Some(i),
        syn::Expr::Field(f) => element(&f.base),
        _ => None,
    }
}

fn strip_parens(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip_parens(&p.expr),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glue(src: &str) -> bool {
        is_glue(&syn::parse_str::<syn::Expr>(src).unwrap())
    }

    #[test]
    fn envelope_code_is_glue() {
        assert!(glue("rank - 1"));
        assert!(glue("(rank + 1) % size"));
        assert!(glue("vec![0.0f64; n]"));
        assert!(glue("&mut buf[lo..hi]"));
        assert!(glue("world.size() as usize - 1"));
        assert!(glue("if global.sqrt() < tol { break }"));
        assert!(glue("results[status.source_rank() as usize] = value"));
        assert!(glue("u[1..n].to_vec()"));
        assert!(glue("(0..size).filter(|&r| r != rank).collect::<Vec<_>>()"));
        assert!(glue(
            "vec![rank - 1, rank + 1].into_iter().filter(|r| (0..size).contains(r)).collect()"
        ));
    }

    #[test]
    fn computation_is_not_glue() {
        assert!(!glue("dot(&r, &r)"));
        assert!(!glue("a.iter().map(|x| x * x).sum::<f64>()"));
        assert!(!glue("b[i] = 0.5 * a[i]"));
        assert!(!glue("a.fill(0.0)"));
        assert!(!glue("println!(\"{}\", x)"));
        assert!(!glue("std::mem::swap(&mut a, &mut b)"));
        assert!(!glue("u[i * n + j] += omega * r"));
        let data = BTreeSet::from(["v".to_string()]);
        let with_data = Glue {
            closures: &BTreeSet::new(),
            data: &data,
        };
        assert!(
            !with_data.expr(&syn::parse_str("v[0]").unwrap()),
            "an element of a data array"
        );
        assert!(
            with_data.expr(&syn::parse_str("offsets[k]").unwrap()),
            "an index table"
        );
        assert!(
            with_data.expr(&syn::parse_str("u[..n].copy_from_slice(&v[k])").unwrap()),
            "a row copied out of a buffer of rows"
        );
        assert!(
            with_data.expr(&syn::parse_str("v[recv].copy_from_slice(&ghost)").unwrap()),
            "a slice by a range variable"
        );
        assert!(!glue("a.iter().map(|x| 2.0 * x).collect::<Vec<_>>()"));
    }
}
