//! The driver's change bridge: an engine's own list changes and resource updates go out on a
//! [`ChangeBus`], and what other instances publish there is announced to the engine's
//! listeners ([`Listeners::announce`](codomyrmex_mcp_core::engine::Listeners::announce)), on two tokio tasks per engine.
//!
//! It publishes [`Listeners::local_events`](codomyrmex_mcp_core::engine::Listeners::local_events) only, so a change heard from the bus is never
//! published again (no echo between instances), and skips what this instance published
//! itself. When the bus connection is lost, the bridge subscribes again after a second;
//! changes published meanwhile are not replayed (see [`codomyrmex_mcp_core::change_bus`]).

use std::sync::Arc;
use std::time::Duration;

use codomyrmex_mcp_core::change_bus::ChangeBus;
use codomyrmex_mcp_core::engine::Engine;
use futures_util::StreamExt as _;

/// Keeps a change bridge running; dropping it stops the bridge.
#[derive(Debug)]
pub struct ChangeBridgeHandle(Vec<tokio::task::JoinHandle<()>>);

impl Drop for ChangeBridgeHandle {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// Bridges `engine`'s changes and `bus`, as instance `instance` (the origin of what it
/// publishes). Needs a tokio runtime.
pub fn spawn_change_bridge(
    engine: &Engine,
    bus: Arc<dyn ChangeBus>,
    instance: impl Into<String>,
) -> ChangeBridgeHandle {
    let instance: Arc<str> = Arc::from(instance.into());
    let outgoing = {
        let (bus, instance) = (bus.clone(), instance.clone());
        let mut local = engine.listeners().local_events();
        tokio::spawn(async move {
            while let Some(event) = local.next().await {
                if let Err(e) = bus.publish(&instance, &event).await {
                    tracing::warn!(error = %e, "could not publish a change to other instances");
                }
            }
        })
    };
    let incoming = {
        let engine = engine.clone();
        tokio::spawn(async move {
            loop {
                match bus.subscribe().await {
                    Ok(mut feed) => {
                        while let Some((origin, event)) = feed.next().await {
                            if *origin != *instance {
                                engine.listeners().announce(event);
                            }
                        }
                        tracing::warn!("the change bus subscription ended; subscribing again");
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot subscribe to the change bus"),
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        })
    };
    ChangeBridgeHandle(vec![outgoing, incoming])
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use codomyrmex_mcp_core::McpResourceRegistry;
    use codomyrmex_mcp_core::McpServerConfig;
    use codomyrmex_mcp_core::change_bus::MemoryChangeBus;
    use codomyrmex_mcp_core::engine::Engine;
    use codomyrmex_mcp_core::engine::ServerEvent;
    use codomyrmex_mcp_core::{McpToolRegistry, ToolDefinition, ToolRegistration};
    use serde_json::json;

    fn engine() -> (Engine, Arc<McpToolRegistry>, Arc<McpResourceRegistry>) {
        let tools = Arc::new(McpToolRegistry::new());
        let resources = Arc::new(McpResourceRegistry::new());
        let engine = Engine::builder(McpServerConfig::default(), tools.clone())
            .resources(resources.clone())
            .build();
        (engine, tools, resources)
    }

    #[tokio::test]
    async fn changes_on_one_instance_reach_the_listeners_of_another_and_do_not_echo() {
        let bus = Arc::new(MemoryChangeBus::new());
        let (a, a_tools, a_resources) = engine();
        let (b, _, _) = engine();
        let mut heard_on_b = b.listeners().events();
        let mut own_of_b = b.listeners().local_events();
        let mut heard_on_a = a.listeners().events();
        let _bridge_a = super::spawn_change_bridge(&a, bus.clone(), "a");
        let _bridge_b = super::spawn_change_bridge(&b, bus.clone(), "b");
        // Let both bridges subscribe before anything is published.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        a_resources.notify_updated("mem://doc");
        let next = tokio::time::timeout(Duration::from_secs(30), heard_on_b.next()).await;
        assert_eq!(
            next.unwrap(),
            Some(ServerEvent::ResourceUpdated("mem://doc".into()))
        );
        // a hears its own change once, from its registry: not again from the bus.
        let own = tokio::time::timeout(Duration::from_secs(30), heard_on_a.next()).await;
        assert_eq!(
            own.unwrap(),
            Some(ServerEvent::ResourceUpdated("mem://doc".into()))
        );
        let handler = |_: codomyrmex_mcp_core::JsonObject| async {
            codomyrmex_mcp_core::ToolOutput::content(vec![])
        };
        a_tools
            .register_tool(ToolRegistration::new(
                ToolDefinition::new("late", json!({"type": "object"})),
                handler,
            ))
            .unwrap();
        let next = tokio::time::timeout(Duration::from_secs(30), heard_on_b.next()).await;
        assert_eq!(next.unwrap(), Some(ServerEvent::ToolsListChanged));
        let own = tokio::time::timeout(Duration::from_secs(30), heard_on_a.next()).await;
        assert_eq!(own.unwrap(), Some(ServerEvent::ToolsListChanged));
        // What b heard from the bus is not b's own change, so b publishes nothing back.
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        assert!(
            futures_util::FutureExt::now_or_never(own_of_b.next()).is_none(),
            "b's own registries did not change"
        );
        assert!(
            futures_util::FutureExt::now_or_never(heard_on_a.next()).is_none(),
            "nothing came back to a"
        );
    }
}
