//! Protocol revisions and eras.

use serde::{Deserialize, Serialize};

/// The two eras of MCP.
///
/// *Modern* revisions (`2026-07-28` and later) are stateless: every request carries its version
/// and client capabilities in `_meta`. *Legacy* revisions (`2025-11-25` and earlier) open a
/// session with the `initialize` handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// Per-request metadata, no handshake (`2026-07-28`).
    Modern,
    /// The `initialize` handshake and sessions (`2025-11-25` down to `2024-11-05`).
    Legacy,
}

/// A protocol revision this crate implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// `2024-11-05`.
    #[serde(rename = "2024-11-05")]
    V2024_11_05,
    /// `2025-03-26`.
    #[serde(rename = "2025-03-26")]
    V2025_03_26,
    /// `2025-06-18`.
    #[serde(rename = "2025-06-18")]
    V2025_06_18,
    /// `2025-11-25`.
    #[serde(rename = "2025-11-25")]
    V2025_11_25,
    /// `2026-07-28`.
    #[serde(rename = "2026-07-28")]
    V2026_07_28,
}

impl ProtocolVersion {
    /// Every supported revision, newest first.
    pub const ALL: [ProtocolVersion; 5] = [
        Self::V2026_07_28,
        Self::V2025_11_25,
        Self::V2025_06_18,
        Self::V2025_03_26,
        Self::V2024_11_05,
    ];
    /// The newest legacy revision: what `initialize` offers when the client asks for one we lack.
    pub const LATEST_LEGACY: ProtocolVersion = Self::V2025_11_25;
    /// The newest modern revision.
    pub const LATEST_MODERN: ProtocolVersion = Self::V2026_07_28;

    /// The revision's date string, as it appears on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// Parses a wire string; `None` for a revision this crate does not implement.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Which era the revision belongs to.
    pub const fn era(self) -> Era {
        match self {
            Self::V2026_07_28 => Era::Modern,
            _ => Era::Legacy,
        }
    }

    /// Whether this revision accepts JSON-RPC batches (only `2025-03-26` and `2024-11-05`).
    pub const fn allows_batches(self) -> bool {
        matches!(self, Self::V2024_11_05 | Self::V2025_03_26)
    }
}

impl std::fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_round_trips_and_rejects_unknown() {
        for v in ProtocolVersion::ALL {
            assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
        }
        assert_eq!(ProtocolVersion::parse("1900-01-01"), None);
        assert_eq!(ProtocolVersion::parse(""), None);
    }

    #[test]
    fn eras_and_batches() {
        assert_eq!(ProtocolVersion::V2026_07_28.era(), Era::Modern);
        assert_eq!(ProtocolVersion::V2025_11_25.era(), Era::Legacy);
        assert!(ProtocolVersion::V2025_03_26.allows_batches());
        assert!(!ProtocolVersion::V2025_06_18.allows_batches());
        assert!(!ProtocolVersion::V2026_07_28.allows_batches());
    }
}
