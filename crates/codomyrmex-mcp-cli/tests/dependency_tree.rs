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

/// `cargo tree -p codomyrmex-mcp-core -e <edges> -i <spec> --depth 1`: the crate and the
/// crates in the core's tree of those edge kinds that depend on it directly (empty when it is
/// absent).
fn core_dependents(edges: &str, spec: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml");
    let out = std::process::Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--manifest-path",
            manifest,
            "-p",
            "codomyrmex-mcp-core",
            "-e",
            edges,
            "--prefix",
            "none",
            "--depth",
            "1",
            "-i",
            spec,
        ])
        .output()
        .expect("cargo tree runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        // A crate that is in the lock file but not in the core's tree is "not found".
        assert!(
            stderr.contains("did not match any packages") || stderr.contains("nothing to print"),
            "cargo tree -i {spec} failed: {stderr}"
        );
        return Vec::new();
    }
    stdout
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Issue #14: the protocol core has no async runtime, HTTP stack, OS randomness or date-time
/// crate (`chrono`, `time`: each reads the clock) in its normal dependency tree, not even
/// transitively, so the compiler enforces that it does no I/O and takes time and randomness
/// as inputs.
#[test]
fn the_core_has_no_runtime_no_http_and_no_os_randomness() {
    let locked = locked_versions();
    for name in [
        "tokio",
        "tokio-util",
        "hyper",
        "axum",
        "mio",
        "http",
        "chrono",
        "time",
    ] {
        for version in locked.get(name).into_iter().flatten() {
            let spec = format!("{name}@{version}");
            let found = core_dependents("normal", &spec);
            assert!(
                found.is_empty(),
                "{spec} is in the core's tree, through {found:?}"
            );
        }
    }
    // `jsonschema` pulls `ahash` with its default features, whose `getrandom` seeds hash
    // maps against collision attacks; the core itself never draws from it (it has no
    // `getrandom` dependency: entropy is the platform's).
    for version in locked.get("getrandom").into_iter().flatten() {
        let spec = format!("getrandom@{version}");
        let found = core_dependents("normal", &spec);
        assert!(
            found.iter().all(|d| d == "ahash"),
            "{spec} is in the core's tree through {found:?}, not only through ahash"
        );
    }
    // `libc` only under that `getrandom` and `referencing`'s `parking_lot` (both
    // `jsonschema`'s): ARCHITECTURE.md and the core's crate docs say so.
    for version in locked.get("libc").into_iter().flatten() {
        let spec = format!("libc@{version}");
        let found = core_dependents("normal", &spec);
        assert!(
            found
                .iter()
                .all(|d| d == "getrandom" || d == "parking_lot_core"),
            "{spec} is in the core's tree through {found:?}, not only through getrandom and \
             parking_lot_core"
        );
    }
}

/// Issue #14: the core's own tests drive it the way a host does, on a virtual clock with a
/// single-threaded executor of their own, so its dev-dependencies bring no async runtime or
/// HTTP stack either (`cargo tree -p codomyrmex-mcp-core -e normal,dev`): the library, which
/// has them, is not one of them.
#[test]
fn the_core_tests_have_no_runtime_and_no_http_either() {
    let locked = locked_versions();
    for name in ["tokio", "tokio-util", "hyper", "axum", "mio", "http"] {
        for version in locked.get(name).into_iter().flatten() {
            let spec = format!("{name}@{version}");
            let found = core_dependents("normal,dev", &spec);
            assert!(
                found.is_empty(),
                "{spec} is in the core's tree with its dev-dependencies, through {found:?}"
            );
        }
    }
}
