//! A `redis-server` per test, on a free loopback port, with no persistence; killed on drop.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use codomyrmex_mcp_redis::RedisConnection;

/// A `redis-server` on a free port; killed on drop.
pub struct Redis {
    child: Child,
    pub port: u16,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A `redis-server` on `port`. Panics when it cannot listen there (the port is taken).
pub fn start_redis_on(port: u16) -> Redis {
    try_start_redis_on(port)
        .unwrap_or_else(|| panic!("redis-server could not listen on port {port}: it is taken"))
}

/// A `redis-server` on a free port.
///
/// A free port is free only until someone binds it: another test may start its own server
/// on the same one between [`free_port`] and this server's bind. The server that loses
/// exits, and a test that then checked only that the port answers would use the other
/// test's server, and lose it when that test ends. So the server is taken to listen only
/// when the process answering on the port is this one; when it exited instead, another
/// port is tried.
pub fn start_redis() -> Redis {
    for _ in 0..20 {
        if let Some(redis) = try_start_redis_on(free_port()) {
            return redis;
        }
    }
    panic!("redis-server found no free port in 20 tries")
}

/// A `redis-server` on `port`, once it is the process answering there; `None` when it exited
/// first (the port was taken).
fn try_start_redis_on(port: u16) -> Option<Redis> {
    let mut child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot start redis-server ({e}): apt-get install -y redis-server")
        });
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            return None;
        }
        if answering_pid(port) == Some(child.id()) {
            return Some(Redis { child, port });
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("redis-server did not listen on port {port}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The process id of the Redis answering on `port` (`INFO server`'s `process_id`), or
/// `None` when nothing answers there (yet).
fn answering_pid(port: u16) -> Option<u32> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).ok()?;
    let mut conn = client
        .get_connection_with_timeout(Duration::from_secs(2))
        .ok()?;
    let info: String = redis::cmd("INFO").arg("server").query(&mut conn).ok()?;
    info.lines()
        .find_map(|line| line.strip_prefix("process_id:"))?
        .trim()
        .parse()
        .ok()
}

pub async fn connect(redis: &Redis, prefix: &str) -> RedisConnection {
    RedisConnection::connect(&format!("redis://127.0.0.1:{}/", redis.port))
        .await
        .unwrap()
        .with_prefix(prefix)
}

/// A TCP relay to a Redis, for an instance whose death a test decides: [`Relay::cut`]
/// closes every connection through it and refuses new ones, which is what Redis sees of a
/// process that died (its subscriptions go at once).
pub struct Relay {
    pub port: u16,
    cut: tokio::sync::watch::Sender<bool>,
}

impl Relay {
    /// A relay on a free loopback port to the Redis on `to`.
    pub async fn start(to: u16) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (cut, mut cut_rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    _ = cut_rx.changed() => return,
                    accepted = listener.accept() => {
                        let Ok((mut client, _)) = accepted else { return };
                        conns.spawn(async move {
                            let Ok(mut redis) = tokio::net::TcpStream::connect(("127.0.0.1", to)).await
                            else {
                                return;
                            };
                            let _ = tokio::io::copy_bidirectional(&mut client, &mut redis).await;
                        });
                    }
                }
            }
            // Returning drops the listener and aborts every relayed connection.
        });
        Self { port, cut }
    }

    /// Closes every connection through the relay, and the relay.
    pub fn cut(&self) {
        let _ = self.cut.send(true);
    }
}
