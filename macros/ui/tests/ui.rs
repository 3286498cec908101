//! Compile-time behaviour of the macros (trybuild): what compiles, and the pointed error each
//! misuse gets, grouped by category (`tests/ui/fail/<category>/*.rs` with `.stderr` goldens).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*/*.rs");
}
