//! [`ServeDirectory`]: serving a directory's files as resources.
//!
//! File I/O is not the protocol core's: the core's [`McpResourceRegistry`] only knows
//! handlers, and this module registers one (a `{uri_prefix}{+path}` template) that reads the
//! files on tokio's blocking pool, confined to the served root.

use std::collections::BTreeMap;
use std::path::Path;

use crate::confine::{ConfineError, ConfinedRoot};
use crate::wire::ResourceContents;
use crate::{
    McpResourceRegistry, ResourceError, ResourceRegistrationError, ResourceRequest,
    ResourceTemplateDefinition,
};

/// Serves a directory's files through a resource registry.
pub trait ServeDirectory {
    /// Serves the files under `root` as `{uri_prefix}{+path}` (for example
    /// `file:///{+path}`). Paths are confined to `root` by [`ConfinedRoot`]: `..`, absolute
    /// paths and symlinks that leave it are refused. MIME types are detected from the
    /// extension and content. A root that cannot be opened serves nothing: every read fails.
    fn serve_directory(
        &self,
        root: impl AsRef<Path>,
        uri_prefix: &str,
        name: &str,
    ) -> Result<(), ResourceRegistrationError>;

    /// [`Self::serve_directory`] for a root already opened (the one a server's tools share).
    fn serve_confined(
        &self,
        root: ConfinedRoot,
        uri_prefix: &str,
        name: &str,
    ) -> Result<(), ResourceRegistrationError>;
}

impl ServeDirectory for McpResourceRegistry {
    fn serve_directory(
        &self,
        root: impl AsRef<Path>,
        uri_prefix: &str,
        name: &str,
    ) -> Result<(), ResourceRegistrationError> {
        match ConfinedRoot::open(root.as_ref()) {
            Ok(root) => self.serve_confined(root, uri_prefix, name),
            // Fail closed: the template exists (a client sees why reads fail), nothing is read.
            Err(e) => {
                let reason = format!("the served directory cannot be opened: {}", e.kind());
                self.add_template(
                    ResourceTemplateDefinition::new(format!("{uri_prefix}{{+path}}"), name),
                    move |_req: ResourceRequest| {
                        let reason = reason.clone();
                        async move { Err(ResourceError::Failed(reason)) }
                    },
                    BTreeMap::new(),
                )
            }
        }
    }

    fn serve_confined(
        &self,
        root: ConfinedRoot,
        uri_prefix: &str,
        name: &str,
    ) -> Result<(), ResourceRegistrationError> {
        // Clients see the directory's own name, never where it is on this machine.
        let description = match root.path().file_name() {
            Some(n) => format!("Files under {}", n.to_string_lossy()),
            None => "Files of the served directory".to_owned(),
        };
        let template = format!("{uri_prefix}{{+path}}");
        self.add_template(
            ResourceTemplateDefinition::new(template, name).with_description(description),
            move |req: ResourceRequest| {
                let root = root.clone();
                async move {
                    let raw = req.variables.get("path").cloned().unwrap_or_default();
                    let shown = raw.clone();
                    // Resolved and read on the blocking pool, off the runtime's workers.
                    let bytes = tokio::task::spawn_blocking(move || {
                        let rel = root.argument(&raw, false)?;
                        root.read_file(&rel, MAX_SERVED_FILE)
                    })
                    .await
                    .map_err(|_| ResourceError::Failed("read task failed".into()))?
                    .map_err(|e| resource_error(e, &req.uri, &shown))?;
                    let mime = codomyrmex_mcp_core::util::mime_for(&shown, &bytes);
                    Ok(vec![match String::from_utf8(bytes) {
                        Ok(text) => ResourceContents::Text {
                            uri: req.uri,
                            mime_type: Some(mime.into()),
                            text,
                            meta: None,
                        },
                        Err(e) => ResourceContents::Blob {
                            uri: req.uri,
                            mime_type: Some(mime.into()),
                            blob: codomyrmex_mcp_core::util::base64_encode(e.as_bytes()),
                            meta: None,
                        },
                    }])
                }
            },
            BTreeMap::new(),
        )
    }
}

/// The largest file `serve_directory` reads.
const MAX_SERVED_FILE: u64 = 16 * 1024 * 1024;

/// A resolution's or read's error as the resource error a client sees.
fn resource_error(e: ConfineError, uri: &str, shown: &str) -> ResourceError {
    match e {
        ConfineError::NotFound
        | ConfineError::NotADirectory
        | ConfineError::IsADirectory
        | ConfineError::NotRegular => ResourceError::NotFound(uri.to_owned()),
        ConfineError::Empty => ResourceError::NotFound(uri.to_owned()),
        ConfineError::TooLarge(_) | ConfineError::Io(_) => {
            ResourceError::Failed(format!("cannot read {shown}: {e}"))
        }
        e => ResourceError::AccessDenied(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolContext;

    #[tokio::test]
    async fn directory_serving_is_sandboxed() {
        let dir = std::env::temp_dir().join(format!("cmcp-res-{}", std::process::id()));
        let outside = std::env::temp_dir().join(format!("cmcp-out-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(dir.join("sub/a.txt"), "inside").unwrap();
        std::fs::write(outside.join("secret.txt"), "secret").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&outside, dir.join("escape")).unwrap();
        let r = McpResourceRegistry::new();
        r.serve_directory(&dir, "file:///", "files").unwrap();
        let ok = r
            .read("file:///sub/a.txt", ToolContext::detached())
            .await
            .unwrap();
        assert!(
            matches!(&ok[0], ResourceContents::Text { text, mime_type: Some(m), .. } if text == "inside" && m == "text/plain")
        );
        for bad in [
            "file:///../etc/passwd",
            "file:////etc/passwd",
            "file:///sub/../../x",
        ] {
            assert!(
                matches!(
                    r.read(bad, ToolContext::detached()).await,
                    Err(ResourceError::AccessDenied(_))
                ),
                "{bad}"
            );
        }
        #[cfg(unix)]
        assert!(matches!(
            r.read("file:///escape/secret.txt", ToolContext::detached())
                .await,
            Err(ResourceError::AccessDenied(_))
        ));
        assert!(matches!(
            r.read("file:///missing.txt", ToolContext::detached()).await,
            Err(ResourceError::NotFound(_))
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&outside);
    }

    #[tokio::test]
    async fn directory_serving_never_shows_the_roots_absolute_path() {
        let dir = std::env::temp_dir().join(format!("cmcp-leak-{}", std::process::id()));
        let outside = std::env::temp_dir().join(format!("cmcp-leak-out-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("s.txt"), "s").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&outside, dir.join("escape")).unwrap();
        let root = dir.canonicalize().unwrap();
        let abs = root.to_string_lossy().into_owned();
        let r = McpResourceRegistry::new();
        r.serve_directory(&dir, "file:///", "files").unwrap();
        for t in r.templates() {
            let shown = serde_json::to_string(&t).unwrap();
            assert!(!shown.contains(&abs), "a template shows the root: {shown}");
        }
        for uri in [
            "file:///missing.txt",
            "file:///sub",
            "file:///../x",
            "file:///escape/s.txt",
            "file:///sub/../../x",
        ] {
            if let Err(e) = r.read(uri, ToolContext::detached()).await {
                let shown = format!("{e} {e:?}");
                assert!(!shown.contains(&abs), "{uri}: {shown}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&outside);
    }
}
