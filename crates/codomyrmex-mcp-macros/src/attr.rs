//! Parsing of `#[mcp_tool(...)]`, `#[mcp_tools(...)]` and `#[arg(...)]`.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, Lit, LitBool, LitStr, Path, Token};

/// The longest tool name MCP allows.
const MAX_TOOL_NAME_LEN: usize = 128;

/// The arguments of `#[mcp_tool(...)]`.
#[derive(Default)]
pub(crate) struct ToolAttr {
    pub krate: Option<Path>,
    pub name: Option<LitStr>,
    pub title: Option<LitStr>,
    pub description: Option<LitStr>,
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
    pub category: Option<LitStr>,
    pub tags: Vec<LitStr>,
    pub version: Option<LitStr>,
    pub deprecated_in: Option<LitStr>,
    pub timeout_ms: Option<u64>,
    pub deny_unknown_arguments: Option<bool>,
    /// `blocking`: the flag, and where it was written (for the error on an `async fn`).
    pub blocking: Option<(bool, Span)>,
    /// `ui = "ui://..."`: the MCP Apps resource the tool's results render in.
    pub ui: Option<LitStr>,
    /// `visibility = ["model", "app"]`: who may call the tool (MCP Apps).
    pub visibility: Vec<LitStr>,
}

const TOOL_KEYS: &str = "name, title, description, read_only, destructive, idempotent, \
                         open_world, category, tags, version, deprecated_in, timeout, \
                         deny_unknown_arguments, blocking, ui, visibility, crate";

impl ToolAttr {
    /// Parses the tokens inside `#[mcp_tool(...)]`.
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<Self> {
        let mut attr = Self::default();
        let parser = syn::meta::parser(|meta| attr.apply(&meta));
        parser.parse2(tokens)?;
        Ok(attr)
    }

    /// Parses an `#[mcp_tool]` or `#[mcp_tool(...)]` attribute found on a method.
    pub(crate) fn from_attribute(attribute: &syn::Attribute) -> syn::Result<Self> {
        let mut attr = Self::default();
        if let syn::Meta::List(_) = attribute.meta {
            attribute.parse_nested_meta(|meta| attr.apply(&meta))?;
        } else if let syn::Meta::NameValue(nv) = &attribute.meta {
            return Err(syn::Error::new_spanned(
                nv,
                "write `#[mcp_tool]` or `#[mcp_tool(name = \"...\", ...)]`",
            ));
        }
        Ok(attr)
    }

    fn apply(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        let Some(key) = meta.path.get_ident().map(ToString::to_string) else {
            return Err(meta.error(format!("unknown argument; expected one of: {TOOL_KEYS}")));
        };
        match key.as_str() {
            "crate" => set(meta, &mut self.krate, parse_crate_path(meta)?),
            "name" => {
                let name: LitStr = meta.value()?.parse()?;
                check_tool_name(&name)?;
                set(meta, &mut self.name, name)
            }
            "title" => set(meta, &mut self.title, non_empty(meta)?),
            "description" => set(meta, &mut self.description, meta.value()?.parse()?),
            "read_only" => set(meta, &mut self.read_only, flag(meta)?),
            "destructive" => set(meta, &mut self.destructive, flag(meta)?),
            "idempotent" => set(meta, &mut self.idempotent, flag(meta)?),
            "open_world" => set(meta, &mut self.open_world, flag(meta)?),
            "category" => set(meta, &mut self.category, non_empty(meta)?),
            "version" => set(meta, &mut self.version, non_empty(meta)?),
            "deprecated_in" => set(meta, &mut self.deprecated_in, non_empty(meta)?),
            "timeout" => set(meta, &mut self.timeout_ms, parse_timeout(meta)?),
            "deny_unknown_arguments" => set(meta, &mut self.deny_unknown_arguments, flag(meta)?),
            "blocking" => {
                let span = meta.path.span();
                set(meta, &mut self.blocking, (flag(meta)?, span))
            }
            "ui" => {
                let uri: LitStr = meta.value()?.parse()?;
                check_ui_uri(&uri)?;
                set(meta, &mut self.ui, uri)
            }
            "visibility" => {
                if !self.visibility.is_empty() {
                    return Err(meta.error("duplicate argument `visibility`"));
                }
                let content;
                let input = meta.value()?;
                let bracket = syn::bracketed!(content in input);
                let list = Punctuated::<LitStr, Token![,]>::parse_terminated(&content)?;
                if list.is_empty() {
                    return Err(syn::Error::new(
                        bracket.span.join(),
                        "`visibility` cannot be empty: name \"model\", \"app\" or both",
                    ));
                }
                let mut seen = Vec::new();
                for v in &list {
                    let value = v.value();
                    if value != "model" && value != "app" {
                        return Err(syn::Error::new(
                            v.span(),
                            format!("unknown visibility {value:?}; expected \"model\" or \"app\""),
                        ));
                    }
                    if seen.contains(&value) {
                        return Err(syn::Error::new(
                            v.span(),
                            format!("{value:?} is named twice"),
                        ));
                    }
                    seen.push(value);
                }
                self.visibility = list.into_iter().collect();
                Ok(())
            }
            "tags" => {
                if !self.tags.is_empty() {
                    return Err(meta.error("duplicate argument `tags`"));
                }
                let content;
                let input = meta.value()?;
                syn::bracketed!(content in input);
                let tags = Punctuated::<LitStr, Token![,]>::parse_terminated(&content)?;
                for tag in &tags {
                    if tag.value().is_empty() {
                        return Err(syn::Error::new(tag.span(), "a tag cannot be empty"));
                    }
                }
                self.tags = tags.into_iter().collect();
                Ok(())
            }
            _ => Err(meta.error(format!(
                "unknown argument `{key}`; expected one of: {TOOL_KEYS}"
            ))),
        }
    }
}

/// The arguments of `#[mcp_tools(...)]`.
#[derive(Default)]
pub(crate) struct ToolsAttr {
    pub krate: Option<Path>,
}

impl ToolsAttr {
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<Self> {
        let mut attr = Self::default();
        let parser = syn::meta::parser(|meta| {
            if meta.path.is_ident("crate") {
                set(&meta, &mut attr.krate, parse_crate_path(&meta)?)
            } else {
                Err(meta.error(
                    "unknown argument; `#[mcp_tools]` takes only `crate = \"...\"`. \
                     Put tool arguments on each method's `#[mcp_tool(...)]`",
                ))
            }
        });
        parser.parse2(tokens)?;
        Ok(attr)
    }
}

/// The arguments of `#[arg(...)]` on a parameter.
#[derive(Default)]
pub(crate) struct ArgAttr {
    pub description: Option<LitStr>,
    pub default: Option<Expr>,
    pub rename: Option<LitStr>,
    /// JSON Schema validation keywords added to the parameter's schema, in the order written.
    pub keywords: Vec<Keyword>,
}

/// A JSON Schema validation keyword given on a parameter: `#[arg(minimum = 1)]`.
pub(crate) struct Keyword {
    /// The JSON Schema keyword, e.g. `minimum` or `minLength`.
    pub name: &'static str,
    pub value: Bound,
    pub span: Span,
}

/// The value of a validation keyword: an integer from `i64::MIN` to `u64::MAX`, or a finite
/// float.
#[derive(Clone, Copy)]
pub(crate) enum Bound {
    Int(i128),
    Float(f64),
}

impl Bound {
    /// The value as a float, to compare bounds (exact enough for that).
    fn as_f64(self) -> f64 {
        match self {
            Bound::Int(i) => i as f64,
            Bound::Float(f) => f,
        }
    }
}

/// `#[arg(...)]` keys that become JSON Schema keywords: (key, keyword, whether it is a count).
const KEYWORDS: [(&str, &str, bool); 6] = [
    ("minimum", "minimum", false),
    ("maximum", "maximum", false),
    ("min_length", "minLength", true),
    ("max_length", "maxLength", true),
    ("min_items", "minItems", true),
    ("max_items", "maxItems", true),
];

/// Pairs of keywords where the first must not exceed the second.
const ORDERED: [(&str, &str); 3] = [
    ("minimum", "maximum"),
    ("minLength", "maxLength"),
    ("minItems", "maxItems"),
];

const ARG_KEYS: &str = "description, default, rename, minimum, maximum, min_length, \
                        max_length, min_items, max_items";

impl ArgAttr {
    /// Merges the arguments of one `#[arg(...)]` attribute into `self`.
    pub(crate) fn apply_attribute(&mut self, attribute: &syn::Attribute) -> syn::Result<()> {
        if !matches!(attribute.meta, syn::Meta::List(_)) {
            return Err(syn::Error::new_spanned(
                attribute,
                "write `#[arg(description = \"...\", default = ..., rename = \"...\")]`",
            ));
        }
        attribute.parse_nested_meta(|meta| {
            if meta.path.is_ident("description") {
                set(&meta, &mut self.description, meta.value()?.parse()?)
            } else if meta.path.is_ident("default") {
                set(&meta, &mut self.default, meta.value()?.parse()?)
            } else if meta.path.is_ident("rename") {
                let name: LitStr = meta.value()?.parse()?;
                if name.value().is_empty() {
                    return Err(syn::Error::new(
                        name.span(),
                        "a parameter name cannot be empty",
                    ));
                }
                set(&meta, &mut self.rename, name)
            } else if let Some(&(key, name, count)) =
                KEYWORDS.iter().find(|(key, ..)| meta.path.is_ident(key))
            {
                if self.keywords.iter().any(|k| k.name == name) {
                    return Err(meta.error(format!("duplicate argument `{key}`")));
                }
                let (value, span) = parse_bound(&meta, key, count)?;
                self.keywords.push(Keyword { name, value, span });
                Ok(())
            } else {
                Err(meta.error(format!("unknown argument; expected one of: {ARG_KEYS}")))
            }
        })?;
        self.check_bounds()
    }

    /// Refuses a lower bound above its upper bound, which no value could satisfy.
    fn check_bounds(&self) -> syn::Result<()> {
        let find = |name: &str| self.keywords.iter().find(|k| k.name == name);
        for (low, high) in ORDERED {
            if let (Some(l), Some(h)) = (find(low), find(high))
                && l.value.as_f64() > h.value.as_f64()
            {
                return Err(syn::Error::new(
                    h.span,
                    format!("`{high}` is below `{low}`: no value could satisfy both"),
                ));
            }
        }
        Ok(())
    }
}

/// A number, optionally negative: `1`, `-5`, `0.5`. Counts (`min_length`, ...) are
/// non-negative integers.
fn parse_bound(meta: &ParseNestedMeta<'_>, key: &str, count: bool) -> syn::Result<(Bound, Span)> {
    let input = meta.value()?;
    let negative = input.peek(Token![-]);
    if negative {
        input.parse::<Token![-]>()?;
    }
    let lit: Lit = input.parse()?;
    let span = lit.span();
    let value = match &lit {
        // Integers from i64::MIN to u64::MAX, which JSON numbers hold exactly.
        Lit::Int(i) if i.suffix().is_empty() => i
            .base10_parse::<u64>()
            .ok()
            .map(|v| {
                if negative {
                    -i128::from(v)
                } else {
                    i128::from(v)
                }
            })
            .filter(|v| i64::try_from(*v).is_ok() || u64::try_from(*v).is_ok())
            .map(Bound::Int),
        Lit::Float(f) if f.suffix().is_empty() => f
            .base10_parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(|v| Bound::Float(if negative { -v } else { v })),
        _ => None,
    };
    match value {
        Some(Bound::Int(v)) if !count || v >= 0 => Ok((Bound::Int(v), span)),
        Some(Bound::Float(v)) if !count => Ok((Bound::Float(v), span)),
        _ if count => Err(syn::Error::new(
            span,
            format!("`{key}` is a count: write a non-negative integer, e.g. `{key} = 1`"),
        )),
        _ => Err(syn::Error::new(
            span,
            format!("`{key}` takes a number, e.g. `{key} = 1` or `{key} = -0.5`"),
        )),
    }
}

/// The argument's name (empty for a path that is not one identifier).
fn key_of(meta: &ParseNestedMeta<'_>) -> String {
    meta.path
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_default()
}

/// Parses the arguments `tokens` of an attribute, handing each, with its name
/// ([`key_of`]), to `apply`.
fn parse_keyed(
    tokens: TokenStream,
    mut apply: impl FnMut(&str, &ParseNestedMeta<'_>) -> syn::Result<()>,
) -> syn::Result<()> {
    syn::meta::parser(|meta| apply(&key_of(&meta), &meta)).parse2(tokens)
}

fn set<T>(meta: &ParseNestedMeta<'_>, slot: &mut Option<T>, value: T) -> syn::Result<()> {
    if slot.is_some() {
        let key = key_of(meta);
        return Err(meta.error(format!("duplicate argument `{key}`")));
    }
    *slot = Some(value);
    Ok(())
}

/// A `ui = "..."` value: a `ui://` URI naming a resource, with no spaces or controls.
fn check_ui_uri(uri: &LitStr) -> syn::Result<()> {
    let value = uri.value();
    let ok = value
        .strip_prefix("ui://")
        .is_some_and(|rest| !rest.is_empty())
        && !value.chars().any(|c| c.is_whitespace() || c.is_control());
    if ok {
        Ok(())
    } else {
        Err(syn::Error::new(
            uri.span(),
            format!("`ui` must be a ui:// URI such as \"ui://my-server/view\", not {value:?}"),
        ))
    }
}

/// `read_only` or `read_only = true|false`.
fn flag(meta: &ParseNestedMeta<'_>) -> syn::Result<bool> {
    if meta.input.peek(Token![=]) {
        let value: LitBool = meta.value()?.parse()?;
        Ok(value.value)
    } else {
        Ok(true)
    }
}

fn non_empty(meta: &ParseNestedMeta<'_>) -> syn::Result<LitStr> {
    let value: LitStr = meta.value()?.parse()?;
    if value.value().trim().is_empty() {
        return Err(syn::Error::new(value.span(), "this value cannot be empty"));
    }
    Ok(value)
}

/// `crate = "::path"` or `crate = ::path`.
fn parse_crate_path(meta: &ParseNestedMeta<'_>) -> syn::Result<Path> {
    let input = meta.value()?;
    if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        lit.parse()
    } else {
        input.call(Path::parse_mod_style)
    }
}

/// Checks MCP's rule for tool names: 1 to 128 characters from `A-Z a-z 0-9 _ - .`.
fn check_tool_name(name: &LitStr) -> syn::Result<()> {
    let value = name.value();
    let fail = |why: String| {
        Err(syn::Error::new(
            name.span(),
            format!(
                "invalid tool name: {why}; MCP tool names are 1 to 128 characters from A-Z a-z 0-9 _ - ."
            ),
        ))
    };
    if value.is_empty() {
        return fail("it is empty".into());
    }
    if value.len() > MAX_TOOL_NAME_LEN {
        return fail("it is longer than 128 characters".into());
    }
    if let Some(c) = value
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return fail(format!("{c:?} is not allowed"));
    }
    Ok(())
}

/// `timeout = "30s"`, `"500ms"`, `"2m"`, or a number of seconds (`timeout = 30`).
fn parse_timeout(meta: &ParseNestedMeta<'_>) -> syn::Result<u64> {
    let lit: Lit = meta.value()?.parse()?;
    let (millis, span) = match &lit {
        Lit::Int(i) => (
            i.base10_parse::<u64>()
                .ok()
                .and_then(|s| s.checked_mul(1000)),
            i.span(),
        ),
        Lit::Float(f) => (
            f.base10_parse::<f64>().ok().and_then(seconds_to_millis),
            f.span(),
        ),
        Lit::Str(s) => (duration_millis(&s.value()), s.span()),
        other => (None, other.span()),
    };
    match millis {
        Some(ms) if ms > 0 => Ok(ms),
        _ => Err(syn::Error::new(
            span,
            "invalid timeout: write a positive duration such as `timeout = \"30s\"`, \
             `\"500ms\"`, `\"2m\"`, or a number of seconds (`timeout = 30`)",
        )),
    }
}

fn seconds_to_millis(seconds: f64) -> Option<u64> {
    let millis = (seconds * 1000.0).round();
    // Bounded well inside u64 and f64's exact integer range.
    (0.0..=1.0e15).contains(&millis).then_some(millis as u64)
}

fn duration_millis(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let factor = match unit.trim() {
        "ms" => 0.001,
        "s" | "" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return None,
    };
    seconds_to_millis(number * factor)
}

/// The arguments of `#[mcp_prompt(...)]`.
#[derive(Default)]
pub(crate) struct PromptAttr {
    pub krate: Option<Path>,
    pub name: Option<LitStr>,
    pub title: Option<LitStr>,
    pub description: Option<LitStr>,
}

impl PromptAttr {
    /// Parses the tokens inside `#[mcp_prompt(...)]`.
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<Self> {
        let mut attr = Self::default();
        parse_keyed(tokens, |key, meta| match key {
            "crate" => set(meta, &mut attr.krate, parse_crate_path(meta)?),
            "name" => set(meta, &mut attr.name, non_empty(meta)?),
            "title" => set(meta, &mut attr.title, non_empty(meta)?),
            "description" => set(meta, &mut attr.description, meta.value()?.parse()?),
            _ => {
                Err(meta
                    .error("unknown argument; expected one of: name, title, description, crate"))
            }
        })?;
        Ok(attr)
    }
}

/// The arguments of `#[mcp_resource(...)]`.
#[derive(Default)]
pub(crate) struct ResourceAttr {
    pub krate: Option<Path>,
    pub uri: Option<LitStr>,
    pub uri_template: Option<LitStr>,
    pub name: Option<LitStr>,
    pub title: Option<LitStr>,
    pub description: Option<LitStr>,
    pub mime_type: Option<LitStr>,
}

impl ResourceAttr {
    /// Parses the tokens inside `#[mcp_resource(...)]`.
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<Self> {
        let mut attr = Self::default();
        parse_keyed(tokens, |key, meta| match key {
            "crate" => set(meta, &mut attr.krate, parse_crate_path(meta)?),
            "uri" => set(meta, &mut attr.uri, non_empty(meta)?),
            "uri_template" => set(meta, &mut attr.uri_template, non_empty(meta)?),
            "name" => set(meta, &mut attr.name, non_empty(meta)?),
            "title" => set(meta, &mut attr.title, non_empty(meta)?),
            "description" => set(meta, &mut attr.description, meta.value()?.parse()?),
            "mime_type" => set(meta, &mut attr.mime_type, non_empty(meta)?),
            _ => Err(meta.error(
                "unknown argument; expected one of: uri, uri_template, name, title, \
                 description, mime_type, crate",
            )),
        })?;
        Ok(attr)
    }
}
