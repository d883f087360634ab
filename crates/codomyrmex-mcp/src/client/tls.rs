//! HTTPS for the client's HTTP transport and its OAuth fetches: rustls with the `ring`
//! provider, trusting the Mozilla root certificates (`webpki-roots`) plus the CA
//! certificates of an optional PEM file (`HttpTarget::ca_file`, the `--cacert` of
//! `codomyrmex-mcp client`). TLS 1.2 and 1.3, certificates checked against the URL's host
//! name or IP address.
//!
//! Not a certificate store: the system's trust store is not read, and there is no way to
//! turn verification off.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// The largest CA file read.
const MAX_CA_FILE: u64 = 16 << 20;

fn roots() -> RootCertStore {
    RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
}

fn build(roots: RootCertStore) -> Result<Arc<ClientConfig>, String> {
    let config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS setup failed: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The client TLS configuration: the Mozilla roots, plus the certificates in `ca_file`.
pub fn client_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, String> {
    static DEFAULT: OnceLock<Result<Arc<ClientConfig>, String>> = OnceLock::new();
    let Some(path) = ca_file else {
        return DEFAULT.get_or_init(|| build(roots())).clone();
    };
    let shown = path.display();
    let size = std::fs::metadata(path)
        .map_err(|e| format!("cannot read the CA file {shown}: {e}"))?
        .len();
    if size > MAX_CA_FILE {
        return Err(format!(
            "the CA file {shown} is larger than {MAX_CA_FILE} bytes"
        ));
    }
    let pem = std::fs::read(path).map_err(|e| format!("cannot read the CA file {shown}: {e}"))?;
    let mut store = roots();
    let mut added = 0;
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| format!("the CA file {shown} is not valid PEM: {e}"))?;
        store
            .add(cert)
            .map_err(|e| format!("the CA file {shown} holds a certificate rustls refuses: {e}"))?;
        added += 1;
    }
    if added == 0 {
        return Err(format!("the CA file {shown} holds no PEM certificate"));
    }
    build(store)
}

/// Runs the TLS handshake on `tcp` for `host`.
pub(crate) async fn connect(
    config: &Arc<ClientConfig>,
    host: &str,
    tcp: TcpStream,
) -> Result<TlsStream<TcpStream>, String> {
    let name = ServerName::try_from(host.to_owned())
        .map_err(|e| format!("{host:?} is not a name TLS can check: {e}"))?;
    TlsConnector::from(config.clone())
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake with {host} failed: {e}"))
}
