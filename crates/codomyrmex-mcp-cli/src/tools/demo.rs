//! `demo.*`: tools that exercise the protocol rather than the workspace, for testing clients
//! and clusters of instances. Registered only with `--demo-tools` (`CODOMYRMEX_MCP_DEMO_TOOLS`),
//! off by default and in no profile: they touch nothing, but `demo.elicit` puts the caller's
//! text in front of the client's user.
//!
//! - `demo.elicit`: asks the client's user (`elicitation/create`, form mode) with the given
//!   message and returns what the client answered. In 2025-11-25 sessions that is a
//!   server-to-client request, whose answer may reach another instance than the one running
//!   the call (the cluster test checks it is routed back).

use codomyrmex_mcp::{ToolContext, mcp_tool, mcp_tools};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

use super::ToolError;

/// The demo tools.
pub struct DemoTools;

/// What `demo.elicit` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ElicitOutput {
    /// The client's answer to `elicitation/create` (`action`, and `content` when accepted).
    pub response: Value,
}

#[mcp_tools]
impl DemoTools {
    #[mcp_tool(
        name = "demo.elicit",
        title = "Ask the user (demo)",
        description = "Asks the client's user for one line of text (elicitation, form mode) \
                       and returns the answer. A demo tool, for testing clients.",
        read_only,
        open_world = false,
        category = "demo",
        deny_unknown_arguments
    )]
    async fn elicit(
        &self,
        cx: &ToolContext,
        /// What to ask.
        #[arg(min_length = 1, max_length = 1000)]
        message: String,
    ) -> Result<ElicitOutput, ToolError> {
        let schema = json!({
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
        });
        match cx.elicit(&message, schema).await {
            Ok(response) => Ok(ElicitOutput { response }),
            Err(e) => Err(ToolError::new(
                super::kinds::INVALID_ARGUMENT,
                format!("the client did not answer: {e}"),
            )),
        }
    }
}
