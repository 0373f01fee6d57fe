//! TLS: redis-cli and the redis crate over TLS with client certificates, refusals (plaintext on the
//! TLS port, no client certificate, a certificate from another CA), the plain port alongside, the
//! handshake off the accept loop, maxclients on both listeners, and start-up errors of the binary.
//! Certificates are made per test with the `openssl` CLI.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use stmd::config::{Config, TlsAuthClients};
use stmd::server::Listeners;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// A CA, a server certificate for localhost/127.0.0.1 and a client certificate signed by it, plus
/// a client certificate signed by another CA.
pub(crate) struct Certs {
    dir: tempfile::TempDir,
}

pub(crate) fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Options of `openssl req` for a new P-256 key without a password.
const EC_KEY: [&str; 5] = [
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
];

/// The extensions of a server certificate for localhost and 127.0.0.1.
pub(crate) const SERVER_EXT: &str =
    "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n";

impl Certs {
    pub(crate) fn make() -> Certs {
        let certs = Certs {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        for ca in ["ca", "other-ca"] {
            let subject = format!("/CN=stmd test {ca}");
            let key = format!("{ca}.key");
            let crt = format!("{ca}.crt");
            let mut args = vec!["req", "-x509", "-days", "2", "-subj", &subject];
            args.extend(EC_KEY);
            args.extend(["-keyout", &key, "-out", &crt]);
            openssl(certs.dir.path(), &args);
        }
        certs.sign("server", "ca", SERVER_EXT);
        certs.sign("client", "ca", "extendedKeyUsage=clientAuth\n");
        certs.sign("stranger", "other-ca", "extendedKeyUsage=clientAuth\n");
        certs
    }

    /// Makes `<name>.key` and `<name>.crt` (subject `CN=<name>`), signed by `<ca>.crt`, with the
    /// extensions `ext`.
    pub(crate) fn sign(&self, name: &str, ca: &str, ext: &str) {
        let d = self.dir.path();
        std::fs::write(d.join(format!("{name}.ext")), ext).expect("ext");
        let subject = format!("/CN={name}");
        let (key, csr, crt) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.crt"),
        );
        let mut args = vec!["req", "-subj", &subject, "-keyout", &key, "-out", &csr];
        args.extend(EC_KEY);
        openssl(d, &args);
        let (ca_crt, ca_key, ext_file) = (
            format!("{ca}.crt"),
            format!("{ca}.key"),
            format!("{name}.ext"),
        );
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                &ca_crt,
                "-CAkey",
                &ca_key,
                "-CAcreateserial",
                "-days",
                "2",
                "-out",
                &crt,
                "-extfile",
                &ext_file,
            ],
        );
    }

    pub(crate) fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    pub(crate) fn read(&self, file: &str) -> Vec<u8> {
        std::fs::read(self.path(file)).expect("read cert")
    }

    /// The command line of a server with the TLS listener only: `--port 0`, `--tls-port port`,
    /// `--tls-auth-clients auth`, server.crt and the key file `key` of this folder, then `extra`.
    pub(crate) fn tls_only_args(
        &self,
        port: &str,
        auth: &str,
        key: &str,
        extra: &[&str],
    ) -> Vec<String> {
        let (cert, key) = (self.path("server.crt"), self.path(key));
        let mut args: Vec<String> = [
            "--port",
            "0",
            "--tls-port",
            port,
            "--tls-auth-clients",
            auth,
            "--tls-cert-file",
            cert.to_str().expect("path"),
            "--tls-key-file",
            key.to_str().expect("path"),
        ]
        .map(String::from)
        .into();
        args.extend(extra.iter().map(|a| a.to_string()));
        args
    }

    /// Server settings for TLS with this CA checking client certificates.
    pub(crate) fn configure(&self, config: &mut Config) {
        config.tls_cert_file = Some(self.path("server.crt"));
        config.tls_key_file = Some(self.path("server.key"));
        config.tls_ca_cert_file = Some(self.path("ca.crt"));
    }

    /// A redis-crate client over TLS trusting our CA, with the given client certificate (`None`:
    /// no client certificate).
    pub(crate) fn client(&self, port: u16, cert: Option<&str>) -> redis::Client {
        let client_tls = cert.map(|name| redis::ClientTlsConfig {
            client_cert: self.read(&format!("{name}.crt")),
            client_key: self.read(&format!("{name}.key")),
        });
        redis::Client::build_with_tls(
            format!("rediss://127.0.0.1:{port}"),
            redis::TlsCertificates {
                client_tls,
                root_cert: Some(self.read("ca.crt")),
            },
        )
        .expect("tls client")
    }

    /// A command-line client's arguments trusting the CA and presenting the client certificate;
    /// `flags` name the CA file, certificate and key options of that client.
    pub(crate) fn client_args(&self, flags: [&str; 3]) -> Vec<std::ffi::OsString> {
        let files = ["ca.crt", "client.crt", "client.key"];
        flags
            .iter()
            .zip(files)
            .flat_map(|(flag, file)| [flag.into(), self.path(file).into()])
            .collect()
    }

    /// redis-cli over TLS with the client certificate.
    pub(crate) async fn cli(&self, port: u16, args: &[&str]) -> String {
        let out = tokio::process::Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "--tls"])
            .args(self.client_args(["--cacert", "--cert", "--key"]))
            .args(args)
            .output()
            .await
            .expect("run redis-cli");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

/// An in-process server with a plain and a TLS listener.
pub(crate) struct TlsServer {
    pub(crate) plain: u16,
    pub(crate) tls: u16,
    stop: Option<oneshot::Sender<()>>,
}

impl TlsServer {
    pub(crate) async fn start(certs: &Certs, tweak: impl FnOnce(&mut Config)) -> TlsServer {
        Self::launch(certs, true, tweak).await
    }

    /// A server with the TLS listener only (`plain` is 0), as `--port 0 --tls-port N`.
    pub(crate) async fn start_tls_only(
        certs: &Certs,
        tweak: impl FnOnce(&mut Config),
    ) -> TlsServer {
        Self::launch(certs, false, tweak).await
    }

    async fn launch(certs: &Certs, plain: bool, tweak: impl FnOnce(&mut Config)) -> TlsServer {
        let mut config = Config {
            port: 0,
            no_database: true,
            ..Config::default()
        };
        certs.configure(&mut config);
        tweak(&mut config);
        let plain = match plain {
            true => Some(TcpListener::bind("127.0.0.1:0").await.expect("bind")),
            false => None,
        };
        let tls = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let (plain_port, tls_port) = (
            plain
                .as_ref()
                .map_or(0, |l| l.local_addr().expect("addr").port()),
            tls.local_addr().expect("addr").port(),
        );
        let (stop, stopped) = oneshot::channel::<()>();
        let listeners = Listeners {
            plain,
            tls: Some(tls),
            unix: None,
        };
        tokio::spawn(async move {
            let result = stmd::server::run(listeners, config, async move {
                let _ = stopped.await;
            })
            .await;
            result.expect("server");
        });
        TlsServer {
            plain: plain_port,
            tls: tls_port,
            stop: Some(stop),
        }
    }

    pub(crate) async fn plain_client(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(format!("redis://127.0.0.1:{}", self.plain))
            .expect("client")
            .get_multiplexed_async_connection()
            .await
            .expect("plain connect")
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn handshake_failures(con: &mut redis::aio::MultiplexedConnection) -> i64 {
    common::stm::info_field(con, "stats", "tls_handshake_failures").await
}

/// True when a TLS client with this certificate can run PING.
pub(crate) async fn tls_ping(certs: &Certs, port: u16, cert: Option<&str>) -> bool {
    let client = certs.client(port, cert);
    let attempt = async {
        let mut con = client.get_multiplexed_async_connection().await?;
        redis::cmd("PING").query_async::<String>(&mut con).await
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(10), attempt).await,
        Ok(Ok(pong)) if pong == "PONG"
    )
}

#[tokio::test]
async fn redis_cli_and_the_redis_crate_work_over_tls_beside_the_plain_port() {
    let certs = Certs::make();
    let server = TlsServer::start(&certs, |_| {}).await;

    assert_eq!(certs.cli(server.tls, &["PING"]).await, "PONG");
    assert_eq!(
        certs.cli(server.tls, &["SET", "tls:k", "over tls"]).await,
        "OK"
    );
    assert_eq!(certs.cli(server.tls, &["GET", "tls:k"]).await, "over tls");

    let mut tls = certs
        .client(server.tls, Some("client"))
        .get_multiplexed_async_connection()
        .await
        .expect("tls connect");
    let value: String = redis::cmd("GET")
        .arg("tls:k")
        .query_async(&mut tls)
        .await
        .expect("get");
    assert_eq!(value, "over tls");
    // A large value crosses many TLS records both ways.
    let big = vec![b'z'; 3 * 1024 * 1024 + 7];
    let () = redis::cmd("SET")
        .arg("tls:big")
        .arg(&big)
        .query_async(&mut tls)
        .await
        .expect("set big");
    let back: Vec<u8> = redis::cmd("GET")
        .arg("tls:big")
        .query_async(&mut tls)
        .await
        .expect("get big");
    assert!(back == big, "3 MiB value round-trips over TLS");

    // The plain listener serves the same data alongside.
    let mut plain = server.plain_client().await;
    let value: String = redis::cmd("GET")
        .arg("tls:k")
        .query_async(&mut plain)
        .await
        .expect("plain get");
    assert_eq!(value, "over tls");
    let config: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("tls-auth-clients")
        .query_async(&mut plain)
        .await
        .expect("config get");
    assert_eq!(config, ["tls-auth-clients", "yes"]);
    assert_eq!(handshake_failures(&mut plain).await, 0);
}

#[tokio::test]
async fn clients_without_a_valid_certificate_are_refused_and_the_server_carries_on() {
    let certs = Certs::make();
    let server = TlsServer::start(&certs, |_| {}).await;
    let mut plain = server.plain_client().await;

    // Plaintext on the TLS port: no reply, the connection is closed.
    let mut raw = TcpStream::connect(("127.0.0.1", server.tls))
        .await
        .expect("connect");
    raw.write_all(b"PING\r\n").await.expect("write");
    let mut received = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), raw.read_to_end(&mut received)).await;
    assert!(matches!(read, Ok(Ok(_)) | Ok(Err(_))), "connection closed");
    assert!(!received.windows(5).any(|w| w == b"+PONG"));
    assert_eq!(handshake_failures(&mut plain).await, 1);

    assert!(!tls_ping(&certs, server.tls, None).await, "no client cert");
    assert!(
        !tls_ping(&certs, server.tls, Some("stranger")).await,
        "client cert from another CA"
    );
    assert_eq!(handshake_failures(&mut plain).await, 3);
    // The same client with the right certificate still gets in; plain clients too.
    assert!(tls_ping(&certs, server.tls, Some("client")).await);
    let pong: String = redis::cmd("PING")
        .query_async(&mut plain)
        .await
        .expect("ping");
    assert_eq!(pong, "PONG");
}

#[tokio::test]
async fn client_certificates_can_be_optional_or_not_asked_for() {
    let certs = Certs::make();
    let optional =
        TlsServer::start(&certs, |c| c.tls_auth_clients = TlsAuthClients::Optional).await;
    assert!(tls_ping(&certs, optional.tls, None).await);
    assert!(tls_ping(&certs, optional.tls, Some("client")).await);
    assert!(!tls_ping(&certs, optional.tls, Some("stranger")).await);

    let no_ca = TlsServer::start(&certs, |c| {
        c.tls_ca_cert_file = None;
        c.tls_auth_clients = TlsAuthClients::No;
    })
    .await;
    assert!(tls_ping(&certs, no_ca.tls, None).await);

    // Certificates to check without a CA to check them with: the start fails, as Redis's.
    let tls_port = free_port().to_string();
    for auth in ["yes", "optional"] {
        let args = certs.tls_only_args(&tls_port, auth, "server.key", &[]);
        let (running, log) = run_binary(&args, Duration::from_secs(2));
        assert!(
            !running
                && log.contains("Either tls-ca-cert-file or tls-ca-cert-dir must be specified"),
            "{auth}: {log}"
        );
    }
}

#[tokio::test]
async fn a_silent_client_holds_neither_the_accept_loop_nor_its_socket_forever() {
    let certs = Certs::make();
    let server = TlsServer::start(&certs, |_| {}).await;
    // Connects to the TLS port and never starts the handshake.
    let mut silent = TcpStream::connect(("127.0.0.1", server.tls))
        .await
        .expect("connect");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(tls_ping(&certs, server.tls, Some("client")).await);
    let mut plain = server.plain_client().await;
    let pong: String = redis::cmd("PING")
        .query_async(&mut plain)
        .await
        .expect("ping");
    assert_eq!(pong, "PONG");
    // The handshake timeout (10 s) closes it.
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(20), silent.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "closed: {read:?}");
    assert!(handshake_failures(&mut plain).await >= 1);
}

#[tokio::test]
async fn maxclients_counts_tls_and_plain_clients_together() {
    let certs = Certs::make();
    let server = TlsServer::start(&certs, |c| c.maxclients = 1).await;
    let mut plain = server.plain_client().await;
    let refused = certs.cli(server.tls, &["PING"]).await;
    assert!(
        refused.contains("max number of clients reached"),
        "{refused}"
    );
    let pong: String = redis::cmd("PING")
        .query_async(&mut plain)
        .await
        .expect("ping");
    assert_eq!(pong, "PONG");
}

/// Runs the binary and returns (still running after `wait`?, stderr so far or at exit).
pub(crate) fn run_binary<S: AsRef<std::ffi::OsStr>>(args: &[S], wait: Duration) -> (bool, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_stmd"))
        .args(["--no-database", "--log-format", "json"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn stmd");
    std::thread::sleep(wait);
    let running = child.try_wait().expect("try_wait").is_none();
    if running {
        let _ = child.kill();
    }
    let out = child.wait_with_output().expect("output");
    (
        running,
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port")
}

#[tokio::test]
async fn the_binary_explains_bad_tls_files_and_serves_tls_only_with_port_0() {
    let certs = Certs::make();
    let tls_port = free_port().to_string();
    let missing = certs.path("missing.crt");
    let key = certs.path("server.key");
    let (running, log) = run_binary(
        &[
            "--port",
            "0",
            "--tls-port",
            &tls_port,
            "--tls-cert-file",
            missing.to_str().expect("path"),
            "--tls-key-file",
            key.to_str().expect("path"),
        ],
        Duration::from_secs(2),
    );
    assert!(!running, "exits on a missing certificate");
    assert!(
        log.contains("cannot read tls-cert-file") && log.contains("missing.crt"),
        "{log}"
    );
    let (running, log) = run_binary(
        &["--port", "0", "--tls-port", &tls_port],
        Duration::from_secs(2),
    );
    assert!(
        !running && log.contains("tls-port needs tls-cert-file"),
        "{log}"
    );

    // --port 0 with a TLS port: TLS only.
    let mut child = Command::new(env!("CARGO_BIN_EXE_stmd"))
        .args([
            "--no-database",
            "--log-format",
            "json",
            "--port",
            "0",
            "--tls-port",
            &tls_port,
        ])
        .arg("--tls-cert-file")
        .arg(certs.path("server.crt"))
        .arg("--tls-key-file")
        .arg(certs.path("server.key"))
        .arg("--tls-ca-cert-file")
        .arg(certs.path("ca.crt"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn stmd");
    let port: u16 = tls_port.parse().expect("port");
    let mut pong = String::new();
    for _ in 0..50 {
        pong = certs.cli(port, &["PING"]).await;
        if pong == "PONG" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("output");
    assert_eq!(pong, "PONG");
    let log = String::from_utf8_lossy(&out.stdout);
    let ready = log
        .lines()
        .find(|l| l.contains("ready to accept connections"))
        .expect("ready line");
    assert!(
        ready.contains(&format!("\"tls_addr\":\"127.0.0.1:{port}\""))
            && !ready.contains("\"addr\""),
        "TLS listener only: {ready}"
    );
}
