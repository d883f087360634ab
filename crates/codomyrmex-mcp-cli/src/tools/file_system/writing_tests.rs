//! Tests of the full profile's writing tools (`write`, `edit`, `make_directory`, `move`) and
//! of their refusals to write outside the root, called through the registry.

use serde_json::json;

use crate::config::Profile;
use crate::tools::kinds;
use crate::tools::test_support::*;

#[tokio::test]
async fn write_modes() {
    let fx = Fixture::new();
    let r = registry(&fx, Profile::Full);
    let v = ok(
        &r,
        "file_system.write",
        json!({"path": "new.txt", "content": "hello"}),
    )
    .await;
    assert_eq!(v["created"], true);
    assert_eq!(v["bytes_written"], 5);
    assert_eq!(fx.read("new.txt"), "hello");
    let v = ok(
        &r,
        "file_system.write",
        json!({"path": "new.txt", "content": "bye"}),
    )
    .await;
    assert_eq!(v["created"], false);
    assert_eq!(fx.read("new.txt"), "bye");
    ok(
        &r,
        "file_system.write",
        json!({"path": "new.txt", "content": "!", "mode": "append"}),
    )
    .await;
    assert_eq!(fx.read("new.txt"), "bye!");
    assert_eq!(
        fail(
            &r,
            "file_system.write",
            json!({"path": "new.txt", "content": "x", "mode": "create"})
        )
        .await,
        kinds::ALREADY_EXISTS
    );
    assert_eq!(
        fail(
            &r,
            "file_system.write",
            json!({"path": "d/e/f.txt", "content": "x"})
        )
        .await,
        kinds::NOT_FOUND
    );
    ok(
        &r,
        "file_system.write",
        json!({"path": "d/e/f.txt", "content": "x", "create_parents": true}),
    )
    .await;
    assert_eq!(fx.read("d/e/f.txt"), "x");
    ok(
        &r,
        "file_system.write",
        json!({"path": "b.bin", "content": "AAEC", "encoding": "base64"}),
    )
    .await;
    assert_eq!(std::fs::read(fx.path("b.bin")).unwrap(), [0, 1, 2]);
    assert_eq!(
        fail(
            &r,
            "file_system.write",
            json!({"path": "d", "content": "x"})
        )
        .await,
        kinds::IS_A_DIRECTORY
    );
    assert_eq!(
        fail(
            &r,
            "file_system.write",
            json!({"path": "../escape.txt", "content": "x"})
        )
        .await,
        kinds::ACCESS_DENIED
    );
}

#[tokio::test]
async fn edit_replaces_exact_strings() {
    let fx = Fixture::new();
    fx.write("c.rs", "let a = 1;\nlet b = 1;\n");
    let r = registry(&fx, Profile::Full);
    let v = ok(
        &r,
        "file_system.edit",
        json!({"path": "c.rs", "old_string": "let a = 1;", "new_string": "let a = 2;"}),
    )
    .await;
    assert_eq!(v["replacements"], 1);
    assert_eq!(fx.read("c.rs"), "let a = 2;\nlet b = 1;\n");
    assert_eq!(
        fail(
            &r,
            "file_system.edit",
            json!({"path": "c.rs", "old_string": "= ", "new_string": "="})
        )
        .await,
        kinds::AMBIGUOUS_MATCH
    );
    assert_eq!(fx.read("c.rs"), "let a = 2;\nlet b = 1;\n");
    let v = ok(
        &r,
        "file_system.edit",
        json!({"path": "c.rs", "old_string": "= ", "new_string": "=", "replace_all": true}),
    )
    .await;
    assert_eq!(v["replacements"], 2);
    assert_eq!(fx.read("c.rs"), "let a =2;\nlet b =1;\n");
    assert_eq!(
        fail(
            &r,
            "file_system.edit",
            json!({"path": "c.rs", "old_string": "absent", "new_string": "x"})
        )
        .await,
        kinds::NO_MATCH
    );
    assert_eq!(
        fail(
            &r,
            "file_system.edit",
            json!({"path": "c.rs", "old_string": "", "new_string": "x"})
        )
        .await,
        "ValidationError"
    );
    fx.write("bin", [0xffu8, 0xfe]);
    assert_eq!(
        fail(
            &r,
            "file_system.edit",
            json!({"path": "bin", "old_string": "a", "new_string": "b"})
        )
        .await,
        kinds::INVALID_ARGUMENT
    );
}

#[tokio::test]
async fn make_directory_is_idempotent() {
    let fx = Fixture::new();
    let r = registry(&fx, Profile::Full);
    let v = ok(&r, "file_system.make_directory", json!({"path": "x/y/z"})).await;
    assert_eq!(v["created"], true);
    assert!(fx.path("x/y/z").is_dir());
    let v = ok(&r, "file_system.make_directory", json!({"path": "x/y/z"})).await;
    assert_eq!(v["created"], false);
    assert_eq!(
        fail(
            &r,
            "file_system.make_directory",
            json!({"path": "p/q", "parents": false})
        )
        .await,
        kinds::NOT_FOUND
    );
    fx.write("file", "f");
    assert_eq!(
        fail(&r, "file_system.make_directory", json!({"path": "file"})).await,
        kinds::ALREADY_EXISTS
    );
    assert_eq!(
        fail(
            &r,
            "file_system.make_directory",
            json!({"path": "/tmp/cmx-escape"})
        )
        .await,
        kinds::ACCESS_DENIED
    );
}

#[tokio::test]
async fn move_renames_within_the_root() {
    let fx = Fixture::new();
    fx.write("a.txt", "a");
    fx.write("b.txt", "b");
    fx.write("dir/c.txt", "c");
    let r = registry(&fx, Profile::Full);
    let v = ok(
        &r,
        "file_system.move",
        json!({"source": "a.txt", "destination": "dir/a.txt"}),
    )
    .await;
    assert_eq!(v["destination"], "dir/a.txt");
    assert_eq!(fx.read("dir/a.txt"), "a");
    assert!(!fx.path("a.txt").exists());
    assert_eq!(
        fail(
            &r,
            "file_system.move",
            json!({"source": "b.txt", "destination": "dir/a.txt"})
        )
        .await,
        kinds::ALREADY_EXISTS
    );
    ok(
        &r,
        "file_system.move",
        json!({"source": "b.txt", "destination": "dir/a.txt", "overwrite": true}),
    )
    .await;
    assert_eq!(fx.read("dir/a.txt"), "b");
    ok(
        &r,
        "file_system.move",
        json!({"source": "dir", "destination": "renamed"}),
    )
    .await;
    assert!(fx.path("renamed/c.txt").exists());
    assert_eq!(
        fail(
            &r,
            "file_system.move",
            json!({"source": "renamed", "destination": "renamed/inner"})
        )
        .await,
        kinds::INVALID_ARGUMENT
    );
    assert_eq!(
        fail(
            &r,
            "file_system.move",
            json!({"source": ".", "destination": "x"})
        )
        .await,
        kinds::ACCESS_DENIED
    );
    assert_eq!(
        fail(
            &r,
            "file_system.move",
            json!({"source": "missing", "destination": "x"})
        )
        .await,
        kinds::NOT_FOUND
    );
    assert_eq!(
        fail(
            &r,
            "file_system.move",
            json!({"source": "renamed", "destination": "../out"})
        )
        .await,
        kinds::ACCESS_DENIED
    );
    let outside = tempfile::tempdir().unwrap();
    let dst = outside.path().join("stolen");
    assert_eq!(
        fail(
            &r,
            "file_system.move",
            json!({"source": "renamed", "destination": dst.to_str().unwrap()})
        )
        .await,
        kinds::ACCESS_DENIED
    );
    assert!(!dst.exists());
}

#[cfg(unix)]
#[tokio::test]
async fn writing_tools_refuse_every_escape() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("victim.txt"), "original").unwrap();
    std::os::unix::fs::symlink(outside.path(), fx.path("out")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("victim.txt"), fx.path("victim-link")).unwrap();
    let abs = outside.path().join("victim.txt");
    let abs = abs.to_str().unwrap();
    let long = "x".repeat(300);
    let r = registry(&fx, Profile::Full);
    for path in [
        "../victim.txt",
        abs,
        "out/victim.txt",
        "victim-link",
        "out/new.txt",
        &long,
    ] {
        let expected = if path == long {
            kinds::INVALID_PATH
        } else {
            kinds::ACCESS_DENIED
        };
        assert_eq!(
            fail(
                &r,
                "file_system.write",
                json!({"path": path, "content": "pwned"})
            )
            .await,
            expected,
            "write {path}"
        );
        assert_eq!(
            fail(
                &r,
                "file_system.edit",
                json!({"path": path, "old_string": "original", "new_string": "pwned"})
            )
            .await,
            expected,
            "edit {path}"
        );
        assert_eq!(
            fail(&r, "file_system.make_directory", json!({"path": path})).await,
            expected,
            "mkdir {path}"
        );
        assert_eq!(
            fail(&r, "file_system.read", json!({"path": path})).await,
            expected,
            "read {path}"
        );
        assert_eq!(
            fail(&r, "file_system.checksum", json!({"path": path})).await,
            expected,
            "checksum {path}"
        );
        assert_eq!(
            fail(&r, "file_system.stat", json!({"path": path})).await,
            expected,
            "stat {path}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("victim.txt")).unwrap(),
        "original"
    );
    assert!(!outside.path().join("new.txt").exists());
    // Moving the symlink itself is fine and leaves its target alone.
    ok(
        &r,
        "file_system.move",
        json!({"source": "victim-link", "destination": "moved-link"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(outside.path().join("victim.txt")).unwrap(),
        "original"
    );
    // But nothing moves into a directory outside through a link.
    fx.write("mine.txt", "m");
    assert_eq!(
        fail(
            &r,
            "file_system.move",
            json!({"source": "mine.txt", "destination": "out/mine.txt"})
        )
        .await,
        kinds::ACCESS_DENIED
    );
    assert!(!outside.path().join("mine.txt").exists());
}

/// The root's path swapped for a symlink out of it after the server opened the root: every
/// tool acts on the root it opened (through its descriptor, by the walk), never on what the
/// root's path names now. A path-based write, `mkdir`, rename or stat would act outside.
#[cfg(unix)]
#[tokio::test]
async fn the_tools_act_on_the_opened_root_not_on_its_path() {
    use crate::config::{Limits, ShellSettings};
    use crate::tools::{Sandbox, Workspace};
    let parent = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir_in(parent.path()).unwrap();
    for name in ["a.txt", "b.txt"] {
        std::fs::write(dir.path().join(name), "in").unwrap();
        std::fs::write(outside.path().join(name), "outside, longer").unwrap();
    }
    let sandbox = Sandbox::new(dir.path()).unwrap();
    let ws = Workspace::new(sandbox, Limits::default(), ShellSettings::default());
    let fx = Fixture { dir, ws };
    let r = registry(&fx, Profile::Full);
    let moved = parent.path().join("moved");
    std::fs::rename(fx.dir.path(), &moved).unwrap();
    std::os::unix::fs::symlink(outside.path(), fx.dir.path()).unwrap();
    let out = |name: &str| outside.path().join(name);
    let mut problems = Vec::new();

    let _ = call(
        &r,
        "file_system.write",
        json!({"path": "new.txt", "content": "x"}),
    )
    .await;
    if out("new.txt").exists() || !moved.join("new.txt").exists() {
        problems.push("write created the file outside");
    }
    let _ = call(&r, "file_system.make_directory", json!({"path": "nd"})).await;
    if out("nd").exists() || !moved.join("nd").is_dir() {
        problems.push("make_directory made it outside");
    }
    let _ = call(
        &r,
        "file_system.move",
        json!({"source": "a.txt", "destination": "c.txt"}),
    )
    .await;
    if !out("a.txt").exists() || out("c.txt").exists() || !moved.join("c.txt").exists() {
        problems.push("move renamed outside");
    }
    let v = call(&r, "file_system.stat", json!({"path": "b.txt"})).await;
    if v.data()
        .and_then(|d| d.get("size"))
        .and_then(|s| s.as_u64())
        != Some(2)
    {
        problems.push("stat reported the outside file");
    }
    assert!(problems.is_empty(), "{problems:?}");
}

/// `move`'s check of its destination (exists? a directory?) is made in the destination's
/// directory descriptor from the walk, like the rename itself: with the root's path swapped
/// for a symlink out of it, a directory of the same name outside the root neither blocks the
/// move nor is reported (a path-based `symlink_metadata` looked outside).
#[cfg(unix)]
#[tokio::test]
async fn move_checks_its_destination_in_the_opened_root() {
    use crate::config::{Limits, ShellSettings};
    use crate::tools::{Sandbox, Workspace};
    let parent = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir_in(parent.path()).unwrap();
    std::fs::write(dir.path().join("a.txt"), "in").unwrap();
    std::fs::write(dir.path().join("b.txt"), "in").unwrap();
    std::fs::write(dir.path().join("inside-dir"), "a file inside").unwrap();
    std::fs::create_dir(outside.path().join("d")).unwrap();
    std::fs::create_dir(outside.path().join("inside-dir")).unwrap();
    let sandbox = Sandbox::new(dir.path()).unwrap();
    let ws = Workspace::new(sandbox, Limits::default(), ShellSettings::default());
    let fx = Fixture { dir, ws };
    let r = registry(&fx, Profile::Full);
    let moved = parent.path().join("moved");
    std::fs::rename(fx.dir.path(), &moved).unwrap();
    std::os::unix::fs::symlink(outside.path(), fx.dir.path()).unwrap();

    // `d` exists only outside: the move inside is made.
    ok(
        &r,
        "file_system.move",
        json!({"source": "a.txt", "destination": "d"}),
    )
    .await;
    assert_eq!(std::fs::read_to_string(moved.join("d")).unwrap(), "in");
    assert!(outside.path().join("d").is_dir());
    // `inside-dir` is a file inside and a directory outside: replaced inside.
    ok(
        &r,
        "file_system.move",
        json!({"source": "b.txt", "destination": "inside-dir", "overwrite": true}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(moved.join("inside-dir")).unwrap(),
        "in"
    );
}
