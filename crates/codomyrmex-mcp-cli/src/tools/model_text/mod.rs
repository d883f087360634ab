//! What a model reads of each built-in tool's result: the text blocks of `CallToolResult`.
//!
//! A tool whose result is mainly text returns [`WithContent`]: the text as it is (a file as on
//! disk, a diff, command output, search hits as `path:line:text`), with the structured value
//! still in `structuredContent`. Each result type here says what its text is through
//! [`ModelText`]; the tools return `output.for_model()`. Results not listed here (stat, the
//! writing tools, `codomyrmex.get_tool_schema`) keep the default: their structured value as
//! JSON.
//!
//! This module only renders; it never decides what a tool does.
//!
//! The renderings are in `renders.rs`; the tools use only the trait here, so they and their
//! renderings do not import each other.

use codomyrmex_mcp::WithContent;

mod renders;

/// A result type with a plain-text rendering for the model.
pub trait ModelText: Sized {
    /// The text blocks a model reads, in order (the main text first).
    fn model_text(&self) -> Vec<String>;

    /// This result with its text blocks as the model-facing content.
    fn for_model(self) -> WithContent<Self> {
        let mut blocks = self.model_text().into_iter();
        let first = blocks.next().unwrap_or_default();
        blocks.fold(WithContent::text(first, self), WithContent::and_text)
    }
}
