//! Proptest strategies for arbitrary JSON values, shared by the property tests of the wire
//! types (`proptest_wire.rs`) and of schema compatibility (`schema_compat.rs`).

use proptest::prelude::*;
use serde_json::Value;

/// A JSON scalar: null, a boolean, an integer in the whole `i64`/`u64` range, a dyadic
/// fraction (which prints and parses back exactly with any float formatter), or a short
/// string of printable characters.
pub fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1_000_000i32..1_000_000).prop_map(|n| Value::from(f64::from(n) / 8.0)),
        "\\PC{0,12}".prop_map(Value::String),
    ]
}

/// A JSON value up to three levels deep, with small arrays and objects of [`json_leaf`]s.
pub fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("\\PC{0,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
