//! `resources/list` with a `ResourceLister`: listed resources merged with the static ones in
//! URI order, paged by the server's page size, in both eras.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::platform::BoxFuture;
use codomyrmex_mcp::{
    Era, McpResourceRegistry, McpServer, McpServerConfig, McpToolRegistry, ResourceDefinition,
    ResourceLister,
};
use serde_json::{Value, json};

/// Lists `n` URIs `mem://item/NNN`, counting how often it is asked.
struct Items {
    n: usize,
    calls: Arc<AtomicUsize>,
}

impl ResourceLister for Items {
    fn list(
        &self,
        after: Option<String>,
        limit: usize,
    ) -> BoxFuture<'static, Vec<ResourceDefinition>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let items: Vec<ResourceDefinition> = (0..self.n)
            .map(|i| ResourceDefinition::new(format!("mem://item/{i:03}"), format!("item {i}")))
            .filter(|d| after.as_deref().is_none_or(|a| d.uri.as_str() > a))
            .take(limit)
            .collect();
        Box::pin(async move { items })
    }
}

fn server(calls: Arc<AtomicUsize>) -> McpServer {
    let resources = Arc::new(McpResourceRegistry::new());
    resources
        .add_text(ResourceDefinition::new("mem://a", "static a"), "a")
        .unwrap();
    resources
        .add_text(ResourceDefinition::new("mem://z", "static z"), "z")
        .unwrap();
    // The same URI as a listed item: the static resource wins.
    resources
        .add_text(ResourceDefinition::new("mem://item/003", "static 3"), "3")
        .unwrap();
    resources.add_lister(Items { n: 7, calls });
    McpServer::new(
        McpServerConfig::new("listers", "1").with_page_size(3),
        Arc::new(McpToolRegistry::new()),
    )
    .with_resources(resources)
}

async fn page(client: &McpClient, cursor: Option<&Value>) -> Value {
    let params = match cursor {
        Some(c) => json!({"cursor": c}),
        None => json!({}),
    };
    client.request("resources/list", params).await.unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn listed_resources_page_in_uri_order_with_the_static_ones() {
    let calls = Arc::new(AtomicUsize::new(0));
    let server = server(calls.clone());
    for era in [Era::Legacy, Era::Modern] {
        let client = McpClient::in_memory(&server, era);
        client.initialize().await.unwrap();
        let mut seen = Vec::new();
        let mut cursor: Option<Value> = None;
        let mut pages = 0;
        loop {
            let r = page(&client, cursor.as_ref()).await;
            let items = r["resources"].as_array().unwrap();
            assert!(items.len() <= 3, "{r}");
            seen.extend(
                items
                    .iter()
                    .map(|i| (i["uri"].as_str().unwrap().to_owned(), i["name"].clone())),
            );
            pages += 1;
            match r.get("nextCursor") {
                Some(c) => cursor = Some(c.clone()),
                None => break,
            }
        }
        let uris: Vec<&str> = seen.iter().map(|(u, _)| u.as_str()).collect();
        assert_eq!(
            uris,
            [
                "mem://a",
                "mem://item/000",
                "mem://item/001",
                "mem://item/002",
                "mem://item/003",
                "mem://item/004",
                "mem://item/005",
                "mem://item/006",
                "mem://z",
            ],
            "{era:?}"
        );
        assert_eq!(pages, 3, "{era:?}");
        assert_eq!(seen[4].1, "static 3");
    }
    // The lister was asked once per page: it lists lazily.
    assert_eq!(calls.load(Ordering::SeqCst), 6);
}

#[tokio::test(flavor = "current_thread")]
async fn a_bad_cursor_is_refused() {
    let server = server(Arc::new(AtomicUsize::new(0)));
    let client = McpClient::in_memory(&server, Era::Legacy);
    client.initialize().await.unwrap();
    let e = client
        .request("resources/list", json!({"cursor": "zz"}))
        .await
        .unwrap_err();
    assert!(format!("{e:?}").contains("-32602"), "{e:?}");
}
