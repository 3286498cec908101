//! Facts about a solver's variables gathered while building: rank and size variables,
//! partition-sized scalars, and which arrays are distributed (DESIGN §3.7) — their length derives
//! from this node's partition — with their element types.

use crate::syntax::Name;
use syn::spanned::Spanned;

use super::chains::{chain_parts, find_chain};
use super::{peel, Builder, VarDecl};
use crate::binding::pattern_idents;
use crate::diagnostics::Loc;
use crate::scan::is_glue;
use crate::syntax::{base_var, strip_casts};

impl Builder<'_, '_> {
    /// Records slice and vector parameters as variables of the solver.
    pub(super) fn declare_params(&mut self, sig: &syn::Signature) {
        for input in &sig.inputs {
            if let syn::FnArg::Typed(pt) = input {
                let ty = &pt.ty;
                let ty_text = quote::quote!(#ty).to_string();
                // A range of rows (`mine: Range<usize>`, what `session.rows(n)` hands out) is
                // this node's partition.
                if ty_text.contains("Range") && !ty_text.contains('[') {
                    self.facts.dist_sizes.extend(pattern_idents(&pt.pat));
                }
                // `grid: &mut Grid` of a struct whose constructor sizes its arrays by the
                // partition (`body::layout`): this node's block.
                if let Some(elem_type) =
                    super::layout::block_elem(self.program, &crate::syntax::type_name(ty))
                {
                    for name in pattern_idents(&pt.pat) {
                        self.facts.variables.push(VarDecl {
                            name,
                            distributed: true,
                            elem_type: elem_type.clone(),
                            loc: self.loc(pt.span()),
                            param: true,
                        });
                    }
                    continue;
                }
                // A closure's signature may name a `Vec` (`&mut dyn FnMut(&Vec<f64>)`).
                let array_type = ty_text.contains('[')
                    || ty_text.contains("Vec")
                    || ty_text.contains("DistArray");
                if array_type
                    && !crate::syntax::is_closure_type(
                        &pt.ty,
                        &sig.generics,
                        &self.program.closure_aliases,
                    )
                {
                    for name in pattern_idents(&pt.pat) {
                        self.facts.arrays.insert(name.clone());
                        let distributed = ty_text.contains("DistArray");
                        let elem_type = elem_of_type(&pt.ty);
                        self.facts.variables.push(VarDecl {
                            name,
                            distributed,
                            elem_type,
                            loc: self.loc(pt.span()),
                            param: true,
                        });
                    }
                }
            }
        }
    }

    /// What every caller of function `index` passes it (`body::layout::given_by_callers`): a
    /// parameter given this node's block is a distributed array, one given a partition size is
    /// one. Free functions only (their arguments are their parameters, in order).
    pub(super) fn declare_given(&mut self, index: usize) {
        let f = &self.program.functions[index];
        let Some(given) = super::layout::given_by_callers(self.program, index) else {
            return;
        };
        for (k, input) in f.sig.inputs.iter().enumerate() {
            let syn::FnArg::Typed(pt) = input else {
                continue;
            };
            let names = pattern_idents(&pt.pat);
            if given.blocks.get(k) == Some(&true) {
                for v in self.facts.variables.iter_mut() {
                    if v.param && names.contains(&v.name) {
                        v.distributed = true;
                    }
                }
            }
            if given.sizes.get(k) == Some(&true) {
                self.facts.dist_sizes.extend(names);
            }
        }
    }

    /// Whether `e` makes an array (`vec![0.0; n]`, `Vec::with_capacity(n)`, `Array2::zeros(..)`):
    /// `Some` of its element type when it shows it.
    pub(super) fn array_made(&self, e: &syn::Expr) -> Option<Option<String>> {
        let m = mentions(e);
        m.is_array.then_some(m.elem_type)
    }

    /// Whether variable `name`, of a struct type (`var_types`), holds this node's block: its
    /// constructor sizes one of its arrays by the partition (`body::layout`). `Some` of that
    /// array's element type.
    fn holds_block(&self, name: &str) -> Option<Option<String>> {
        super::layout::block_elem(self.program, self.facts.var_types.get(name)?)
    }

    /// A method's struct fields that its constructor sizes by the partition (`body::layout`):
    /// the arrays are the method's distributed variables, named by field (`self.u` is `u`),
    /// and the sizes its partition sizes.
    pub(super) fn declare_self_fields(&mut self, f: &crate::load::Function) {
        if !matches!(f.sig.inputs.first(), Some(syn::FnArg::Receiver(_))) {
            return;
        }
        let Some(layout) =
            super::inline::impl_type(&f.path).and_then(|ty| super::layout::of(self.program, ty))
        else {
            return;
        };
        let loc = self.loc(f.sig.ident.span());
        for (name, elem_type) in &layout.distributed {
            if self.facts.variables.iter().any(|v| &v.name == name) {
                continue;
            }
            self.facts.arrays.insert(name.clone());
            self.facts.data_arrays.insert(name.clone());
            self.facts.variables.push(VarDecl {
                name: name.clone(),
                distributed: true,
                elem_type: elem_type.clone(),
                loc,
                param: false,
            });
        }
        self.facts.dist_sizes.extend(layout.sizes.iter().cloned());
    }

    /// Notes what `let name = e` says about the rank, the size, the partition, arrays and glue;
    /// true when `e` is rank arithmetic done by a small user function (see
    /// [`super::peer_fns::glue_def`]), which makes the statement glue.
    pub(super) fn note_facts(
        &mut self,
        name: &str,
        e: &syn::Expr,
        loc: Loc,
        l: &syn::Local,
    ) -> bool {
        let m = mentions(e);
        match type_of_value(&l.pat, e) {
            Some(ty) => self.facts.var_types.insert(name.to_string(), ty),
            None => self.facts.var_types.remove(name),
        };
        if m.methods.iter().any(|x| x == "rank") && !m.is_array {
            self.facts.rank_vars.insert(name.to_string());
        }
        if m.methods.iter().any(|x| x == "size")
            && !m.is_array
            && m.idents
                .iter()
                .all(|i| !self.facts.rank_vars.contains(i.as_str()))
        {
            self.facts.size_vars.insert(name.to_string());
        } else if name == "size" {
            self.facts.size_is_other = true;
        }
        // `let total_nrow = local_nrow * size`: what every rank holds is `size` times this
        // rank's share, so `local_nrow` is a partition size (weak scaling fixes the share per rank
        // and derives the whole from it, where strong scaling divides the whole by `size`).
        if let Some(share) = self.share_times_size(e) {
            self.facts.dist_sizes.insert(share);
        }
        let partition_marker = self.partition_marker(&m);
        let forced_dist = self
            .program
            .config
            .variables
            .distributed
            .iter()
            .any(|v| v == name);
        let forced_repl = self
            .program
            .config
            .variables
            .replicated
            .iter()
            .any(|v| v == name);
        let annotated_array = match &l.pat {
            syn::Pat::Type(t) => {
                let ty = &t.ty;
                let text = quote::quote!(#ty).to_string();
                text.contains("Vec")
                    || text.starts_with('[')
                    || text.contains("DistArray")
                    || is_ndarray_type(&crate::syntax::type_name(ty))
            }
            _ => false,
        };
        // A copy of an array is an array (`let scratch = field.clone()`, `let r = b.to_vec()` of
        // an array parameter), as is a literal one.
        let copies_array = match e {
            syn::Expr::MethodCall(mc) => {
                matches!(
                    crate::syntax::Name::of(&mc.method).as_str(),
                    "clone" | "to_vec" | "to_owned"
                ) && crate::syntax::base_var(&mc.receiver)
                    .is_some_and(|v| self.facts.arrays.contains(&v))
            }
            syn::Expr::Array(_) | syn::Expr::Repeat(_) => true,
            _ => false,
        };
        let copied_elem = match e {
            syn::Expr::MethodCall(mc) => crate::syntax::base_var(&mc.receiver).and_then(|v| {
                self.facts
                    .variables
                    .iter()
                    .find(|x| x.name == v)
                    .and_then(|x| x.elem_type.clone())
            }),
            syn::Expr::Array(a) => a.elems.first().and_then(literal_type),
            syn::Expr::Repeat(r) => literal_type(&r.expr),
            _ => None,
        };
        // `#[mheta::distributed]` / `#[mheta::replicated]` declare a variable and its class.
        let marked = class_attr(&l.attrs);
        if m.is_array || annotated_array || copies_array || marked.is_some() {
            self.facts.arrays.insert(name.to_string());
            let elem_type = match &l.pat {
                syn::Pat::Type(t) => elem_of_type(&t.ty),
                _ => None,
            }
            .or(m.elem_type.clone())
            .or(copied_elem);
            // Arrays of indices and counts (`Vec<usize>`) are index tables: reading one of their
            // elements is envelope work, not a read of the program's data.
            if matches!(elem_type.as_deref(), Some("usize" | "isize")) {
                self.facts.data_arrays.remove(name);
            } else {
                self.facts.data_arrays.insert(name.to_string());
            }
            // mheta.toml's lists override the attribute, which overrides inference.
            let inferred = marked.unwrap_or_else(|| self.array_is_distributed(e));
            let distributed = (inferred || forced_dist) && !forced_repl;
            self.facts.variables.retain(|v| v.name != name);
            self.facts.variables.push(VarDecl {
                name: name.to_string(),
                distributed,
                elem_type,
                loc,
                param: false,
            });
        } else if let Some(elem_type) = self.holds_block(name) {
            // `let mut g = Grid::new(..)` whose constructor sizes its arrays by the partition:
            // the struct is this node's block.
            self.facts.variables.retain(|v| v.name != name);
            self.facts.variables.push(VarDecl {
                name: name.to_string(),
                distributed: true,
                elem_type,
                loc,
                param: false,
            });
        } else if (partition_marker && !m.methods.iter().any(|x| x == "rank"))
            || self.partition_bounds(e)
            || self.rank_entry(e)
        {
            self.facts.dist_sizes.insert(name.to_string());
        }
        if let syn::Expr::Closure(c) = e {
            let glue = crate::scan::Glue {
                closures: &self.facts.glue_closures,
                data: &self.facts.data_arrays,
            };
            if glue.expr(&c.body) {
                self.facts.glue_closures.insert(name.to_string());
            }
        } else if is_glue(e) {
            self.facts
                .glue_defs
                .insert(name.to_string(), self.text.of(e));
        } else if let Some(def) = super::peer_fns::glue_def(self.program, e, &self.text) {
            // `let up = g.neighbour(1)`: rank arithmetic in a small function.
            self.facts.glue_defs.insert(name.to_string(), def);
            return true;
        }
        false
    }

    /// Whether what an expression mentions derives from this node's partition: the runtime's
    /// partition calls, partition-sized scalars, distributed arrays, or a division by the size.
    pub(super) fn partition_marker(&self, m: &Mentions) -> bool {
        let distributed = |i: &Name| {
            self.facts
                .variables
                .iter()
                .any(|v| v.distributed && v.name == i.as_str())
        };
        m.methods.iter().any(|x| {
            matches!(
                x.as_str(),
                "local_rows" | "partition" | "array" | "rows_of" | "session_rows"
            )
        }) || m.idents.iter().any(|i| {
            self.facts.dist_sizes.contains(i.as_str()) || i == "DistArray" || distributed(i)
        }) || m.divisors.iter().any(|d| self.facts.is_size(d.as_str()))
    }

    /// The `share` of a product `share * size` (either order, casts allowed) with the number of
    /// ranks: a variable (no constant) that holds neither the rank nor the size.
    fn share_times_size(&self, e: &syn::Expr) -> Option<String> {
        let syn::Expr::Binary(b) = strip_casts(peel(e)) else {
            return None;
        };
        if !matches!(b.op, syn::BinOp::Mul(_)) {
            return None;
        }
        let ident = |e: &syn::Expr| match strip_casts(peel(e)) {
            syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
            _ => None,
        };
        let is_size = |e: &syn::Expr| match strip_casts(peel(e)) {
            syn::Expr::MethodCall(mc) => mc.method == "size" && mc.args.is_empty(),
            other => ident(other).is_some_and(|i| self.facts.is_size(&i)),
        };
        let share = if is_size(&b.right) {
            ident(&b.left)?
        } else if is_size(&b.left) {
            ident(&b.right)?
        } else {
            return None;
        };
        (!share.starts_with(char::is_uppercase)
            && !self.facts.is_size(&share)
            && !self.facts.is_rank(&share))
        .then_some(share)
    }

    /// `local_range(n, rank, size)`: a user function of the rank and the size gives this
    /// node's bounds or counts (the partition carried through a function).
    fn partition_bounds(&self, e: &syn::Expr) -> bool {
        let syn::Expr::Call(c) = peel(e) else {
            return false;
        };
        let syn::Expr::Path(p) = &*c.func else {
            return false;
        };
        let user_fn = p
            .path
            .segments
            .last()
            .is_some_and(|s| self.program.by_name.contains_key(&s.ident.to_string()));
        let m = c
            .args
            .iter()
            .map(mentions)
            .fold(Mentions::default(), |mut acc, x| {
                acc.idents.extend(x.idents);
                acc.methods.extend(x.methods);
                acc
            });
        let mentions_rank = m.methods.iter().any(|x| x == "rank")
            || m.idents
                .iter()
                .any(|i| self.facts.rank_vars.contains(i.as_str()));
        let mentions_size = m.methods.iter().any(|x| x == "size")
            || m.idents
                .iter()
                .any(|i| self.facts.size_vars.contains(i.as_str()));
        user_fn && mentions_rank && mentions_size
    }

    /// `counts[rank as usize]`: this rank's entry of a table with one entry per rank (its rows).
    fn rank_entry(&self, e: &syn::Expr) -> bool {
        match strip_casts(peel(e)) {
            syn::Expr::Index(i) => {
                let m = mentions(&i.index);
                m.idents.iter().any(|x| self.facts.is_rank(x))
                    || m.methods.iter().any(|x| x == "rank")
            }
            _ => false,
        }
    }

    /// A length with the number of ranks as a factor (`per_rank * size`) covers every rank:
    /// the whole array, replicated, even when `per_rank` is this node's share.
    fn times_size(&self, len: &syn::Expr) -> bool {
        let is_size = |e: &syn::Expr| match strip_casts(e) {
            syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()).is_some_and(|i| {
                self.facts.size_vars.contains(&i) && !self.facts.dist_sizes.contains(&i)
            }),
            syn::Expr::MethodCall(mc) => mc.method == "size",
            _ => false,
        };
        match strip_casts(len) {
            syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::Mul(_)) => {
                is_size(&b.left) || is_size(&b.right)
            }
            _ => false,
        }
    }

    /// Whether an array initialiser's length derives from the partition (DESIGN §3.7): the
    /// length of `vec![x; n]` / `Vec::with_capacity(n)`, a `ctx.array(..)`, a copy of a
    /// distributed array, or a collection over a partition-sized range. Array literals are fixed.
    pub(super) fn array_is_distributed(&self, e: &syn::Expr) -> bool {
        use syn::Expr;
        match peel(e) {
            Expr::Macro(mac) if mac.mac.path.is_ident("vec") => {
                match crate::syntax::macro_args(&mac.mac).first() {
                    Some(Expr::Repeat(r)) => {
                        !self.times_size(&r.len) && self.partition_marker(&mentions(&r.len))
                    }
                    _ => false,
                }
            }
            Expr::Array(_) | Expr::Repeat(_) => false,
            Expr::Call(c) => {
                let text = quote::quote!(#c).to_string();
                text.contains("DistArray")
                    || c.args
                        .first()
                        .is_some_and(|a| self.partition_marker(&mentions(a)))
            }
            Expr::MethodCall(mc) => {
                let name = crate::syntax::Name::of(&mc.method);
                match name.as_str() {
                    "array" => true,
                    // A copy of a whole array has its class; a copy of a slice, its range's.
                    "clone" | "to_vec" | "to_owned" => match &*mc.receiver {
                        Expr::Index(ix) => self.range_is_distributed(&ix.index),
                        whole => base_var(whole).is_some_and(|v| {
                            self.facts
                                .variables
                                .iter()
                                .any(|x| x.distributed && x.name == v)
                        }),
                    },
                    "collect" => {
                        find_chain(e).is_some_and(|chain| {
                            let (_, root) = chain_parts(chain);
                            self.partition_marker(&mentions(root))
                        }) || self.partition_marker(&mentions(&mc.receiver))
                    }
                    _ => self.partition_marker(&mentions(e)),
                }
            }
            other => self.partition_marker(&mentions(other)),
        }
    }

    /// Whether a slice range's length (`end - start`, simplified) derives from the partition:
    /// `u[rows * cols..(rows + 1) * cols]` has length `cols` whatever `rows` is.
    pub(super) fn range_is_distributed(&self, index: &syn::Expr) -> bool {
        if let syn::Expr::Range(r) = index {
            if let (Some(start), Some(end)) = (&r.start, &r.end) {
                if let (Some(a), Some(b)) =
                    (crate::classify::poly(start), crate::classify::poly(end))
                {
                    let length = crate::classify::add(b, a, -1);
                    let names: Vec<Name> = length
                        .into_iter()
                        .filter(|(_, c)| *c != 0)
                        .flat_map(|(m, _)| m)
                        .map(|n| Name::new(&n))
                        .collect();
                    let m = Mentions {
                        idents: names,
                        ..Mentions::default()
                    };
                    return self.partition_marker(&m);
                }
            }
        }
        self.partition_marker(&mentions(index))
    }
}

/// The class a `let`'s attributes force: `Some(true)` for `#[mheta::distributed]`,
/// `Some(false)` for `#[mheta::replicated]` (also without the `mheta::` prefix).
pub(super) fn class_attr(attrs: &[syn::Attribute]) -> Option<bool> {
    attrs.iter().rev().find_map(|a| {
        let segs = crate::syntax::path_idents(a.path());
        let name = match segs.as_slice() {
            [m, n] if m == "mheta" => n.as_str(),
            [n] => n.as_str(),
            _ => return None,
        };
        match name {
            "distributed" => Some(true),
            "replicated" => Some(false),
            _ => None,
        }
    })
}

/// The element type named in `Vec<T>`, `&[T]`, `DistArray<T>`.
pub(super) fn elem_of_type(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Reference(r) => elem_of_type(&r.elem),
        syn::Type::Slice(s) => Some(type_text(&s.elem)),
        syn::Type::Array(a) => Some(type_text(&a.elem)),
        syn::Type::Path(p) => {
            let last = p.path.segments.last()?;
            match &last.arguments {
                syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
                    syn::GenericArgument::Type(t) => Some(type_text(t)),
                    _ => None,
                }),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The type of a literal as Rust infers it without context (`1.0` → `f64`).
pub(super) fn literal_type(e: &syn::Expr) -> Option<String> {
    match e {
        syn::Expr::Lit(l) => match &l.lit {
            syn::Lit::Float(f) => Some(if f.suffix().is_empty() {
                "f64".into()
            } else {
                f.suffix().into()
            }),
            syn::Lit::Int(i) if !i.suffix().is_empty() => Some(i.suffix().into()),
            syn::Lit::Bool(_) => Some("bool".into()),
            _ => None,
        },
        syn::Expr::Unary(u) => literal_type(&u.expr),
        _ => None,
    }
}

/// A type as Rust prints it (`Vec<f64>`, not `Vec < f64 >`).
pub fn type_text(t: &syn::Type) -> String {
    quote::quote!(#t)
        .to_string()
        .replace(" < ", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
        .replace("& ", "&")
}

/// What an initialiser mentions: identifiers, method names, divisors, whether it allocates an
/// array and the element type it shows.
#[derive(Default)]
pub(super) struct Mentions {
    idents: Vec<Name>,
    methods: Vec<Name>,
    divisors: Vec<Name>,
    is_array: bool,
    elem_type: Option<String>,
}

pub(super) fn mentions(e: &syn::Expr) -> Mentions {
    use syn::visit::Visit;
    struct V(Mentions);
    impl<'ast> Visit<'ast> for V {
        fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
            self.0
                .idents
                .extend(p.path.segments.iter().map(|s| Name::of(&s.ident)));
        }
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            let name = Name::of(&m.method);
            if name == "array" || name == "with_capacity" {
                self.0.is_array = true;
                if let Some(syn::GenericArgument::Type(t)) =
                    m.turbofish.as_ref().and_then(|t| t.args.first())
                {
                    self.0.elem_type = Some(type_text(t));
                }
            }
            // An attached rsmpi program's rows: `session.rows(total)` (one argument; ndarray's
            // `rows()` has none).
            if matches!(name.as_str(), "rows" | "try_rows") && m.args.len() == 1
                || name == "try_rows_sized" && m.args.len() == 2
            {
                self.0.methods.push(Name::new("session_rows"));
            }
            self.0.methods.push(name);
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
            if matches!(b.op, syn::BinOp::Div(_)) {
                let mut inner = V(Mentions::default());
                inner.visit_expr(&b.right);
                self.0.divisors.extend(inner.0.idents);
                self.0.divisors.extend(inner.0.methods);
            }
            syn::visit::visit_expr_binary(self, b);
        }
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if let syn::Expr::Path(p) = &*c.func {
                let segs: Vec<Name> = p.path.segments.iter().map(|s| Name::of(&s.ident)).collect();
                if segs.iter().any(|s| s == "Vec" || s == "DistArray")
                    && segs
                        .last()
                        .is_some_and(|l| l == "with_capacity" || l == "new" || l == "from")
                {
                    self.0.is_array = true;
                }
                // ndarray's owned arrays: `Array2::<f64>::zeros((rows + 2, n))`,
                // `Array1::from_elem(n, 0.0)`, `Array::from_shape_vec(..)`.
                if let Some(ty) = p
                    .path
                    .segments
                    .iter()
                    .find(|s| is_ndarray_type(&s.ident.to_string()))
                {
                    if segs
                        .last()
                        .is_some_and(|l| NDARRAY_CONSTRUCTORS.contains(&l.as_str()))
                    {
                        self.0.is_array = true;
                        if let syn::PathArguments::AngleBracketed(a) = &ty.arguments {
                            self.0.elem_type = a.args.iter().find_map(|g| match g {
                                syn::GenericArgument::Type(t) => Some(type_text(t)),
                                _ => None,
                            });
                        }
                        if segs.last().is_some_and(|l| l == "from_elem") {
                            self.0.elem_type = self
                                .0
                                .elem_type
                                .take()
                                .or_else(|| c.args.iter().nth(1).and_then(literal_type));
                        }
                    }
                }
                self.0.idents.extend(segs);
            }
            c.args.iter().for_each(|a| self.visit_expr(a));
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            if m.path.is_ident("vec") {
                self.0.is_array = true;
                for e in crate::syntax::macro_args(m).iter() {
                    if let syn::Expr::Repeat(r) = e {
                        self.0.elem_type = literal_type(&r.expr);
                    }
                    self.visit_expr(e);
                }
            }
        }
    }
    let mut v = V(Mentions::default());
    v.visit_expr(e);
    v.0
}

/// ndarray's owned array types (`Array2<f64>`; views are not arrays of their own).
fn is_ndarray_type(name: &str) -> bool {
    matches!(
        name,
        "Array" | "Array1" | "Array2" | "Array3" | "Array4" | "Array5" | "Array6" | "ArrayD"
    )
}

/// ndarray's constructors of an owned array.
const NDARRAY_CONSTRUCTORS: &[&str] = &[
    "zeros",
    "ones",
    "from_elem",
    "from_vec",
    "from_shape_vec",
    "from_shape_fn",
    "from_iter",
    "default",
    "uninit",
    "linspace",
    "range",
];

/// The type a `let` gives its variable when it shows it: the annotation, a struct literal's
/// name, or the type of a `Type::ctor(..)` call (`?`, `.unwrap()` and the like aside).
fn type_of_value(pat: &syn::Pat, e: &syn::Expr) -> Option<String> {
    if let syn::Pat::Type(t) = pat {
        return Some(crate::syntax::type_name(&t.ty)).filter(|n| !n.is_empty());
    }
    let upper = |s: &syn::PathSegment| {
        let name = s.ident.to_string();
        name.starts_with(|c: char| c.is_uppercase()).then_some(name)
    };
    match super::peel(e) {
        syn::Expr::Struct(s) => s.path.segments.last().and_then(upper),
        syn::Expr::Call(c) => match &*c.func {
            syn::Expr::Path(p) if p.path.segments.len() >= 2 => {
                p.path.segments.iter().rev().nth(1).and_then(upper)
            }
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use mheta_format::VarClass;

    /// The class of each variable of the only solver: a `main` with rsmpi, `items` before its
    /// main loop, `body` inside it.
    fn classes(items: &str, body: &str) -> Vec<(String, VarClass)> {
        let src = format!(
            "use mpi::traits::*;\nfn bounds(n: usize, rank: usize, size: usize) -> (usize, usize) {{\n \
             let per = n.div_ceil(size);\n ((rank * per).min(n), ((rank + 1) * per).min(n))\n}}\n\
             fn main() {{\n let universe = mpi::initialize().unwrap();\n let world = universe.world();\n \
             let rank = world.rank();\n let size = world.size();\n let n = 64;\n {items}\n \
             for _ in 0..9 {{ {body} }}\n}}\n"
        );
        let analysis = crate::analyze_source("t.rs", &src, &crate::Options::default());
        assert!(!analysis.has_errors(), "{}", analysis.render_diagnostics());
        analysis.structure.solvers[0]
            .variables
            .iter()
            .map(|v| (v.name.clone(), v.class))
            .collect()
    }

    #[test]
    fn bounds_from_a_user_function_of_rank_and_size_size_the_local_block() {
        let c = classes(
            "let (lo, hi) = bounds(n, rank as usize, size as usize);\n \
             let mut u = vec![0.0f64; hi - lo + 2];\n let mut v = vec![0.0f64; n];",
            "for i in 1..=hi - lo { v[i] = u[i - 1] + u[i + 1]; } \
             world.all_reduce_into(&u[1], &mut v[0], mpi::collective::SystemOperation::sum());",
        );
        assert!(c.contains(&("u".into(), VarClass::Distributed)), "{c:?}");
        assert!(c.contains(&("v".into(), VarClass::Replicated)), "{c:?}");
    }

    #[test]
    fn rows_from_an_attached_session_size_the_local_block() {
        let c = classes(
            "let session = mheta::mpi::attach(&world).unwrap();\n let mine = session.rows(n);\n \
             let rows = mine.len();\n let mut u = vec![0.0f64; (rows + 2) * 8];\n let mut s = vec![0.0f64; 8];",
            "for i in 8..(rows + 1) * 8 { u[i] += 1.0; } \
             world.all_reduce_into(&u[8], &mut s[0], mpi::collective::SystemOperation::sum());",
        );
        assert!(c.contains(&("u".into(), VarClass::Distributed)), "{c:?}");
        assert!(c.contains(&("s".into(), VarClass::Replicated)), "{c:?}");
    }

    #[test]
    fn a_parameter_the_main_loop_writes_by_this_ranks_rows_is_distributed() {
        let src = "use mpi::traits::*;\n\
                   #[mheta::solver]\n\
                   fn solve(world: &mpi::topology::SimpleCommunicator, u: &mut Vec<f64>, input: &[f64], counts: &[u64]) {\n \
                   let rank = world.rank();\n let rows = counts[rank as usize] as usize;\n \
                   let first: u64 = counts[..rank as usize].iter().sum();\n let mut next = u.clone();\n \
                   for _ in 0..9 {\n  for i in 1..=rows {\n   let c = i * 8;\n   \
                   next[c] = u[c - 8] + u[c + 8] + input[first as usize + i];\n  }\n  \
                   std::mem::swap(u, &mut next);\n  world.barrier();\n }\n}\n";
        let analysis = crate::analyze_source("t.rs", src, &crate::Options::default());
        assert!(!analysis.has_errors(), "{}", analysis.render_diagnostics());
        let class = |name: &str| {
            analysis.structure.solvers[0]
                .variables
                .iter()
                .find(|v| v.name == name)
                .map(|v| v.class)
        };
        assert_eq!(
            class("u"),
            Some(VarClass::Distributed),
            "written, walked by `rows`"
        );
        assert_eq!(
            class("input"),
            Some(VarClass::Replicated),
            "read at global positions only"
        );
    }

    #[test]
    fn a_length_with_the_size_as_factor_is_the_whole_array() {
        let c = classes(
            "let per_rank = n / size as usize;\n let mut mine = vec![0.0f64; per_rank];\n \
             let mut all = vec![0.0f64; per_rank * size as usize];",
            "for i in 0..per_rank { mine[i] += 1.0; } world.all_gather_into(&mine[..], &mut all[..]);",
        );
        assert!(c.contains(&("mine".into(), VarClass::Distributed)), "{c:?}");
        assert!(c.contains(&("all".into(), VarClass::Replicated)), "{c:?}");
    }
}
