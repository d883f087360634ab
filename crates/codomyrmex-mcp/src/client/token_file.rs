//! [`FileTokenStore`]: OAuth tokens kept in a JSON file readable by its owner only (mode
//! 0600), by resource URL, so that a command-line client authorizes once and reuses (and
//! refreshes) its tokens on later runs.
//!
//! Writes go through [`write_private`]: a new 0600 temporary file under a random name in the
//! same directory, created exclusively (never through a planted symlink) and renamed over the
//! old one, so a crash never leaves a half-written file. A file that cannot be read or
//! parsed counts as empty (the client authorizes again) and is replaced on the next write.
//! Not a keychain: the tokens are as safe as the owner's account.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::lock;
use super::oauth::{TokenStore, Tokens};
use super::private_file::write_private;

/// The largest token file read (a larger one counts as empty).
const MAX_FILE_BYTES: u64 = 4 << 20;

/// Tokens in a 0600 JSON file.
#[derive(Debug)]
pub struct FileTokenStore {
    path: PathBuf,
    /// Serializes this process's read-modify-write cycles.
    writing: Mutex<()>,
}

impl FileTokenStore {
    /// A store in `path` (created on the first write, with its parent directory).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            writing: Mutex::new(()),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read_all(&self) -> BTreeMap<String, Tokens> {
        let Ok(file) = std::fs::File::open(&self.path) else {
            return BTreeMap::new();
        };
        let mut text = Vec::new();
        if file
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut text)
            .is_err()
            || text.len() as u64 > MAX_FILE_BYTES
        {
            return BTreeMap::new();
        }
        serde_json::from_slice(&text).unwrap_or_default()
    }

    /// Writes `all` to the file (through [`write_private`]); the error says what failed.
    fn write_all(&self, all: &BTreeMap<String, Tokens>) -> std::io::Result<()> {
        let bytes = serde_json::to_vec_pretty(all).map_err(std::io::Error::other)?;
        write_private(&self.path, &bytes)
    }
}

impl TokenStore for FileTokenStore {
    fn get(&self, resource: &str) -> Option<Tokens> {
        self.read_all().remove(resource)
    }

    fn put(&self, resource: &str, tokens: Tokens) {
        let _one_at_a_time = lock(&self.writing);
        let mut all = self.read_all();
        all.insert(resource.to_owned(), tokens);
        if let Err(e) = self.write_all(&all) {
            tracing::warn!(path = %self.path.display(), "cannot save the OAuth tokens: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tokens(access: &str) -> Tokens {
        Tokens {
            access_token: access.into(),
            refresh_token: Some("r".into()),
            scope: None,
            expires_at: Some(1),
            client: None,
            token_type: None,
            dpop_jkt: None,
        }
    }

    #[test]
    fn tokens_survive_a_new_store_and_the_file_is_0600() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/tokens.json");
        FileTokenStore::new(&path).put("https://a/mcp", tokens("a1"));
        FileTokenStore::new(&path).put("https://b/mcp", tokens("b1"));
        let store = FileTokenStore::new(&path);
        assert_eq!(store.get("https://a/mcp"), Some(tokens("a1")));
        assert_eq!(store.get("https://b/mcp"), Some(tokens("b1")));
        assert_eq!(store.get("https://c/mcp"), None);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        }
        // Nothing but the file is left in the directory.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["tokens.json"]);
    }

    #[test]
    fn a_damaged_file_counts_as_empty_and_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        std::fs::write(&path, b"{not json").unwrap();
        let store = FileTokenStore::new(&path);
        assert_eq!(store.get("https://a/mcp"), None);
        store.put("https://a/mcp", tokens("a1"));
        assert_eq!(store.get("https://a/mcp"), Some(tokens("a1")));
    }

    /// A symlink planted where the temporary file goes (the old `.NAME.PID.tmp` name, and
    /// other likely names) is never followed: the file it points to is unchanged, and the
    /// token file is a regular file of its own.
    #[cfg(unix)]
    #[test]
    fn a_planted_symlink_is_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let path = dir.path().join("tokens.json");
        for name in [
            format!(".tokens.json.{}.tmp", std::process::id()),
            ".tokens.json.tmp".to_owned(),
            "tokens.json.tmp".to_owned(),
        ] {
            std::os::unix::fs::symlink(&victim, dir.path().join(name)).unwrap();
        }
        let store = FileTokenStore::new(&path);
        store.put("https://a/mcp", tokens("a1"));
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&victim).unwrap().permissions().mode();
        assert_ne!(mode & 0o777, 0o600, "the victim was chmodded");
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(store.get("https://a/mcp"), Some(tokens("a1")));
    }
}
