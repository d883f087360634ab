//! `serve --skills DIR`: the skills under a directory, loaded through the one confinement
//! (`codomyrmex_mcp::skills`), for the server to publish.

use std::path::Path;
use std::sync::Arc;

use codomyrmex_mcp::skills::{self, McpSkillRegistry};

/// The registry of every skill under `dir`. A skill that breaks the extension's rules is left
/// out with a warning naming it and the rule; a directory that cannot be read is an error.
pub fn registry(dir: &Path) -> Result<Arc<McpSkillRegistry>, String> {
    let loaded = skills::skills_from_dir(dir)
        .map_err(|e| format!("the skills directory {} is unusable: {e}", dir.display()))?;
    for (path, why) in &loaded.refused {
        tracing::warn!(skill = %path, "skill not served: {why}");
    }
    let registry = McpSkillRegistry::new();
    for skill in loaded.skills {
        let path = skill.path().to_owned();
        if let Err(e) = registry.add(skill) {
            tracing::warn!(skill = %path, "skill not served: {e}");
        }
    }
    tracing::info!(dir = %dir.display(), skills = registry.len(), "publishing skills");
    Ok(Arc::new(registry))
}
