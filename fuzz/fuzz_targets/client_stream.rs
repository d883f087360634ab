//! A hostile server's byte stream into `McpClient` (issue #26): the fuzzer's bytes are what
//! the server writes, in turns (split at NUL, one turn per message the client sends; `$ID`
//! in a turn is the id of the client's message it follows). The client runs `initialize`,
//! lists tools, prompts, resources and templates, and calls a tool.
//!
//! Invariants: nothing panics; the session ends (every request has a timeout, the clock is
//! paused, so a silent server costs nothing); memory stays within the client's bounds
//! (libFuzzer's `-rss_limit_mb` catches a list or a map that grows without one).
#![no_main]

use codomyrmex_mcp::fuzzing::hostile_server;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime");
    let outcome = rt.block_on(hostile_server(data));
    assert_eq!(outcome.lists.len(), 4);
});
