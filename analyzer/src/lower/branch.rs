//! Branches that communicate and compute (seed §5.2: the rules are meant for real programs).
//!
//! A branch whose arms only communicate (with glue) is one event and never reaches this module.
//! The others are read by what their condition depends on:
//! - **the iteration counter** (`step % 10 == 0`, `k == 1`, `it % 2 == 0`): arms of the same
//!   shape alternate (`if it % 2 == 0 { exchange(a); sweep(a, b) } else { exchange(b);
//!   sweep(b, a) }`), so the first arm is analysed and the second is measured as it; otherwise
//!   each arm is lowered with the share of iterations it runs in (its events are *conditional*,
//!   charged by the model at that frequency), and an arm that runs only in the first
//!   iterations (`k == 1`) is left out of the steady state;
//! - **the rank** (`if rank == 0 { reduce_into_root(..); print(..) } else { reduce_into(..) }`):
//!   each arm is split into the computation before its communication, the communication (with
//!   the glue between its calls) and the computation after it; the three parts lower in that
//!   order, the communication of all arms being one event;
//! - **anything else**, or a rank-guarded arm whose communication surrounds computation: the
//!   arms lower in order as if each ran (the coarser reading), with a warning.

use mheta_runtime::format::Level;

use super::{Context, Lowered};
use crate::body::Facts;
use crate::diagnostics::{Diagnostic, Loc};
use crate::events::{self, Item};
use crate::ir::{Branch, Node};

impl Lowered {
    pub(super) fn comm_branch(&mut self, b: Branch, ctx: Context, facts: &Facts) {
        let reads_counter = b.cond.reads.iter().any(|r| self.counters.contains(r));
        let reads_rank = b
            .cond
            .reads
            .iter()
            .any(|r| r == "rank" || facts.rank_vars.contains(r));
        if reads_counter {
            self.counter_branch(b, ctx, facts);
        } else if reads_rank && split_arms(&b).is_some() {
            self.rank_branch(b, ctx, facts);
        } else {
            self.coarse_branch(b, ctx, facts, "its condition depends on data");
        }
    }

    /// A branch on the iteration counter.
    fn counter_branch(&mut self, mut b: Branch, ctx: Context, facts: &Facts) {
        if let [first, second] = b.arms.as_mut_slice() {
            if same_shape(first, second) {
                set_alt(first, second);
                self.note(
                    b.loc,
                    format!(
                        "the arms of `if {}` alternate and have the same shape: the first is analysed, the second is measured as it",
                        b.cond_text
                    ),
                );
                if !b.cond.glue {
                    self.stmt(b.cond);
                }
                let arm = std::mem::take(first);
                self.block(arm, ctx, facts);
                return;
            }
        }
        let Some(shares) = b
            .cond_expr
            .as_ref()
            .and_then(|c| arm_shares(c, &self.counters))
        else {
            self.coarse_branch(b, ctx, facts, "how often its arms run cannot be read off");
            return;
        };
        if !b.cond.glue {
            self.stmt(b.cond.clone());
        }
        let negated = format!("!({})", b.cond_text);
        for (k, arm) in b.arms.into_iter().enumerate() {
            let share = if k == 0 { shares[0] } else { shares[1] };
            if share == 0.0 {
                if arm.iter().any(Node::has_comm) {
                    self.note(
                        arm.iter().find_map(Node::loc).unwrap_or(b.loc),
                        format!(
                            "this arm runs only in the first iterations (`{}`): it is not part of the steady state and is not analysed",
                            if k == 0 { &b.cond_text } else { &negated }
                        ),
                    );
                }
                continue;
            }
            if share < 1.0 {
                let cond = if k == 0 {
                    b.cond_text.clone()
                } else {
                    negated.clone()
                };
                self.guards.push((share, cond));
                self.block(arm, ctx, facts);
                self.guards.pop();
            } else {
                self.block(arm, ctx, facts);
            }
        }
    }

    /// A branch on the rank whose arms each compute, communicate, then compute.
    fn rank_branch(&mut self, b: Branch, ctx: Context, facts: &Facts) {
        let Some(parts) = split_arms(&b) else {
            return self.coarse_branch(b, ctx, facts, "its arms communicate between computations");
        };
        let part = |which: usize| -> Vec<Vec<Node>> {
            parts
                .iter()
                .map(|p| match which {
                    0 => p.0.clone(),
                    1 => p.1.clone(),
                    _ => p.2.clone(),
                })
                .collect()
        };
        let branch = |arms: Vec<Vec<Node>>| Branch { arms, ..b.clone() };
        let before = part(0);
        if before.iter().any(|a| !a.is_empty()) {
            self.item(Item::Node(Node::Branch(branch(before))), ctx, facts);
        }
        // The communication of every arm is one event, placed at the first arm's calls and
        // measured at the others' too.
        let comm = part(1);
        let places: Vec<Loc> = comm
            .iter()
            .filter_map(|arm| {
                let first = arm.first()?.loc()?;
                Some(arm.iter().filter_map(Node::loc).fold(first, Loc::to))
            })
            .collect();
        match events::form(vec![Node::Branch(branch(comm))]).pop() {
            Some(Item::Event(mut draft)) => {
                if let Some((first, rest)) = places.split_first() {
                    draft.loc = *first;
                    draft.alt = rest.to_vec();
                }
                self.item(Item::Event(draft), ctx, facts);
            }
            // The communication parts hold only communication and glue, so they form an event;
            // kept total all the same.
            Some(other) => self.item(other, ctx, facts),
            None => {}
        }
        let after = part(2);
        if after.iter().any(|a| !a.is_empty()) {
            let mut b = branch(after);
            b.cond.glue = true; // lowered once, before the communication
            self.item(Item::Node(Node::Branch(b)), ctx, facts);
        }
    }

    /// The coarser reading: the arms in order, as if each ran.
    fn coarse_branch(&mut self, b: Branch, ctx: Context, facts: &Facts, why: &str) {
        self.diags.push(
            Diagnostic::warning(
                format!("a branch that communicates and computes, and {why}: its arms are analysed in order as if each ran"),
                Some(b.loc),
            )
            .with_label("both computes and communicates")
            .with_note("the structure is coarser here; guard communication by the rank or the iteration counter, or move it out of the branch, for a finer one"),
        );
        if !b.cond.glue {
            self.stmt(b.cond);
        }
        for arm in b.arms {
            self.block(arm, ctx, facts);
        }
    }

    fn note(&mut self, loc: Loc, message: String) {
        self.diags.push(Diagnostic {
            level: Level::Warning,
            message,
            loc: Some(loc),
            label: "analysed once".into(),
            notes: vec![],
        });
    }
}

/// Each arm as (computation before its communication, the communication with the glue between
/// its calls, computation after it), when every arm's communication is only communication and
/// glue.
type Parts = Vec<(Vec<Node>, Vec<Node>, Vec<Node>)>;

fn split_arms(b: &Branch) -> Option<Parts> {
    b.arms
        .iter()
        .map(|arm| {
            let first = arm.iter().position(Node::has_comm);
            let last = arm.iter().rposition(Node::has_comm);
            match (first, last) {
                (Some(f), Some(l)) => {
                    let comm = &arm[f..=l];
                    comm.iter()
                        .all(|n| n.only_comm_and_glue() || n.is_glue())
                        .then(|| (arm[..f].to_vec(), comm.to_vec(), arm[l + 1..].to_vec()))
                }
                _ => Some((arm.clone(), vec![], vec![])),
            }
        })
        .collect()
}

/// Whether two arms run the same code on other variables: the same tree of statements, loops
/// and branches, making the same communication and function calls.
pub fn same_shape(a: &[Node], b: &[Node]) -> bool {
    fn calls(s: &crate::ir::Stmt) -> Vec<&str> {
        s.calls.iter().map(|c| c.api.as_str()).collect()
    }
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (Node::Stmt(s), Node::Stmt(t)) => {
                calls(s) == calls(t) && s.function == t.function && s.glue == t.glue
            }
            (Node::Loop(l), Node::Loop(m)) => {
                l.kind == m.kind
                    && calls(&l.header) == calls(&m.header)
                    && same_shape(&l.body, &m.body)
            }
            (Node::Branch(p), Node::Branch(q)) => {
                p.arms.len() == q.arms.len()
                    && p.arms.iter().zip(&q.arms).all(|(x, y)| same_shape(x, y))
            }
            _ => false,
        })
        && a.iter().any(Node::has_comm)
}

/// Records in each node of `a` where its twin in `b` is (`same_shape(a, b)` holds).
fn set_alt(a: &mut [Node], b: &[Node]) {
    for (x, y) in a.iter_mut().zip(b) {
        match (x, y) {
            (Node::Stmt(s), Node::Stmt(t)) => s.alt = t.loc,
            (Node::Loop(l), Node::Loop(m)) => {
                l.alt = Some(m.loc);
                l.header.alt = m.header.loc;
                set_alt(&mut l.body, &m.body);
            }
            (Node::Branch(p), Node::Branch(q)) => {
                p.alt = Some(q.loc);
                p.cond.alt = q.cond.loc;
                for (x, y) in p.arms.iter_mut().zip(&q.arms) {
                    set_alt(x, y);
                }
            }
            _ => {}
        }
    }
}

/// The share of iterations in which each arm of `if cond {..} else {..}` runs, for conditions
/// on the iteration counters: `c % N == r` runs the first arm in 1/N of them; `c == k`, `c < k`
/// and `c <= k` only in the first iterations (share 0); `c > k`, `c >= k`, `c != k` in all but
/// the first (share 1). `&&` multiplies the shares of its counter conditions (others count as
/// always true). `None` when the condition reads the counter some other way.
fn arm_shares(cond: &syn::Expr, counters: &[String]) -> Option<[f64; 2]> {
    let first = share(cond, counters)?;
    Some([first, 1.0 - first])
}

fn share(cond: &syn::Expr, counters: &[String]) -> Option<f64> {
    use syn::{BinOp, Expr};
    let reads_counter = |e: &Expr| {
        let m = crate::scan::mentions_any(e, counters);
        m
    };
    match cond {
        Expr::Paren(p) => share(&p.expr, counters),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Not(_)) => {
            share(&u.expr, counters).map(|s| 1.0 - s)
        }
        Expr::Binary(b) => {
            if let BinOp::And(_) = b.op {
                let l = if reads_counter(&b.left) {
                    share(&b.left, counters)?
                } else {
                    1.0
                };
                let r = if reads_counter(&b.right) {
                    share(&b.right, counters)?
                } else {
                    1.0
                };
                return Some(l * r);
            }
            let (c, k, flipped) = if reads_counter(&b.left) && !reads_counter(&b.right) {
                (&*b.left, &*b.right, false)
            } else if reads_counter(&b.right) && !reads_counter(&b.left) {
                (&*b.right, &*b.left, true)
            } else {
                return None;
            };
            if let Some(n) = modulus(c) {
                return match b.op {
                    BinOp::Eq(_) => Some(1.0 / n),
                    BinOp::Ne(_) => Some(1.0 - 1.0 / n),
                    _ => None,
                };
            }
            let plain = matches!(strip(c), Expr::Path(_)) || matches!(strip(c), Expr::Binary(_));
            if !plain || !is_constant(k) {
                return None;
            }
            // `counter OP constant`, with OP mirrored when the counter is on the right.
            let first_only = match (&b.op, flipped) {
                (BinOp::Eq(_), _) => true,
                (BinOp::Ne(_), _) => false,
                (BinOp::Lt(_) | BinOp::Le(_), false) | (BinOp::Gt(_) | BinOp::Ge(_), true) => true,
                (BinOp::Gt(_) | BinOp::Ge(_), false) | (BinOp::Lt(_) | BinOp::Le(_), true) => false,
                _ => return None,
            };
            Some(if first_only { 0.0 } else { 1.0 })
        }
        _ => None,
    }
}

/// `N` of `expr % N` with an integer literal `N` (at least 1).
fn modulus(e: &syn::Expr) -> Option<f64> {
    match strip(e) {
        syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::Rem(_)) => match strip(&b.right) {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => i
                .base10_parse::<u64>()
                .ok()
                .filter(|n| *n >= 1)
                .map(|n| n as f64),
            _ => None,
        },
        _ => None,
    }
}

/// A literal or a name (a loop-invariant bound such as `warmup`), not a computation.
fn is_constant(e: &syn::Expr) -> bool {
    matches!(strip(e), syn::Expr::Lit(_) | syn::Expr::Path(_))
}

fn strip(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip(&p.expr),
        syn::Expr::Cast(c) => strip(&c.expr),
        other => other,
    }
}
