//! TLS (rustls with the ring provider): the server configuration built from the `--tls-*` flags,
//! and the handshake of one accepted connection.

use crate::config::{Config, TlsAuthClients};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{self, RootCertStore, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// Longest a client may take to complete the TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read_certs(flag: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let bad = |e: &dyn std::fmt::Display| format!("cannot read {flag} {}: {e}", path.display());
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&"no PEM certificate found"));
    }
    Ok(certs)
}

/// The acceptor for `--tls-port`, from the certificate, key and CA files. Errors name the flag
/// and the file, for a clear start-up failure.
pub fn acceptor(config: &Config) -> Result<TlsAcceptor, String> {
    let (Some(cert_file), Some(key_file)) = (&config.tls_cert_file, &config.tls_key_file) else {
        return Err("--tls-port needs --tls-cert-file and --tls-key-file".into());
    };
    let certs = read_certs("--tls-cert-file", cert_file)?;
    let key = PrivateKeyDer::from_pem_file(key_file)
        .map_err(|e| format!("cannot read --tls-key-file {}: {e}", key_file.display()))?;
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up failed: {e}"))?;
    let builder = match (&config.tls_ca_cert_file, config.tls_auth_clients) {
        (Some(ca_file), auth) if auth != TlsAuthClients::No => {
            let mut roots = RootCertStore::empty();
            for cert in read_certs("--tls-ca-cert-file", ca_file)? {
                roots.add(cert).map_err(|e| {
                    format!(
                        "bad certificate in --tls-ca-cert-file {}: {e}",
                        ca_file.display()
                    )
                })?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider());
            let verifier = if auth == TlsAuthClients::Optional {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            builder.with_client_cert_verifier(
                verifier
                    .build()
                    .map_err(|e| format!("bad --tls-ca-cert-file {}: {e}", ca_file.display()))?,
            )
        }
        _ => builder.with_no_client_auth(),
    };
    let server = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("--tls-cert-file and --tls-key-file do not fit: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(server)))
}

/// Runs the server side of the handshake, for at most [`HANDSHAKE_TIMEOUT`].
pub async fn handshake(
    acceptor: &TlsAcceptor,
    stream: TcpStream,
) -> Result<TlsStream<TcpStream>, String> {
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => Ok(tls),
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err("handshake timed out".into()),
    }
}
