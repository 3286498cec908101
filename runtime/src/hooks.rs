//! The hook layer (DESIGN §5): per-rank record buffers fed by guards and by the runtime's own
//! communication and I/O calls.
//!
//! Interface used by the out-of-core arrays: `register_var(name)` once per array (may allocate),
//! then `record_io(var, op, bytes, begin_s, end_s)` around every block operation (must not
//! allocate or lock). Times come from `crate::clock::now()`.
//!
//! This is the starting point of the interface; the recording implementation replaces it.

pub use crate::format::IoKind;

/// An interned variable id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VarId(pub u32);

/// Intern a variable (array) name for I/O records on the current rank.
pub fn register_var(_name: &str) -> VarId {
    VarId(0)
}

/// Record one I/O operation on the current rank.
pub fn record_io(_var: VarId, _op: IoKind, _bytes: u64, _begin_s: f64, _end_s: f64) {}
