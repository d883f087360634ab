//! The root's files in `resources/list`: a [`ResourceLister`] that walks the root.
//!
//! Each page walks the root afresh (nothing is cached, so the list follows the disk), the
//! same confined walk as `file_system.list_directory` (directories read from descriptors,
//! never through a symlink): `.gitignore`, `.ignore` and
//! `.git/info/exclude` respected, `.git` and hidden names skipped, symlinks neither followed
//! nor listed, non-UTF-8 names skipped. The walk stops after `cap` entries, so one page costs
//! at most that much; past the cap, files are not listed (still readable through the
//! template). URIs are `PREFIX` + the percent-encoded path relative to the root, never an
//! absolute path.
//!
//! It lists only; `ServeDirectory::serve_directory` reads.

use std::path::Path;

use codomyrmex_mcp::ResourceDefinition;
use codomyrmex_mcp::ResourceLister;
use codomyrmex_mcp::confine::ConfinedRoot;
use codomyrmex_mcp::platform::BoxFuture;

use crate::tools::file_system::{WalkOptions, walker};

/// How many directory entries one listing walks at most (files and directories).
pub const MAX_WALKED_ENTRIES: usize = 10_000;

/// The root's files as resources.
#[derive(Debug, Clone)]
pub struct RootFiles {
    root: ConfinedRoot,
    prefix: String,
    cap: usize,
}

impl RootFiles {
    /// The files under `root`, as `prefix` + path, walking at most `cap` entries.
    pub fn new(root: ConfinedRoot, prefix: impl Into<String>, cap: usize) -> Self {
        Self {
            root,
            prefix: prefix.into(),
            cap,
        }
    }

    /// Every listed resource, in URI order (a blocking walk).
    fn walk(&self) -> Vec<ResourceDefinition> {
        let options = WalkOptions {
            include_hidden: false,
            respect_gitignore: true,
            max_depth: None,
            max_filesize: None,
        };
        let Ok(walk) = walker(&self.root, Path::new(""), &options, None) else {
            tracing::debug!("the root's resource listing cannot read the root");
            return Vec::new();
        };
        let mut out = Vec::new();
        for entry in walk.take(self.cap) {
            if entry.kind() != rustix::fs::FileType::RegularFile {
                continue;
            }
            let rel = ConfinedRoot::display(entry.rel());
            let uri = format!("{}{}", self.prefix, encode_path(&rel));
            let mut definition = ResourceDefinition::new(uri, rel);
            definition.size = Some(entry.size());
            out.push(definition);
        }
        out.sort_by(|a, b| a.uri.cmp(&b.uri));
        out
    }
}

impl ResourceLister for RootFiles {
    fn list(
        &self,
        after: Option<String>,
        limit: usize,
    ) -> BoxFuture<'static, Vec<ResourceDefinition>> {
        let this = self.clone();
        Box::pin(async move {
            let all = tokio::task::spawn_blocking(move || this.walk())
                .await
                .unwrap_or_default();
            all.into_iter()
                .filter(|d| after.as_deref().is_none_or(|a| d.uri.as_str() > a))
                .take(limit)
                .collect()
        })
    }
}

/// `path` for RFC 6570 reserved expansion (`{+path}`): unreserved characters, `/` and the
/// sub-delimiters stay, every other byte (`%`, `?`, `#`, spaces, non-ASCII) is `%XX`.
fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        let keep = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'/'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'@'
            );
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uris(files: &RootFiles, after: Option<&str>, limit: usize) -> Vec<String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(files.list(after.map(str::to_owned), limit))
            .into_iter()
            .map(|d| {
                assert!(!d.name.starts_with('/'), "{d:?}");
                d.uri
            })
            .collect()
    }

    fn tree() -> (tempfile::TempDir, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for f in [
            "b.txt",
            "a/one.rs",
            "a/two.rs",
            "ignored/x",
            "kept.log",
            ".hidden",
            "sp ace",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        std::fs::write(root.join(".gitignore"), "ignored/\n*.tmp\n").unwrap();
        std::fs::write(root.join("junk.tmp"), "x").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
            std::os::unix::fs::symlink(outside.path().join("secret"), root.join("link")).unwrap();
        }
        (dir, outside)
    }

    #[test]
    fn lists_the_files_ignoring_what_git_ignores_and_never_following_symlinks() {
        let (dir, _outside) = tree();
        let root = dir.path();
        let files = RootFiles::new(ConfinedRoot::open(root).unwrap(), "r://", 1000);
        assert_eq!(
            uris(&files, None, 100),
            [
                "r://a/one.rs",
                "r://a/two.rs",
                "r://b.txt",
                "r://kept.log",
                "r://sp%20ace"
            ]
        );
    }

    #[test]
    fn pages_after_a_uri() {
        let (dir, _outside) = tree();
        let files = RootFiles::new(ConfinedRoot::open(dir.path()).unwrap(), "r://", 1000);
        assert_eq!(uris(&files, None, 2), ["r://a/one.rs", "r://a/two.rs"]);
        assert_eq!(
            uris(&files, Some("r://a/two.rs"), 2),
            ["r://b.txt", "r://kept.log"]
        );
        assert_eq!(uris(&files, Some("r://sp%20ace"), 2), Vec::<String>::new());
    }

    #[test]
    fn the_walk_stops_at_the_cap() {
        let (dir, _outside) = tree();
        let root = ConfinedRoot::open(dir.path()).unwrap();
        // The walk, by name: the root, a/, a/one.rs, a/two.rs, b.txt, ... (hidden and ignored
        // names are never walked). Three entries reach a/one.rs only.
        let files = RootFiles::new(root.clone(), "r://", 3);
        assert_eq!(uris(&files, None, 100), ["r://a/one.rs"]);
        let files = RootFiles::new(root, "r://", 5);
        assert_eq!(
            uris(&files, None, 100),
            ["r://a/one.rs", "r://a/two.rs", "r://b.txt"]
        );
    }

    #[test]
    fn paths_are_encoded_for_reserved_expansion() {
        assert_eq!(encode_path("src/main.rs"), "src/main.rs");
        assert_eq!(encode_path("a b/%?#é"), "a%20b/%25%3F%23%C3%A9");
    }
}
