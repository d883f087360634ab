//! Small helpers shared by the registries, the client and the binary: among them the one
//! rule that makes a peer's text inert on a terminal ([`inert_text`]) and the one rule that
//! takes the secrets out of a URL before it is logged or printed ([`redact_url`]).

use std::borrow::Cow;
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

/// Whether `c` is kept out of text shown on a terminal by [`inert_text`]: the C0 controls
/// but `\n` and `\t` (U+0000–U+001F), DEL (U+007F), the C1 controls (U+0080–U+009F, of
/// which U+009B is a one-byte CSI), and the invisible format characters of Unicode
/// general category Cf that reorder or hide text: the soft hyphen (U+00AD), the Arabic
/// letter mark (U+061C), the Mongolian vowel separator (U+180E), zero-width spaces, joiners
/// and direction marks (U+200B–U+200F), the line and paragraph separators (U+2028, U+2029),
/// the bidi embeddings and overrides (U+202A–U+202E), the word joiner, invisible operators,
/// bidi isolates and deprecated format controls (U+2060–U+206F), the byte order mark
/// (U+FEFF), the interlinear annotation controls (U+FFF9–U+FFFB), the musical formatting
/// controls (U+1D173–U+1D17A) and the tag characters (U+E0000–U+E007F, which can spell
/// hidden ASCII). The visible Cf signs (U+0600–U+0605, U+06DD, U+070F, U+08E2, U+110BD,
/// U+110CD) are kept: they show as what they are.
pub fn is_inert_forbidden(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{8}'
            | '\u{b}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{ad}'
            | '\u{61c}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e007f}'
    )
}

/// `text` made inert on a terminal: every character [`is_inert_forbidden`] names is left
/// out (escape sequences lose their ESC or CSI and show as plain text), newlines and tabs
/// are kept. Borrowed when there is nothing to remove. Everything a peer sent that is shown
/// to a person goes through it; JSON output does not, since JSON escapes are already inert
/// and the values must stay exact.
pub fn inert_text(text: &str) -> Cow<'_, str> {
    if text.chars().any(is_inert_forbidden) {
        Cow::Owned(text.chars().filter(|c| !is_inert_forbidden(*c)).collect())
    } else {
        Cow::Borrowed(text)
    }
}

/// What stands for a secret taken out of a URL.
const REDACTED: &str = "<redacted>";

/// `url` with what may be a secret taken out, for logs, messages and printed
/// configurations: its userinfo (`user:password@`), the value of every query parameter and
/// its fragment are each replaced by `<redacted>`; the scheme, host, port, path and the
/// query's parameter names stay, so the URL still says where it points. Text that is not
/// `scheme://...` has no authority to redact: its query and fragment are redacted all the
/// same.
pub fn redact_url(url: &str) -> String {
    // The userinfo first, up to the last `@` before the path: a password with a raw `?` or
    // `#` in it is still taken out whole (a query's `@` without a path is taken out too).
    let (mut out, rest) = match url.split_once("://") {
        Some((scheme, rest)) => {
            let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
            match authority.rfind('@') {
                Some(at) => (format!("{scheme}://{REDACTED}@"), &rest[at + 1..]),
                None => (format!("{scheme}://"), rest),
            }
        }
        None => (String::new(), url),
    };
    let (rest, fragment) = match rest.split_once('#') {
        Some((r, _)) => (r, Some(REDACTED)),
        None => (rest, None),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    out.push_str(rest);
    if let Some(query) = query {
        out.push('?');
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, _)) => format!("{name}={REDACTED}"),
                None if pair.is_empty() => String::new(),
                // A bare `?token` is a value without a name.
                None => REDACTED.to_owned(),
            })
            .collect();
        out.push_str(&pairs.join("&"));
    }
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
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
    fn inert_text_removes_controls_and_keeps_newlines_and_tabs() {
        let text =
            "a\x1b]0;pwned\x07b\x1b[2Jc\u{202e}d\u{9b}31me\r\n\tf\u{7f}\u{200b}\u{feff}\u{e0041}";
        assert_eq!(inert_text(text), "a]0;pwnedb[2Jcd31me\n\tf");
        assert!(matches!(inert_text("plain\ttext\n"), Cow::Borrowed(_)));
        // Visible text of every script stays.
        assert_eq!(
            inert_text("héllo — Ünïcode 日本 عربي 🎉"),
            "héllo — Ünïcode 日本 عربي 🎉"
        );
        for c in [
            '\u{0}',
            '\u{1f}',
            '\u{80}',
            '\u{9f}',
            '\u{61c}',
            '\u{2066}',
            '\u{2069}',
            '\u{1d173}',
        ] {
            assert!(is_inert_forbidden(c), "{c:?}");
        }
        for c in ['\n', '\t', ' ', 'a', '\u{a0}', '\u{600}'] {
            assert!(!is_inert_forbidden(c), "{c:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn inert_text_leaves_no_forbidden_character_and_is_idempotent(text in "\\PC*|[\\x00-\\x{a0}\\x{2000}-\\x{2070}\\x{feff}a]*") {
            let once = inert_text(&text).into_owned();
            proptest::prop_assert!(!once.chars().any(is_inert_forbidden));
            proptest::prop_assert_eq!(inert_text(&once), once.as_str());
            // Only forbidden characters go.
            let kept: String = text.chars().filter(|c| !is_inert_forbidden(*c)).collect();
            proptest::prop_assert_eq!(once, kept);
        }
    }

    #[test]
    fn urls_lose_their_userinfo_query_values_and_fragment() {
        assert_eq!(
            redact_url("http://user:PASS@host/mcp?api_key=K&x=1#frag"),
            "http://<redacted>@host/mcp?api_key=<redacted>&x=<redacted>#<redacted>"
        );
        assert_eq!(
            redact_url("redis://:hunter2@cache:6379/2"),
            "redis://<redacted>@cache:6379/2"
        );
        assert_eq!(redact_url("redis://cache:6379/0"), "redis://cache:6379/0");
        assert_eq!(
            redact_url("https://h:8443/mcp?token"),
            "https://h:8443/mcp?<redacted>"
        );
        assert_eq!(redact_url("https://h?a=1"), "https://h?a=<redacted>");
        assert_eq!(redact_url("not a url"), "not a url");
        assert_eq!(redact_url("x?k=v"), "x?k=<redacted>");
        assert_eq!(
            redact_url("http://u:p?ss#w@host/mcp"),
            "http://<redacted>@host/mcp"
        );
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
