//! TLS (rustls with the ring provider): the server and client configurations built from the
//! `tls-*` settings, the handshake of one accepted connection, and the client side of the
//! replica's link to its primary (`tls-replication`).
//!
//! The configurations in force are held by [`Tls`] and replaced whole when CONFIG SET changes a
//! TLS setting: new connections use the new one, connections already made keep theirs.

use crate::config::values::{self, TlsVersion};
use crate::config::{Config, TlsAuthClients};
use parking_lot::RwLock;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::crypto::{ring, CryptoProvider};
use tokio_rustls::rustls::server::{
    NoServerSessionStorage, ServerSessionMemoryCache, StoresServerSessions, WebPkiClientVerifier,
};
use tokio_rustls::rustls::{
    self, CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig,
    SignatureScheme, SupportedCipherSuite, SupportedProtocolVersion,
};
use tokio_rustls::server::TlsStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// Longest a client may take to complete the TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The TLS configurations in force: the TLS listener's, and the replica's for its link to the
/// primary.
#[derive(Default)]
pub struct Tls {
    /// Whether the server has a TLS listener (`tls-port` is fixed at start-up).
    listening: bool,
    current: RwLock<Configured>,
}

/// Configurations built from one set of settings, put in force together by [`Tls::install`].
#[derive(Clone, Default)]
pub struct Configured {
    acceptor: Option<TlsAcceptor>,
    connector: Option<TlsConnector>,
}

impl Tls {
    /// The configurations `config` asks for at start-up; an error names the setting and file.
    pub fn start(config: &Config, listening: bool) -> Result<Tls, String> {
        let tls = Tls {
            listening,
            current: RwLock::default(),
        };
        tls.install(tls.prepare(config)?);
        Ok(tls)
    }

    /// Builds, without putting it in force, what `config` asks for: the server's configuration
    /// when there is a TLS listener, the client's with `tls-replication`. Neither: only checked
    /// by the settings' own parsers (as Redis, which loads the files only once TLS is in use).
    pub fn prepare(&self, config: &Config) -> Result<Configured, String> {
        let acceptor = match self.listening {
            true => Some(TlsAcceptor::from(Arc::new(server_config(config)?))),
            false => None,
        };
        let connector = match config.tls_replication {
            true => Some(TlsConnector::from(Arc::new(client_config(config)?))),
            false => None,
        };
        Ok(Configured {
            acceptor,
            connector,
        })
    }

    /// Puts configurations made by [`Tls::prepare`] in force for new connections.
    pub fn install(&self, configured: Configured) {
        *self.current.write() = configured;
    }

    /// The acceptor for the next TLS client; None without a TLS listener.
    pub fn acceptor(&self) -> Option<TlsAcceptor> {
        self.current.read().acceptor.clone()
    }

    /// The connector for the replica's next link; None unless `tls-replication` is on.
    pub fn connector(&self) -> Option<TlsConnector> {
        self.current.read().connector.clone()
    }
}

/// `tls-protocols` as rustls's versions (the names are checked by [`values::tls_protocols`]).
pub fn parse_protocols(text: &str) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
    Ok(values::tls_protocols(text)?
        .into_iter()
        .map(|version| match version {
            TlsVersion::V1_2 => &rustls::version::TLS12,
            TlsVersion::V1_3 => &rustls::version::TLS13,
        })
        .collect())
}

/// The ring provider's suite of each name of [`values::TLS13_SUITES`], in that list's order.
fn tls13_suites() -> [(&'static str, SupportedCipherSuite); 3] {
    use rustls::crypto::ring::cipher_suite::*;
    let [aes256, aes128, chacha20] = values::TLS13_SUITES;
    [
        (aes256, TLS13_AES_256_GCM_SHA384),
        (aes128, TLS13_AES_128_GCM_SHA256),
        (chacha20, TLS13_CHACHA20_POLY1305_SHA256),
    ]
}

/// The ring provider's suite of each name of [`values::TLS12_CIPHERS`], in that list's order.
fn tls12_suites() -> [(&'static str, SupportedCipherSuite); 6] {
    use rustls::crypto::ring::cipher_suite::*;
    let [ecdsa_aes256, ecdsa_aes128, ecdsa_chacha20, rsa_aes256, rsa_aes128, rsa_chacha20] =
        values::TLS12_CIPHERS;
    [
        (ecdsa_aes256, TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384),
        (ecdsa_aes128, TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256),
        (
            ecdsa_chacha20,
            TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        ),
        (rsa_aes256, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384),
        (rsa_aes128, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256),
        (rsa_chacha20, TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256),
    ]
}

/// `tls-ciphersuites` as the provider's TLS 1.3 suites (checked by
/// [`values::tls_ciphersuites`]).
pub fn parse_ciphersuites(text: &str) -> Result<Vec<SupportedCipherSuite>, String> {
    Ok(suites(
        &values::tls_ciphersuites(text)?,
        &tls13_suites(),
        rustls::ProtocolVersion::TLSv1_3,
    ))
}

/// `tls-ciphers` as the provider's TLS 1.2 suites (checked by [`values::tls_ciphers`]).
pub fn parse_ciphers(text: &str) -> Result<Vec<SupportedCipherSuite>, String> {
    Ok(suites(
        &values::tls_ciphers(text)?,
        &tls12_suites(),
        rustls::ProtocolVersion::TLSv1_2,
    ))
}

/// The suites of checked `names` looked up in `known`; none named: the provider's default suites
/// of `version`.
fn suites(
    names: &[&str],
    known: &[(&'static str, SupportedCipherSuite)],
    version: rustls::ProtocolVersion,
) -> Vec<SupportedCipherSuite> {
    if names.is_empty() {
        return ring::default_provider()
            .cipher_suites
            .into_iter()
            .filter(|s| s.version().version == version)
            .collect();
    }
    names
        .iter()
        .filter_map(|name| known.iter().find(|(n, _)| n == name).map(|(_, s)| *s))
        .collect()
}

/// The ring provider with the suites of `tls-ciphersuites` then `tls-ciphers`, in their order.
fn provider(config: &Config) -> Result<Arc<CryptoProvider>, String> {
    let mut cipher_suites = parse_ciphersuites(&config.tls_ciphersuites)?;
    cipher_suites.extend(parse_ciphers(&config.tls_ciphers)?);
    Ok(Arc::new(CryptoProvider {
        cipher_suites,
        ..ring::default_provider()
    }))
}

/// A path setting that is set (an empty path is none, as Redis's empty string).
fn given(path: &Option<PathBuf>) -> Option<&Path> {
    path.as_deref().filter(|p| !p.as_os_str().is_empty())
}

fn cannot_read(name: &str, path: &Path, why: &dyn Display) -> String {
    format!("cannot read {name} {}: {why}", path.display())
}

fn read_certs(name: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let bad = |e: &dyn Display| cannot_read(name, path, e);
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&"no PEM certificate found"));
    }
    Ok(certs)
}

/// The certificates of every PEM file in `tls-ca-cert-dir` (other files are skipped).
fn read_cert_dir(dir: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let bad = |e: &dyn Display| cannot_read("tls-ca-cert-dir", dir, e);
    let mut certs = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| bad(&e))? {
        let path = entry.map_err(|e| bad(&e))?.path();
        if !path.is_file() {
            continue;
        }
        if let Ok(found) = CertificateDer::pem_file_iter(&path) {
            certs.extend(found.filter_map(Result::ok));
        }
    }
    if certs.is_empty() {
        return Err(bad(&"no PEM certificate found in the directory"));
    }
    Ok(certs)
}

/// The CAs of `tls-ca-cert-file` and `tls-ca-cert-dir` together; None when neither is set.
fn trusted_cas(config: &Config) -> Result<Option<RootCertStore>, String> {
    let file = given(&config.tls_ca_cert_file);
    let dir = given(&config.tls_ca_cert_dir);
    if file.is_none() && dir.is_none() {
        return Ok(None);
    }
    let mut roots = RootCertStore::empty();
    let sources = [
        file.map(|f| ("tls-ca-cert-file", f, read_certs("tls-ca-cert-file", f))),
        dir.map(|d| ("tls-ca-cert-dir", d, read_cert_dir(d))),
    ];
    for (name, path, certs) in sources.into_iter().flatten() {
        for cert in certs? {
            roots
                .add(cert)
                .map_err(|e| format!("bad CA certificate in {name} {}: {e}", path.display()))?;
        }
    }
    Ok(Some(roots))
}

/// A private key (PKCS#8, PKCS#1 or SEC1 PEM). An encrypted PKCS#8 key (`BEGIN ENCRYPTED PRIVATE
/// KEY`) is decrypted with `pass` (the `*-pass` setting named `pass_name`).
fn read_key(
    name: &str,
    path: &Path,
    pass_name: &str,
    pass: &str,
) -> Result<PrivateKeyDer<'static>, String> {
    const ENCRYPTED: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
    const END: &str = "-----END ENCRYPTED PRIVATE KEY-----";
    let bad = |e: &dyn Display| cannot_read(name, path, e);
    let bytes = std::fs::read(path).map_err(|e| bad(&e))?;
    let text = String::from_utf8_lossy(&bytes);
    if let Some(start) = text.find(ENCRYPTED) {
        if pass.is_empty() {
            return Err(bad(&format!("the key is encrypted: set {pass_name}")));
        }
        let end = text[start..]
            .find(END)
            .map(|at| start + at + END.len())
            .ok_or_else(|| bad(&"unterminated encrypted key"))?;
        let (_, document) = pkcs8::Document::from_pem(&text[start..end]).map_err(|e| bad(&e))?;
        let decrypted = pkcs8::EncryptedPrivateKeyInfo::try_from(document.as_bytes())
            .map_err(|e| bad(&e))?
            .decrypt(pass)
            .map_err(|_| {
                bad(&format!(
                    "cannot decrypt the key: wrong {pass_name}, or an encryption other than PBES2 (PBKDF2 or scrypt with AES-CBC)"
                ))
            })?;
        return Ok(PrivateKeyDer::Pkcs8(decrypted.as_bytes().to_vec().into()));
    }
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(bad(
            &"a legacy OpenSSL encrypted key (Proc-Type: 4,ENCRYPTED) is not supported; convert it with `openssl pkcs8 -topk8 -v2 aes-256-cbc`",
        ));
    }
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| bad(&e))
}

/// Redis's refusal (at start or CONFIG SET) when certificates are to be checked without a CA.
const NO_CA: &str = "Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!";

/// The configuration of the TLS listener.
fn server_config(config: &Config) -> Result<ServerConfig, String> {
    let (Some(cert_file), Some(key_file)) =
        (given(&config.tls_cert_file), given(&config.tls_key_file))
    else {
        return Err("tls-port needs tls-cert-file and tls-key-file".into());
    };
    let certs = read_certs("tls-cert-file", cert_file)?;
    let key = read_key(
        "tls-key-file",
        key_file,
        "tls-key-file-pass",
        &config.tls_key_file_pass,
    )?;
    let provider = provider(config)?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&parse_protocols(&config.tls_protocols)?)
        .map_err(|e| format!("TLS set-up failed: {e}"))?;
    let builder = match (trusted_cas(config)?, config.tls_auth_clients) {
        (_, TlsAuthClients::No) => builder.with_no_client_auth(),
        (None, _) => return Err(NO_CA.into()),
        (Some(roots), auth) => {
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = match auth {
                TlsAuthClients::Optional => verifier.allow_unauthenticated(),
                _ => verifier,
            };
            builder.with_client_cert_verifier(
                verifier
                    .build()
                    .map_err(|e| format!("bad tls-ca-cert-file/tls-ca-cert-dir: {e}"))?,
            )
        }
    };
    let mut server = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("tls-cert-file and tls-key-file do not fit: {e}"))?;
    server.ignore_client_order = config.tls_prefer_server_ciphers;
    let (size, timeout) = (
        config.tls_session_cache_size,
        config.tls_session_cache_timeout,
    );
    if config.tls_session_caching && size > 0 && timeout > 0 {
        server.session_storage = Arc::new(SessionCache {
            sessions: ServerSessionMemoryCache::new(usize::try_from(size).unwrap_or(usize::MAX)),
            lifetime_ms: timeout.saturating_mul(1000),
            epoch: Instant::now(),
        });
    } else {
        server.session_storage = Arc::new(NoServerSessionStorage {});
        server.send_tls13_tickets = 0;
    }
    Ok(server)
}

/// `tls-session-caching`: rustls's in-memory store of resumable sessions (TLS 1.2 session ids,
/// TLS 1.3 tickets that name a stored session), holding the latest `tls-session-cache-size`,
/// each resumable for `tls-session-cache-timeout` seconds after the handshake that made it.
#[derive(Debug)]
struct SessionCache {
    sessions: Arc<ServerSessionMemoryCache>,
    lifetime_ms: u64,
    /// What the stored times count from.
    epoch: Instant,
}

impl SessionCache {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// A stored value without its time, if it is still within the lifetime.
    fn fresh(&self, stored: Vec<u8>) -> Option<Vec<u8>> {
        let (stamp, value) = stored.split_at_checked(8)?;
        let made = u64::from_be_bytes(stamp.try_into().ok()?);
        (self.now_ms().saturating_sub(made) < self.lifetime_ms).then(|| value.to_vec())
    }
}

impl StoresServerSessions for SessionCache {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        let mut stored = self.now_ms().to_be_bytes().to_vec();
        stored.extend_from_slice(&value);
        self.sessions.put(key, stored)
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let fresh = self.fresh(self.sessions.get(key)?);
        if fresh.is_none() {
            self.sessions.take(key);
        }
        fresh
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.fresh(self.sessions.take(key)?)
    }

    fn can_cache(&self) -> bool {
        true
    }
}

/// The configuration of the replica's link to its primary: the primary's certificate must be
/// signed by a CA of `tls-ca-cert-file`/`tls-ca-cert-dir`; the replica presents
/// `tls-client-cert-file` (with its key) if set, else `tls-cert-file`, else none.
fn client_config(config: &Config) -> Result<ClientConfig, String> {
    let Some(roots) = trusted_cas(config)? else {
        return Err(NO_CA.into());
    };
    let provider = provider(config)?;
    let chain = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| format!("bad tls-ca-cert-file/tls-ca-cert-dir: {e}"))?;
    let builder = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&parse_protocols(&config.tls_protocols)?)
        .map_err(|e| format!("TLS set-up failed: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(PrimaryVerifier { chain }));
    let client_pair = (
        given(&config.tls_client_cert_file),
        given(&config.tls_client_key_file),
    );
    let server_pair = (given(&config.tls_cert_file), given(&config.tls_key_file));
    let identity = match (client_pair, server_pair) {
        ((Some(cert), Some(key)), _) => Some((
            read_certs("tls-client-cert-file", cert)?,
            read_key(
                "tls-client-key-file",
                key,
                "tls-client-key-file-pass",
                &config.tls_client_key_file_pass,
            )?,
        )),
        (_, (Some(cert), Some(key))) => Some((
            read_certs("tls-cert-file", cert)?,
            read_key(
                "tls-key-file",
                key,
                "tls-key-file-pass",
                &config.tls_key_file_pass,
            )?,
        )),
        _ => None,
    };
    match identity {
        Some((certs, key)) => builder
            .with_client_auth_cert(certs, key)
            .map_err(|e| format!("the replica's TLS certificate and key do not fit: {e}")),
        None => Ok(builder.with_no_client_auth()),
    }
}

/// Checks the primary's certificate chain against the CAs but not the host name, as Redis's
/// replica does (a primary is often named by an address its certificate does not list).
#[derive(Debug)]
struct PrimaryVerifier {
    chain: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for PrimaryVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // The chain is checked before the name: a name error means the chain is good.
        match self.chain.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.chain.supported_verify_schemes()
    }
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

/// Runs the client side of the handshake with `host` (callers bound the time it takes).
pub async fn connect(
    connector: &TlsConnector,
    host: &str,
    stream: TcpStream,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, String> {
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| format!("'{host}' cannot be a TLS server name: {e}"))?;
    connector
        .connect(name, stream)
        .await
        .map_err(|e| format!("TLS handshake failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(suites: &[SupportedCipherSuite]) -> Vec<String> {
        suites.iter().map(|s| format!("{:?}", s.suite())).collect()
    }

    #[test]
    fn protocols_are_tls12_and_tls13_in_any_case() {
        let versions = |text| parse_protocols(text).map(|v| v.iter().map(|v| v.version).collect());
        use rustls::ProtocolVersion::{TLSv1_2, TLSv1_3};
        assert_eq!(versions(""), Ok(vec![TLSv1_3, TLSv1_2]));
        assert_eq!(versions("  "), Ok(vec![TLSv1_3, TLSv1_2]));
        assert_eq!(versions("tlsv1.3"), Ok(vec![TLSv1_3]));
        assert_eq!(versions("TLSv1.2 TLSV1.2"), Ok(vec![TLSv1_2]));
        assert_eq!(versions("TLSv1.2  TLSv1.3"), Ok(vec![TLSv1_2, TLSv1_3]));
        assert_eq!(
            versions("TLSv1.1 TLSv1.2"),
            Err("TLSv1.1 is not supported: use a combination of 'TLSv1.2' and 'TLSv1.3'".into())
        );
        assert!(versions("TLSv1").is_err_and(|e| e.starts_with("TLSv1 is not supported")));
        assert_eq!(
            versions("SSLv3"),
            Err(
                "Invalid tls-protocols specified. Use a combination of 'TLSv1.2' and 'TLSv1.3'."
                    .into()
            )
        );
    }

    #[test]
    fn cipher_lists_take_explicit_names_in_their_order() {
        assert_eq!(
            parse_ciphersuites("TLS_CHACHA20_POLY1305_SHA256:tls_aes_256_gcm_sha384")
                .map(|s| names(&s)),
            Ok(vec![
                "TLS13_CHACHA20_POLY1305_SHA256".to_string(),
                "TLS13_AES_256_GCM_SHA384".to_string()
            ])
        );
        assert_eq!(parse_ciphersuites("").map(|s| s.len()), Ok(3));
        assert_eq!(
            parse_ciphers("ECDHE-RSA-AES128-GCM-SHA256, ECDHE-ECDSA-CHACHA20-POLY1305:")
                .map(|s| names(&s)),
            Ok(vec![
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".to_string(),
                "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256".to_string()
            ])
        );
        assert_eq!(parse_ciphers("").map(|s| s.len()), Ok(6));
        assert!(parse_ciphers("").is_ok_and(|s| s
            .iter()
            .all(|s| s.version().version == rustls::ProtocolVersion::TLSv1_2)));
        for expression in ["HIGH", "!aNULL", "ECDH+AESGCM", "@STRENGTH", "-ALL"] {
            assert!(
                parse_ciphers(expression)
                    .is_err_and(|e| e.contains("is an OpenSSL cipher-list expression")),
                "{expression}"
            );
        }
        assert!(parse_ciphers("AES256-SHA").is_err_and(|e| e.starts_with(
            "unknown or unsupported TLS 1.2 cipher 'AES256-SHA' (supported: ECDHE-ECDSA-AES256-GCM-SHA384, "
        )));
        // A TLS 1.3 name is not a TLS 1.2 cipher, nor the other way round.
        assert!(parse_ciphers("TLS_AES_256_GCM_SHA384").is_err());
        assert!(parse_ciphersuites("ECDHE-RSA-AES128-GCM-SHA256").is_err());
    }

    #[test]
    fn sessions_expire_after_the_timeout() {
        let cache = SessionCache {
            sessions: ServerSessionMemoryCache::new(4),
            lifetime_ms: 50,
            epoch: Instant::now(),
        };
        assert!(cache.put(b"id".to_vec(), b"secret".to_vec()));
        assert_eq!(cache.get(b"id"), Some(b"secret".to_vec()));
        assert_eq!(cache.get(b"id"), Some(b"secret".to_vec()), "get keeps it");
        assert_eq!(cache.take(b"id"), Some(b"secret".to_vec()));
        assert_eq!(cache.take(b"id"), None, "take removes it");
        assert!(cache.put(b"old".to_vec(), b"secret".to_vec()));
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(cache.get(b"old"), None);
        assert_eq!(
            cache.sessions.get(b"old"),
            None,
            "an expired session is dropped"
        );
    }

    #[test]
    fn nothing_is_built_until_tls_is_in_use() {
        // No listener and no tls-replication: the files are not read (as Redis).
        let config = Config {
            tls_cert_file: Some("no-such-dir/server.crt".into()),
            tls_key_file: Some("no-such-dir/server.key".into()),
            ..Config::default()
        };
        let tls = Tls::start(&config, false).expect("nothing to build");
        assert!(tls.acceptor().is_none() && tls.connector().is_none());
        assert!(
            Tls::start(&config, true).is_err_and(|e| e.starts_with("cannot read tls-cert-file"))
        );
        let replicating = Config {
            tls_replication: true,
            ..Config::default()
        };
        assert_eq!(Tls::start(&replicating, false).err(), Some(NO_CA.into()));
    }
}
