//! The idle-sessions case: open many legacy sessions, leave them idle, and read the server's
//! RSS before, with every session alive, and after idle expiry, round after round. Printing is
//! in `report`.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use codomyrmex_mcp_bench::procfs;
use serde_json::Value;

use crate::Result;
use crate::args::{LEGACY, Options, Subject};
use crate::calls::open_session;
use crate::client::Conn;
use crate::server::Server;

#[derive(Debug, Clone, Default)]
pub(crate) struct IdleRound {
    pub(crate) opened: u64,
    pub(crate) errors: u64,
    pub(crate) open_secs: f64,
    pub(crate) rss_alive_kib: u64,
    /// Sessions the server reported with all alive, when it has `/health`.
    pub(crate) reported_alive: Option<u64>,
    /// After expiry: sessions reported (when it has `/health`), RSS, and how long it took.
    pub(crate) reported_after: Option<u64>,
    pub(crate) rss_after_kib: u64,
    /// RSS `--idle-settle` seconds after expiry (when asked for): the allocator may hand freed
    /// pages back over some seconds.
    pub(crate) rss_settled_kib: Option<u64>,
    pub(crate) expiry_secs: f64,
    pub(crate) capped: bool,
    /// The HTTP status a request on the round's first session got after the wait: 404 when
    /// the server forgot it.
    pub(crate) first_probe: Option<u16>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct IdleReport {
    pub(crate) rss_before_kib: u64,
    pub(crate) rounds: Vec<IdleRound>,
    pub(crate) peak_rss_kib: u64,
    pub(crate) has_health: bool,
}

impl IdleReport {
    pub(crate) fn growth_kib(&self) -> u64 {
        self.rounds
            .iter()
            .map(|r| r.rss_alive_kib.saturating_sub(self.rss_before_kib))
            .max()
            .unwrap_or(0)
    }
}

/// The server's live session count from `GET /health`, if it reports one.
async fn health_sessions(addr: SocketAddr) -> Option<u64> {
    let mut conn = Conn::connect(addr, None).await.ok()?;
    let head = conn.get("/health").await.ok()?;
    if head.status != 200 {
        return None;
    }
    serde_json::from_slice::<Value>(&conn.body).ok()?["sessions"].as_u64()
}

/// The status of a `ping` on session `sid` (after its expiry: 404 when it is gone).
async fn probe_session(addr: SocketAddr, sid: &str) -> Option<u16> {
    let mut conn = Conn::connect(addr, None).await.ok()?;
    let headers = format!("mcp-session-id: {sid}\r\nmcp-protocol-version: {LEGACY}\r\n");
    let head = conn
        .post(&headers, br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .await
        .ok()?;
    Some(head.status)
}

pub(crate) async fn run_idle(opts: &Options, subject: &Subject) -> Result<IdleReport> {
    let server = Server::spawn(opts, subject).await?;
    let outcome = idle_rounds(opts, subject, &server).await;
    server.stop().await;
    outcome
}

pub(crate) async fn idle_rounds(
    opts: &Options,
    subject: &Subject,
    server: &Server,
) -> Result<IdleReport> {
    let has_health = health_sessions(server.addr).await.is_some();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut report = IdleReport {
        rss_before_kib: procfs::rss_kib(server.pid)?,
        has_health,
        ..IdleReport::default()
    };
    for _ in 0..opts.idle_rounds {
        let opened = Arc::new(AtomicU64::new(0));
        let errors = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let first = Arc::new(std::sync::Mutex::new(None::<String>));
        let target = opts.idle_sessions as u64;
        let started = Instant::now();
        let mut tasks = Vec::new();
        for c in 0..opts.idle_connections {
            let (opened, errors, stop) = (opened.clone(), errors.clone(), stop.clone());
            let first = first.clone();
            // 127.0.0.2, 127.0.0.3, ...: one client address per connection.
            let local = Ipv4Addr::new(127, 0, (2 + c / 250) as u8, (2 + c % 250) as u8);
            let addr = server.addr;
            let name = subject.name.clone();
            tasks.push(tokio::spawn(async move {
                let mut conn = match Conn::connect(addr, Some(local)).await {
                    Ok(c) => c,
                    Err(e) => {
                        eprintln!("http_load: {name}: connecting from {local}: {e}");
                        errors.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                };
                let mut failures = 0;
                while !stop.load(Ordering::Relaxed) {
                    // Claim one session to open.
                    let claimed = opened.fetch_add(1, Ordering::Relaxed);
                    if claimed >= target {
                        opened.fetch_sub(1, Ordering::Relaxed);
                        break;
                    }
                    match open_session(&mut conn, false).await {
                        Ok(sid) => {
                            failures = 0;
                            if let Ok(mut f) = first.lock()
                                && f.is_none()
                            {
                                *f = Some(sid);
                            }
                        }
                        Err(e) => {
                            opened.fetch_sub(1, Ordering::Relaxed);
                            let n = errors.fetch_add(1, Ordering::Relaxed);
                            if n < 3 {
                                eprintln!("http_load: {name}: opening a session: {e}");
                            }
                            failures += 1;
                            if failures > 20 || conn.reconnect().await.is_err() {
                                break;
                            }
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    }
                }
            }));
        }
        // Watch the server's memory while the sessions open.
        let mut capped = false;
        let watch_pid = server.pid;
        let cap = opts.idle_max_rss_kib;
        let watcher = {
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut capped = false;
                while !stop.load(Ordering::Relaxed) {
                    if procfs::rss_kib(watch_pid).is_ok_and(|r| r > cap) {
                        capped = true;
                        stop.store(true, Ordering::Relaxed);
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                capped
            })
        };
        for t in tasks {
            t.await?;
        }
        stop.store(true, Ordering::Relaxed);
        capped |= watcher.await?;
        let open_secs = started.elapsed().as_secs_f64();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let rss_alive_kib = procfs::rss_kib(server.pid)?;
        let reported_alive = if has_health {
            health_sessions(server.addr).await
        } else {
            None
        };
        // Wait for idle expiry.
        let expiry_started = Instant::now();
        let mut reported_after = None;
        if has_health {
            while expiry_started.elapsed() < opts.idle_wait {
                reported_after = health_sessions(server.addr).await;
                if reported_after == Some(0) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        } else {
            tokio::time::sleep(opts.idle_wait).await;
        }
        let expiry_secs = expiry_started.elapsed().as_secs_f64();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let rss_after_kib = procfs::rss_kib(server.pid)?;
        let rss_settled_kib = if opts.idle_settle.is_zero() {
            None
        } else {
            tokio::time::sleep(opts.idle_settle).await;
            Some(procfs::rss_kib(server.pid)?)
        };
        let first_sid = first.lock().ok().and_then(|f| f.clone());
        let first_probe = match first_sid {
            Some(sid) => probe_session(server.addr, &sid).await,
            None => None,
        };
        let r = IdleRound {
            opened: opened.load(Ordering::Relaxed),
            errors: errors.load(Ordering::Relaxed),
            open_secs,
            rss_alive_kib,
            reported_alive,
            reported_after,
            rss_after_kib,
            rss_settled_kib,
            expiry_secs,
            capped,
            first_probe,
        };
        report.rounds.push(r);
    }
    report.peak_rss_kib = procfs::peak_rss_kib(server.pid)?;
    Ok(report)
}

pub(crate) fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}
