//! Tests of the reading tools (`read`, `list_directory`, `search`, `checksum`, `stat`),
//! called through the registry as a client would call them.

use serde_json::json;

use crate::config::{Limits, Profile};
use crate::tools::kinds;
use crate::tools::test_support::*;

#[tokio::test]
async fn read_whole_files_and_line_ranges() {
    let fx = Fixture::new();
    fx.write("a.txt", "one\ntwo\nthree\nfour\n");
    let r = registry(&fx, Profile::Readonly);
    let v = ok(&r, "file_system.read", json!({"path": "a.txt"})).await;
    assert_eq!(v["content"], "one\ntwo\nthree\nfour\n");
    assert_eq!(v["binary"], false);
    assert_eq!(v["truncated"], false);
    assert_eq!(v["size"], 19);

    let v = ok(
        &r,
        "file_system.read",
        json!({"path": "a.txt", "start_line": 2, "end_line": 3}),
    )
    .await;
    assert_eq!(v["content"], "two\nthree\n");
    assert_eq!(v["start_line"], 2);
    assert_eq!(v["end_line"], 3);
    assert_eq!(v["offset"], 4);

    let v = ok(
        &r,
        "file_system.read",
        json!({"path": "a.txt", "start_line": 4}),
    )
    .await;
    assert_eq!(v["content"], "four\n");

    let v = ok(
        &r,
        "file_system.read",
        json!({"path": "a.txt", "start_line": 9}),
    )
    .await;
    assert_eq!(v["content"], "");
    assert!(v["note"].as_str().unwrap().contains("past the end"), "{v}");

    let v = ok(
        &r,
        "file_system.read",
        json!({"path": "a.txt", "offset": 8, "max_bytes": 5}),
    )
    .await;
    assert_eq!(v["content"], "three");
    assert_eq!(v["truncated"], true);
    assert_eq!(v["next_offset"], 13);

    assert_eq!(
        fail(
            &r,
            "file_system.read",
            json!({"path": "a.txt", "start_line": 3, "end_line": 2})
        )
        .await,
        kinds::INVALID_ARGUMENT
    );
    assert_eq!(
        fail(
            &r,
            "file_system.read",
            json!({"path": "a.txt", "start_line": 1, "offset": 2})
        )
        .await,
        kinds::INVALID_ARGUMENT
    );
    assert_eq!(
        fail(&r, "file_system.read", json!({"path": "missing"})).await,
        kinds::NOT_FOUND
    );
    assert_eq!(
        fail(&r, "file_system.read", json!({"path": "."})).await,
        kinds::IS_A_DIRECTORY
    );
}

#[tokio::test]
async fn read_is_capped_by_the_server_limit() {
    let fx = Fixture::with_limits(Limits {
        max_read_bytes: 10,
        ..Limits::default()
    });
    fx.write("big.txt", "0123456789abcdef\nline2\nline3\n");
    let r = registry(&fx, Profile::Readonly);
    let v = ok(
        &r,
        "file_system.read",
        json!({"path": "big.txt", "max_bytes": 1000}),
    )
    .await;
    assert_eq!(v["content"], "0123456789");
    assert_eq!(v["truncated"], true);
    assert_eq!(v["next_offset"], 10);
    // Lines stop before the limit; the caller continues at next_line.
    fx.write("lines.txt", "aaaa\nbbbb\ncccc\n");
    let v = ok(
        &r,
        "file_system.read",
        json!({"path": "lines.txt", "start_line": 1}),
    )
    .await;
    assert_eq!(v["content"], "aaaa\nbbbb\n");
    assert_eq!(v["truncated"], true);
    assert_eq!(v["next_line"], 3);
    assert_eq!(v["end_line"], 2);
    // A multi-byte character cut by the limit is left for the next call.
    fx.write("utf8.txt", "123456789é");
    let v = ok(&r, "file_system.read", json!({"path": "utf8.txt"})).await;
    assert_eq!(v["content"], "123456789");
    assert_eq!(v["binary"], false);
    assert_eq!(v["next_offset"], 9);
}

#[tokio::test]
async fn read_detects_binary_files() {
    let fx = Fixture::new();
    fx.write("bin.dat", [0u8, 1, 2, 3, 255]);
    fx.write("latin1.txt", [b'c', b'a', b'f', 0xe9, b'!']);
    let r = registry(&fx, Profile::Readonly);
    let v = ok(&r, "file_system.read", json!({"path": "bin.dat"})).await;
    assert_eq!(v["binary"], true);
    assert!(v.get("content").is_none(), "{v}");
    assert!(v["note"].as_str().unwrap().contains("base64"));
    let v = ok(
        &r,
        "file_system.read",
        json!({"path": "bin.dat", "encoding": "base64"}),
    )
    .await;
    assert_eq!(v["content"], "AAECA/8=");
    assert_eq!(v["encoding"], "base64");
    let v = ok(&r, "file_system.read", json!({"path": "latin1.txt"})).await;
    assert_eq!(v["binary"], true);
}

#[tokio::test]
async fn list_directory_flat_recursive_and_gitignored() {
    let fx = Fixture::new();
    fx.write("b.txt", "b");
    fx.write("a/x.rs", "x");
    fx.write("a/deep/y.rs", "y");
    fx.write(".hidden", "h");
    fx.write(".gitignore", "ignored/\n*.log\n");
    fx.write("ignored/z.txt", "z");
    fx.write("debug.log", "l");
    let r = registry(&fx, Profile::Readonly);
    let v = ok(&r, "file_system.list_directory", json!({})).await;
    let paths: Vec<&str> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["a", "b.txt"]);
    assert_eq!(v["entries"][0]["kind"], "directory");
    assert_eq!(v["entries"][1]["kind"], "file");
    assert_eq!(v["entries"][1]["size"], 1);

    let v = ok(&r, "file_system.list_directory", json!({"recursive": true})).await;
    let paths: Vec<&str> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["a", "a/deep", "a/deep/y.rs", "a/x.rs", "b.txt"]);

    let v = ok(
        &r,
        "file_system.list_directory",
        json!({"recursive": true, "max_depth": 2, "path": "."}),
    )
    .await;
    assert_eq!(v["entries"].as_array().unwrap().len(), 4);

    let v = ok(
        &r,
        "file_system.list_directory",
        json!({"include_hidden": true, "respect_gitignore": false}),
    )
    .await;
    let paths: Vec<&str> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            ".gitignore",
            ".hidden",
            "a",
            "b.txt",
            "debug.log",
            "ignored"
        ]
    );

    let v = ok(
        &r,
        "file_system.list_directory",
        json!({"recursive": true, "max_entries": 2}),
    )
    .await;
    assert_eq!(v["entries"].as_array().unwrap().len(), 2);
    assert_eq!(v["truncated"], true);

    let v = ok(&r, "file_system.list_directory", json!({"path": "a"})).await;
    assert_eq!(v["path"], "a");
    assert_eq!(v["entries"][0]["path"], "a/deep");

    assert_eq!(
        fail(&r, "file_system.list_directory", json!({"path": "b.txt"})).await,
        kinds::NOT_A_DIRECTORY
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn non_utf8_names_are_skipped_and_counted() {
    use std::os::unix::ffi::OsStrExt;
    let fx = Fixture::new();
    fx.write("ok.txt", "needle");
    let bad = std::ffi::OsStr::from_bytes(b"bad-\xff.txt");
    std::fs::write(fx.dir.path().join(bad), "needle").unwrap();
    let r = registry(&fx, Profile::Readonly);
    let v = ok(&r, "file_system.list_directory", json!({})).await;
    assert_eq!(v["entries"].as_array().unwrap().len(), 1);
    assert_eq!(v["skipped_non_utf8"], 1);
    let v = ok(&r, "file_system.search", json!({"pattern": "needle"})).await;
    assert_eq!(v["matches"].as_array().unwrap().len(), 1);
    assert_eq!(v["skipped_non_utf8"], 1);
    // Asking for the lossy name does not reach it.
    let lossy = bad.to_string_lossy().into_owned();
    assert_eq!(
        fail(&r, "file_system.read", json!({"path": lossy})).await,
        kinds::NOT_FOUND
    );
}

#[tokio::test]
async fn search_finds_lines_with_regexes_and_literals() {
    let fx = Fixture::new();
    fx.write("src/main.rs", "fn main() {\n    println!(\"Hello\");\n}\n");
    fx.write("src/lib.rs", "pub fn hello() {}\n// HELLO again\n");
    fx.write("notes.md", "hello (world)\n");
    fx.write("bin.dat", b"hello\0binary");
    fx.write(".gitignore", "target/\n");
    fx.write("target/out.rs", "hello\n");
    let r = registry(&fx, Profile::Readonly);
    let v = ok(&r, "file_system.search", json!({"pattern": "hel+o"})).await;
    let m = v["matches"].as_array().unwrap();
    let got: Vec<(String, u64)> = m
        .iter()
        .map(|x| {
            (
                x["path"].as_str().unwrap().to_owned(),
                x["line_number"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [("notes.md".to_owned(), 1), ("src/lib.rs".to_owned(), 1)]
    );
    assert_eq!(m[1]["line"], "pub fn hello() {}");

    let v = ok(
        &r,
        "file_system.search",
        json!({"pattern": "hello", "case_insensitive": true, "globs": ["*.rs"]}),
    )
    .await;
    assert_eq!(v["matches"].as_array().unwrap().len(), 3);
    assert_eq!(v["files_matched"], 2);

    let v = ok(
        &r,
        "file_system.search",
        json!({"pattern": "(world)", "fixed_strings": true}),
    )
    .await;
    assert_eq!(v["matches"].as_array().unwrap().len(), 1);

    let v = ok(
        &r,
        "file_system.search",
        json!({"pattern": "hello", "respect_gitignore": false, "path": "target"}),
    )
    .await;
    assert_eq!(v["matches"][0]["path"], "target/out.rs");

    let v = ok(
        &r,
        "file_system.search",
        json!({"pattern": "o", "max_matches": 2}),
    )
    .await;
    assert_eq!(v["matches"].as_array().unwrap().len(), 2);
    assert_eq!(v["truncated"], true);

    let v = ok(
        &r,
        "file_system.search",
        json!({"pattern": "Hello", "path": "src/main.rs"}),
    )
    .await;
    assert_eq!(v["matches"][0]["line_number"], 2);

    assert_eq!(
        fail(&r, "file_system.search", json!({"pattern": "("})).await,
        kinds::INVALID_ARGUMENT
    );
    assert_eq!(
        fail(
            &r,
            "file_system.search",
            json!({"pattern": "a", "globs": ["["]})
        )
        .await,
        kinds::INVALID_ARGUMENT
    );
}

#[cfg(unix)]
#[tokio::test]
async fn search_does_not_follow_symlinks_out_of_the_root() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "needle outside\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), fx.path("out")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), fx.path("secret-link")).unwrap();
    fx.write("inside.txt", "needle inside\n");
    std::os::unix::fs::symlink(fx.path("inside.txt"), fx.path("inner-link")).unwrap();
    let r = registry(&fx, Profile::Readonly);
    let v = ok(&r, "file_system.search", json!({"pattern": "needle"})).await;
    let paths: Vec<&str> = v["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["inner-link", "inside.txt"]);
    assert_eq!(
        fail(
            &r,
            "file_system.search",
            json!({"pattern": "needle", "path": "out"})
        )
        .await,
        kinds::ACCESS_DENIED
    );
}

#[tokio::test]
async fn checksum_is_sha256() {
    let fx = Fixture::new();
    fx.write("abc.txt", "abc");
    fx.write("empty", "");
    let r = registry(&fx, Profile::Readonly);
    let v = ok(&r, "file_system.checksum", json!({"path": "abc.txt"})).await;
    assert_eq!(
        v["digest"],
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(v["algorithm"], "sha256");
    assert_eq!(v["size"], 3);
    let v = ok(
        &r,
        "file_system.checksum",
        json!({"path": "empty", "algorithm": "sha256"}),
    )
    .await;
    assert_eq!(
        v["digest"],
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(
        fail(
            &r,
            "file_system.checksum",
            json!({"path": "abc.txt", "algorithm": "md5"})
        )
        .await,
        "ValidationError"
    );
    assert_eq!(
        fail(&r, "file_system.checksum", json!({"path": "."})).await,
        kinds::IS_A_DIRECTORY
    );
}

#[tokio::test]
async fn stat_reports_metadata() {
    let fx = Fixture::new();
    fx.write("f.txt", "12345");
    let r = registry(&fx, Profile::Readonly);
    let v = ok(&r, "file_system.stat", json!({"path": "f.txt"})).await;
    assert_eq!(v["kind"], "file");
    assert_eq!(v["size"], 5);
    assert_eq!(v["is_symlink"], false);
    assert!(v["modified_unix"].as_i64().unwrap() > 1_600_000_000);
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(fx.path("f.txt"), fx.path("link")).unwrap();
        let v = ok(&r, "file_system.stat", json!({"path": "link"})).await;
        assert_eq!(v["is_symlink"], true);
        assert_eq!(v["path"], "f.txt");
        assert!(v["mode"].as_str().is_some());
    }
    let v = ok(&r, "file_system.stat", json!({"path": "."})).await;
    assert_eq!(v["kind"], "directory");
    assert_eq!(v["path"], ".");
}
