use serde_json::json;

use super::*;

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

#[test]
fn resource_meta_serializes_as_the_extension_writes_it() {
    let meta = UiResourceMeta {
        csp: Some(UiResourceCsp {
            connect_domains: vec!["https://api.example.com".into()],
            resource_domains: vec!["https://*.cdn.example.com".into()],
            frame_domains: vec![],
            base_uri_domains: vec!["https://base.example.com".into()],
            extra: Map::new(),
        }),
        permissions: Some(UiResourcePermissions {
            camera: true,
            clipboard_write: true,
            ..UiResourcePermissions::default()
        }),
        domain: Some("a904794854a047f6.claudemcpcontent.com".into()),
        prefers_border: Some(false),
        extra: Map::new(),
    };
    let wire = serde_json::to_value(&meta).unwrap();
    assert_eq!(
        wire,
        json!({
            "csp": {
                "connectDomains": ["https://api.example.com"],
                "resourceDomains": ["https://*.cdn.example.com"],
                "baseUriDomains": ["https://base.example.com"]
            },
            "permissions": {"camera": {}, "clipboardWrite": {}},
            "domain": "a904794854a047f6.claudemcpcontent.com",
            "prefersBorder": false
        })
    );
    let back: UiResourceMeta = serde_json::from_value(wire).unwrap();
    assert_eq!(back, meta);
    assert_eq!(meta.to_meta()["ui"]["prefersBorder"], json!(false));
    assert!(UiResourceMeta::default().is_empty());
    assert_eq!(
        serde_json::to_value(UiResourceMeta::default()).unwrap(),
        json!({})
    );
}

#[test]
fn unknown_keys_of_a_later_revision_pass_through() {
    let wire = json!({"prefersBorder": true, "futureKey": [1], "permissions": {"midi": {}}});
    let meta: UiResourceMeta = serde_json::from_value(wire.clone()).unwrap();
    assert_eq!(meta.extra["futureKey"], json!([1]));
    assert_eq!(serde_json::to_value(&meta).unwrap(), wire);
    let tool =
        UiToolMeta::from_tool_meta(&obj(json!({"ui": {"resourceUri": "ui://a/b", "later": 1}})))
            .unwrap()
            .unwrap();
    assert_eq!(
        serde_json::to_value(&tool).unwrap(),
        json!({"resourceUri": "ui://a/b", "later": 1})
    );
}

#[test]
fn tool_meta_reads_visibility_and_defaults_to_both() {
    let t = UiToolMeta::from_tool_meta(&obj(json!({
        "ui": {"resourceUri": "ui://dash/view", "visibility": ["app"]}
    })))
    .unwrap()
    .unwrap();
    assert_eq!(t.resource_uri.as_deref(), Some("ui://dash/view"));
    assert!(!t.model_visible());
    assert!(t.app_callable());
    let both = UiToolMeta::linked("ui://dash/view");
    assert!(both.model_visible() && both.app_callable());
    assert_eq!(
        serde_json::to_value(both.with_visibility([UiVisibility::Model, UiVisibility::App]))
            .unwrap(),
        json!({"resourceUri": "ui://dash/view", "visibility": ["model", "app"]})
    );
    assert_eq!(
        UiToolMeta::from_tool_meta(&obj(json!({"other": 1}))).unwrap(),
        None
    );
}

#[test]
fn the_deprecated_flat_key_is_read_and_must_agree() {
    let t = UiToolMeta::from_tool_meta(&obj(json!({"ui/resourceUri": "ui://old/view"})))
        .unwrap()
        .unwrap();
    assert_eq!(t.resource_uri.as_deref(), Some("ui://old/view"));
    let e = UiToolMeta::from_tool_meta(&obj(json!({
        "ui/resourceUri": "ui://a/x", "ui": {"resourceUri": "ui://a/y"}
    })))
    .unwrap_err();
    assert!(e.0.contains("disagree"), "{e}");
    assert!(UiToolMeta::from_tool_meta(&obj(json!({"ui/resourceUri": 3}))).is_err());
}

#[test]
fn bad_tool_metadata_is_a_clear_error() {
    for (meta, expect) in [
        (json!({"ui": "ui://x"}), "must be an object"),
        (
            json!({"ui": {"resourceUri": "https://x/app.html"}}),
            "not a ui:// URI",
        ),
        (json!({"ui": {"resourceUri": "ui://"}}), "names no resource"),
        (json!({"ui": {"resourceUri": "ui://a b"}}), "contains ' '"),
        (json!({"ui": {"resourceUri": 7}}), "_meta.ui:"),
        (
            json!({"ui": {"visibility": ["agent"]}}),
            "unknown variant `agent`",
        ),
        (json!({"ui": {"visibility": []}}), "is empty"),
        (json!({"ui": {"visibility": ["app", "app"]}}), "twice"),
        (json!({"ui": {"visibility": "app"}}), "_meta.ui:"),
        (
            json!({"ui": {"resourceUri": "ui://a/b", "csp": {}}}),
            "belongs on the UI resource",
        ),
        (
            json!({"ui": {"permissions": {}}}),
            "belongs on the UI resource",
        ),
    ] {
        let e = UiToolMeta::from_tool_meta(&obj(meta.clone())).unwrap_err();
        assert!(e.0.contains(expect), "{meta}: {e}");
    }
}

#[test]
fn bad_resource_metadata_is_a_clear_error() {
    for (ui, expect) in [
        (
            json!({"csp": {"connectDomains": ["https://a.example.com; script-src *"]}}),
            "contains ';'",
        ),
        (
            json!({"csp": {"connectDomains": ["https://a.example.com https://b"]}}),
            "contains ' '",
        ),
        (
            json!({"csp": {"resourceDomains": ["'unsafe-eval'"]}}),
            "contains '\\''",
        ),
        (
            json!({"csp": {"resourceDomains": ["cdn.example.com"]}}),
            "is not an origin",
        ),
        (
            json!({"csp": {"frameDomains": ["https://user@evil.example"]}}),
            "is not an origin",
        ),
        (
            json!({"csp": {"frameDomains": ["https://x.example:port"]}}),
            "is not an origin",
        ),
        (json!({"csp": {"connectDomains": "https://a"}}), "_meta.ui:"),
        (json!({"permissions": {"camera": true}}), "_meta.ui:"),
        (json!({"domain": ""}), "1 to"),
        (json!({"domain": "a.example.com; b"}), "contains ';'"),
        (json!({"prefersBorder": "yes"}), "_meta.ui:"),
    ] {
        let e = UiResourceMeta::from_meta(&obj(json!({"ui": ui.clone()}))).unwrap_err();
        assert!(e.0.contains(expect), "{ui}: {e}");
    }
    let many: Vec<String> = (0..=MAX_CSP_SOURCES)
        .map(|i| format!("https://h{i}.example"))
        .collect();
    let e = UiResourceMeta::from_meta(&obj(json!({"ui": {"csp": {"connectDomains": many}}})))
        .unwrap_err();
    assert!(e.0.contains("at most"), "{e}");
    for good in [
        "https://api.example.com",
        "wss://realtime.example.com:8443",
        "https://*.cloudflare.com",
        "http://localhost:5173",
        "https://cdn.example.com/assets/",
    ] {
        let ui = json!({"ui": {"csp": {"resourceDomains": [good]}}});
        assert!(UiResourceMeta::from_meta(&obj(ui)).is_ok(), "{good}");
    }
}

#[test]
fn the_client_capability_is_read_in_the_extension_form() {
    let caps = json!({"extensions": {UI_EXTENSION: {"mimeTypes": [APP_MIME_TYPE]}}});
    assert!(client_supports_apps(&caps));
    assert_eq!(
        UiClientCapability::of(&caps).unwrap().mime_types,
        vec![APP_MIME_TYPE.to_owned()]
    );
    assert!(!client_supports_apps(
        &json!({"extensions": {UI_EXTENSION: {"mimeTypes": ["text/html"]}}})
    ));
    assert!(!client_supports_apps(
        &json!({"extensions": {UI_EXTENSION: {}}})
    ));
    assert!(!client_supports_apps(
        &json!({"extensions": {UI_EXTENSION: {"mimeTypes": "x"}}})
    ));
    assert!(!client_supports_apps(&json!({})));
}
