//! Structures embedded in instrumented programs by `#[mheta::solver]`.
//!
//! The macro embeds the crate's structure file (`mheta-structure/1`, exactly the text
//! `mheta analyze <crate> --format json` writes) in a `static` and registers it on every call of
//! the solver: one relaxed load and a pointer comparison once registered. [`crate::launch()`]
//! looks here for the structure when the program did not pass one to
//! [`crate::Launch::structure`], to serve `--emit-structure` and to name the measurements. The
//! macro also writes the name the measurements carry (crate and digest), so the program never
//! parses its own structure.

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

/// One solver's embedded structure.
#[derive(Debug)]
pub struct Embedded {
    /// The solver's name in the structure (`crate::path::fn`).
    pub solver: &'static str,
    /// The structure's crate (`Structure::crate_name`).
    pub crate_name: &'static str,
    /// `Structure::digest()` of the structure.
    pub digest: &'static str,
    /// The structure file's text, byte for byte as the analyzer writes it.
    pub structure_json: &'static str,
}

impl Embedded {
    /// What measurements of this solver carry as their structure's name.
    pub fn id(&self) -> crate::format::StructureId {
        crate::format::StructureId {
            crate_name: self.crate_name.to_string(),
            solver: self.solver.to_string(),
            digest: self.digest.to_string(),
        }
    }
}

/// The most recently registered structure (the fast path of [`register`]).
static LAST: AtomicPtr<Embedded> = AtomicPtr::new(std::ptr::null_mut());

fn all() -> &'static Mutex<Vec<&'static Embedded>> {
    static ALL: Mutex<Vec<&'static Embedded>> = Mutex::new(Vec::new());
    &ALL
}

/// Registers a solver's embedded structure (called by generated code at every solver entry).
#[inline]
pub fn register(embedded: &'static Embedded) {
    let ptr = embedded as *const Embedded as *mut Embedded;
    if LAST.load(Ordering::Relaxed) != ptr {
        register_slow(embedded, ptr);
    }
}

#[inline(never)]
fn register_slow(embedded: &'static Embedded, ptr: *mut Embedded) {
    let mut all = all()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !all.iter().any(|e| std::ptr::eq(*e, embedded)) {
        all.push(embedded);
    }
    LAST.store(ptr, Ordering::Relaxed);
}

/// Every structure registered so far, in registration order.
pub fn registered() -> Vec<&'static Embedded> {
    all()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// The structure of the first solver that ran, if any.
pub fn first() -> Option<&'static Embedded> {
    registered().into_iter().next()
}

/// What the measurements name: the first solver that ran (empty when none registered).
pub fn first_id() -> crate::format::StructureId {
    first().map(Embedded::id).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    static A: Embedded = Embedded {
        solver: "c::a",
        crate_name: "c",
        digest: "0123456789abcdef",
        structure_json: r#"{"schema":"mheta-structure/1","crate":"c","solvers":[]}"#,
    };
    static B: Embedded = Embedded {
        solver: "c::b",
        crate_name: "c",
        digest: "fedcba9876543210",
        structure_json: "{",
    };

    #[test]
    fn registers_each_structure_once_in_order() {
        register(&A);
        register(&A);
        register(&B);
        register(&A);
        let names: Vec<&str> = registered()
            .iter()
            .map(|e| e.solver)
            .filter(|s| s.starts_with("c::"))
            .collect();
        assert_eq!(names, ["c::a", "c::b"]);
        assert_eq!(A.id().digest, "0123456789abcdef");
        assert_eq!(A.id().solver, "c::a");
    }
}
