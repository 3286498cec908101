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

use super::{Context, Lowered};
use crate::body::Facts;
use crate::diagnostics::{Diagnostic, Loc};
use crate::events::{self, Item};
use crate::ir::{Branch, Node};
use crate::syntax::strip_casts;

/// What a coarse branch's warning advises: guard by the rank or the counter.
const GUARD_NOTE: &str = "the structure is coarser here; guard communication by the rank or the iteration counter, or move it out of the branch, for a finer one";

/// What it advises for a branch on the iteration counter whose period is not known before the
/// program runs (`step % every == 0` with `every` an argument).
const PERIOD_NOTE: &str = "the structure is coarser here; a period the program knows before it runs (`step % EVERY == 0` with `const EVERY`, or a literal) gives each arm its share of the iterations";

impl Lowered {
    /// The share of iterations an event under `guard` runs in, with its condition as the
    /// structure shows it, when the guard is on the iteration counter.
    pub(super) fn guard_share(&self, guard: &events::Guard) -> Option<(f64, String)> {
        if !crate::syntax::mentions_any(&guard.cond, &self.counters) {
            return None;
        }
        let [then, otherwise] = arm_shares(&guard.cond, &self.counters, &self.consts)?;
        Some(if guard.then_arm {
            (then, guard.text.clone())
        } else {
            (otherwise, format!("!({})", guard.text))
        })
    }

    pub(super) fn comm_branch(&mut self, b: Branch, ctx: Context, facts: &Facts) {
        let reads_counter = b.cond.reads.iter().any(|r| self.counters.contains(r));
        // The rank as a variable, or as a field (`if self.rank == 0`, `info.rank == root`), or a
        // neighbour computed from it (`if right >= 0` with `let right = if rank < size - 1 {
        // rank + 1 } else { -1 }`, `if partner != NONE` with `let partner = partner_of(rank,
        // ..)`, a small function expanded).
        let reads_rank = b.cond.reads.iter().any(|r| {
            facts.is_rank(r)
                || facts
                    .glue_defs
                    .get(r)
                    .is_some_and(|def| facts.mentions_rank(def))
        }) || facts.mentions_rank(&b.cond_text);
        if reads_counter {
            self.counter_branch(b, ctx, facts);
            return;
        }
        if !reads_rank {
            return self.coarse_branch(b, ctx, facts, "its condition depends on data", GUARD_NOTE);
        }
        match split_arms(&b) {
            Some(parts) => self.rank_branch(b, parts, ctx, facts),
            None => self.coarse_branch(
                b,
                ctx,
                facts,
                "its arms communicate between computations",
                GUARD_NOTE,
            ),
        }
    }

    /// A branch on the iteration counter.
    fn counter_branch(&mut self, mut b: Branch, ctx: Context, facts: &Facts) {
        if let [first, second] = b.arms.as_mut_slice() {
            if same_shape(first, second) {
                set_alt(first, second);
                self.diags.push(
                    Diagnostic::warning(
                        format!(
                            "the arms of `if {}` alternate and have the same shape: the first is analysed, the second is measured as it",
                            b.cond_text
                        ),
                        Some(b.loc),
                    )
                    .with_label("analysed once"),
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
            .and_then(|c| arm_shares(c, &self.counters, &self.consts))
        else {
            self.coarse_branch(
                b,
                ctx,
                facts,
                "how often its arms run cannot be read off",
                PERIOD_NOTE,
            );
            return;
        };
        if !b.cond.glue {
            self.stmt(b.cond.clone());
        }
        let guards = [
            (shares[0], b.cond_text.clone()),
            (shares[1], format!("!({})", b.cond_text)),
        ];
        // An arm that runs in every iteration but the first ones (the other runs only in them:
        // `if k == 1 { .. } else { .. }`) is steady state, charged in full, but its events keep
        // their condition: a run's first iterations do not show them.
        let peeled = shares.contains(&0.0);
        // An `if` has at most two arms (`else if` is a branch inside the second).
        for (arm, (share, cond)) in b.arms.into_iter().zip(guards) {
            if share == 0.0 {
                if arm.iter().any(Node::has_comm) {
                    self.diags.push(
                        Diagnostic::warning(
                            format!("this arm runs only in the first iterations (`{cond}`): it is not part of the steady state and is not analysed"),
                            arm.iter().find_map(Node::loc).or(Some(b.loc)),
                        )
                        .with_label("not analysed"),
                    );
                }
            } else if share < 1.0 || peeled {
                self.guards.push((share, cond));
                self.block(arm, ctx, facts);
                self.guards.pop();
            } else {
                self.block(arm, ctx, facts);
            }
        }
    }

    /// A branch on the rank whose arms each compute, communicate, then compute (`parts`).
    fn rank_branch(&mut self, mut b: Branch, parts: Parts, ctx: Context, facts: &Facts) {
        let Parts {
            before,
            comm,
            after,
        } = parts;
        // The parts replace the arms: each part is a branch on the same condition.
        b.arms.clear();
        let branch = |arms: Vec<Vec<Node>>| Branch { arms, ..b.clone() };
        if before.iter().any(|a| !a.is_empty()) {
            self.item(Item::Node(Node::Branch(branch(before))), ctx, facts);
        }
        // The communication of every arm is one event, placed at the first arm's calls and
        // measured at the others' too.
        let places: Vec<Loc> = comm
            .iter()
            .filter_map(|arm| arm.iter().filter_map(Node::loc).reduce(Loc::to))
            .collect();
        for item in events::form(vec![Node::Branch(branch(comm))]) {
            // One event: the communication parts hold only communication and glue.
            let item = match item {
                Item::Event(mut draft) => {
                    if let Some((first, rest)) = places.split_first() {
                        draft.loc = *first;
                        draft.alt = rest.to_vec();
                    }
                    Item::Event(draft)
                }
                // The parts did not make one event: lowering this branch again would split it
                // the same way, forever. (A condition that communicates did this, `if { send(..);
                // x } > 0.0 { all_reduce(..) }`; the body builder now puts such a condition
                // before its branch.)
                Item::Node(Node::Branch(b)) => {
                    self.coarse_branch(b, ctx, facts, "its condition communicates", GUARD_NOTE);
                    continue;
                }
                other => other,
            };
            self.item(item, ctx, facts);
        }
        if after.iter().any(|a| !a.is_empty()) {
            let mut b = branch(after);
            b.cond.glue = true; // lowered once, before the communication
            self.item(Item::Node(Node::Branch(b)), ctx, facts);
        }
    }

    /// The coarser reading: the arms in order, as if each ran.
    fn coarse_branch(&mut self, b: Branch, ctx: Context, facts: &Facts, why: &str, note: &str) {
        self.diags.push(
            Diagnostic::warning(
                format!("a branch that communicates and computes, and {why}: its arms are analysed in order as if each ran"),
                Some(b.loc),
            )
            .with_label("both computes and communicates")
            .with_note(note),
        );
        if !b.cond.glue {
            self.stmt(b.cond);
        }
        for arm in b.arms {
            self.block(arm, ctx, facts);
        }
    }
}

/// The arms of a rank-guarded branch cut in three: the computation before each arm's
/// communication, its communication with the glue between the calls, and the computation after.
struct Parts {
    before: Vec<Vec<Node>>,
    comm: Vec<Vec<Node>>,
    after: Vec<Vec<Node>>,
}

/// `None` when some arm's communication surrounds computation.
fn split_arms(b: &Branch) -> Option<Parts> {
    let mut parts = Parts {
        before: vec![],
        comm: vec![],
        after: vec![],
    };
    for arm in &b.arms {
        let (f, l) = match (
            arm.iter().position(Node::has_comm),
            arm.iter().rposition(Node::has_comm),
        ) {
            (Some(f), Some(l)) => (f, l + 1),
            _ => (arm.len(), arm.len()),
        };
        if !arm[f..l]
            .iter()
            .all(|n| n.only_comm_and_glue() || n.is_glue())
        {
            return None;
        }
        parts.before.push(arm[..f].to_vec());
        parts.comm.push(arm[f..l].to_vec());
        parts.after.push(arm[l..].to_vec());
    }
    Some(parts)
}

/// Whether two arms that communicate run the same code on other variables: the same tree of
/// statements, loops and branches, making the same communication and function calls.
fn same_shape(a: &[Node], b: &[Node]) -> bool {
    a.iter().any(Node::has_comm) && same_tree(a, b)
}

fn same_tree(a: &[Node], b: &[Node]) -> bool {
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
                    && same_tree(&l.body, &m.body)
            }
            (Node::Branch(p), Node::Branch(q)) => {
                p.arms.len() == q.arms.len()
                    && p.arms.iter().zip(&q.arms).all(|(x, y)| same_tree(x, y))
            }
            _ => false,
        })
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
/// and `c <= k` (a literal `k`) only in the first iterations (share 0); `c > k`, `c >= k`,
/// `c != k` in all but the first (share 1). `&&` multiplies the shares of its counter conditions (others count as
/// always true). `None` when the condition reads the counter some other way.
fn arm_shares(cond: &syn::Expr, counters: &[String], consts: &Consts) -> Option<[f64; 2]> {
    let first = share(cond, counters, consts)?;
    Some([first, 1.0 - first])
}

/// The program's numeric constants by name (`None`: given different values).
type Consts = crate::hash::HashMap<String, Option<f64>>;

fn share(cond: &syn::Expr, counters: &[String], consts: &Consts) -> Option<f64> {
    use syn::{BinOp, Expr};
    let reads_counter = |e: &Expr| crate::syntax::mentions_any(e, counters);
    match cond {
        Expr::Paren(p) => share(&p.expr, counters, consts),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Not(_)) => {
            share(&u.expr, counters, consts).map(|s| 1.0 - s)
        }
        Expr::Binary(b) => {
            // `step % 10 == 0 || step == steps - 1`: a test for one iteration adds nothing to
            // the steady state's share.
            if let BinOp::Or(_) = b.op {
                let part = |e: &Expr| {
                    if one_iteration(e, counters) {
                        Some(0.0)
                    } else {
                        share(e, counters, consts)
                    }
                };
                let (l, r) = (part(&b.left)?, part(&b.right)?);
                return Some(l + r - l * r);
            }
            if let BinOp::And(_) = b.op {
                let l = if reads_counter(&b.left) {
                    share(&b.left, counters, consts)?
                } else {
                    1.0
                };
                let r = if reads_counter(&b.right) {
                    share(&b.right, counters, consts)?
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
            if let Some(n) = modulus(c, consts) {
                return match b.op {
                    BinOp::Eq(_) => Some(1.0 / n),
                    BinOp::Ne(_) => Some(1.0 - 1.0 / n),
                    _ => None,
                };
            }
            // Only a literal bound says the arm runs in the first iterations alone: a named one
            // may be the loop's own bound (`if step < steps - 1`), true in all iterations.
            let literal = matches!(strip_casts(k), Expr::Lit(_));
            if !matches!(strip_casts(c), Expr::Path(_)) || !literal {
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

/// `counter == bound` (either way round) with a bound that does not read the counter: true in
/// one iteration.
fn one_iteration(e: &syn::Expr, counters: &[String]) -> bool {
    let syn::Expr::Binary(b) = strip_casts(e) else {
        return false;
    };
    let is_counter = |e: &syn::Expr| matches!(strip_casts(e), syn::Expr::Path(p) if p.path.get_ident().is_some_and(|i| counters.iter().any(|c| i == c)));
    let reads = |e: &syn::Expr| crate::syntax::mentions_any(e, counters);
    matches!(b.op, syn::BinOp::Eq(_))
        && ((is_counter(&b.left) && !reads(&b.right)) || (is_counter(&b.right) && !reads(&b.left)))
}

/// `N` of `expr % N` with a whole `N` of at least 1: an integer literal, a float literal with
/// no fraction (`(step as f64) % 5.0`), or a constant holding one (`step % OUTPUT_EVERY`).
fn modulus(e: &syn::Expr, consts: &Consts) -> Option<f64> {
    let syn::Expr::Binary(b) = strip_casts(e) else {
        return None;
    };
    if !matches!(b.op, syn::BinOp::Rem(_)) {
        return None;
    }
    let n = match strip_casts(&b.right) {
        syn::Expr::Path(p) => p
            .path
            .get_ident()
            .and_then(|id| consts.get(&id.to_string()).copied().flatten()),
        other => crate::syntax::number(other),
    }?;
    (n >= 1.0 && n.fract() == 0.0 && n < 1e15).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shares(cond: &str) -> Option<[f64; 2]> {
        let e = syn::parse_str::<syn::Expr>(cond).unwrap();
        let consts: Consts = [
            ("EVERY".to_string(), Some(10.0)),
            ("WSTEP".to_string(), Some(5.0)),
            ("HALF".to_string(), Some(2.5)),
            ("TWICE".to_string(), None),
        ]
        .into_iter()
        .collect();
        arm_shares(&e, &["step".to_string(), "k".to_string()], &consts)
    }

    #[test]
    fn guards_on_the_counter_give_each_arms_share_of_the_iterations() {
        assert_eq!(shares("step % 10 == 0"), Some([0.1, 0.9]));
        // Plus the last iteration, which the steady state does not see.
        assert_eq!(
            shares("step % 10 == 0 || step == steps - 1"),
            Some([0.1, 0.9])
        );
        // Coprime moduli: multiples of 2 or of 3 are two thirds of the iterations.
        let [or, rest] = shares("step % 2 == 0 || step % 3 == 0").unwrap();
        assert!((or - 2.0 / 3.0).abs() < 1e-12 && (rest - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(shares("0 == (step % 4)"), Some([0.25, 0.75]));
        assert_eq!(shares("step % 4 != 0"), Some([0.75, 0.25]));
        assert_eq!(shares("!(step % 2 == 0)"), Some([0.5, 0.5]));
        // Only the first iterations: the arm is not steady state.
        assert_eq!(shares("k == 1"), Some([0.0, 1.0]));
        assert_eq!(shares("k < 3"), Some([0.0, 1.0]));
        assert_eq!(shares("3 > k"), Some([0.0, 1.0]));
        assert_eq!(shares("k > 1"), Some([1.0, 0.0]));
        // Other conditions count as always true beside the counter's.
        assert_eq!(shares("step % 10 == 0 && rank == 0"), Some([0.1, 0.9]));
        // A constant modulus, and a whole float one.
        assert_eq!(shares("step % EVERY == 0"), Some([0.1, 0.9]));
        assert_eq!(shares("(step as f64) % WSTEP == 0.0"), Some([0.2, 0.8]));
        assert_eq!(shares("(step as f64) % 4.0 == 0.0"), Some([0.25, 0.75]));
    }

    #[test]
    fn guards_whose_frequency_cannot_be_read_off_give_none() {
        // A named bound may be the loop's own: `step < steps - 1` holds almost always.
        assert_eq!(shares("step < steps"), None);
        assert_eq!(shares("step + 1 < steps"), None);
        assert_eq!(shares("step % n == 0"), None);
        assert_eq!(shares("step == next_output"), None);
        assert_eq!(shares("step % 10 < 3"), None);
        // A constant that is no whole number, or has different values in different places.
        assert_eq!(shares("(step as f64) % HALF == 0.0"), None);
        assert_eq!(shares("step % TWICE == 0"), None);
        assert_eq!(shares("(step as f64) % 2.5 == 0.0"), None);
    }

    /// The nodes of the only solver's main loop in `body` (inside a `main` with rsmpi).
    fn arms(body: &str) -> Vec<Vec<Node>> {
        let src = format!(
            "use mpi::traits::*;\nfn main() {{\n let u = mpi::initialize().unwrap();\n let world = u.world();\n \
             let rank = world.rank();\n let mut a = vec![0.0f64; 10];\n let mut b = vec![0.0f64; 10];\n \
             for it in 0..9 {{ {body} }}\n}}\n"
        );
        let mut diags = crate::Diagnostics::default();
        let mut program = crate::load::load_source("t.rs", &src, &mut diags);
        for (i, f) in program.functions.iter().enumerate() {
            program.by_name.entry(f.name.clone()).or_default().push(i);
        }
        let comm = crate::body::Communicating::new(&program);
        let mut facts = Facts::default();
        let (nodes, _) =
            crate::body::build_function(&program, 0, &|i| comm.communicates(i), &mut facts);
        let Some(Node::Loop(main)) = nodes.into_iter().find(|n| matches!(n, Node::Loop(_))) else {
            panic!("no main loop");
        };
        match main.body.into_iter().next() {
            Some(Node::Branch(b)) => b.arms,
            other => panic!("not a branch: {other:?}"),
        }
    }

    /// The text structure of a program whose main loop (over `it`) is `body`, with the module
    /// items `items` before `main`.
    fn structure_of(items: &str, body: &str) -> String {
        let src = format!(
            "use mpi::traits::*;\n{items}\nfn main() {{\n let u = mpi::initialize().unwrap();\n let world = u.world();\n \
             let mut a = vec![0.0f64; 10];\n let mut b = vec![0.0f64; 10];\n \
             for it in 0..90 {{ for i in 1..9 {{ b[i] = a[i - 1] + a[i + 1]; }} {body} }}\n}}\n"
        );
        let analysis = crate::analyze_source("t.rs", &src, &crate::Options::default());
        crate::emit::render(&analysis.structure, crate::emit::Format::Text)
    }

    /// An `if` on the iteration counter whose one arm only communicates is one event, which
    /// runs in that arm's share of the iterations.
    #[test]
    fn a_communicating_arm_guarded_by_the_counter_is_a_conditional_event() {
        let reduce =
            "world.all_reduce_into(&a[0], &mut b[0], mpi::collective::SystemOperation::sum());";
        let s = structure_of("", &format!("if it % 4 == 0 {{ {reduce} }}"));
        assert!(s.contains("when it % 4 == 0 (frequency 0.25)"), "{s}");
        // The `else` arm runs in the other iterations.
        let s = structure_of("", &format!("if it % 4 == 0 {{ }} else {{ {reduce} }}"));
        assert!(s.contains("when !(it % 4 == 0) (frequency 0.75)"), "{s}");
        // A constant modulus (the constants `load` keeps: its own test covers where they are).
        let s = structure_of(
            "const EVERY: usize = 10;",
            &format!("if it % EVERY == 0 {{ {reduce} }}"),
        );
        assert!(s.contains("when it % EVERY == 0 (frequency 0.1)"), "{s}");
        // Both arms communicate, or the condition is not the counter's: every iteration.
        let s = structure_of(
            "",
            &format!("if it % 4 == 0 {{ {reduce} }} else {{ world.barrier(); }}"),
        );
        assert!(!s.contains("when"), "{s}");
        let s = structure_of("", &format!("if a[0] > 1.0 {{ {reduce} }}"));
        assert!(!s.contains("when"), "{s}");
        // Two guarded parts of one event under different guards: the event runs unconditionally.
        let s = structure_of(
            "",
            &format!("if it % 4 == 0 {{ {reduce} }} if it % 5 == 0 {{ {reduce} }}"),
        );
        assert!(!s.contains("when"), "{s}");
    }

    /// The rank read as a field (`if self.rank == 0`) guards like the rank variable: the arms'
    /// gathers are one event, not a branch "depending on data" read as if both arms ran.
    #[test]
    fn a_rank_field_guards_like_the_rank() {
        let src = "use mpi::traits::*;\nuse mpi::topology::SimpleCommunicator;\n\
                   struct Info { rank: i32 }\n\
                   impl Info {\n fn save(&self, u: &[f64], world: &SimpleCommunicator) {\n \
                   let root = world.process_at_rank(0);\n if self.rank == 0 {\n \
                   let mut all = vec![0.0; 64];\n root.gather_into_root(&u[..], &mut all[..]);\n \
                   println!(\"{}\", all[0]);\n } else {\n root.gather_into(&u[..]);\n }\n }\n}\n\
                   fn main() {\n let universe = mpi::initialize().unwrap();\n let world = universe.world();\n \
                   let info = Info { rank: world.rank() };\n let mut u = vec![0.0; 16];\n \
                   for _ in 0..100 {\n for x in u.iter_mut() { *x += 1.0; }\n info.save(&u, &world);\n }\n}\n";
        let analysis = crate::analyze_source("t.rs", src, &crate::Options::default());
        let text = crate::emit::render(&analysis.structure, crate::emit::Format::Text);
        assert_eq!(text.matches("comm event").count(), 1, "{text}");
        assert!(
            text.contains("mpi::gather_into_root, mpi::gather_into"),
            "{text}"
        );
        assert!(
            !analysis
                .diagnostics
                .iter()
                .any(|d| d.message.contains("depends on data")),
            "{}",
            analysis.render_diagnostics()
        );
    }

    /// Found by the fuzz target: a rank branch whose condition also communicates was split into
    /// the same parts again and again until the stack overflowed. The condition is now a
    /// statement of its own before the branch (it runs before either arm): its send is an event,
    /// then the arm's reduction.
    #[test]
    fn a_rank_branch_whose_condition_communicates_is_lowered_once() {
        let src = "use mpi::traits::*;\nfn main() {\n let u = mpi::initialize().unwrap();\n \
                   let world = u.world();\n let rank = world.rank();\n let x = vec![1.0f64; 10];\n \
                   for it in 0..9 {\n let y = if { if rank > 0 { world.process_at_rank(rank - 1).send(&1.0); } 1.0 } > 0.0 \
                   { { let mut s = 0.0; world.all_reduce_into(&x[6], &mut s, mpi::collective::SystemOperation::sum()); x[4] } } \
                   else { 2.0 };\n }\n}\n";
        let analysis = crate::analyze_source("t.rs", src, &crate::Options::default());
        let text = crate::emit::render(&analysis.structure, crate::emit::Format::Text);
        let send = text.find("nearest_neighbor by single_call with [rank - 1]: mpi::send");
        let reduce = text.find("reduction by single_call with [all]: mpi::all_reduce_into");
        assert!(send.is_some() && send < reduce, "{text}");
    }

    #[test]
    fn arms_with_the_same_calls_loops_and_branches_have_the_same_shape() {
        let same = arms(
            "if it % 2 == 0 { world.barrier(); for i in 1..9 { b[i] = a[i - 1] + a[i + 1]; } } \
             else { world.barrier(); for i in 1..9 { a[i] = b[i - 1] + b[i + 1]; } }",
        );
        assert!(same_shape(&same[0], &same[1]));
        let other_call = arms(
            "if it % 2 == 0 { world.barrier(); for i in 1..9 { b[i] = a[i]; } } \
             else { world.all_reduce_into(&a[0], &mut b[0], mpi::collective::SystemOperation::sum()); for i in 1..9 { a[i] = b[i]; } }",
        );
        assert!(!same_shape(&other_call[0], &other_call[1]));
        let extra_loop = arms(
            "if it % 2 == 0 { world.barrier(); for i in 1..9 { b[i] = a[i]; } } \
             else { world.barrier(); for i in 1..9 { a[i] = b[i]; } for i in 0..9 { a[i] *= 2.0; } }",
        );
        assert!(!same_shape(&extra_loop[0], &extra_loop[1]));
    }
}
