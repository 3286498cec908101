//! Peeling a loop's first or last iteration out of its body.
//!
//! Real codes receive a halo inside the update loop, in the iteration that needs it:
//!
//! ```text
//! for i in 0..n {
//!     let left = if i == 0 { world.process_at_rank(rank - 1).receive().0 } else { a[i - 1] };
//!     b[i] = 0.5 * (a[i] + left);
//! }
//! ```
//!
//! The receive runs once per execution of the loop, not once per iteration. Read as written, it
//! would be an event repeated `n` times. A compiler would peel the first iteration; this does the
//! same for the structure: an arm guarded by `i == first` that communicates is moved before the
//! loop, one guarded by `i == last` after it, and the branch is replaced in the body by its other
//! arm. Only `for` loops whose first and last index can be read off their header are peeled, and
//! only branches at the top level of their body (an `else if` chain is peeled level by level).

use crate::ir::{Branch, Node};
use crate::syntax::{strip_casts, Name};

/// A `for` loop's index variable and its first and last values, each as an affine form
/// (symbolic base, constant offset) so that `i == n - 1` matches the last index of `0..n`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct IndexRange {
    var: String,
    first: Affine,
    last: Affine,
}

/// `base + offset`, `base` being the expression's tokens without whitespace ("" for a literal).
type Affine = (String, i64);

/// The index range of `for pat in iterable`, when its bounds can be read: `a..b`, `a..=b`,
/// `(a..b).rev()`, or `x.iter().enumerate()` (and `iter_mut`, `into_iter`) with `(i, _)`.
pub(super) fn index_range(pat: &syn::Pat, iterable: &syn::Expr) -> Option<IndexRange> {
    let iterable = strip_casts(iterable);
    if let syn::Expr::MethodCall(m) = iterable {
        let method = Name::of(&m.method);
        if method.as_str() == "rev" && m.args.is_empty() {
            let inner = index_range(pat, &m.receiver)?;
            return Some(IndexRange {
                var: inner.var,
                first: inner.last,
                last: inner.first,
            });
        }
        if method.as_str() == "enumerate" && m.args.is_empty() {
            let syn::Pat::Tuple(t) = pat else { return None };
            let var = ident(t.elems.first()?)?;
            let syn::Expr::MethodCall(it) = strip_casts(&m.receiver) else {
                return None;
            };
            if !matches!(
                Name::of(&it.method).as_str(),
                "iter" | "iter_mut" | "into_iter"
            ) || !it.args.is_empty()
            {
                return None;
            }
            let len = format!("{}.len()", tokens(&it.receiver));
            return Some(IndexRange {
                var,
                first: (String::new(), 0),
                last: (len, -1),
            });
        }
        return None;
    }
    let syn::Expr::Range(r) = iterable else {
        return None;
    };
    let var = ident(pat)?;
    let first = affine(r.start.as_deref()?);
    let (base, end) = affine(r.end.as_deref()?);
    let last = match r.limits {
        syn::RangeLimits::Closed(_) => (base, end),
        syn::RangeLimits::HalfOpen(_) => (base, end - 1),
    };
    Some(IndexRange { var, first, last })
}

/// Which iteration a guard selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    First,
    Last,
}

/// Whether `body` has a top-level branch that communicates, which [`peel`] could move.
pub(super) fn may_peel(body: &[Node]) -> bool {
    body.iter()
        .any(|n| matches!(n, Node::Branch(_)) && n.has_comm())
}

/// Moves every top-level branch of `body` that selects the first or last iteration of `range`
/// and communicates in that arm out of the loop: returns the nodes to run before the loop and
/// those to run after it, in source order. The branch is replaced in `body` by its other arm.
pub(super) fn peel(body: &mut Vec<Node>, range: &IndexRange) -> (Vec<Node>, Vec<Node>) {
    let (mut before, mut after) = (vec![], vec![]);
    if range.first == range.last {
        return (before, after);
    }
    let mut k = 0;
    while k < body.len() {
        let Node::Branch(b) = &body[k] else {
            k += 1;
            continue;
        };
        let Some((end, selected)) = selects(b, range) else {
            k += 1;
            continue;
        };
        let Node::Branch(b) = body.remove(k) else {
            break; // matched as a branch above
        };
        let mut arms = b.arms.into_iter();
        let (then, otherwise) = (arms.next().unwrap_or_default(), arms.next());
        let (peeled, rest) = if selected {
            (then, otherwise.unwrap_or_default())
        } else {
            (otherwise.unwrap_or_default(), then)
        };
        match end {
            End::First => before.extend(peeled),
            End::Last => after.extend(peeled),
        }
        // The other arm runs in every iteration in place of the branch; a branch it starts with
        // (`else if i == n - 1`) is looked at next.
        body.splice(k..k, rest);
    }
    (before, after)
}

/// For an `if` with at most two arms whose condition is `index == first` or `index == last`
/// (or `!=`): which end it selects, and whether the then-arm is that iteration's. Only when the
/// arm of that iteration communicates.
fn selects(b: &Branch, range: &IndexRange) -> Option<(End, bool)> {
    if b.arms.len() > 2 {
        return None;
    }
    let syn::Expr::Binary(bin) = strip_casts(b.cond_expr.as_ref()?) else {
        return None;
    };
    let equal = match bin.op {
        syn::BinOp::Eq(_) => true,
        syn::BinOp::Ne(_) => false,
        _ => return None,
    };
    let (left, right) = (affine(&bin.left), affine(&bin.right));
    // `var + a == base + b` selects `var == base + (b - a)`.
    let value = if left.0 == range.var {
        (right.0, right.1 - left.1)
    } else if right.0 == range.var {
        (left.0, left.1 - right.1)
    } else {
        return None;
    };
    let end = if value == range.first {
        End::First
    } else if value == range.last {
        End::Last
    } else {
        return None;
    };
    let arm = if equal { b.arms.first() } else { b.arms.get(1) };
    arm.is_some_and(|a| a.iter().any(Node::has_comm))
        .then_some((end, equal))
}

/// An expression as `base + offset`: an integer literal, `x + k`, `k + x`, `x - k` or `x`.
fn affine(e: &syn::Expr) -> Affine {
    let e = strip_casts(e);
    if let Some(k) = int(e) {
        return (String::new(), k);
    }
    if let syn::Expr::Binary(b) = e {
        match b.op {
            syn::BinOp::Add(_) => {
                if let Some(k) = int(&b.right) {
                    let (base, o) = affine(&b.left);
                    return (base, o + k);
                }
                if let Some(k) = int(&b.left) {
                    let (base, o) = affine(&b.right);
                    return (base, o + k);
                }
            }
            syn::BinOp::Sub(_) => {
                if let Some(k) = int(&b.right) {
                    let (base, o) = affine(&b.left);
                    return (base, o - k);
                }
            }
            _ => {}
        }
    }
    (tokens(e), 0)
}

fn int(e: &syn::Expr) -> Option<i64> {
    match strip_casts(e) {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse().ok(),
        _ => None,
    }
}

fn ident(p: &syn::Pat) -> Option<String> {
    match p {
        syn::Pat::Ident(i) if i.subpat.is_none() => Some(i.ident.to_string()),
        _ => None,
    }
}

/// The expression's tokens without whitespace: `n - 1` and `n-1` compare equal.
fn tokens(e: &syn::Expr) -> String {
    let mut text = quote::ToTokens::to_token_stream(e).to_string();
    text.retain(|c| !c.is_whitespace());
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(header: &str) -> Option<IndexRange> {
        let f: syn::ExprForLoop = syn::parse_str(&format!("for {header} {{}}")).unwrap();
        index_range(&f.pat, &f.expr)
    }

    fn affine_of(s: &str) -> Affine {
        affine(&syn::parse_str(s).unwrap())
    }

    #[test]
    fn ranges_read_off_headers() {
        let r = range("i in 0..n").unwrap();
        assert_eq!((r.first, r.last), (("".into(), 0), ("n".into(), -1)));
        let r = range("i in 1..=m - 2").unwrap();
        assert_eq!((r.first, r.last), (("".into(), 1), ("m".into(), -2)));
        let r = range("j in (0..64).rev()").unwrap();
        assert_eq!((r.first, r.last), (("".into(), 63), ("".into(), 0)));
        let r = range("(k, x) in row.iter_mut().enumerate()").unwrap();
        assert_eq!(r.var, "k");
        assert_eq!(r.last, ("row.len()".into(), -1));
        assert_eq!(range("i in (0..n).step_by(2)"), None);
        assert_eq!(range("x in &v"), None);
        assert_eq!(range("i in 0.."), None);
    }

    /// The text structure of a program whose main loop holds the inner loop `inner`.
    fn structure_of(inner: &str) -> (String, Vec<String>) {
        let src = format!(
            "use mpi::traits::*;\nfn main() {{\n let u = mpi::initialize().unwrap();\n \
             let world = u.world();\n let rank = world.rank();\n let n = 32;\n \
             let mut a = vec![0.0f64; n];\n let mut b = vec![0.0f64; n];\n \
             for _ in 0..90 {{ world.process_at_rank(rank + 1).send(&a[n - 1]); {inner} \
             std::mem::swap(&mut a, &mut b); }}\n}}\n"
        );
        let analysis = crate::analyze_source("t.rs", &src, &crate::Options::default());
        let text = crate::emit::render(&analysis.structure, crate::emit::Format::Text);
        let messages = analysis.diagnostics.iter().map(|d| d.message.clone());
        (text, messages.collect())
    }

    const RECV: &str = "{ let (v, _) = world.process_at_rank(rank - 1).receive::<f64>(); v }";

    /// The receive of the first iteration runs once per step: it joins the send before the
    /// loop, and the loop holds no communication (no group repeated `n` times).
    #[test]
    fn communication_in_the_first_iteration_is_peeled_before_the_loop() {
        for cond in ["i == 0", "0 == i", "(i as i64) == 0"] {
            let (s, diags) = structure_of(&format!(
                "for i in 0..n {{ let w = if {cond} {RECV} else {{ a[i - 1] }}; b[i] = 0.5 * (a[i] + w); }}"
            ));
            assert!(!s.contains("repeated"), "{cond}: {s}");
            assert_eq!(s.matches("comm event").count(), 1, "{cond}: {s}");
            assert!(s.contains("mpi::send, mpi::receive @"), "{cond}: {s}");
            assert!(diags.is_empty(), "{cond}: {diags:?}");
        }
        // `!=`: the else arm is the first iteration's.
        let (s, _) = structure_of(&format!(
            "for i in 0..n {{ let w = if i != 0 {{ a[i - 1] }} else {RECV}; b[i] = w; }}"
        ));
        assert!(
            !s.contains("repeated") && s.matches("comm event").count() == 1,
            "{s}"
        );
    }

    /// The last iteration's communication runs after the loop; an `else if` chain is peeled at
    /// both ends.
    #[test]
    fn communication_in_the_last_iteration_is_peeled_after_the_loop() {
        for cond in ["i == n - 1", "i + 1 == n", "n - 1 == i"] {
            let (s, _) = structure_of(&format!(
                "for i in 0..n {{ let e = if {cond} {RECV} else {{ a[i + 1] }}; b[i] = 0.5 * (a[i] + e); }}"
            ));
            assert!(!s.contains("repeated"), "{cond}: {s}");
            let (stage, event) = (s.find("stage 0 Loop"), s.find("comm event 1"));
            assert!(stage.is_some() && stage < event, "{cond}: {s}");
        }
        let (s, diags) = structure_of(&format!(
            "for i in 1..=n - 2 {{ let h = if i == 1 {RECV} else if i == n - 2 {RECV} else {{ a[i] }}; b[i] = h; }}"
        ));
        assert!(!s.contains("repeated"), "{s}");
        assert_eq!(s.matches("comm event").count(), 2, "{s}");
        assert!(diags.is_empty(), "{diags:?}");
    }

    /// A guard on another iteration, on a value the header does not show, or an arm that only
    /// computes is left as written.
    #[test]
    fn other_guards_are_not_peeled() {
        for inner in [
            format!("for i in 0..n {{ let w = if i == 5 {RECV} else {{ a[i] }}; b[i] = w; }}"),
            format!("for i in 0..n {{ let w = if i == m {RECV} else {{ a[i] }}; b[i] = w; }}")
                .replace("0..n", "0..n - 1").replace("== m", "== n"),
            format!("for i in (0..n).step_by(2) {{ let w = if i == 0 {RECV} else {{ a[i] }}; b[i] = w; }}"),
        ] {
            let (s, _) = structure_of(&inner);
            assert!(s.contains("repeated"), "{inner}: {s}");
        }
        let (s, _) = structure_of(
            "for i in 0..n { let w = if i == 0 { 1.0 } else { a[i - 1] }; b[i] = w; }",
        );
        assert_eq!(s.matches("stage 0 Loop").count(), 1, "{s}");
    }

    #[test]
    fn affine_forms() {
        assert_eq!(affine_of("n - 1"), ("n".into(), -1));
        assert_eq!(affine_of("(n-1) - 1"), ("n".into(), -2));
        assert_eq!(affine_of("1 + i"), ("i".into(), 1));
        assert_eq!(affine_of("(i as i32)"), ("i".into(), 0));
        assert_eq!(affine_of("a.len() - 1"), ("a.len()".into(), -1));
        assert_eq!(affine_of("n * 2"), ("n*2".into(), 0));
    }
}
