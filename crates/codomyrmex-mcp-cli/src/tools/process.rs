//! Running child processes for the git, json and shell tools: output capture with caps, and
//! the environment they get.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Output read from a pipe, cut at a cap.
#[derive(Debug, Default, Clone)]
pub struct Captured {
    /// The first bytes, up to the cap.
    pub bytes: Vec<u8>,
    /// Every byte seen, kept or not.
    pub total: u64,
}

impl Captured {
    /// Whether bytes were dropped.
    pub fn truncated(&self) -> bool {
        self.total > self.bytes.len() as u64
    }

    /// The kept bytes as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// Reads `reader` to its end, keeping the first `max` bytes and counting the rest.
pub async fn capture<R: AsyncRead + Unpin>(mut reader: R, max: usize) -> io::Result<Captured> {
    let mut out = Captured::default();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = reader.read(&mut buf).await?;
        if n == 0 {
            return Ok(out);
        }
        out.total += n as u64;
        let room = max.saturating_sub(out.bytes.len());
        out.bytes.extend_from_slice(&buf[..n.min(room)]);
    }
}

/// Removes this program's own settings (tokens among them) from a child's environment.
pub fn scrub_env(cmd: &mut tokio::process::Command) {
    for (key, _) in std::env::vars_os() {
        if key
            .to_str()
            .is_some_and(|k| k.starts_with("CODOMYRMEX_MCP_"))
        {
            cmd.env_remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn capture_keeps_the_head_and_counts_the_rest() {
        let data = vec![b'x'; 100_000];
        let c = capture(&data[..], 10).await.unwrap();
        assert_eq!(c.bytes.len(), 10);
        assert_eq!(c.total, 100_000);
        assert!(c.truncated());
        let c = capture(&b"short"[..], 10).await.unwrap();
        assert_eq!(c.text(), "short");
        assert!(!c.truncated());
    }
}
