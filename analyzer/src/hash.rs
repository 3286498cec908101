//! The analyzer's hash maps and sets. Their keys are short names, source locations and
//! pointers into the syntax tree, hashed with FxHash (rustc's own) rather than SipHash, whose
//! resistance to hash flooding no analysed program needs.

/// `std::collections::HashMap` with FxHash.
pub type HashMap<K, V> = std::collections::HashMap<K, V, rustc_hash::FxBuildHasher>;
/// `std::collections::HashSet` with FxHash.
pub type HashSet<T> = std::collections::HashSet<T, rustc_hash::FxBuildHasher>;
