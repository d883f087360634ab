//! Small helpers shared by the registries.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Standard base64 with padding.
pub fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// One page of a name-sorted map: up to `size` (at least 1) wire values after the key
/// `after`, and the key to continue from when more follow.
pub fn page_after<V>(
    map: &std::collections::BTreeMap<String, V>,
    after: Option<&str>,
    size: usize,
    wire: impl Fn(&V) -> serde_json::Value,
) -> (Vec<serde_json::Value>, Option<String>) {
    use std::ops::Bound;
    let lower = after.map_or(Bound::Unbounded, Bound::Excluded);
    let mut iter = map.range::<str, _>((lower, Bound::Unbounded));
    let page: Vec<(&String, &V)> = iter.by_ref().take(size.max(1)).collect();
    let next = if iter.next().is_some() {
        page.last().map(|(k, _)| (*k).clone())
    } else {
        None
    };
    (page.into_iter().map(|(_, v)| wire(v)).collect(), next)
}

/// A MIME type from a file name's extension, falling back to a sniff of the content.
pub fn mime_for(name: &str, bytes: &[u8]) -> &'static str {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "txt" | "text" | "log" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "js" | "mjs" => "text/javascript",
        "json" => "application/json",
        "toml" => "application/toml",
        "yaml" | "yml" => "application/yaml",
        "xml" => "application/xml",
        "rs" => "text/x-rust",
        "py" => "text/x-python",
        "c" | "h" => "text/x-c",
        "sh" => "application/x-sh",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        "wav" => "audio/wav",
        "mp3" => "audio/mpeg",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        _ => sniff(bytes),
    }
}

fn sniff(bytes: &[u8]) -> &'static str {
    match bytes {
        [0x89, b'P', b'N', b'G', ..] => "image/png",
        [0xFF, 0xD8, 0xFF, ..] => "image/jpeg",
        [b'G', b'I', b'F', b'8', ..] => "image/gif",
        [b'%', b'P', b'D', b'F', ..] => "application/pdf",
        [
            b'R',
            b'I',
            b'F',
            b'F',
            _,
            _,
            _,
            _,
            b'W',
            b'A',
            b'V',
            b'E',
            ..,
        ] => "audio/wav",
        _ if std::str::from_utf8(bytes).is_ok() => "text/plain",
        _ => "application/octet-stream",
    }
}

/// Catches a panic while polling a future: `Err(())` instead of unwinding.
pub fn catch_unwind<F: Future>(fut: F) -> CatchUnwind<F> {
    CatchUnwind { fut: Box::pin(fut) }
}

/// The future of [`catch_unwind`].
pub struct CatchUnwind<F> {
    fut: Pin<Box<F>>,
}

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, ()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let fut = self.fut.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(move || fut.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(_) => Poll::Ready(Err(())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64_encode(i.as_bytes()), o);
        }
    }

    #[test]
    fn mime_detection() {
        assert_eq!(mime_for("a.JSON", b"{}"), "application/json");
        assert_eq!(mime_for("noext", b"\x89PNG\r\n"), "image/png");
        assert_eq!(mime_for("noext", b"plain"), "text/plain");
        assert_eq!(
            mime_for("noext", &[0xff, 0x00, 0xfe]),
            "application/octet-stream"
        );
    }
}
