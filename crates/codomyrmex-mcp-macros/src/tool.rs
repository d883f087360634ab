//! What a tool function looks like to the macro, and the code generated for it.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, FnArg, GenericArgument, GenericParam, Ident, Lit, LitStr, Pat, Path,
    PathArguments, ReturnType, Signature, Type,
};

use crate::attr::{ArgAttr, Bound, Keyword, ToolAttr};

/// Collects errors so that one expansion reports every problem at once.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(e) => e.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub(crate) fn at(&mut self, tokens: impl ToTokens, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    pub(crate) fn into_compile_errors(self) -> TokenStream {
        self.0.map(|e| e.to_compile_error()).unwrap_or_default()
    }
}

/// How a method receives its state.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Receiver {
    /// An associated function, or a free function.
    None,
    /// `&self`.
    Ref,
    /// `self: Arc<Self>`.
    Arc,
}

/// One parameter after the receiver.
pub(crate) enum Param {
    /// `&ToolContext` (`by_ref`) or `ToolContext`.
    Context { by_ref: bool },
    /// An argument read from the call's `arguments` object.
    Arg(Box<Arg>),
}

pub(crate) struct Arg {
    pub name: String,
    pub ty: Type,
    pub description: Option<String>,
    pub default: Option<Expr>,
    /// Validation keywords added to the argument's schema.
    pub keywords: Vec<Keyword>,
}

/// The declared return type.
pub(crate) enum Return {
    /// `T` (or nothing, meaning `()`).
    Plain(Type),
    /// `Result<T, E>` or an alias of it whose last segment is `Result`.
    Result(Type),
}

/// A tool: the function's signature as the macro understood it, and its attribute.
pub(crate) struct Tool {
    pub attr: ToolAttr,
    pub ident: Ident,
    pub is_async: bool,
    pub receiver: Receiver,
    pub params: Vec<Param>,
    pub ret: Return,
    pub doc: Option<String>,
}

/// Where the function lives.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Site {
    /// A free function under `#[mcp_tool]`.
    Free,
    /// A method inside an `#[mcp_tools]` impl block.
    Method,
}

/// Reads `sig` and `attrs`. Strips the macro's own parameter attributes (`#[arg]` and doc
/// comments) from `sig` in every case, so the function can be emitted even when there are
/// errors.
pub(crate) fn analyse(
    attr: ToolAttr,
    attrs: &[Attribute],
    sig: &mut Signature,
    site: Site,
    errors: &mut Errors,
) -> Option<Tool> {
    let before = errors.is_empty();
    check_signature(sig, errors);

    let mut receiver = Receiver::None;
    let mut params = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut context_seen = false;
    for input in &mut sig.inputs {
        match input {
            FnArg::Receiver(r) => match site {
                Site::Free => errors.at(
                    &*r,
                    "`#[mcp_tool]` on a method needs `#[mcp_tools]` on its `impl` block: \
                     write `#[mcp_tools] impl YourType { #[mcp_tool] fn ... }` and register the \
                     methods with `registry.register_methods(Arc::new(value))`",
                ),
                Site::Method => match receiver_kind(r) {
                    Some(kind) => receiver = kind,
                    None => errors.at(&*r, receiver_error(r)),
                },
            },
            FnArg::Typed(pt) => {
                let param_attrs = take_param_attrs(&mut pt.attrs, errors);
                if let Some(by_ref) = context_kind(&pt.ty, errors) {
                    if context_seen {
                        errors.at(&pt.ty, "a tool takes at most one `ToolContext` parameter");
                    }
                    if param_attrs.has_arg {
                        errors.at(
                            &pt.ty,
                            "the `ToolContext` parameter is not an argument, so it takes no \
                             `#[arg(...)]`",
                        );
                    }
                    context_seen = true;
                    params.push(Param::Context { by_ref });
                    continue;
                }
                let ident = match &*pt.pat {
                    Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                        Some(p.ident.clone())
                    }
                    other => {
                        errors.at(
                            other,
                            "a tool parameter needs a plain name, which becomes the argument's \
                             JSON key: write `name: Type` (use `#[arg(rename = \"...\")]` for \
                             another key)",
                        );
                        None
                    }
                };
                check_param_type(&pt.ty, errors);
                let Some(ident) = ident else { continue };
                let name = match &param_attrs.arg.rename {
                    Some(lit) => lit.value(),
                    None => unraw(&ident),
                };
                if names.contains(&name) {
                    errors.at(
                        param_attrs
                            .arg
                            .rename
                            .as_ref()
                            .map_or_else(|| ident.to_token_stream(), ToTokens::to_token_stream),
                        format!("two parameters have the argument name `{name}`"),
                    );
                }
                names.push(name.clone());
                let description = param_attrs
                    .arg
                    .description
                    .as_ref()
                    .map(LitStr::value)
                    .or(param_attrs.doc);
                params.push(Param::Arg(Box::new(Arg {
                    name,
                    ty: (*pt.ty).clone(),
                    description,
                    default: param_attrs.arg.default,
                    keywords: param_attrs.arg.keywords,
                })));
            }
        }
    }
    let ret = match &sig.output {
        ReturnType::Default => Return::Plain(syn::parse_quote!(())),
        ReturnType::Type(_, ty) => {
            if contains_impl_trait(ty) {
                errors.at(
                    ty,
                    "a tool must return a concrete type: its output schema is derived from it. \
                     Replace `impl Trait` with the type itself",
                );
            }
            if is_result(ty) {
                Return::Result((**ty).clone())
            } else {
                Return::Plain((**ty).clone())
            }
        }
    };
    if let (Some((true, span)), Some(_)) = (attr.blocking, &sig.asyncness) {
        errors.push(syn::Error::new(
            span,
            "`blocking` is for a sync tool, whose body then runs on the blocking pool; an \
             `async` tool should move its blocking work into `tokio::task::spawn_blocking`",
        ));
    }
    if before && !errors.is_empty() {
        return None;
    }
    Some(Tool {
        attr,
        ident: sig.ident.clone(),
        is_async: sig.asyncness.is_some(),
        receiver,
        params,
        ret,
        doc: doc_text(attrs),
    })
}

fn check_signature(sig: &Signature, errors: &mut Errors) {
    for param in &sig.generics.params {
        match param {
            GenericParam::Lifetime(_) => {}
            GenericParam::Type(_) | GenericParam::Const(_) => errors.at(
                param,
                "a tool cannot be generic: its JSON schema is derived from concrete parameter \
                 types. Use concrete types, or write a non-generic `#[mcp_tool]` function that \
                 calls the generic one",
            ),
        }
    }
    if let Some(u) = &sig.unsafety {
        errors.at(
            u,
            "a tool cannot be an `unsafe fn`: clients call it with arbitrary arguments. Make \
             it safe and keep the `unsafe` block inside",
        );
    }
    if let Some(v) = &sig.variadic {
        errors.at(v, "a tool cannot be variadic");
    }
}

fn receiver_kind(r: &syn::Receiver) -> Option<Receiver> {
    if r.reference.is_some() {
        return r.mutability.is_none().then_some(Receiver::Ref);
    }
    if r.mutability.is_some() {
        return None;
    }
    match &*r.ty {
        Type::Reference(reference)
            if reference.mutability.is_none() && is_self(&reference.elem) =>
        {
            Some(Receiver::Ref)
        }
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            if last.ident != "Arc" {
                return None;
            }
            match &last.arguments {
                PathArguments::AngleBracketed(args) if args.args.len() == 1 => {
                    match &args.args[0] {
                        GenericArgument::Type(t) if is_self(t) => Some(Receiver::Arc),
                        _ => None,
                    }
                }
                _ => None,
            }
        }
        _ => None,
    }
}

fn receiver_error(r: &syn::Receiver) -> &'static str {
    if r.mutability.is_some() && r.reference.is_some() {
        "`&mut self` is not supported: a server runs calls concurrently, so tools share their \
         state. Take `&self` and keep mutable state behind a `Mutex` or `RwLock`"
    } else {
        "unsupported receiver: a tool method takes `&self` or `self: Arc<Self>` (the registry \
         holds the value in an `Arc`)"
    }
}

fn is_self(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.is_ident("Self"))
}

pub(crate) struct ParamAttrs {
    pub(crate) arg: ArgAttr,
    pub(crate) doc: Option<String>,
    pub(crate) has_arg: bool,
}

/// Removes `#[arg(...)]` and doc comments from a parameter, returning what they said.
pub(crate) fn take_param_attrs(attrs: &mut Vec<Attribute>, errors: &mut Errors) -> ParamAttrs {
    let mut arg = ArgAttr::default();
    let mut doc_lines = Vec::new();
    let mut has_arg = false;
    let mut kept = Vec::with_capacity(attrs.len());
    for attribute in attrs.drain(..) {
        if attribute.path().is_ident("arg") {
            has_arg = true;
            if let Err(e) = arg.apply_attribute(&attribute) {
                errors.push(e);
            }
        } else if attribute.path().is_ident("doc") {
            if let Some(line) = doc_line(&attribute) {
                doc_lines.push(line);
            }
        } else {
            if attribute.path().is_ident("cfg") || attribute.path().is_ident("cfg_attr") {
                errors.at(
                    &attribute,
                    "`#[cfg]` on a tool parameter is not supported: the schema would not match \
                     the function. Put the `#[cfg]` on the whole function",
                );
            }
            kept.push(attribute);
        }
    }
    *attrs = kept;
    ParamAttrs {
        arg,
        doc: join_doc(&doc_lines),
        has_arg,
    }
}

/// `Some(by_ref)` when `ty` is `ToolContext`, `&ToolContext` (any path ending in `ToolContext`).
pub(crate) fn context_kind(ty: &Type, errors: &mut Errors) -> Option<bool> {
    fn is_context(ty: &Type) -> bool {
        match ty {
            Type::Path(p) if p.qself.is_none() => p
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "ToolContext" && s.arguments.is_none()),
            Type::Paren(p) => is_context(&p.elem),
            Type::Group(g) => is_context(&g.elem),
            _ => false,
        }
    }
    match ty {
        Type::Reference(r) if is_context(&r.elem) => {
            if r.mutability.is_some() {
                errors.at(
                    ty,
                    "take the context as `&ToolContext` or `ToolContext`, not `&mut ToolContext`",
                );
            }
            Some(true)
        }
        _ if is_context(ty) => Some(false),
        _ => None,
    }
}

/// Rejects references and `impl Trait` anywhere in an argument's type.
fn check_param_type(ty: &Type, errors: &mut Errors) {
    match ty {
        Type::Reference(_) => errors.at(
            ty,
            "a tool parameter cannot be a reference: arguments are deserialised into owned \
             values. Take an owned type instead (`String` for `&str`, `Vec<T>` for `&[T]`, `T` \
             for `&T`); only the context may be borrowed (`&ToolContext`)",
        ),
        Type::ImplTrait(_) => errors.at(
            ty,
            "a tool parameter cannot be `impl Trait`: that makes the function generic, and the \
             schema needs a concrete type. Name the type",
        ),
        Type::Path(p) => {
            if let Some(q) = &p.qself {
                check_param_type(&q.ty, errors);
            }
            for segment in &p.path.segments {
                if let PathArguments::AngleBracketed(args) = &segment.arguments {
                    for arg in &args.args {
                        if let GenericArgument::Type(t) = arg {
                            check_param_type(t, errors);
                        }
                    }
                }
            }
        }
        Type::Array(a) => check_param_type(&a.elem, errors),
        Type::Slice(s) => check_param_type(&s.elem, errors),
        Type::Paren(p) => check_param_type(&p.elem, errors),
        Type::Group(g) => check_param_type(&g.elem, errors),
        Type::Tuple(t) => t.elems.iter().for_each(|e| check_param_type(e, errors)),
        _ => {}
    }
}

fn contains_impl_trait(ty: &Type) -> bool {
    match ty {
        Type::ImplTrait(_) => true,
        Type::Reference(r) => contains_impl_trait(&r.elem),
        Type::Paren(p) => contains_impl_trait(&p.elem),
        Type::Group(g) => contains_impl_trait(&g.elem),
        Type::Array(a) => contains_impl_trait(&a.elem),
        Type::Slice(s) => contains_impl_trait(&s.elem),
        Type::Tuple(t) => t.elems.iter().any(contains_impl_trait),
        Type::Path(p) => p.path.segments.iter().any(|s| match &s.arguments {
            PathArguments::AngleBracketed(args) => args.args.iter().any(|a| match a {
                GenericArgument::Type(t) => contains_impl_trait(t),
                _ => false,
            }),
            _ => false,
        }),
        _ => false,
    }
}

/// Whether the return type is written as a `Result` (`Result<T, E>`, `io::Result<T>`,
/// `anyhow::Result<T>`, ...).
fn is_result(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            p.path.segments.last().is_some_and(|s| s.ident == "Result")
        }
        Type::Paren(p) => is_result(&p.elem),
        Type::Group(g) => is_result(&g.elem),
        _ => false,
    }
}

pub(crate) fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}

fn doc_line(attribute: &Attribute) -> Option<String> {
    match &attribute.meta {
        syn::Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(syn::ExprLit {
                lit: Lit::Str(s), ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    }
}

/// The text of the doc comments among `attrs`.
pub(crate) fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(doc_line)
        .collect();
    join_doc(&lines)
}

/// Joins doc lines the way rustdoc shows them: one leading space dropped per line, trimmed.
fn join_doc(lines: &[String]) -> Option<String> {
    let text = lines
        .iter()
        .flat_map(|l| l.split('\n'))
        .map(|l| l.strip_prefix(' ').unwrap_or(l).trim_end())
        .collect::<Vec<_>>()
        .join("\n");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

pub(crate) fn opt_str(krate: &Path, value: Option<&str>) -> TokenStream {
    match value {
        Some(v) => quote!(#krate::__private::Some(#v)),
        None => quote!(#krate::__private::None),
    }
}

fn opt_bool(krate: &Path, value: Option<bool>) -> TokenStream {
    match value {
        Some(v) => quote!(#krate::__private::Some(#v)),
        None => quote!(#krate::__private::None),
    }
}

/// An expression of type `ToolRegistration` for `tool`.
/// For [`Site::Method`], `__mcp_state: Arc<Self>` must be in scope.
pub(crate) fn registration(tool: &Tool, krate: &Path, site: Site) -> TokenStream {
    let p = quote!(#krate::__private);
    let ident = &tool.ident;

    // Input schema.
    let mut schema_stmts = Vec::new();
    let mut reads = Vec::new();
    let mut call_args = Vec::new();
    let mut arg_index = 0usize;
    for param in &tool.params {
        match param {
            Param::Context { by_ref: true } => call_args.push(quote!(&__mcp_cx)),
            Param::Context { by_ref: false } => {
                call_args.push(quote!(#p::Clone::clone(&__mcp_cx)));
            }
            Param::Arg(arg) => {
                let ty = &arg.ty;
                let name = &arg.name;
                let var = format_ident!("__mcp_arg_{}", arg_index);
                arg_index += 1;
                let description = opt_str(krate, arg.description.as_deref());
                let span = ty.span();
                // Spanned at the type, so that a missing `Deserialize` or `JsonSchema` is
                // reported on the parameter.
                let schema_fn = quote_spanned!(span=> <#ty as #p::ToolParam>::schema);
                let schema_fn = with_keywords(schema_fn, &arg.keywords, &p);
                let read_fn = quote_spanned!(span=> <#ty as #p::ToolParam>::read);
                match &arg.default {
                    None => {
                        let is_option = quote_spanned! {span=> {
                            #[allow(unused_imports)]
                            use #p::{NotOptionProbe as _, OptionProbe as _};
                            (&&#p::Probe::<#ty>::new()).__mcp_is_option()
                        }};
                        schema_stmts.push(quote! {
                            __mcp_schema.param(#name, #schema_fn, #description, #p::None, !#is_option);
                        });
                        reads.push(quote! {
                            let #var: #ty = match #p::read_arg(&mut __mcp_args, #name, #read_fn) {
                                #p::Ok(__mcp_value) => __mcp_value,
                                #p::Err(__mcp_error) => return #p::ToolOutput::failure(__mcp_error),
                            };
                        });
                    }
                    Some(default) => {
                        let value = match default {
                            Expr::Lit(syn::ExprLit {
                                lit: Lit::Str(_), ..
                            }) => quote_spanned!(default.span()=> #p::Into::into(#default)),
                            _ => quote!(#default),
                        };
                        let default_fn = quote_spanned!(default.span()=> || -> #ty { #value });
                        schema_stmts.push(quote! {
                            __mcp_schema.param(
                                #name,
                                #schema_fn,
                                #description,
                                #p::default_json(#default_fn),
                                false,
                            );
                        });
                        reads.push(quote! {
                            let #var: #ty = match #p::read_arg_or(&mut __mcp_args, #name, #read_fn, #default_fn) {
                                #p::Ok(__mcp_value) => __mcp_value,
                                #p::Err(__mcp_error) => return #p::ToolOutput::failure(__mcp_error),
                            };
                        });
                    }
                }
                call_args.push(quote!(#var));
            }
        }
    }

    // Output.
    let (output_spec, convert) = match &tool.ret {
        Return::Plain(ty) => (
            quote_spanned!(ty.span()=> <#ty as #p::ToolReturn>::output_spec()),
            quote_spanned!(ty.span()=> <#ty as #p::ToolReturn>::into_tool_output(__mcp_ret, __mcp_shape)),
        ),
        Return::Result(ty) => (
            quote_spanned!(ty.span()=> <#ty as #p::ToolResult>::output_spec()),
            quote_spanned!(ty.span()=> <#ty as #p::ToolResult>::into_tool_output(__mcp_ret, __mcp_shape)),
        ),
    };

    // The call. A method's receiver comes from the `Arc<Self>` the registration captured.
    let (prelude, callee) = match site {
        Site::Free => (quote!(), quote!(#ident)),
        Site::Method => {
            let receiver = match tool.receiver {
                Receiver::None => None,
                Receiver::Ref => Some(quote!(&*__mcp_this)),
                Receiver::Arc => Some(quote!(__mcp_this)),
            };
            let prelude = match receiver {
                Some(receiver) => {
                    call_args.insert(0, receiver);
                    quote!(let __mcp_this = #p::Arc::clone(&__mcp_state);)
                }
                None => quote!(),
            };
            (prelude, quote!(<Self>::#ident))
        }
    };
    let await_ = if tool.is_async {
        quote!(.await)
    } else {
        quote!()
    };
    // `deny_unknown_arguments`: the schema says `additionalProperties: false`, and the handler
    // refuses what is left after reading the arguments (the registry validates first; this
    // holds when the handler is called directly).
    let deny_unknown = tool.attr.deny_unknown_arguments.unwrap_or(false);
    let input_schema = if deny_unknown {
        quote! {{
            let mut __mcp_input = __mcp_schema.finish();
            if let #p::Some(__mcp_object) = __mcp_input.as_object_mut() {
                __mcp_object.insert(
                    #p::Into::into("additionalProperties"),
                    #p::serde_json::Value::Bool(false),
                );
            }
            __mcp_input
        }}
    } else {
        quote!(__mcp_schema.finish())
    };
    let refuse_unknown = if deny_unknown {
        quote! {
            if !__mcp_args.is_empty() {
                let __mcp_unknown: #p::Vec<&str> = __mcp_args.keys().map(|k| k.as_str()).collect();
                return #p::ToolOutput::failure(#krate::McpErrorDetail::new(
                    "ValidationError",
                    ::std::format!("Unknown arguments: {}", __mcp_unknown.join(", ")),
                ));
            }
        }
    } else {
        quote!()
    };
    let args_binding = if arg_index > 0 {
        quote!(mut __mcp_args)
    } else {
        quote!(__mcp_args)
    };

    // The definition.
    let attr = &tool.attr;
    let name = attr
        .name
        .as_ref()
        .map_or_else(|| unraw(ident), LitStr::value);
    let title = opt_str(krate, attr.title.as_ref().map(LitStr::value).as_deref());
    let description = opt_str(
        krate,
        attr.description
            .as_ref()
            .map(LitStr::value)
            .or_else(|| tool.doc.clone())
            .as_deref(),
    );
    let read_only = opt_bool(krate, attr.read_only);
    let destructive = opt_bool(krate, attr.destructive);
    let idempotent = opt_bool(krate, attr.idempotent);
    let open_world = opt_bool(krate, attr.open_world);
    let category = opt_str(krate, attr.category.as_ref().map(LitStr::value).as_deref());
    let version = opt_str(krate, attr.version.as_ref().map(LitStr::value).as_deref());
    let deprecated_in = opt_str(
        krate,
        attr.deprecated_in.as_ref().map(LitStr::value).as_deref(),
    );
    let tags = &attr.tags;
    let ui = opt_str(krate, attr.ui.as_ref().map(LitStr::value).as_deref());
    let visibility = &attr.visibility;
    let blocking = matches!(attr.blocking, Some((true, _)));
    let timeout_ms = match attr.timeout_ms {
        Some(ms) => quote!(#p::Some(#ms)),
        None => quote!(#p::None),
    };

    quote! {{
        let mut __mcp_schema = #p::InputSchema::new();
        #(#schema_stmts)*
        let __mcp_output = #output_spec;
        let __mcp_shape = __mcp_output.shape();
        let __mcp_handler = #p::handler(
            move |#args_binding: #p::JsonObject, __mcp_cx: #p::ToolContext| -> #p::BoxFuture<'static, #p::ToolOutput> {
                #prelude
                #p::Box::pin(async move {
                    #(#reads)*
                    #refuse_unknown
                    let __mcp_ret = #callee(#(#call_args),*) #await_;
                    #convert
                })
            },
        );
        #p::build(
            #p::ToolSpec {
                name: #name,
                title: #title,
                description: #description,
                read_only: #read_only,
                destructive: #destructive,
                idempotent: #idempotent,
                open_world: #open_world,
                category: #category,
                tags: &[#(#tags),*],
                version: #version,
                deprecated_in: #deprecated_in,
                timeout_ms: #timeout_ms,
                blocking: #blocking,
                ui: #ui,
                visibility: &[#(#visibility),*],
            },
            #input_schema,
            __mcp_output,
            __mcp_handler,
        )
    }}
}

/// `schema_fn` (a `fn(&mut SchemaGenerator) -> Schema`), adding `keywords` to the schema it
/// returns.
fn with_keywords(schema_fn: TokenStream, keywords: &[Keyword], p: &TokenStream) -> TokenStream {
    if keywords.is_empty() {
        return schema_fn;
    }
    let inserts = keywords.iter().map(|k| {
        let name = k.name;
        let value = match k.value {
            Bound::Int(v) => match u64::try_from(v) {
                Ok(v) => quote!(#v),
                // The attribute parser keeps integers within i64::MIN..=u64::MAX.
                Err(_) => {
                    let v = i64::try_from(v).unwrap_or(i64::MIN);
                    quote!(#v)
                }
            },
            Bound::Float(v) => quote!(#v),
        };
        quote! {
            __mcp_param.insert(#p::Into::into(#name), #p::serde_json::Value::from(#value));
        }
    });
    quote! {{
        let __mcp_schema_fn: fn(&mut #p::schemars::SchemaGenerator) -> #p::schemars::Schema =
            |__mcp_generator| {
                let mut __mcp_param = #schema_fn(__mcp_generator);
                #(#inserts)*
                __mcp_param
            };
        __mcp_schema_fn
    }}
}

/// The default crate path.
pub(crate) fn default_krate() -> Path {
    syn::parse_quote!(::codomyrmex_mcp)
}
