//! The library's one confinement for Python: `codomyrmex_mcp._core.ConfinedRoot`.
//!
//! Compatibility mode's built-in `tools` module (Codomyrmex's file tools) reads and writes
//! files only through this class, which is [`codomyrmex_mcp::confine::ConfinedRoot`]: every
//! path is resolved inside the root by the walk of directory descriptors, symlinks included,
//! never by the operating system from a path string. There is no confinement in Python.

use std::io::Write;
use std::path::PathBuf;

use codomyrmex_mcp::confine::{self, ConfineError, WriteMode};
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyPermissionError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rustix::fs::FileType;

/// A directory that file operations may not leave.
#[pyclass(module = "codomyrmex_mcp._core", frozen)]
pub struct ConfinedRoot {
    root: confine::ConfinedRoot,
}

/// `path: reason`, as the exception a Python caller expects for it.
fn refusal(raw: &str, error: ConfineError) -> PyErr {
    let message = format!("{raw}: {error}");
    if error.is_access_denied() {
        PyPermissionError::new_err(message)
    } else if matches!(error, ConfineError::NotFound) {
        PyFileNotFoundError::new_err(message)
    } else if error.is_invalid_path() {
        PyValueError::new_err(message)
    } else {
        PyOSError::new_err(message)
    }
}

impl ConfinedRoot {
    /// The argument relative to the root; an absolute path is accepted when it is under it.
    fn relative(&self, raw: &str) -> PyResult<PathBuf> {
        self.root.argument(raw, true).map_err(|e| refusal(raw, e))
    }
}

#[pymethods]
impl ConfinedRoot {
    /// The root at `root`, an existing directory (`OSError` otherwise).
    #[new]
    fn new(root: &str) -> PyResult<Self> {
        let root = confine::ConfinedRoot::open(root)
            .map_err(|e| PyOSError::new_err(format!("{root}: {e}")))?;
        Ok(Self { root })
    }

    /// The root's canonical absolute path.
    #[getter]
    fn path(&self) -> String {
        self.root.path().to_string_lossy().into_owned()
    }

    /// `path` relative to the root, `"."` for the root itself (no file system access).
    fn relative_path(&self, path: &str) -> PyResult<String> {
        Ok(confine::ConfinedRoot::display(&self.relative(path)?))
    }

    /// The bytes of the regular file at `path`, at most `cap` of them: a larger file is
    /// refused (`OSError`). `PermissionError` for a path that leaves the root,
    /// `FileNotFoundError` when nothing is there.
    fn read<'py>(&self, py: Python<'py>, path: &str, cap: u64) -> PyResult<Bound<'py, PyBytes>> {
        let rel = self.relative(path)?;
        let bytes = py
            .detach(|| self.root.read_file(&rel, cap))
            .map_err(|e| refusal(path, e))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// `(size, mtime, is_dir)` of what `path` names (symlinks followed inside the root);
    /// `mtime` in seconds since the epoch.
    fn stat(&self, py: Python<'_>, path: &str) -> PyResult<(u64, f64, bool)> {
        let rel = self.relative(path)?;
        py.detach(|| -> Result<(u64, f64, bool), ConfineError> {
            let found = self.root.resolve(&rel, confine::LastLink::Follow)?;
            let meta = found.stat()?;
            let mtime = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0.0, |d| d.as_secs_f64());
            Ok((meta.len(), mtime, meta.is_dir()))
        })
        .map_err(|e| refusal(path, e))
    }

    /// The entries of the directory at `path` (symlinks on the way followed inside the
    /// root), as `(name, kind, size, mtime)` sorted by name, at most `limit` of them (a directory too large for the library's listing bound is refused); `kind`
    /// is `"file"`, `"directory"`, `"symlink"` or `"other"` (an entry is never followed).
    /// Names that are not UTF-8 are left out. `NotADirectoryError` for a file.
    fn list(
        &self,
        py: Python<'_>,
        path: &str,
        limit: usize,
    ) -> PyResult<Vec<(String, &'static str, u64, f64)>> {
        let rel = self.relative(path)?;
        let listed = py.detach(
            || -> Result<Vec<(String, &'static str, u64, f64)>, ConfineError> {
                // The library's confined listing: read from the directory's descriptor, each
                // entry `lstat`ed, never followed.
                let dir = self.root.open_dir(&rel)?;
                let mut out = Vec::new();
                for entry in dir.entries()? {
                    if out.len() >= limit {
                        break;
                    }
                    let Some(name) = entry.name().to_str() else {
                        continue;
                    };
                    let kind = match entry.kind() {
                        FileType::RegularFile => "file",
                        FileType::Directory => "directory",
                        FileType::Symlink => "symlink",
                        _ => "other",
                    };
                    let mtime = entry
                        .modified()
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .map_or(0.0, |d| d.as_secs_f64());
                    out.push((name.to_owned(), kind, entry.size(), mtime));
                }
                Ok(out)
            },
        );
        listed.map_err(|e| refusal(path, e))
    }

    /// Replaces (or creates) the regular file at `path` with `data`, making missing parent
    /// directories when `make_parents`; returns the path relative to the root.
    fn write(
        &self,
        py: Python<'_>,
        path: &str,
        data: &[u8],
        make_parents: bool,
    ) -> PyResult<String> {
        let rel = self.relative(path)?;
        let data = data.to_vec();
        py.detach(|| -> Result<String, ConfineError> {
            let (mut file, at, _created) =
                self.root
                    .open_for_write(&rel, WriteMode::Overwrite, make_parents)?;
            file.write_all(&data).map_err(ConfineError::Io)?;
            Ok(confine::ConfinedRoot::display(&at))
        })
        .map_err(|e| refusal(path, e))
    }
}
