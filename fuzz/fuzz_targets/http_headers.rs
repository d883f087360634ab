//! The modern-era header checks (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`,
//! `Mcp-Param-*`) and the `=?base64?...?=` value form, against arbitrary headers and bodies.
#![no_main]

use std::sync::{Arc, OnceLock};

use arbitrary::{Result, Unstructured};
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use base64::Engine as _;
use codomyrmex_mcp::fuzzing::{decode_header_value, validate_modern_headers};
use codomyrmex_mcp::{McpErrorDetail, McpToolRegistry};
use fuzz_support::{TOOLS, json_value, params_for, pick_str};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

const NAMES: &[&str] = &[
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "mcp-param-region",
    "mcp-param-n",
    "mcp-param-flag",
    "mcp-param-deep",
    "content-type",
];

fn registry() -> &'static McpToolRegistry {
    static R: OnceLock<Arc<McpToolRegistry>> = OnceLock::new();
    R.get_or_init(|| {
        let r = Arc::new(McpToolRegistry::new());
        let _ = r.register(
            "echo",
            json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "n": {"type": "number", "x-mcp-header": "N"},
                "flag": {"type": "boolean", "x-mcp-header": "Flag"},
                "obj": {"type": "object", "properties": {"deep": {"type": "string", "x-mcp-header": "Deep"}}},
            }}),
            |_: Map<String, Value>| -> Result<Value, McpErrorDetail> { Ok(json!({})) },
        );
        r
    })
}

fn value(u: &mut Unstructured, body: &Map<String, Value>, method: &str) -> Result<Vec<u8>> {
    Ok(match u.int_in_range(0..=5u8)? {
        0 => {
            let n = u.int_in_range(0..=40usize)?;
            u.bytes(n)?.to_vec()
        }
        1 => method.as_bytes().to_vec(),
        2 => {
            // The body's own values, plain or in the Base64 form.
            let v = body
                .get("name")
                .or_else(|| body.get("arguments").and_then(|a| a.get("region")))
                .and_then(Value::as_str)
                .unwrap_or("echo")
                .to_owned();
            if u.arbitrary()? {
                format!(
                    "=?base64?{}?=",
                    base64::engine::general_purpose::STANDARD.encode(v)
                )
                .into_bytes()
            } else {
                v.into_bytes()
            }
        }
        3 => pick_str(
            u,
            &["2026-07-28", "2025-11-25", "=?base64??=", "=?base64?AA?="],
        )?
        .into_bytes(),
        _ => pick_str(u, TOOLS)?.into_bytes(),
    })
}

fn run(u: &mut Unstructured) -> Result<()> {
    // The value decoder on its own: never panics, and inverts the Base64 form.
    let raw: String = u.arbitrary()?;
    let _ = decode_header_value(&raw);
    let wrapped = format!(
        "=?base64?{}?=",
        base64::engine::general_purpose::STANDARD.encode(&raw)
    );
    assert_eq!(decode_header_value(&wrapped).as_deref(), Ok(raw.as_str()));

    let method = pick_str(
        u,
        &["tools/call", "prompts/get", "resources/read", "tools/list"],
    )?;
    let mut params = params_for(u, &method, true, &[])?;
    if method == "tools/call" && u.arbitrary()? {
        params.insert("name".into(), json!("echo"));
        let mut args = Map::new();
        for key in ["region", "n", "flag"] {
            if u.arbitrary()? {
                args.insert(key.into(), json_value(u, 0)?);
            }
        }
        if u.arbitrary()? {
            args.insert("obj".into(), json!({"deep": json_value(u, 0)?}));
        }
        params.insert("arguments".into(), Value::Object(args));
    }
    let mut headers = HeaderMap::new();
    let n = u.int_in_range(0..=8usize)?;
    for _ in 0..n {
        let name = HeaderName::from_static(u.choose(NAMES)?);
        let bytes = value(u, &params, &method)?;
        if let Ok(v) = HeaderValue::from_bytes(&bytes) {
            if u.ratio(1, 4)? {
                headers.append(name, v);
            } else {
                headers.insert(name, v);
            }
        }
    }
    if let Err(e) = validate_modern_headers(&headers, &method, &params, registry()) {
        assert_eq!(e.code, -32020, "{e:?}");
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
