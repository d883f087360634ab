//! Inputs that crashed a fuzz target (`fuzz/`, run by `scripts/fuzz.sh`), kept as tests once
//! fixed. Each test names its target and the crash artifact it came from.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use codomyrmex_mcp::uri_template::UriTemplate;

fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// uri_template, crash-efad7e44b1f9d16da4b42fc87feac9a6e06a8eba: a reserved variable followed
/// by a literal took the literal's last occurrence, which was inside the query.
#[test]
fn uri_template_reserved_value_before_a_query() {
    let t = UriTemplate::parse("/bazczz{/v0}:{/v1}@aab{+v2}={?q,lang}").unwrap();
    let uri = "/bazczz/Ng%7D%0Asearch%3Flang:/earc%2Cl%25aNg%7D%0Ase%2Farch%3Flang%3Ditems%2F%7Bid%7D%0Atest%3A%2F%2Fit%5C~@aabY00-999/=?q=arc%2Cl%25aNg%7D%0Ase%2Farch%3Flang%3Ditems%2F%7Bid%7D%0Atest%3A%2F%2Fit%5C~&lang=%2F4en%26q%3D2iiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii%2F4en%26q%3D2iiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii";
    let expected = vars(&[
        (
            "lang",
            "/4en&q=2iiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii/4en&q=2iiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii",
        ),
        ("q", "arc,l%aNg}\nse/arch?lang=items/{id}\ntest://it\\~"),
        ("v0", "Ng}\nsearch?lang"),
        ("v1", "earc,l%aNg}\nse/arch?lang=items/{id}\ntest://it\\~"),
        ("v2", "Y00-999/"),
    ]);
    assert_eq!(t.matches(uri), Some(expected));
}
