//! Transports: thin adapters that move bytes between a peer and the [`Engine`](crate::engine::Engine).
//!
//! A transport frames and decodes messages, hands them to the engine with a session and a
//! sink, drives the futures the engine returns, and writes what comes back. It holds no
//! protocol rules of its own.

#[cfg(feature = "http")]
pub mod http;
#[cfg(target_os = "linux")]
pub(crate) mod spin;
#[cfg(not(target_os = "linux"))]
pub(crate) mod spin {
    //! No input spin on this platform (it polls descriptors with `poll(2)`): [`Spin`] is
    //! never built.

    /// Never constructed here.
    #[derive(Debug)]
    pub(crate) enum Spin {}

    impl Spin {
        /// Never a spin here.
        pub(crate) fn new(_: std::time::Duration) -> Option<Self> {
            None
        }
        pub(crate) fn enter(&self, _: bool) {
            match *self {}
        }
        pub(crate) fn leave(&self, _: bool) {
            match *self {}
        }
    }
}
pub mod stdio;
