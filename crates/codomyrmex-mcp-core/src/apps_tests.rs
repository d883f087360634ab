use serde_json::{Map, Value, json};

use super::*;
use crate::registry::ToolRegistration;
use crate::resources::ResourceTemplateDefinition;
use crate::schema::McpErrorDetail;

fn handler() -> impl Fn(Map<String, Value>) -> Result<Value, McpErrorDetail> + Send + Sync + 'static
{
    |_| Ok(json!(null))
}

fn definition(name: &str) -> ToolDefinition {
    ToolDefinition::new(name, json!({"type": "object"}))
}

#[test]
fn a_tool_with_bad_ui_metadata_is_refused_whichever_way_it_is_written() {
    let tools = McpToolRegistry::new();
    let cases = [
        definition("a").with_ui_resource("https://example.com/app.html"),
        definition("b").with_ui(UiToolMeta::linked("ui://x/y").with_visibility([])),
        definition("c").with_meta("ui", json!({"visibility": ["robot"]})),
        definition("d").with_meta("ui", json!({"resourceUri": "ui://x/y", "csp": {}})),
        definition("e").with_meta(LEGACY_RESOURCE_URI_KEY, json!("file:///x.html")),
    ];
    for d in cases {
        let name = d.name.clone();
        let e = tools
            .register_tool(ToolRegistration::new(d, handler()))
            .unwrap_err();
        assert!(
            matches!(&e, McpRegistrationError::InvalidUiMeta { name: n, .. } if *n == name),
            "{e}"
        );
        assert!(e.to_string().contains("_meta"), "{e}");
    }
    assert!(tools.is_empty());
}

#[test]
fn ui_resources_have_the_app_mime_type_and_metadata_that_reads() {
    let r = McpResourceRegistry::new();
    let e = r
        .add_text(
            ResourceDefinition::new("ui://a/view", "v").with_mime_type("text/html"),
            "x",
        )
        .unwrap_err();
    assert!(e.to_string().contains("text/html;profile=mcp-app"), "{e}");
    let mut bad_meta = ResourceDefinition::new("ui://a/view", "v");
    bad_meta.meta = Some(UiResourceMeta::default().to_meta());
    bad_meta
        .meta
        .as_mut()
        .unwrap()
        .insert("ui".into(), json!({"csp": {"connectDomains": ["*"]}}));
    assert!(matches!(
        r.add_text(bad_meta, "x"),
        Err(ResourceRegistrationError::InvalidUi { .. })
    ));
    let e = r
        .add_template(
            ResourceTemplateDefinition::new("ui://t/{id}", "t").with_mime_type("text/plain"),
            |_: crate::resources::ResourceRequest| async { Ok(Vec::new()) },
            Default::default(),
        )
        .unwrap_err();
    assert!(
        matches!(e, ResourceRegistrationError::InvalidUi { .. }),
        "{e}"
    );
    assert!(!r.has_ui_resources());

    // No MIME type given: the app's is set.
    r.add_text(ResourceDefinition::new("ui://a/view", "v"), "x")
        .unwrap();
    assert_eq!(r.resources()[0].mime_type.as_deref(), Some(APP_MIME_TYPE));
    assert!(r.has_ui_resources());
    // Other schemes are untouched.
    r.add_text(
        ResourceDefinition::new("file:///a", "f").with_mime_type("text/html"),
        "x",
    )
    .unwrap();
}

#[test]
fn a_ui_resource_must_be_under_ui_and_its_metadata_is_checked() {
    let r = McpResourceRegistry::new();
    let e = UiResource::html("https://x/app.html", "app", "<html></html>")
        .register(&r)
        .unwrap_err();
    assert!(e.to_string().contains("ui://"), "{e}");
    let e = UiResource::html("ui://x/app", "app", "<html></html>")
        .with_domain("a b")
        .register(&r)
        .unwrap_err();
    assert!(e.to_string().contains("_meta.ui.domain"), "{e}");
    assert!(r.is_empty());
}

#[test]
fn a_tool_linking_an_unregistered_ui_resource_is_found() {
    let tools = McpToolRegistry::new();
    tools
        .register_tool(ToolRegistration::new(
            definition("view").with_ui_resource("ui://app/view"),
            handler(),
        ))
        .unwrap();
    tools
        .register_tool(ToolRegistration::new(
            definition("legacy").with_meta(LEGACY_RESOURCE_URI_KEY, json!("ui://app/old")),
            handler(),
        ))
        .unwrap();
    tools
        .register_tool(ToolRegistration::new(definition("plain"), handler()))
        .unwrap();
    let r = McpResourceRegistry::new();
    let e = check_links(&tools, Some(&r)).unwrap_err();
    assert_eq!(
        e,
        AppsError::Unlinked(vec![
            ("legacy".into(), "ui://app/old".into()),
            ("view".into(), "ui://app/view".into())
        ])
    );
    assert!(
        e.to_string()
            .contains("tool \"view\" links \"ui://app/view\""),
        "{e}"
    );
    assert!(check_links(&tools, None).is_err());
    UiResource::html("ui://app/view", "view", "<html></html>")
        .register(&r)
        .unwrap();
    r.add_template(
        ResourceTemplateDefinition::new("ui://app/{name}", "any"),
        |_: crate::resources::ResourceRequest| async { Ok(Vec::new()) },
        Default::default(),
    )
    .unwrap();
    check_links(&tools, Some(&r)).unwrap();
}
