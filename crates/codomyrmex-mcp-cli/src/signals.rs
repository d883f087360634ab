//! SIGINT and SIGTERM for `serve`: the first asks for a graceful shutdown (in-flight calls
//! get their grace period), a second one exits at once.
//!
//! The handlers are installed before serving starts, so no signal falls between the first
//! and the second; it is not a general signal library.

/// Installed SIGINT and SIGTERM listeners.
pub struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    /// Installs the listeners (from then on the signals no longer kill the process).
    pub fn install() -> Result<Self, String> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let err = |e: std::io::Error| format!("cannot listen for signals: {e}");
            Ok(Self {
                interrupt: signal(SignalKind::interrupt()).map_err(err)?,
                terminate: signal(SignalKind::terminate()).map_err(err)?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// Resolves on the next SIGINT or SIGTERM, with its name.
    async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => "SIGINT",
                _ = self.terminate.recv() => "SIGTERM",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }

    /// A future that resolves on the first signal, after which a second signal exits the
    /// process at once with status 130.
    pub async fn shutdown(mut self) {
        let first = self.next().await;
        eprintln!(
            "codomyrmex-mcp: {first} received: shutting down after the in-flight calls \
             (send another signal to exit at once)"
        );
        tokio::spawn(async move {
            let second = self.next().await;
            eprintln!("codomyrmex-mcp: {second} received again: exiting now");
            std::process::exit(130);
        });
    }
}
