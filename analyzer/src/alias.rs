//! Slice aliases (DESIGN §3.7): `let up = &cur[(i - 1) * cols..i * cols];` makes `up[j]` an
//! access of `cur` at `(i - 1) * cols + j`, so a stencil written through named neighbour rows
//! classifies like one written with explicit offsets.
//!
//! An alias is a `let` whose initialiser is a reference, index or range slice of a variable (or
//! of another alias), or the block an out-of-core array's I/O read returns (`a.read_block(k)?`).
//! Through `if` / `match` the binding may alias any arm's target; every simple arm counts. Copies
//! (`to_vec()`) are new arrays and never aliases.

use crate::hash::HashMap;

/// What a name views: `var` indexed by `dims`; when `open`, the last of `dims` is the start of a
/// range, and the alias's own first index adds to it.
#[derive(Clone)]
pub struct Alias {
    /// The array viewed (never itself an alias: aliases of aliases are resolved).
    pub var: String,
    /// The index expressions that select the view, outermost first.
    pub dims: Vec<syn::Expr>,
    /// The last of `dims` is the start of a range (`&cur[lo..hi]`), to which the alias's own
    /// first index adds; otherwise the alias's indices follow `dims`.
    pub open: bool,
}

impl std::fmt::Debug for Alias {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Alias")
            .field("var", &self.var)
            .field("dims", &crate::syntax::codes(&self.dims))
            .field("open", &self.open)
            .finish()
    }
}

/// The aliases bound so far (flat, like the communicator bindings: a later `let` replaces).
pub type Aliases = HashMap<String, Vec<Alias>>;

/// The accesses an indexed access `name[dims..]` stands for: through an alias, one per target,
/// with the target's offsets folded in; otherwise the access itself.
pub fn resolve(
    aliases: &Aliases,
    name: &str,
    dims: &[&syn::Expr],
) -> Vec<(String, Vec<syn::Expr>)> {
    match aliases.get(name) {
        Some(targets) => targets.iter().map(|t| apply(t, dims)).collect(),
        None => vec![(
            name.to_string(),
            dims.iter().map(|d| (*d).clone()).collect(),
        )],
    }
}

fn apply(target: &Alias, dims: &[&syn::Expr]) -> (String, Vec<syn::Expr>) {
    let mut out = target.dims.clone();
    match (target.open, out.pop(), dims.split_first()) {
        (true, Some(start), Some((first, rest))) => {
            out.push(syn::parse_quote!((#start) + (#first)));
            out.extend(rest.iter().map(|d| (*d).clone()));
        }
        (_, last, _) => {
            out.extend(last);
            out.extend(dims.iter().map(|d| (*d).clone()));
        }
    }
    (target.var.clone(), out)
}

/// The targets `init` aliases, if it is a simple alias (see the module documentation); empty
/// otherwise. `is_array` says which variables are out-of-core arrays whose I/O reads are views.
pub fn targets(aliases: &Aliases, init: &syn::Expr, is_array: &dyn Fn(&str) -> bool) -> Vec<Alias> {
    use syn::Expr;
    match init {
        Expr::Reference(r) => targets(aliases, &r.expr, is_array),
        Expr::Paren(p) => targets(aliases, &p.expr, is_array),
        Expr::Group(g) => targets(aliases, &g.expr, is_array),
        Expr::Try(t) => targets(aliases, &t.expr, is_array),
        Expr::Block(b) => tail(aliases, &b.block, is_array),
        Expr::If(i) => {
            // An `else if` chain as a list: one vector, not one per level copied into the next.
            let mut out = Vec::new();
            let mut level = i;
            loop {
                out.extend(tail(aliases, &level.then_branch, is_array));
                match level.else_branch.as_ref().map(|(_, e)| &**e) {
                    Some(Expr::If(next)) => level = next,
                    Some(e) => break out.extend(targets(aliases, e, is_array)),
                    None => break,
                }
            }
            out
        }
        Expr::Match(m) => m
            .arms
            .iter()
            .flat_map(|a| targets(aliases, &a.body, is_array))
            .collect(),
        Expr::Path(p) => match p.path.get_ident() {
            Some(id) => view(aliases, &id.to_string(), None),
            None => vec![],
        },
        Expr::Index(ix) => {
            let Expr::Path(p) = &*ix.expr else {
                // `grid[i][j..]` views through `grid[i]`; `edges[k].1[..]` (a field) is no alias.
                let inner = targets(aliases, &ix.expr, is_array);
                return inner
                    .iter()
                    .map(|t| index_view(t.clone(), &ix.index))
                    .collect();
            };
            let Some(id) = p.path.get_ident() else {
                return vec![];
            };
            view(aliases, &id.to_string(), Some(&ix.index))
        }
        Expr::MethodCall(m) => {
            let name = crate::syntax::Name::of(&m.method);
            let io_read = matches!(name.as_str(), "read_block" | "wait");
            let views = matches!(name.as_str(), "as_slice" | "as_mut_slice");
            match &*m.receiver {
                Expr::Path(p) if io_read || views => match p.path.get_ident() {
                    Some(id) if views || is_array(&id.to_string()) => {
                        view(aliases, &id.to_string(), None)
                    }
                    _ => vec![],
                },
                _ => vec![],
            }
        }
        _ => vec![],
    }
}

fn tail(aliases: &Aliases, b: &syn::Block, is_array: &dyn Fn(&str) -> bool) -> Vec<Alias> {
    match b.stmts.last() {
        Some(syn::Stmt::Expr(e, None)) => targets(aliases, e, is_array),
        _ => vec![],
    }
}

/// `name` viewed whole (`index` none) or through `name[index]`, through `name`'s own aliases.
fn view(aliases: &Aliases, name: &str, index: Option<&syn::Expr>) -> Vec<Alias> {
    let bases = aliases.get(name).cloned().unwrap_or_else(|| {
        vec![Alias {
            var: name.to_string(),
            dims: vec![],
            open: false,
        }]
    });
    bases
        .into_iter()
        .map(|b| match index {
            Some(ix) => index_view(b, ix),
            None => b,
        })
        .collect()
}

/// `base[index]`: a range opens (or shifts) a row offset; a plain index adds a dimension.
fn index_view(base: Alias, index: &syn::Expr) -> Alias {
    match index {
        syn::Expr::Range(r) => {
            let start: syn::Expr = match &r.start {
                Some(s) => (**s).clone(),
                None => syn::parse_quote!(0),
            };
            let (var, dims) = apply(&base, &[&start]);
            Alias {
                var,
                dims,
                open: true,
            }
        }
        other => {
            let (var, dims) = apply(&base, &[other]);
            Alias {
                var,
                dims,
                open: false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    fn bind(aliases: &mut Aliases, name: &str, init: &str, arrays: &[&str]) {
        let e: syn::Expr = syn::parse_str(init).unwrap();
        let t = targets(aliases, &e, &|v| arrays.contains(&v));
        if t.is_empty() {
            aliases.remove(name);
        } else {
            aliases.insert(name.to_string(), t);
        }
    }

    fn accesses(aliases: &Aliases, name: &str, index: &str) -> Vec<String> {
        let ix: syn::Expr = syn::parse_str(index).unwrap();
        resolve(aliases, name, &[&ix])
            .into_iter()
            .map(|(v, d)| {
                let dims: Vec<String> = d.iter().map(|e| e.to_token_stream().to_string()).collect();
                format!("{v}[{}]", dims.join("]["))
            })
            .collect()
    }

    #[test]
    fn a_row_slice_through_if_arms_offsets_the_access() {
        let mut al = Aliases::default();
        bind(&mut al, "cur", "a.read_block(k)?", &["a"]);
        bind(
            &mut al,
            "up",
            "if i > 0 { &cur[(i - 1) * cols..i * cols] } else if k > 0 { &edges[k - 1].1[..] } else { &top[..] }",
            &["a"],
        );
        assert_eq!(
            accesses(&al, "up", "j"),
            ["a[((i - 1) * cols) + (j)]", "top[(0) + (j)]"]
        );
        // The offset is what classification sees: one row above `cur[i * cols + j]`.
        let j: syn::Expr = syn::parse_str("j").unwrap();
        let (_, dims) = &resolve(&al, "up", &[&j])[0];
        let vars = ["i".to_string(), "j".to_string()];
        let up = crate::classify::affine_index(&dims[0], &vars).unwrap();
        let here =
            crate::classify::affine_index(&syn::parse_str("i * cols + j").unwrap(), &vars).unwrap();
        assert_eq!(up.coefficients, here.coefficients);
        assert_eq!(up.symbols, vec![("cols".to_string(), -1)]);
    }

    #[test]
    fn element_views_add_dimensions_and_copies_are_not_aliases() {
        let mut al = Aliases::default();
        bind(&mut al, "row", "&grid[i - 1]", &[]);
        assert_eq!(accesses(&al, "row", "j"), ["grid[i - 1][j]"]);
        bind(&mut al, "row", "grid[i].to_vec()", &[]);
        assert_eq!(accesses(&al, "row", "j"), ["row[j]"]);
        // `wait` / `read_block` only view an out-of-core array, not any receiver.
        bind(&mut al, "x", "handle.wait()", &["a"]);
        assert!(!al.contains_key("x"));
        // A slice of a slice shifts the offset again.
        bind(&mut al, "s", "&u[lo..]", &[]);
        bind(&mut al, "t", "&s[1..]", &[]);
        assert_eq!(accesses(&al, "t", "j"), ["u[((lo) + (1)) + (j)]"]);
    }
}
