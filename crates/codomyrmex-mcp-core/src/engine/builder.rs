//! [`EngineBuilder`]: how an [`Engine`] is put together, once.
//!
//! Everything an engine shares between its clones (the `requestState` sealer and its key,
//! the task store, the admission gate of stateless requests, the rate limiter) is created
//! exactly once, in [`EngineBuilder::build`]. The `Engine::with_*` methods are thin wrappers
//! that carry the sealer and task store over, so states and tasks already handed out stay
//! valid.

use std::sync::Arc;

use super::mrtr::Sealer;
use super::policy::ExecutionPolicy;
use super::{Engine, Shared, TaskConfig, tasks};
use crate::config::McpServerConfig;
use crate::platform::{Entropy, Platform, TimeSource};
use crate::prompts::McpPromptRegistry;
use crate::registry::McpToolRegistry;
use crate::resources::McpResourceRegistry;
use crate::skills::McpSkillRegistry;
use crate::wire::Implementation;

/// Builds an [`Engine`]: see [`Engine::builder`].
#[must_use = "call build() to get the engine"]
pub struct EngineBuilder {
    pub(super) config: McpServerConfig,
    pub(super) registry: Arc<McpToolRegistry>,
    pub(super) resources: Option<Arc<McpResourceRegistry>>,
    pub(super) prompts: Option<Arc<McpPromptRegistry>>,
    pub(super) skills: Option<Arc<McpSkillRegistry>>,
    pub(super) tasks: TaskConfig,
    pub(super) sealer: Option<Arc<Sealer>>,
    pub(super) time: Option<Arc<dyn TimeSource>>,
    pub(super) entropy: Option<Arc<dyn Entropy>>,
    pub(super) shared_tasks: Option<tasks::SharedTasks>,
}

impl std::fmt::Debug for EngineBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineBuilder")
            .field("name", &self.config.name)
            .finish_non_exhaustive()
    }
}

impl EngineBuilder {
    /// Also serve `resources` (and advertise the `resources` capability).
    pub fn resources(mut self, resources: Arc<McpResourceRegistry>) -> Self {
        self.resources = Some(resources);
        self
    }

    /// Also serve `prompts` (and advertise the `prompts` capability).
    pub fn prompts(mut self, prompts: Arc<McpPromptRegistry>) -> Self {
        self.prompts = Some(prompts);
        self
    }

    /// Also serve `skills` (the Skills extension, SEP-2640): `skills/list`, `skills/get`,
    /// `resources/directory/read` when the registry serves it, and `resources/read` of their
    /// files; declares the extension and, as it requires, the `resources` capability (with
    /// an empty resource registry when none is given).
    pub fn skills(mut self, skills: Arc<McpSkillRegistry>) -> Self {
        self.skills = Some(skills);
        self
    }

    /// Sets the task limits.
    pub fn task_config(mut self, config: TaskConfig) -> Self {
        self.tasks = config;
        self
    }

    /// Shares this engine's task records through `store` with other instances (see
    /// [`task_store`](crate::task_store)): `tasks/*` requests for a task another instance
    /// runs are answered from its record; this engine's records name it `instance` and are
    /// leased for `lease` at a time. The driver writes and renews them
    /// ([`Engine::task_sync`]); without one running, leases lapse and other instances see the
    /// tasks fail. Without this, tasks stay in this engine's memory.
    pub fn task_store(
        mut self,
        store: Arc<dyn crate::task_store::TaskStore>,
        instance: impl Into<String>,
        lease: std::time::Duration,
    ) -> Self {
        self.shared_tasks = Some(tasks::SharedTasks {
            store,
            instance: instance.into(),
            lease: lease.max(std::time::Duration::from_millis(100)),
        });
        self
    }

    /// Runs on `platform`: its time source and entropy (see the two methods below).
    pub fn platform(self, platform: Platform) -> Self {
        self.time_source(platform.time).entropy(platform.entropy)
    }

    /// Takes monotonic and wall time from `time` instead of the default platform's: rate
    /// limits, deadlines, `requestState` expiry and task timestamps follow it (tests use a
    /// virtual clock).
    pub fn time_source(mut self, time: Arc<dyn TimeSource>) -> Self {
        self.time = Some(time);
        self
    }

    /// Draws the `requestState` key (when none is configured) and task ids from `entropy`
    /// instead of the default platform's. With neither a configured key nor working entropy,
    /// sealing fails closed.
    pub fn entropy(mut self, entropy: Arc<dyn Entropy>) -> Self {
        self.entropy = Some(entropy);
        self.sealer = None;
        self
    }

    /// The platform the engine runs on: what was set, the default platform's for the rest.
    fn resolved_platform(&self) -> Platform {
        let default = Platform::default_platform();
        Platform {
            time: self.time.clone().unwrap_or(default.time),
            entropy: self.entropy.clone().unwrap_or(default.entropy),
        }
    }

    /// The engine.
    pub fn build(self) -> Engine {
        let tasks = Arc::new(tasks::TaskStore::new(
            self.tasks.clone(),
            self.resolved_platform(),
            self.shared_tasks.clone(),
        ));
        self.build_sharing_tasks(tasks)
    }

    /// The engine, with `tasks` as its task store.
    pub(super) fn build_sharing_tasks(self, tasks: Arc<tasks::TaskStore>) -> Engine {
        let platform = self.resolved_platform();
        let Self {
            config,
            registry,
            resources,
            prompts,
            skills,
            tasks: _,
            sealer,
            time: _,
            entropy: _,
            shared_tasks: _,
        } = self;
        // Skill files are resources: the extension requires the `resources` capability.
        let resources = match (&skills, resources) {
            (Some(_), None) => Some(Arc::new(McpResourceRegistry::new())),
            (_, r) => r,
        };
        let server_info = Implementation::new(config.name.clone(), config.version.clone());
        let sealer = sealer.unwrap_or_else(|| {
            Arc::new(Sealer::new(
                config.request_state_key,
                config.request_state_ttl,
                platform.entropy.as_ref(),
                platform.time.clone(),
            ))
        });
        let execution_policy = ExecutionPolicy::from_config(&config);
        let tasks =
            super::tasks::Tasks::new(tasks, registry.clone(), platform.time.clone(), &config);
        Engine {
            shared: Arc::new(Shared {
                listeners: super::listen::Listeners::new(
                    registry.clone(),
                    resources.clone(),
                    prompts.clone(),
                ),
                access: super::authz::Access::new(config.authorization.clone(), skills.clone()),
                results: super::results::Results::new(&config, &server_info),
                sessions: super::sessions::Sessions::new(&config, server_info),
                config,
                registry,
                resources,
                prompts,
                skills,
                policy: execution_policy,
                platform,
                sealer,
                tasks,
                list_pages: Default::default(),
            }),
        }
    }
}
