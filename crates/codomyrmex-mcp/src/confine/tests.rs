//! The resolver's table, run through the walk and through `openat2`, with identical results.

use std::os::unix::fs::symlink;
use std::path::Path;

use super::*;

/// A root with in-root links of every kind, and a directory outside it.
struct Fixture {
    root: tempfile::TempDir,
    outside: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let r = root.path();
    std::fs::create_dir_all(r.join("sub/deeper")).unwrap();
    std::fs::write(r.join("sub/file.txt"), "inside").unwrap();
    std::fs::write(r.join("top.txt"), "top").unwrap();
    std::fs::write(outside.path().join("secret"), "secret").unwrap();
    // In-root links: relative, relative through `..`, absolute within the root, chained.
    symlink("sub", r.join("rel-dir")).unwrap();
    symlink("sub/file.txt", r.join("rel-file")).unwrap();
    symlink("../top.txt", r.join("sub/up-file")).unwrap();
    symlink(r.join("sub/file.txt"), r.join("abs-inside")).unwrap();
    symlink("rel-dir", r.join("chain1")).unwrap();
    symlink("chain1/deeper/..", r.join("chain2")).unwrap();
    // A file is not a directory, even before `..`.
    symlink("top.txt/..", r.join("file-dotdot")).unwrap();
    // Escapes: `..` above the root, absolute targets outside, the outside directory.
    symlink("../../../../../../../../etc/passwd", r.join("dotdot")).unwrap();
    symlink("sub/../..", r.join("sub-dotdot")).unwrap();
    symlink("/etc/passwd", r.join("abs-out")).unwrap();
    symlink(outside.path(), r.join("out-dir")).unwrap();
    symlink(outside.path().join("secret"), r.join("out-file")).unwrap();
    symlink("/proc/self/environ", r.join("environ")).unwrap();
    symlink("/proc/self/root/etc/passwd", r.join("magic")).unwrap();
    // Loops and dangling links.
    symlink("loop-b", r.join("loop-a")).unwrap();
    symlink("loop-a", r.join("loop-b")).unwrap();
    symlink("self", r.join("self")).unwrap();
    symlink("missing-target", r.join("dangling")).unwrap();
    // A chain of 39 links (within the limit) and one of 41 (past it).
    for i in 0..41 {
        let next = if i == 40 {
            "top.txt".to_owned()
        } else {
            format!("hop{}", i + 1)
        };
        symlink(&next, r.join(format!("hop{i}"))).unwrap();
    }
    Fixture { root, outside }
}

/// A resolution's outcome, comparable across resolvers.
fn outcome(root: &ConfinedRoot, raw: &str) -> String {
    let rel = match root.argument(raw, true) {
        Ok(rel) => rel,
        Err(e) => return format!("arg: {e:?}"),
    };
    let read = match root.read_file(&rel, 1024) {
        Ok(bytes) => format!("read {}", String::from_utf8_lossy(&bytes)),
        Err(e) => format!("read error {e:?}"),
    };
    let resolved = match root.resolve(&rel, LastLink::Follow) {
        Ok(r) => format!("at {:?}", r.rel()),
        Err(e) => format!("error {e:?}"),
    };
    let kept = match root.resolve(&rel, LastLink::Keep) {
        Ok(r) => format!("entry {:?}", r.rel()),
        Err(e) => format!("error {e:?}"),
    };
    format!("{read} / {resolved} / {kept}")
}

/// The table: each path, and what its read gives (the content or the error).
const TABLE: &[(&str, &str)] = &[
    ("sub/file.txt", "read inside"),
    ("./sub/./file.txt", "read inside"),
    ("rel-dir/file.txt", "read inside"),
    ("rel-file", "read inside"),
    ("sub/up-file", "read top"),
    ("abs-inside", "read inside"),
    ("chain2/file.txt", "read inside"),
    ("hop1", "read top"),
    ("hop0", "read error TooManyLinks"),
    ("dotdot", "read error Escapes"),
    ("sub-dotdot", "read error Escapes"),
    ("sub-dotdot/etc/passwd", "read error Escapes"),
    ("abs-out", "read error Escapes"),
    ("out-dir/secret", "read error Escapes"),
    ("out-dir/missing", "read error Escapes"),
    ("out-file", "read error Escapes"),
    ("environ", "read error Escapes"),
    ("magic", "read error Escapes"),
    ("loop-a", "read error TooManyLinks"),
    ("self", "read error TooManyLinks"),
    ("dangling", "read error DanglingLink"),
    ("missing.txt", "read error NotFound"),
    ("sub/missing/deeper", "read error NotFound"),
    ("top.txt/x", "read error NotADirectory"),
    ("file-dotdot", "read error NotADirectory"),
    ("file-dotdot/top.txt", "read error NotADirectory"),
    ("sub", "read error IsADirectory"),
    (".", "read error IsADirectory"),
    ("../x", "arg: ParentDir"),
    ("/etc/passwd", "arg: Absolute"),
];

#[test]
fn the_table_reads_the_same_through_every_resolver() {
    let fx = fixture();
    let walk = ConfinedRoot::open(fx.root.path())
        .unwrap()
        .with_resolver(Resolver::Walk);
    let fast = walk.clone().with_resolver(Resolver::Openat2);
    let auto = walk.clone().with_resolver(Resolver::Auto);
    for (raw, expected) in TABLE {
        let by_walk = outcome(&walk, raw);
        assert!(by_walk.starts_with(expected), "{raw}: {by_walk}");
        assert_eq!(by_walk, outcome(&fast, raw), "{raw}: openat2 differs");
        assert_eq!(by_walk, outcome(&auto, raw), "{raw}: auto differs");
    }
    // The secret stays outside whatever the resolver.
    assert!(fx.outside.path().join("secret").exists());
}

#[test]
fn openat2_is_really_used_where_the_kernel_has_it() {
    let fx = fixture();
    let root = ConfinedRoot::open(fx.root.path()).unwrap();
    let kernel_has_it = rustix::fs::openat2(
        root.dir(),
        ".",
        STEP_FLAGS,
        Mode::empty(),
        rustix::fs::ResolveFlags::BENEATH,
    )
    .is_ok();
    let rel = root.argument("rel-dir/file.txt", false).unwrap();
    let found = fast::resolve(&root, &rel, LastLink::Follow, STEP_FLAGS);
    if kernel_has_it {
        assert_eq!(found.unwrap().rel(), Path::new("sub/file.txt"));
    } else {
        eprintln!("this kernel has no openat2: only the walk was tested");
    }
    // The kernel refuses escapes itself; the walk then says why.
    let rel = root.argument("out-file", false).unwrap();
    assert!(fast::resolve(&root, &rel, LastLink::Follow, STEP_FLAGS).is_none());
}

#[test]
fn resolved_paths_follow_links_and_keep_the_last_one_when_asked() {
    let fx = fixture();
    for resolver in [Resolver::Walk, Resolver::Openat2] {
        let root = ConfinedRoot::open(fx.root.path())
            .unwrap()
            .with_resolver(resolver);
        let r = root.resolve(Path::new("chain1/file.txt"), LastLink::Follow);
        assert_eq!(r.unwrap().rel(), Path::new("sub/file.txt"));
        let kept = root.resolve(Path::new("out-file"), LastLink::Keep).unwrap();
        assert_eq!(kept.rel(), Path::new("out-file"));
        assert_eq!(kept.file_type().unwrap(), FileType::Symlink);
        assert_eq!(
            root.resolve(Path::new(""), LastLink::Follow).unwrap().rel(),
            Path::new("")
        );
    }
}

#[test]
fn a_fifo_is_refused_without_blocking_and_the_read_cap_counts_bytes_read() {
    let fx = fixture();
    let r = fx.root.path();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        r.join("fifo"),
        FileType::Fifo,
        Mode::RUSR | Mode::WUSR,
        0,
    )
    .unwrap();
    symlink("fifo", r.join("to-fifo")).unwrap();
    std::fs::write(r.join("big"), vec![b'x'; 100]).unwrap();
    for resolver in [Resolver::Walk, Resolver::Openat2] {
        let root = ConfinedRoot::open(r).unwrap().with_resolver(resolver);
        for raw in ["fifo", "to-fifo"] {
            let e = root.read_file(Path::new(raw), 1024).unwrap_err();
            assert!(matches!(e, ConfineError::NotRegular), "{raw}: {e:?}");
        }
        assert!(matches!(
            root.read_file(Path::new("big"), 99),
            Err(ConfineError::TooLarge(99))
        ));
        assert_eq!(root.read_file(Path::new("big"), 100).unwrap().len(), 100);
    }
}

#[test]
fn a_long_chain_of_long_names_is_followed_only_inside() {
    // The finding's shape: the resolved path passes 4096 bytes though every link is short.
    let fx = fixture();
    let r = fx.root.path();
    let name = "n".repeat(200);
    // create_dir_all would pass PATH_MAX: make the levels one at a time, relative.
    let mut dir = std::fs::File::open(r).unwrap();
    for _ in 0..20 {
        rustix::fs::mkdirat(&dir, name.as_str(), Mode::RWXU).unwrap();
        dir = File::from(
            rustix::fs::openat(
                &dir,
                name.as_str(),
                OFlags::RDONLY | OFlags::DIRECTORY,
                Mode::empty(),
            )
            .unwrap(),
        );
    }
    rustix::fs::symlinkat(fx.outside.path().join("secret"), &dir, "b").unwrap();
    rustix::fs::symlinkat(
        "../../../../../../../../../../../../../../../../../../../../top.txt",
        &dir,
        "up",
    )
    .unwrap();
    let ten: Vec<&str> = vec![name.as_str(); 10];
    symlink(ten.join("/"), r.join("a")).unwrap();
    let mut level10 = File::open(r).unwrap();
    for _ in 0..10 {
        level10 = File::from(
            rustix::fs::openat(
                &level10,
                name.as_str(),
                OFlags::RDONLY | OFlags::DIRECTORY,
                Mode::empty(),
            )
            .unwrap(),
        );
    }
    rustix::fs::symlinkat(ten.join("/"), &level10, "c").unwrap();
    for resolver in [Resolver::Walk, Resolver::Openat2] {
        let root = ConfinedRoot::open(r).unwrap().with_resolver(resolver);
        let e = root.read_file(Path::new("a/c/b"), 1024).unwrap_err();
        assert!(matches!(e, ConfineError::Escapes), "{resolver:?}: {e:?}");
        // Back up the stack to the root: inside, so read.
        let top = root.read_file(Path::new("a/c/up"), 1024).unwrap();
        assert_eq!(top, b"top", "{resolver:?}");
    }
}

/// The non-test part of a source file: up to its first inline test module (`#[cfg(test)]`
/// or `#[cfg(all(test, ...))]` before `mod NAME {`).
fn non_test(text: &str) -> &str {
    let mut offset = 0;
    let mut previous = "";
    for line in text.split_inclusive('\n') {
        let is_test_attr = previous.starts_with("#[cfg(") && previous.contains("test");
        if is_test_attr && line.contains("mod ") && line.trim_end().ends_with('{') {
            return &text[..offset - previous.len()];
        }
        offset += line.len();
        previous = line;
    }
    text
}

/// Every `.rs` file under `dir`, except test files.
fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            sources(&path, out);
        } else if name.ends_with(".rs") && !name.ends_with("tests.rs") && name != "test_tools.rs" {
            out.push(path);
        }
    }
}

#[test]
fn one_confinement_mechanism_in_the_crates_that_serve_roots() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in ["codomyrmex-mcp", "codomyrmex-mcp-cli", "codomyrmex-mcp-py"] {
        sources(&crates.join(krate).join("src"), &mut files);
    }
    assert!(files.len() > 20, "{files:?}");
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let code = non_test(&text);
        let shown = file
            .strip_prefix(&crates)
            .unwrap_or(file)
            .display()
            .to_string();
        // The operator's root is the one path the OS resolves, in `ConfinedRoot::open`.
        if code.contains("canonicalize(") && !shown.ends_with("confine/mod.rs") {
            found.push(format!("{shown}: canonicalize("));
        }
        // Directories are read from a descriptor in one place: `confine/tree.rs`.
        if (code.contains("Dir::read_from(") || code.contains("statat("))
            && !shown.contains("/confine/")
        {
            found.push(format!("{shown}: a directory read of its own"));
        }
        // The code that serves a root reads, and enumerates directories, only through
        // `ConfinedRoot` (`open_dir`, `walk_tree`): no path-based read or directory walk.
        let serves_a_root = [
            "serve_directory.rs",
            "root_resources.rs",
            "/tools/",
            "codomyrmex-mcp-cli/src/serve.rs",
            "codomyrmex-mcp-py/src/confined.rs",
        ]
        .iter()
        .any(|p| shown.contains(p));
        if serves_a_root {
            for needle in [
                "fs::read(",
                "fs::read_to_string(",
                "File::open(",
                "read_dir(",
                "WalkBuilder",
                "WalkDir",
                "ignore::Walk",
                "walkdir::",
                "glob::glob",
            ] {
                if code.contains(needle) {
                    found.push(format!("{shown}: {needle}"));
                }
            }
            // Nor a look at a path under the root: its metadata, its existence, its type or
            // its target come from the walk's descriptors (`Resolved::stat`, `confine::fstat`,
            // `ConfinedRoot::entry_kind`), never by path. `.is_dir()` and its kin only on a
            // `Metadata` or a file type (a receiver named `meta` or `kind`).
            for needle in [
                "symlink_metadata(",
                "fs::metadata(",
                ".metadata()",
                ".exists()",
                "try_exists(",
                "read_link(",
                "canonicalize(",
            ] {
                if code.contains(needle) {
                    found.push(format!("{shown}: {needle}"));
                }
            }
            // A child is never handed a path under the root to resolve again (a directory
            // swapped for a symlink after the checks would redirect it): its working directory
            // is a descriptor the confinement opened (`Held::child_dir`), and git gets no
            // `GIT_WORK_TREE` (its working directory is the work tree).
            for (at, _) in code.match_indices(".current_dir(") {
                let rest = &code[at + ".current_dir(".len()..];
                let mut depth = 1usize;
                let end = rest
                    .char_indices()
                    .find(|&(_, c)| {
                        match c {
                            '(' => depth += 1,
                            ')' => depth -= 1,
                            _ => {}
                        }
                        depth == 0
                    })
                    .map_or(rest.len(), |(i, _)| i);
                if !rest[..end].trim().ends_with(".child_dir()") {
                    found.push(format!("{shown}: current_dir( with a path"));
                }
            }
            if code.contains("GIT_WORK_TREE\"") {
                found.push(format!("{shown}: GIT_WORK_TREE"));
            }
            for method in [".is_dir()", ".is_file()", ".is_symlink()"] {
                for (at, _) in code.match_indices(method) {
                    let receiver = &code[..at];
                    if !(receiver.ends_with("meta") || receiver.ends_with("kind")) {
                        found.push(format!("{shown}: {method} on a path"));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "a second confinement mechanism: {found:#?}"
    );
}

#[test]
fn writes_are_made_from_the_walks_descriptors_and_stay_inside() {
    use super::write::WriteMode;
    let fx = fixture();
    let r = fx.root.path();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        r.join("fifo"),
        FileType::Fifo,
        Mode::RUSR | Mode::WUSR,
        0,
    )
    .unwrap();
    let root = ConfinedRoot::open(r).unwrap();
    // Through an in-root link to a directory; new parents made only when asked.
    let (mut f, rel, created) = root
        .open_for_write(Path::new("rel-dir/new.txt"), WriteMode::CreateNew, false)
        .unwrap();
    std::io::Write::write_all(&mut f, b"new").unwrap();
    assert_eq!((rel.as_path(), created), (Path::new("sub/new.txt"), true));
    assert_eq!(
        std::fs::read_to_string(r.join("sub/new.txt")).unwrap(),
        "new"
    );
    assert!(matches!(
        root.open_for_write(Path::new("a/b/c.txt"), WriteMode::Overwrite, false),
        Err(ConfineError::NotFound)
    ));
    let (_, rel, created) = root
        .open_for_write(Path::new("a/b/c.txt"), WriteMode::Overwrite, true)
        .unwrap();
    assert_eq!((rel.as_path(), created), (Path::new("a/b/c.txt"), true));
    // An existing file through a link: overwritten in place, never created anew.
    let (mut f, rel, created) = root
        .open_for_write(Path::new("rel-file"), WriteMode::Overwrite, false)
        .unwrap();
    std::io::Write::write_all(&mut f, b"over").unwrap();
    assert_eq!((rel.as_path(), created), (Path::new("sub/file.txt"), false));
    assert_eq!(
        std::fs::read_to_string(r.join("sub/file.txt")).unwrap(),
        "over"
    );
    let e = root
        .open_for_write(Path::new("top.txt"), WriteMode::CreateNew, false)
        .unwrap_err();
    assert!(
        matches!(&e, ConfineError::Io(io) if io.kind() == std::io::ErrorKind::AlreadyExists),
        "{e:?}"
    );
    // Out of the root, a FIFO, a directory, a dangling link: refused, nothing written.
    for (raw, parents) in [
        ("out-dir/new", false),
        ("out-file", false),
        ("dotdot", false),
        ("out-dir/deeper/new", true),
        ("abs-out", false),
    ] {
        let e = root
            .open_for_write(Path::new(raw), WriteMode::Overwrite, parents)
            .unwrap_err();
        assert!(matches!(e, ConfineError::Escapes), "{raw}: {e:?}");
    }
    assert!(!fx.outside.path().join("new").exists());
    assert!(!fx.outside.path().join("deeper").exists());
    assert_eq!(
        std::fs::read_to_string(fx.outside.path().join("secret")).unwrap(),
        "secret"
    );
    assert!(matches!(
        root.open_for_write(Path::new("fifo"), WriteMode::Overwrite, false),
        Err(ConfineError::NotRegular)
    ));
    assert!(matches!(
        root.open_for_write(Path::new("sub"), WriteMode::Overwrite, false),
        Err(ConfineError::IsADirectory)
    ));
    assert!(matches!(
        root.open_for_write(Path::new("dangling"), WriteMode::Overwrite, false),
        Err(ConfineError::DanglingLink)
    ));
    // Directories: made through in-root links, with parents when asked, never outside.
    assert_eq!(
        root.make_dir(Path::new("rel-dir/d1"), false).unwrap(),
        (PathBuf::from("sub/d1"), true)
    );
    assert_eq!(
        root.make_dir(Path::new("sub/d1"), false).unwrap(),
        (PathBuf::from("sub/d1"), false)
    );
    assert!(matches!(
        root.make_dir(Path::new("x/y/z"), false),
        Err(ConfineError::NotFound)
    ));
    assert_eq!(
        root.make_dir(Path::new("x/y/z"), true).unwrap(),
        (PathBuf::from("x/y/z"), true)
    );
    assert!(matches!(
        root.make_dir(Path::new("out-dir/evil"), true),
        Err(ConfineError::Escapes)
    ));
    assert!(!fx.outside.path().join("evil").exists());
    let e = root.make_dir(Path::new("top.txt"), true).unwrap_err();
    assert!(
        matches!(&e, ConfineError::Io(io) if io.kind() == std::io::ErrorKind::AlreadyExists),
        "{e:?}"
    );
}

#[test]
fn renames_are_made_between_the_walks_descriptors() {
    let fx = fixture();
    let r = fx.root.path();
    let root = ConfinedRoot::open(r).unwrap();
    // Through an in-root link to a directory; the last component's link is moved, not its
    // target.
    root.rename(Path::new("rel-dir/file.txt"), Path::new("moved.txt"), false)
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(r.join("moved.txt")).unwrap(),
        "inside"
    );
    root.rename(Path::new("out-file"), Path::new("sub/link"), false)
        .unwrap();
    assert!(
        std::fs::symlink_metadata(r.join("sub/link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // Never into or out of the root, never over an entry without `replace`.
    for (from, to) in [
        ("top.txt", "out-dir/top.txt"),
        ("out-dir/secret", "stolen"),
        ("top.txt", "dotdot/x"),
    ] {
        let e = root
            .rename(Path::new(from), Path::new(to), true)
            .unwrap_err();
        assert!(matches!(e, ConfineError::Escapes), "{from} -> {to}: {e:?}");
    }
    assert!(!fx.outside.path().join("top.txt").exists());
    assert!(!r.join("stolen").exists());
    let e = root
        .rename(Path::new("top.txt"), Path::new("moved.txt"), false)
        .unwrap_err();
    assert!(matches!(&e, ConfineError::Exists), "{e:?}");
    // A directory is never replaced, even with `replace`.
    std::fs::create_dir(r.join("a-dir")).unwrap();
    let e = root
        .rename(Path::new("top.txt"), Path::new("a-dir"), true)
        .unwrap_err();
    assert!(matches!(&e, ConfineError::ReplacesADirectory), "{e:?}");
    assert!(r.join("a-dir").is_dir());
    root.rename(Path::new("top.txt"), Path::new("moved.txt"), true)
        .unwrap();
    assert_eq!(std::fs::read_to_string(r.join("moved.txt")).unwrap(), "top");
}

/// Keeps every entry the walk offers.
struct Everything;

impl TreeFilter for Everything {
    fn enter(&mut self, _: &ConfinedDir) {}
    fn leave(&mut self) {}
    fn keep(&mut self, _: &TreeEntry) -> bool {
        true
    }
}

#[test]
fn directories_are_enumerated_from_descriptors_and_never_through_a_symlink() {
    let fx = fixture();
    let root = ConfinedRoot::open(fx.root.path()).unwrap();
    let top = root.open_dir(Path::new("")).unwrap();
    let names = top.names().unwrap();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert!(names.iter().any(|n| n == "sub") && names.iter().any(|n| n == "out-dir"));
    // A child is entered from the parent's descriptor, never through a link (in or out).
    assert_eq!(
        top.open_dir("sub".as_ref()).unwrap().rel(),
        Path::new("sub")
    );
    for link in ["rel-dir", "out-dir", "chain1"] {
        let e = top.open_dir(link.as_ref()).unwrap_err();
        assert!(
            matches!(e, ConfineError::Escapes | ConfineError::NotADirectory),
            "{link}: {e:?}"
        );
    }
    assert!(top.open_file("out-file".as_ref()).is_err());
    assert!(top.open_file("top.txt".as_ref()).is_ok());
    assert!(top.read_file("missing".as_ref(), 10).unwrap().is_none());
    assert!(matches!(
        top.read_file("top.txt".as_ref(), 2),
        Err(ConfineError::TooLarge(2))
    ));
    // Only one entry's name: nothing that walks.
    for bad in ["", ".", "..", "sub/deeper", "/etc"] {
        assert!(top.open_dir(bad.as_ref()).is_err(), "{bad}");
        assert!(top.open_file(bad.as_ref()).is_err(), "{bad}");
    }
    // Opening by path goes through the resolution: in-root links resolve, others are refused.
    assert_eq!(
        root.open_dir(Path::new("rel-dir")).unwrap().rel(),
        Path::new("sub")
    );
    assert!(root.open_dir(Path::new("out-dir")).is_err());
    assert!(matches!(
        root.open_dir(Path::new("top.txt")),
        Err(ConfineError::NotADirectory)
    ));
    // The walk lists links as links and enters none of them.
    let seen: Vec<(std::path::PathBuf, FileType)> = root
        .walk_tree(Path::new(""), None, Everything)
        .unwrap()
        .map(|e| (e.rel().to_path_buf(), e.kind()))
        .collect();
    assert_eq!(seen[0], (std::path::PathBuf::new(), FileType::Directory));
    assert!(seen.contains(&("sub/deeper".into(), FileType::Directory)));
    assert!(seen.contains(&("out-dir".into(), FileType::Symlink)));
    assert!(seen.contains(&("rel-dir".into(), FileType::Symlink)));
    let entered: Vec<_> = seen
        .iter()
        .filter(|(p, _)| {
            p.components().count() > 1 && (p.starts_with("out-dir") || p.starts_with("rel-dir"))
        })
        .collect();
    assert!(entered.is_empty(), "{entered:?}");
    // Depth-first in name order, a directory before its entries; `max_depth` stops descent.
    let shallow: Vec<_> = root
        .walk_tree(Path::new("sub"), Some(1), Everything)
        .unwrap()
        .map(|e| (ConfinedRoot::display(e.rel()), e.depth()))
        .collect();
    assert_eq!(
        shallow,
        [
            ("sub".to_owned(), 0),
            ("sub/deeper".to_owned(), 1),
            ("sub/file.txt".to_owned(), 1),
            ("sub/up-file".to_owned(), 1)
        ]
    );
}
