//! [`WithContent`]: a tool result that says what the model reads and what programs get.
//!
//! By default a tool's value becomes `structuredContent` and its text block is that value's
//! JSON. A tool whose result is mainly text (a file, a diff, command output) returns
//! `WithContent<T>` instead: the content blocks it names go to the model as they are, and `T`
//! is still `structuredContent`, described by the same output schema as a plain `T`.
//!
//! It works from `#[mcp_tool]` functions (`-> Result<WithContent<T>, E>`) and from plain
//! handlers registered with `McpToolRegistry::register`. It is not a way to send a failure:
//! failures are the error of the tool's `Result`.

use serde::Serialize;

use crate::registry::{IntoToolOutput, ToolOutput};
use crate::schema::{McpErrorDetail, McpToolResult};
use crate::tool_support::__private::{OutputShape, OutputSpec, ToolReturn};
use crate::wire::ContentBlock;

/// A successful tool result: `content` is what the model reads, `data` is
/// `structuredContent`.
///
/// Examples: the `codomyrmex-mcp` crate's docs, *Tools, prompts and resources from
/// functions* (they use its macros, and this crate's tests build without that crate).
#[derive(Debug, Clone, PartialEq)]
pub struct WithContent<T> {
    /// The content blocks sent to the model, in order.
    pub content: Vec<ContentBlock>,
    /// The structured result (`structuredContent`).
    pub data: T,
}

impl<T> WithContent<T> {
    /// A result whose model-facing content is the one text block `text`.
    pub fn text(text: impl Into<String>, data: T) -> Self {
        Self {
            content: vec![ContentBlock::text(text)],
            data,
        }
    }

    /// A result with the given content blocks.
    pub fn new(content: Vec<ContentBlock>, data: T) -> Self {
        Self { content, data }
    }

    /// This result with one more text block after the others.
    #[must_use]
    pub fn and_text(mut self, text: impl Into<String>) -> Self {
        self.content.push(ContentBlock::text(text));
        self
    }
}

/// `output` with `content` in place of the default rendering, if it is a success.
fn with_content(mut output: ToolOutput, content: Vec<ContentBlock>) -> ToolOutput {
    if !output.result.is_failure() {
        output.content = Some(content);
    }
    output
}

impl<T: Serialize + schemars::JsonSchema> ToolReturn for WithContent<T> {
    fn output_spec() -> OutputSpec {
        <T as ToolReturn>::output_spec()
    }

    fn into_tool_output(self, shape: OutputShape) -> ToolOutput {
        with_content(self.data.into_tool_output(shape), self.content)
    }
}

impl<T: Serialize> IntoToolOutput for WithContent<T> {
    fn into_tool_output(self) -> ToolOutput {
        let output = match serde_json::to_value(&self.data) {
            Ok(value) => ToolOutput::from_result(McpToolResult::success_value(value)),
            Err(e) => ToolOutput::failure(McpErrorDetail::new(
                "SerializationError",
                format!("The tool's result could not be serialised: {e}"),
            )),
        };
        with_content(output, self.content)
    }
}

impl<T: Serialize> IntoToolOutput for Result<WithContent<T>, McpErrorDetail> {
    fn into_tool_output(self) -> ToolOutput {
        match self {
            Ok(v) => v.into_tool_output(),
            Err(e) => ToolOutput::failure(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn plain_handlers_keep_the_data_and_send_the_text() {
        let out =
            IntoToolOutput::into_tool_output(WithContent::text("fn main() {}\n", json!({"n": 1})));
        assert_eq!(
            out.content,
            Some(vec![ContentBlock::text("fn main() {}\n")])
        );
        assert_eq!(
            out.result.data().map(|d| Value::Object(d.clone())),
            Some(json!({"n": 1}))
        );
    }

    #[test]
    fn an_error_stays_a_failure_without_the_content() {
        let r: Result<WithContent<Value>, McpErrorDetail> = Err(McpErrorDetail::new("X", "y"));
        let out = r.into_tool_output();
        assert!(out.result.is_failure());
        assert_eq!(out.content, None);
    }
}
