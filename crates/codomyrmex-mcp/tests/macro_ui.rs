//! Compile errors of `#[mcp_tool]` and `#[mcp_tools]`, pinned with trybuild.
//!
//! After an intended change to a message, regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p codomyrmex-mcp --test macro_ui` and review the diff.

#[test]
fn unsupported_signatures_fail_to_compile_with_a_pointed_message() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
