//! The dependency tree builds each RustCrypto hash crate once (#15): our own SHA-256 and
//! HMAC uses (the `requestState` seal, static-token digests, `file_system.checksum`) are on the
//! versions `jsonwebtoken` pulls, not on an older line built next to them.
//!
//! It reads the workspace's `Cargo.lock`, which covers every member and target, so one
//! version there means one version in the `codomyrmex-mcp` binary. It does not check crates
//! whose second version comes from two dependencies we do not control (`base64`: `jaq-std`
//! and `jsonwebtoken`; `getrandom`: `ahash` through `jsonschema`, and `jsonwebtoken`'s
//! crypto), nor build-time-only crates.
#![allow(clippy::expect_used)]

use std::collections::BTreeMap;

use serde::Deserialize;

#[derive(Deserialize)]
struct Lock {
    package: Vec<Package>,
}

#[derive(Deserialize)]
struct Package {
    name: String,
    version: String,
}

fn locked_versions() -> BTreeMap<String, Vec<String>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock");
    let text = std::fs::read_to_string(path).expect("the workspace's Cargo.lock");
    let lock: Lock = toml::from_str(&text).expect("Cargo.lock parses");
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in lock.package {
        by_name.entry(p.name).or_default().push(p.version);
    }
    by_name
}

#[test]
fn each_hash_crate_is_locked_at_one_version() {
    let locked = locked_versions();
    let doubled: Vec<String> = [
        "sha2",
        "hmac",
        "digest",
        "block-buffer",
        "crypto-common",
        "cpufeatures",
    ]
    .iter()
    .filter_map(|name| {
        let versions = locked.get(*name)?;
        (versions.len() > 1).then(|| format!("{name} {}", versions.join(", ")))
    })
    .collect();
    assert!(
        doubled.is_empty(),
        "built in more than one version: {doubled:?}; move our uses to the version jsonwebtoken pulls"
    );
    // The digest 0.10 line's array type goes with it.
    assert!(
        !locked.contains_key("generic-array"),
        "generic-array {:?} is still in the tree",
        locked.get("generic-array")
    );
}
