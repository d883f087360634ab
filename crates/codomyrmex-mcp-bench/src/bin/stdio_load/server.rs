//! A server under test: the process spawned from a subject's command, the legacy handshake
//! on its stdin and stdout, and what `/proc` says about it. It runs no load.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use codomyrmex_mcp_bench::util::snippet;
use serde_json::{Value, json};

use crate::Result;
use crate::args::{Options, Subject};

const PROTOCOL_VERSION: &str = "2025-11-25";

/// A spawned server: its pipes, and a watchdog that kills it if the case overruns.
pub(crate) struct Server {
    child: Arc<Mutex<Child>>,
    pub(crate) pid: u32,
    pub(crate) stdin: Option<ChildStdin>,
    pub(crate) stdout: BufReader<ChildStdout>,
    spawned_at: Instant,
    watchdog: Arc<(Mutex<bool>, Condvar)>,
}

impl Server {
    pub(crate) fn spawn(opts: &Options, subject: &Subject) -> Result<Self> {
        let mut cmd = Command::new(&subject.command[0]);
        cmd.args(&subject.command[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if opts.show_stderr {
                Stdio::inherit()
            } else {
                Stdio::null()
            });
        let spawned_at = Instant::now();
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {:?}: {e}", subject.command[0]))?;
        let pid = child.id();
        let stdin = child.stdin.take().ok_or("no stdin pipe")?;
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        let child = Arc::new(Mutex::new(child));
        let watchdog = Arc::new((Mutex::new(false), Condvar::new()));
        {
            let child = child.clone();
            let watchdog = watchdog.clone();
            let timeout = opts.timeout;
            std::thread::spawn(move || {
                let (done, cv) = &*watchdog;
                let Ok(guard) = done.lock() else { return };
                let Ok((guard, result)) = cv.wait_timeout_while(guard, timeout, |d| !*d) else {
                    return;
                };
                if result.timed_out() && !*guard {
                    eprintln!("stdio_load: the server overran {timeout:?}; killing it");
                    if let Ok(mut c) = child.lock() {
                        let _ = c.kill();
                    }
                }
            });
        }
        Ok(Self {
            child,
            pid,
            stdin: Some(stdin),
            stdout: BufReader::with_capacity(256 * 1024, stdout),
            spawned_at,
            watchdog,
        })
    }

    pub(crate) fn stdin(&mut self) -> Result<&mut ChildStdin> {
        self.stdin
            .as_mut()
            .ok_or_else(|| "stdin already closed".into())
    }

    /// Reads one line (without its newline) into `line`.
    pub(crate) fn read_line(&mut self, line: &mut Vec<u8>) -> Result<()> {
        line.clear();
        if self.stdout.read_until(b'\n', line)? == 0 {
            return Err("the server closed its output".into());
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        Ok(())
    }

    /// Sends `initialize`, waits for its response, sends `notifications/initialized`.
    /// Returns the cold start: spawn to the `initialize` response.
    pub(crate) fn handshake(&mut self) -> Result<Duration> {
        let init = json!({
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "stdio_load", "version": env!("CARGO_PKG_VERSION")},
            },
        });
        let mut bytes = serde_json::to_vec(&init)?;
        bytes.push(b'\n');
        self.stdin()?.write_all(&bytes)?;
        let mut line = Vec::new();
        self.read_line(&mut line)?;
        let cold = self.spawned_at.elapsed();
        let v: Value = serde_json::from_slice(&line)
            .map_err(|e| format!("initialize response is not JSON ({e})"))?;
        if v["id"] != json!(0) || !v["result"]["protocolVersion"].is_string() {
            return Err(format!("unexpected initialize response: {}", snippet(&line)).into());
        }
        self.stdin()?
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")?;
        Ok(cold)
    }

    /// Closes stdin and waits for a clean exit.
    pub(crate) fn finish(mut self) -> Result<()> {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        self.stdout.read_to_end(&mut rest)?;
        let status = loop {
            let polled = self
                .child
                .lock()
                .map_err(|_| "child lock poisoned")?
                .try_wait()?;
            if let Some(s) = polled {
                break s;
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let (done, cv) = &*self.watchdog;
        if let Ok(mut d) = done.lock() {
            *d = true;
        }
        cv.notify_all();
        if !status.success() {
            return Err(format!("the server exited with {status}").into());
        }
        if !rest.iter().all(u8::is_ascii_whitespace) {
            return Err(format!("unexpected output after EOF: {}", snippet(&rest)).into());
        }
        Ok(())
    }
}
