//! `#[mcp_prompt]` and `#[mcp_resource]`: what the function looks like to the macro, and the
//! code generated for it.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, GenericParam, Ident, ItemFn, LitStr, Pat, Path, ReturnType, Type};

use crate::attr::{PromptAttr, ResourceAttr};
use crate::tool::{self, Errors};

/// A parameter of a prompt or resource function.
enum Param {
    /// `&ToolContext` (`by_ref`) or `ToolContext`.
    Context { by_ref: bool },
    /// A prompt argument or template variable.
    Value(Box<Value>),
}

struct Value {
    ident: Ident,
    name: String,
    ty: Type,
    description: Option<String>,
}

/// Which macro is expanding, for messages.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Prompt,
    Resource,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Prompt => "a prompt",
            Kind::Resource => "a resource",
        }
    }
}

/// Reads the parameters, stripping `#[arg]` and doc comments from them.
fn params(function: &mut ItemFn, kind: Kind, errors: &mut Errors) -> Vec<Param> {
    let sig = &mut function.sig;
    let noun = kind.noun();
    for param in &sig.generics.params {
        if !matches!(param, GenericParam::Lifetime(_)) {
            errors.at(param, format!("{noun} function cannot be generic"));
        }
    }
    if let Some(u) = &sig.unsafety {
        errors.at(u, format!("{noun} function cannot be `unsafe`"));
    }
    if let Some(v) = &sig.variadic {
        errors.at(v, format!("{noun} function cannot be variadic"));
    }
    let mut out = Vec::new();
    let mut context_seen = false;
    for input in &mut sig.inputs {
        let pt = match input {
            FnArg::Receiver(r) => {
                errors.at(&*r, format!("{noun} must be a free function, not a method"));
                continue;
            }
            FnArg::Typed(pt) => pt,
        };
        let attrs = tool::take_param_attrs(&mut pt.attrs, errors);
        if let Some(by_ref) = tool::context_kind(&pt.ty, errors) {
            if context_seen {
                errors.at(&pt.ty, format!("{noun} takes at most one `ToolContext`"));
            }
            if attrs.has_arg {
                errors.at(&pt.ty, "the `ToolContext` parameter takes no `#[arg(...)]`");
            }
            context_seen = true;
            out.push(Param::Context { by_ref });
            continue;
        }
        if let Some(default) = &attrs.arg.default {
            errors.at(
                default,
                format!("`default` is not supported on {noun} parameter"),
            );
        }
        if let Some(k) = attrs.arg.keywords.first() {
            errors.push(syn::Error::new(
                k.span,
                format!("`{}` is not supported on {noun} parameter", k.name),
            ));
        }
        if kind == Kind::Resource
            && let Some(r) = &attrs.arg.rename
        {
            errors.at(
                r,
                "`rename` is not supported on a resource parameter: name the parameter after \
                 the template variable",
            );
        }
        let Pat::Ident(p) = &*pt.pat else {
            errors.at(&pt.pat, format!("{noun} parameter needs a plain name"));
            continue;
        };
        if matches!(&*pt.ty, Type::Reference(_)) {
            errors.at(
                &pt.ty,
                format!(
                    "{noun} parameter cannot be a reference: take `String` or `Option<String>`"
                ),
            );
            continue;
        }
        let name = match &attrs.arg.rename {
            Some(lit) => lit.value(),
            None => tool::unraw(&p.ident),
        };
        if out
            .iter()
            .any(|o| matches!(o, Param::Value(v) if v.name == name))
        {
            errors.at(&p.ident, format!("two parameters have the name `{name}`"));
        }
        out.push(Param::Value(Box::new(Value {
            ident: p.ident.clone(),
            name,
            ty: (*pt.ty).clone(),
            description: attrs
                .arg
                .description
                .as_ref()
                .map(LitStr::value)
                .or(attrs.doc),
        })));
    }
    out
}

fn return_type(function: &ItemFn) -> Type {
    match &function.sig.output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, ty) => (**ty).clone(),
    }
}

/// The call's arguments: `__mcp_value_N` for values, the context otherwise.
fn call_args(params: &[Param], p: &TokenStream) -> Vec<TokenStream> {
    params
        .iter()
        .enumerate()
        .map(|(i, param)| match param {
            Param::Context { by_ref: true } => quote!(&__mcp_cx),
            Param::Context { by_ref: false } => quote!(#p::Clone::clone(&__mcp_cx)),
            Param::Value(_) => format_ident!("__mcp_value_{}", i).into_token_stream(),
        })
        .collect()
}

/// The code that registers `function` (which is emitted unchanged apart from its parameter
/// attributes).
fn submit(
    krate: &Path,
    ident: &Ident,
    registration_ty: TokenStream,
    entry_ty: TokenStream,
    registration: TokenStream,
) -> TokenStream {
    quote! {
        #[doc(hidden)]
        const _: () = {
            fn __mcp_registration() -> #registration_ty {
                #registration
            }
            fn __mcp_type_id() -> #krate::__private::TypeId {
                #krate::__private::type_id_of(&#ident)
            }
            #krate::__private::inventory::submit! {
                #entry_ty::new(__mcp_registration, __mcp_type_id)
            }
        };
    }
}

pub(crate) fn expand_prompt(attr: TokenStream, mut function: ItemFn) -> TokenStream {
    let mut errors = Errors::default();
    let attr = PromptAttr::parse(attr).unwrap_or_else(|e| {
        errors.push(e);
        PromptAttr::default()
    });
    let krate = attr.krate.clone().unwrap_or_else(tool::default_krate);
    let p = quote!(#krate::__private);
    let params = params(&mut function, Kind::Prompt, &mut errors);
    if !errors.is_empty() {
        let errors = errors.into_compile_errors();
        return quote!(#function #errors);
    }
    let ident = &function.sig.ident;
    let name = attr
        .name
        .as_ref()
        .map_or_else(|| tool::unraw(ident), LitStr::value);
    let title = tool::opt_str(&krate, attr.title.as_ref().map(LitStr::value).as_deref());
    let description = tool::opt_str(
        &krate,
        attr.description
            .as_ref()
            .map(LitStr::value)
            .or_else(|| tool::doc_text(&function.attrs))
            .as_deref(),
    );
    let mut specs = Vec::new();
    let mut reads = Vec::new();
    for (i, param) in params.iter().enumerate() {
        let Param::Value(value) = param else {
            continue;
        };
        let Value {
            name,
            ty,
            description,
            ..
        } = &**value;
        let var = format_ident!("__mcp_value_{}", i);
        let description = tool::opt_str(&krate, description.as_deref());
        let trait_ty = quote_spanned!(ty.span()=> <#ty as #p::PromptParam>);
        specs.push(quote! {
            #p::PromptArgSpec {
                name: #name,
                description: #description,
                required: #trait_ty::REQUIRED,
            }
        });
        reads.push(quote! {
            let #var: #ty = #trait_ty::read(&mut __mcp_args, #name)?;
        });
    }
    let args = call_args(&params, &p);
    let await_ = function.sig.asyncness.map(|_| quote!(.await));
    let ret = return_type(&function);
    let convert = quote_spanned!(ret.span()=> <#ret as #p::PromptReturn>::into_prompt(__mcp_ret));
    let args_binding = if reads.is_empty() {
        quote!(__mcp_args)
    } else {
        quote!(mut __mcp_args)
    };
    let registration = quote! {
        #p::prompt(
            #p::PromptSpec {
                name: #name,
                title: #title,
                description: #description,
                arguments: #p::Vec::from([#(#specs),*]),
            },
            |__mcp_request: #p::PromptRequest| -> #p::BoxFuture<
                'static,
                #p::Result<#p::PromptResult, #krate::McpErrorDetail>,
            > {
                #p::Box::pin(async move {
                    #[allow(unused_variables)]
                    let #args_binding = __mcp_request.arguments;
                    #[allow(unused_variables)]
                    let __mcp_cx = __mcp_request.context;
                    #(#reads)*
                    let __mcp_ret = #ident(#(#args),*) #await_;
                    #convert
                })
            },
        )
    };
    let generated = submit(
        &krate,
        ident,
        quote!(#p::PromptRegistration),
        quote!(#p::PromptEntry),
        registration,
    );
    quote!(#function #generated)
}

/// The variable names of an RFC 6570 template, as `codomyrmex_mcp::uri_template` reads them.
fn template_variables(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else { break };
        let expr = &after[..end];
        let names = expr.strip_prefix(['+', '#', '/', '?', '&']).unwrap_or(expr);
        out.extend(names.split(',').map(|n| n.trim_end_matches('*').to_owned()));
        rest = &after[end + 1..];
    }
    out
}

pub(crate) fn expand_resource(attr: TokenStream, mut function: ItemFn) -> TokenStream {
    let mut errors = Errors::default();
    let attr = ResourceAttr::parse(attr.clone()).unwrap_or_else(|e| {
        errors.push(e);
        ResourceAttr::default()
    });
    let krate = attr.krate.clone().unwrap_or_else(tool::default_krate);
    let p = quote!(#krate::__private);
    let params = params(&mut function, Kind::Resource, &mut errors);
    let (uri, template) = match (&attr.uri, &attr.uri_template) {
        (Some(uri), None) => (Some(uri.clone()), false),
        (None, Some(t)) => (Some(t.clone()), true),
        (Some(_), Some(t)) => {
            errors.at(t, "give either `uri` or `uri_template`, not both");
            (None, false)
        }
        (None, None) => {
            if errors.is_empty() {
                errors.push(syn::Error::new(
                    proc_macro2::Span::call_site(),
                    "`#[mcp_resource]` needs `uri = \"...\"` or `uri_template = \"...\"`",
                ));
            }
            (None, false)
        }
    };
    if let Some(uri) = &uri {
        let variables = if template {
            template_variables(&uri.value())
        } else {
            Vec::new()
        };
        for param in &params {
            if let Param::Value(value) = param
                && !variables.contains(&value.name)
            {
                let (ident, name) = (&value.ident, &value.name);
                let message = if template {
                    format!(
                        "parameter `{name}` is not a variable of the URI template {:?} \
                         (its variables: {})",
                        uri.value(),
                        variables.join(", ")
                    )
                } else {
                    format!(
                        "parameter `{name}`: a resource with a fixed `uri` takes no parameters \
                         (only a `ToolContext`); use `uri_template` for variables"
                    )
                };
                errors.at(ident, message);
            }
        }
        for variable in &variables {
            if !params
                .iter()
                .any(|param| matches!(param, Param::Value(v) if v.name == *variable))
            {
                errors.at(
                    uri,
                    format!("template variable `{variable}` has no parameter of that name"),
                );
            }
        }
    }
    let Some(uri) = uri.filter(|_| errors.is_empty()) else {
        let errors = errors.into_compile_errors();
        return quote!(#function #errors);
    };
    let ident = &function.sig.ident;
    let name = attr
        .name
        .as_ref()
        .map_or_else(|| tool::unraw(ident), LitStr::value);
    let title = tool::opt_str(&krate, attr.title.as_ref().map(LitStr::value).as_deref());
    let description = tool::opt_str(
        &krate,
        attr.description
            .as_ref()
            .map(LitStr::value)
            .or_else(|| tool::doc_text(&function.attrs))
            .as_deref(),
    );
    let mime_type = tool::opt_str(
        &krate,
        attr.mime_type.as_ref().map(LitStr::value).as_deref(),
    );
    let mut reads = Vec::new();
    for (i, param) in params.iter().enumerate() {
        if let Param::Value(value) = param {
            let (name, ty) = (&value.name, &value.ty);
            let var = format_ident!("__mcp_value_{}", i);
            let read = quote_spanned!(ty.span()=> <#ty as #p::ResourceParam>::read);
            reads.push(quote! {
                let #var: #ty = #read(&mut __mcp_vars, #name)?;
            });
        }
    }
    let args = call_args(&params, &p);
    let await_ = function.sig.asyncness.map(|_| quote!(.await));
    let ret = return_type(&function);
    let convert = quote_spanned!(ret.span()=>
        <#ret as #p::ResourceReturn>::into_read(__mcp_ret, __mcp_uri, #mime_type)
    );
    let vars_binding = if reads.is_empty() {
        quote!(__mcp_vars)
    } else {
        quote!(mut __mcp_vars)
    };
    let registration = quote! {
        #p::resource(
            #p::ResourceSpec {
                uri: #uri,
                template: #template,
                name: #name,
                title: #title,
                description: #description,
                mime_type: #mime_type,
            },
            |__mcp_request: #p::ResourceRequest| -> #p::BoxFuture<
                'static,
                #p::Result<#p::Vec<#p::ResourceContents>, #p::ResourceError>,
            > {
                #p::Box::pin(async move {
                    #[allow(unused_variables)]
                    let #vars_binding = __mcp_request.variables;
                    #[allow(unused_variables)]
                    let __mcp_cx = __mcp_request.context;
                    let __mcp_uri = __mcp_request.uri;
                    #(#reads)*
                    let __mcp_ret = #ident(#(#args),*) #await_;
                    #convert
                })
            },
        )
    };
    let generated = submit(
        &krate,
        ident,
        quote!(#p::ResourceRegistration),
        quote!(#p::ResourceEntry),
        registration,
    );
    quote!(#function #generated)
}
