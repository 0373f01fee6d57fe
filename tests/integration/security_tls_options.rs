//! The TLS options beyond the files: `tls-protocols`, `tls-ciphers` / `tls-ciphersuites` and
//! `tls-prefer-server-ciphers` (seen by `openssl s_client`), session resumption and its cache
//! settings, `tls-ca-cert-dir`, encrypted keys (`tls-key-file-pass`), CONFIG SET of the TLS
//! settings at run time (certificate rotation; a bad file keeps the old configuration), and
//! `tls-replication` (stmd following a TLS-only stmd primary and a real redis-server over TLS).

use crate::common;
use crate::ops_config_file::config_get;
use crate::security_tls::{openssl, run_binary, tls_ping, Certs, TlsServer, SERVER_EXT};

use common::stm::{ok, run};
use std::time::Duration;
use stmd::config::{Config, TlsAuthClients};
use tokio::io::AsyncWriteExt;

/// `openssl s_client` to `port` (trusting the test CA, presenting the client certificate) with
/// `args`; the connection is held 300 ms (a TLS 1.3 session ticket comes after the handshake)
/// before it quits. Its whole output.
async fn s_client(certs: &Certs, port: u16, args: &[&str]) -> String {
    let mut child = tokio::process::Command::new("openssl")
        .arg("s_client")
        .args(["-connect", &format!("127.0.0.1:{port}")])
        .args(certs.client_args(["-CAfile", "-cert", "-key"]))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run openssl s_client");
    tokio::time::sleep(Duration::from_millis(300)).await;
    if let Some(mut stdin) = child.stdin.take() {
        // A failed handshake has ended s_client already: the write may fail.
        let _ = stdin.write_all(b"Q\n").await;
    }
    let out = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .expect("s_client ends")
        .expect("s_client output");
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// What a handshake gave: ("New" or "Reused", version, cipher); None when it failed.
fn negotiated(out: &str) -> Option<(String, String, String)> {
    out.lines().find_map(|line| {
        let (kind, rest) = line.split_once(", ")?;
        let (version, cipher) = rest.split_once(", Cipher is ")?;
        let done = matches!(kind, "New" | "Reused") && cipher != "(NONE)";
        done.then(|| (kind.to_string(), version.to_string(), cipher.to_string()))
    })
}

/// The version and cipher of a successful handshake (fails the test otherwise).
fn suite(out: &str) -> (String, String) {
    let (_, version, cipher) = negotiated(out).unwrap_or_else(|| panic!("no handshake: {out}"));
    (version, cipher)
}

/// The common name of the server certificate s_client was shown.
fn subject(out: &str) -> String {
    let line = out
        .lines()
        .find(|l| l.starts_with("subject="))
        .unwrap_or_else(|| panic!("no subject: {out}"));
    // OpenSSL 3.0 prints `CN = name`, later versions `CN=name`.
    let line = line.replace(' ', "");
    line.rsplit_once("CN=")
        .map_or(line.clone(), |(_, cn)| cn.to_string())
}

#[tokio::test]
async fn tls_protocols_limit_the_versions_and_other_words_are_refused() {
    let certs = Certs::make();
    let server = TlsServer::start(&certs, |c| c.tls_protocols = "TLSv1.3".into()).await;
    assert!(negotiated(&s_client(&certs, server.tls, &["-tls1_2"]).await).is_none());
    let out = s_client(&certs, server.tls, &["-tls1_3"]).await;
    assert_eq!(suite(&out).0, "TLSv1.3");

    let mut con = server.plain_client().await;
    assert_eq!(config_get(&mut con, "tls-protocols").await, "TLSv1.3");
    // At run time, any case, as Redis: now TLS 1.2 only.
    let _ = ok(&mut con, &["CONFIG", "SET", "tls-protocols", "tlsv1.2"]).await;
    assert_eq!(config_get(&mut con, "tls-protocols").await, "tlsv1.2");
    assert!(negotiated(&s_client(&certs, server.tls, &["-tls1_3"]).await).is_none());
    let out = s_client(&certs, server.tls, &["-tls1_2"]).await;
    assert_eq!(suite(&out).0, "TLSv1.2");

    for (value, error) in [
        ("TLSv1 TLSv1.2", "TLSv1 is not supported"),
        ("TLSv1.1", "TLSv1.1 is not supported"),
        ("TLSv1.4", "Invalid tls-protocols specified"),
    ] {
        let reply = run(&mut con, &["CONFIG", "SET", "tls-protocols", value]).await;
        let text = format!("{reply:?}");
        assert!(
            text.contains("CONFIG SET failed (possibly related to argument 'tls-protocols')")
                && text.contains(error),
            "{value}: {text}"
        );
    }
    assert_eq!(config_get(&mut con, "tls-protocols").await, "tlsv1.2");
    assert!(negotiated(&s_client(&certs, server.tls, &["-tls1_3"]).await).is_none());
}

#[tokio::test]
async fn the_listed_suites_are_the_ones_negotiated() {
    let certs = Certs::make();
    let server = TlsServer::start(&certs, |c| {
        c.tls_ciphersuites = "TLS_CHACHA20_POLY1305_SHA256".into();
        c.tls_ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256".into();
    })
    .await;
    let out = s_client(&certs, server.tls, &["-tls1_3"]).await;
    assert_eq!(
        suite(&out),
        ("TLSv1.3".into(), "TLS_CHACHA20_POLY1305_SHA256".into())
    );
    let only_aes = ["-tls1_3", "-ciphersuites", "TLS_AES_256_GCM_SHA384"];
    assert!(negotiated(&s_client(&certs, server.tls, &only_aes).await).is_none());
    let out = s_client(&certs, server.tls, &["-tls1_2"]).await;
    assert_eq!(
        suite(&out),
        ("TLSv1.2".into(), "ECDHE-ECDSA-AES128-GCM-SHA256".into())
    );
    let only_256 = ["-tls1_2", "-cipher", "ECDHE-ECDSA-AES256-GCM-SHA384"];
    assert!(negotiated(&s_client(&certs, server.tls, &only_256).await).is_none());

    // Unknown names, names rustls does not implement and OpenSSL expressions: refused, naming
    // them; nothing changes.
    let mut con = server.plain_client().await;
    for (name, value, error) in [
        (
            "tls-ciphers",
            "HIGH:!aNULL",
            "'HIGH' is an OpenSSL cipher-list expression; only explicit cipher names are supported",
        ),
        (
            "tls-ciphers",
            "ECDHE-RSA-AES256-GCM-SHA384:AES256-SHA",
            "unknown or unsupported TLS 1.2 cipher 'AES256-SHA' (supported: ECDHE-ECDSA-AES256-GCM-SHA384",
        ),
        (
            "tls-ciphersuites",
            "TLS_AES_128_CCM_SHA256",
            "unknown or unsupported TLS 1.3 cipher suite 'TLS_AES_128_CCM_SHA256' (supported: TLS_AES_256_GCM_SHA384",
        ),
    ] {
        let text = format!("{:?}", run(&mut con, &["CONFIG", "SET", name, value]).await);
        assert!(text.contains(error), "{name} {value}: {text}");
    }
    assert_eq!(
        config_get(&mut con, "tls-ciphers").await,
        "ECDHE-ECDSA-AES128-GCM-SHA256"
    );
    let out = s_client(&certs, server.tls, &["-tls1_2"]).await;
    assert_eq!(suite(&out).1, "ECDHE-ECDSA-AES128-GCM-SHA256");
}

#[tokio::test]
async fn prefer_server_ciphers_picks_the_servers_order() {
    let certs = Certs::make();
    let server = TlsServer::start(&certs, |c| {
        c.tls_ciphers = "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES256-GCM-SHA384".into();
        c.tls_ciphersuites = "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384".into();
    })
    .await;
    let tls12 = [
        "-tls1_2",
        "-cipher",
        "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305",
    ];
    let tls13 = [
        "-tls1_3",
        "-ciphersuites",
        "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256",
    ];
    // `no` (the default): the client's first choice.
    assert_eq!(
        suite(&s_client(&certs, server.tls, &tls12).await).1,
        "ECDHE-ECDSA-AES256-GCM-SHA384"
    );
    assert_eq!(
        suite(&s_client(&certs, server.tls, &tls13).await).1,
        "TLS_AES_256_GCM_SHA384"
    );
    let mut con = server.plain_client().await;
    let _ = ok(
        &mut con,
        &["CONFIG", "SET", "tls-prefer-server-ciphers", "yes"],
    )
    .await;
    assert_eq!(
        config_get(&mut con, "tls-prefer-server-ciphers").await,
        "yes"
    );
    assert_eq!(
        suite(&s_client(&certs, server.tls, &tls12).await).1,
        "ECDHE-ECDSA-CHACHA20-POLY1305"
    );
    assert_eq!(
        suite(&s_client(&certs, server.tls, &tls13).await).1,
        "TLS_CHACHA20_POLY1305_SHA256"
    );
}

/// Whether a handshake with the session saved in `file` (`-sess_in`) resumed it; the new session
/// is saved there again.
async fn resumes(certs: &Certs, port: u16, version: &str, file: &str) -> bool {
    let path = certs.path(file);
    let path = path.to_str().expect("path");
    let out = s_client(certs, port, &[version, "-sess_in", path, "-sess_out", path]).await;
    let (kind, _, _) = negotiated(&out).unwrap_or_else(|| panic!("no handshake: {out}"));
    kind == "Reused"
}

/// A first handshake whose session is saved in `file`.
async fn new_session(certs: &Certs, port: u16, version: &str, file: &str) {
    let path = certs.path(file);
    let out = s_client(
        certs,
        port,
        &[version, "-sess_out", path.to_str().expect("path")],
    )
    .await;
    assert_eq!(negotiated(&out).map(|n| n.0), Some("New".into()), "{out}");
}

#[tokio::test]
async fn sessions_resume_within_the_timeout_and_not_when_caching_is_off() {
    let certs = Certs::make();
    let server = TlsServer::start(&certs, |c| c.tls_session_cache_timeout = 2).await;
    for version in ["-tls1_2", "-tls1_3"] {
        new_session(&certs, server.tls, version, "session").await;
        assert!(
            resumes(&certs, server.tls, version, "session").await,
            "{version}"
        );
    }
    // A TLS 1.2 session stays resumable (its id is kept) until the timeout, then not.
    new_session(&certs, server.tls, "-tls1_2", "session").await;
    assert!(resumes(&certs, server.tls, "-tls1_2", "session").await);
    tokio::time::sleep(Duration::from_millis(2200)).await;
    assert!(!resumes(&certs, server.tls, "-tls1_2", "session").await);
    // The same for a TLS 1.3 ticket.
    new_session(&certs, server.tls, "-tls1_3", "session").await;
    tokio::time::sleep(Duration::from_millis(2200)).await;
    assert!(!resumes(&certs, server.tls, "-tls1_3", "session").await);

    let mut con = server.plain_client().await;
    let _ = ok(&mut con, &["CONFIG", "SET", "tls-session-caching", "no"]).await;
    for version in ["-tls1_2", "-tls1_3"] {
        new_session(&certs, server.tls, version, "session").await;
        assert!(
            !resumes(&certs, server.tls, version, "session").await,
            "{version}"
        );
    }
    // A cache of size 0 keeps nothing either.
    let set = [
        "CONFIG",
        "SET",
        "tls-session-caching",
        "yes",
        "tls-session-cache-size",
        "0",
    ];
    let _ = ok(&mut con, &set).await;
    new_session(&certs, server.tls, "-tls1_2", "session").await;
    assert!(!resumes(&certs, server.tls, "-tls1_2", "session").await);
    let _ = ok(&mut con, &["CONFIG", "SET", "tls-session-cache-size", "10"]).await;
    new_session(&certs, server.tls, "-tls1_2", "session").await;
    assert!(resumes(&certs, server.tls, "-tls1_2", "session").await);
    let reply = run(&mut con, &["CONFIG", "SET", "tls-session-cache-size", "-1"]).await;
    assert!(
        format!("{reply:?}").contains("argument must be between 0 and 2147483647 inclusive"),
        "{reply:?}"
    );
}

#[tokio::test]
async fn a_ca_directory_trusts_the_client_certificates_its_cas_sign() {
    let certs = Certs::make();
    let dir = certs.path("cas");
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::copy(certs.path("ca.crt"), dir.join("ca.pem")).expect("copy");
    std::fs::write(dir.join("README"), "not a certificate").expect("write");
    let server = TlsServer::start(&certs, |c| {
        c.tls_ca_cert_file = None;
        c.tls_ca_cert_dir = Some(dir.clone());
    })
    .await;
    assert!(tls_ping(&certs, server.tls, Some("client")).await);
    assert!(!tls_ping(&certs, server.tls, None).await, "no certificate");
    assert!(!tls_ping(&certs, server.tls, Some("stranger")).await);

    // With the file as well: the CAs of both are trusted.
    std::fs::copy(certs.path("other-ca.crt"), dir.join("other-ca.pem")).expect("copy");
    let mut con = server.plain_client().await;
    let ca_file = certs.path("ca.crt");
    let set = [
        "CONFIG",
        "SET",
        "tls-ca-cert-file",
        ca_file.to_str().expect("path"),
    ];
    let _ = ok(&mut con, &set).await;
    assert!(tls_ping(&certs, server.tls, Some("stranger")).await);
    assert!(tls_ping(&certs, server.tls, Some("client")).await);

    // A directory without a certificate is refused, and the old CAs stay.
    let empty = certs.path("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let set = [
        "CONFIG",
        "SET",
        "tls-ca-cert-dir",
        empty.to_str().expect("path"),
    ];
    let text = format!("{:?}", run(&mut con, &set).await);
    assert!(
        text.contains("Unable to update TLS configuration: cannot read tls-ca-cert-dir"),
        "{text}"
    );
    assert!(tls_ping(&certs, server.tls, Some("stranger")).await);
}

#[tokio::test]
async fn an_encrypted_key_starts_with_its_password_and_fails_clearly_without() {
    let certs = Certs::make();
    let d = certs.path("");
    openssl(
        &d,
        &[
            "pkcs8",
            "-topk8",
            "-v2",
            "aes-256-cbc",
            "-in",
            "server.key",
            "-out",
            "server-enc.key",
            "-passout",
            "pass:open sesame",
        ],
    );
    let legacy = [
        "ec",
        "-in",
        "server.key",
        "-aes256",
        "-out",
        "server-legacy.key",
    ];
    openssl(
        &d,
        &[&legacy[..], &["-passout", "pass:open sesame"]].concat(),
    );

    let server = TlsServer::start(&certs, |c| {
        c.tls_key_file = Some(certs.path("server-enc.key"));
        c.tls_key_file_pass = "open sesame".into();
    })
    .await;
    assert!(tls_ping(&certs, server.tls, Some("client")).await);
    let mut con = server.plain_client().await;
    assert_eq!(
        config_get(&mut con, "tls-key-file-pass").await,
        "open sesame"
    );
    let reply = run(&mut con, &["CONFIG", "SET", "tls-key-file-pass", "wrong"]).await;
    assert!(
        format!("{reply:?}").contains("cannot decrypt the key: wrong tls-key-file-pass"),
        "{reply:?}"
    );
    assert!(tls_ping(&certs, server.tls, Some("client")).await);

    let tls_port = crate::security_tls::free_port().to_string();
    let start = |key: &str, pass: &str| {
        let args = certs.tls_only_args(&tls_port, "no", key, &["--tls-key-file-pass", pass]);
        run_binary(&args, Duration::from_secs(2))
    };
    let (running, log) = start("server-enc.key", "");
    assert!(
        !running && log.contains("server-enc.key: the key is encrypted: set tls-key-file-pass"),
        "{log}"
    );
    let (running, log) = start("server-enc.key", "open sesame?");
    assert!(
        !running && log.contains("cannot decrypt the key: wrong tls-key-file-pass"),
        "{log}"
    );
    let (running, log) = start("server-legacy.key", "open sesame");
    assert!(
        !running
            && log.contains(
                "a legacy OpenSSL encrypted key (Proc-Type: 4,ENCRYPTED) is not supported"
            ),
        "{log}"
    );
    let (running, log) = start("server-enc.key", "open sesame");
    assert!(running, "starts with the password: {log}");
}

#[tokio::test]
async fn config_set_rotates_the_certificate_and_a_bad_file_keeps_the_old_one() {
    let certs = Certs::make();
    certs.sign("rotated", "ca", SERVER_EXT);
    certs.sign("rotated-again", "ca", SERVER_EXT);
    let server = TlsServer::start(&certs, |_| {}).await;
    let mut con = server.plain_client().await;
    let mut before = certs
        .client(server.tls, Some("client"))
        .get_multiplexed_async_connection()
        .await
        .expect("tls connect");
    assert_eq!(subject(&s_client(&certs, server.tls, &[]).await), "server");

    let (crt, key) = (certs.path("rotated.crt"), certs.path("rotated.key"));
    let set = [
        "CONFIG",
        "SET",
        "tls-cert-file",
        crt.to_str().expect("path"),
        "tls-key-file",
        key.to_str().expect("path"),
    ];
    let _ = ok(&mut con, &set).await;
    assert_eq!(subject(&s_client(&certs, server.tls, &[]).await), "rotated");
    // A connection made before goes on.
    let pong: String = redis::cmd("PING")
        .query_async(&mut before)
        .await
        .expect("ping");
    assert_eq!(pong, "PONG");

    // A file that cannot be read, or a key that does not fit: an error, the old one still served.
    let missing = certs.path("missing.crt");
    let bad_sets = [
        (
            missing.to_str().expect("path").to_string(),
            "ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration: cannot read tls-cert-file",
        ),
        (
            certs.path("server.crt").to_str().expect("path").to_string(),
            "Unable to update TLS configuration: tls-cert-file and tls-key-file do not fit",
        ),
    ];
    for (file, error) in bad_sets {
        let text = format!(
            "{:?}",
            run(&mut con, &["CONFIG", "SET", "tls-cert-file", &file]).await
        );
        assert!(text.contains(error), "{text}");
        assert_eq!(
            config_get(&mut con, "tls-cert-file").await,
            crt.to_str().expect("path")
        );
        assert_eq!(subject(&s_client(&certs, server.tls, &[]).await), "rotated");
    }

    // New files under the same names: setting the same names again loads them.
    std::fs::copy(certs.path("rotated-again.crt"), &crt).expect("copy");
    std::fs::copy(certs.path("rotated-again.key"), &key).expect("copy");
    assert_eq!(subject(&s_client(&certs, server.tls, &[]).await), "rotated");
    let _ = ok(&mut con, &set).await;
    assert_eq!(
        subject(&s_client(&certs, server.tls, &[]).await),
        "rotated-again"
    );

    // tls-auth-clients at run time too.
    assert!(!tls_ping(&certs, server.tls, None).await);
    let _ = ok(&mut con, &["CONFIG", "SET", "tls-auth-clients", "optional"]).await;
    assert!(tls_ping(&certs, server.tls, None).await);
    let reply = run(&mut con, &["CONFIG", "SET", "tls-auth-clients", "maybe"]).await;
    assert!(
        format!("{reply:?}")
            .contains("argument(s) must be one of the following: no, yes, optional"),
        "{reply:?}"
    );
    assert_eq!(config_get(&mut con, "tls-auth-clients").await, "optional");
}

/// A replica (in-process, plain listener) of `primary_port` over TLS, presenting the client
/// certificate.
async fn tls_replica(certs: &Certs, primary_port: u16) -> common::TestServer {
    common::TestServer::start_with(|c| {
        c.tls_replication = true;
        c.tls_ca_cert_file = Some(certs.path("ca.crt"));
        c.tls_client_cert_file = Some(certs.path("client.crt"));
        c.tls_client_key_file = Some(certs.path("client.key"));
        c.replicaof = format!("127.0.0.1 {primary_port}");
    })
    .await
}

/// Waits until `key` reads `value` on `con`.
async fn until_value(con: &mut redis::aio::MultiplexedConnection, key: &str, value: &str) {
    common::until(&format!("{key} = {value} on the replica"), async || {
        let got: Option<String> = redis::cmd("GET")
            .arg(key)
            .query_async(con)
            .await
            .expect("get");
        got.as_deref() == Some(value)
    })
    .await;
}

#[tokio::test]
async fn a_replica_with_tls_replication_follows_a_tls_only_stmd_primary() {
    let certs = Certs::make();
    let primary = TlsServer::start_tls_only(&certs, |_| {}).await;
    let mut writer = certs
        .client(primary.tls, Some("client"))
        .get_multiplexed_async_connection()
        .await
        .expect("tls connect");
    let _ = ok(&mut writer, &["SET", "before", "the sync"]).await;

    let replica = tls_replica(&certs, primary.tls).await;
    let mut con = replica.client().await;
    until_value(&mut con, "before", "the sync").await;
    let _ = ok(&mut writer, &["SET", "after", "streamed"]).await;
    until_value(&mut con, "after", "streamed").await;
    let big = "x".repeat(512 * 1024);
    let _ = ok(&mut writer, &["SET", "big", &big]).await;
    until_value(&mut con, "big", &big).await;
    assert_eq!(config_get(&mut con, "tls-replication").await, "yes");

    // Without a client certificate the primary refuses the link.
    let refused = common::TestServer::start_with(|c| {
        c.tls_replication = true;
        c.tls_ca_cert_file = Some(certs.path("ca.crt"));
        c.replicaof = format!("127.0.0.1 {}", primary.tls);
    })
    .await;
    let mut refused_con = refused.client().await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let got: Option<String> = redis::cmd("GET")
        .arg("before")
        .query_async(&mut refused_con)
        .await
        .expect("get");
    assert_eq!(
        got, None,
        "no sync without a certificate the primary accepts"
    );

    // tls-replication without a CA to check the primary with: refused at CONFIG SET.
    let plain = common::TestServer::start().await;
    let mut plain_con = plain.client().await;
    let reply = run(&mut plain_con, &["CONFIG", "SET", "tls-replication", "yes"]).await;
    assert!(
        format!("{reply:?}").contains(
            "Unable to update TLS configuration: Either tls-ca-cert-file or tls-ca-cert-dir must be specified"
        ),
        "{reply:?}"
    );
    assert_eq!(config_get(&mut plain_con, "tls-replication").await, "no");
}

#[tokio::test]
async fn a_replica_with_tls_replication_follows_a_real_redis_primary_over_tls() {
    let certs = Certs::make();
    let tls_port = crate::security_tls::free_port();
    let (crt, key, ca) = (
        certs.path("server.crt"),
        certs.path("server.key"),
        certs.path("ca.crt"),
    );
    let primary = common::real_redis::RealRedis::start_with(&[
        "--tls-port",
        &tls_port.to_string(),
        "--tls-cert-file",
        crt.to_str().expect("path"),
        "--tls-key-file",
        key.to_str().expect("path"),
        "--tls-ca-cert-file",
        ca.to_str().expect("path"),
    ]);
    let mut writer = primary.client().await;
    let _ = ok(&mut writer, &["SET", "from", "redis over tls"]).await;
    let replica = tls_replica(&certs, tls_port).await;
    let mut con = replica.client().await;
    until_value(&mut con, "from", "redis over tls").await;
    let _ = ok(&mut writer, &["SET", "streamed", "too"]).await;
    until_value(&mut con, "streamed", "too").await;
    let clients = format!("{:?}", ok(&mut writer, &["INFO", "replication"]).await);
    assert!(clients.contains("connected_slaves:1"), "{clients}");
}

#[test]
fn config_defaults_match_redis() {
    let c = Config::default();
    assert_eq!(
        (
            c.tls_protocols.as_str(),
            c.tls_ciphers.as_str(),
            c.tls_ciphersuites.as_str()
        ),
        ("", "", "")
    );
    assert_eq!(
        (
            c.tls_prefer_server_ciphers,
            c.tls_session_caching,
            c.tls_session_cache_size,
            c.tls_session_cache_timeout,
            c.tls_replication
        ),
        (false, true, 20480, 300, false)
    );
    assert_eq!(c.tls_auth_clients, TlsAuthClients::Yes);
}
