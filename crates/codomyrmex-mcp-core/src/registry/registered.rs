//! A registered tool's run: its arguments validated, its handler called, its output
//! checked against the tool's output schema ([`RegisteredTool`]'s methods).

use super::*;

impl RegisteredTool {
    /// Validates the arguments and runs the handler on the caller's task. It catches no
    /// panic: the driver that runs it does ([`crate::driver`]), and moves a blocking tool's
    /// whole invocation to its runtime's blocking pool.
    pub(crate) async fn invoke_owned(
        self: Arc<Self>,
        arguments: JsonObject,
        context: ToolContext,
    ) -> ToolOutput {
        self.run(arguments, context).await
    }

    /// Validates and runs the handler.
    pub(crate) async fn run(&self, arguments: JsonObject, context: ToolContext) -> ToolOutput {
        let instance = Value::Object(arguments);
        if !self.input_validator.is_valid(&instance) {
            let list = self.input_validator.violations(&instance);
            let mut details = Map::new();
            details.insert("tool".into(), json!(self.definition.name));
            details.insert("violations".into(), Value::Array(list));
            return ToolOutput::failure(
                McpErrorDetail::new(
                    "ValidationError",
                    format!(
                        "Arguments do not satisfy the input schema of tool {}",
                        self.definition.name
                    ),
                )
                .with_details(details),
            );
        }
        let Value::Object(arguments) = instance else {
            return ToolOutput::failure(McpErrorDetail::new("InternalError", "arguments lost"));
        };
        if let Some(version) = &self.settings.deprecated_in
            && !self
                .deprecation_warned
                .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            tracing::warn!(tool = %self.definition.name, deprecated_in = %version, "a deprecated tool was called");
        }
        let context = context.with_tool_name(&self.definition.name);
        let output = self.handler.clone().call(arguments, context).await;
        self.check_output(output)
    }

    fn check_output(&self, mut output: ToolOutput) -> ToolOutput {
        let Some(validator) = &self.output_validator else {
            return output;
        };
        if output.result.is_failure() {
            return output;
        }
        // The data is lent to the validator as a value and put back: never copied.
        let structured = match output.result.data_mut() {
            Some(d) => Value::Object(std::mem::take(d)),
            None => Value::Null,
        };
        let violations =
            (!validator.is_valid(&structured)).then(|| validator.violations(&structured));
        if let (Value::Object(map), Some(d)) = (structured, output.result.data_mut()) {
            *d = map;
        }
        let Some(violations) = violations else {
            return output;
        };
        let mut details = Map::new();
        details.insert("violations".into(), Value::Array(violations));
        ToolOutput::failure(
            McpErrorDetail::new(
                "OutputValidationError",
                format!(
                    "Tool {} produced output that does not satisfy its output schema",
                    self.definition.name
                ),
            )
            .with_details(details),
        )
    }
}
