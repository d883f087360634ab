//! [`write_private`]: the one way the client (and the CLI) writes a file that holds a secret
//! (OAuth tokens, credentials, state): readable by its owner only (mode 0600), replaced
//! atomically, never through a planted symlink.
//!
//! The bytes go to a new temporary file in the same directory, under a random name
//! (`.NAME.RANDOM.tmp`, 128 bits from the OS), created exclusively (`O_CREAT | O_EXCL`, which
//! never follows a symlink, plus `O_NOFOLLOW` on Linux) with mode 0600, synced, then renamed
//! over the target (a rename replaces a symlink at the target itself, not the file it points
//! to). A crash leaves the old file or the new one, never half of one; a failure removes the
//! temporary file. Directories created on the way are 0700.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// How many random names are tried before giving up (each collision means another file by
/// that name exists: practically never, unless someone is planting them).
const ATTEMPTS: usize = 8;

/// Writes `bytes` to `path` atomically, as a 0600 file (see the module docs).
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )
    })?;
    create_private_dir(&dir)?;
    let (tmp, mut file) = create_temporary(&dir, &name.to_string_lossy())?;
    let result = (|| {
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Creates `dir` and its missing parents (0700 on Unix).
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// A new 0600 file in `dir` under a random name derived from `name`, and its path.
fn create_temporary(dir: &Path, name: &str) -> std::io::Result<(PathBuf, std::fs::File)> {
    let mut last = None;
    for _ in 0..ATTEMPTS {
        let mut random = [0u8; 16];
        getrandom::fill(&mut random).map_err(|e| {
            std::io::Error::other(format!("no OS randomness for a temporary name: {e}"))
        })?;
        let suffix: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let tmp = dir.join(format!(".{name}.{suffix}.tmp"));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
            #[cfg(target_os = "linux")]
            options.custom_flags(
                i32::try_from(rustix::fs::OFlags::NOFOLLOW.bits()).unwrap_or_default(),
            );
        }
        match options.open(&tmp) {
            Ok(file) => {
                #[cfg(unix)]
                {
                    // The umask may have taken bits away; never adds any.
                    use std::os::unix::fs::PermissionsExt as _;
                    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
                }
                return Ok((tmp, file));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no temporary file name was free")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn writes_a_0600_file_and_replaces_it_leaving_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/secret.json");
        write_private(&path, b"one").unwrap();
        write_private(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
            let mode = std::fs::metadata(path.parent().unwrap())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["secret.json"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_at_the_target_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let path = dir.path().join("secret.json");
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        write_private(&path, b"mine").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(
            std::fs::symlink_metadata(&path)
                .unwrap()
                .file_type()
                .is_file()
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"mine");
    }

    #[test]
    fn a_path_without_a_file_name_is_a_clear_error() {
        let e = write_private(Path::new("/"), b"x").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    }
}
