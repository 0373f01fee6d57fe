//! Real clients: the `redis` crate in RESP2 and RESP3 (it sends HELLO and CLIENT SETINFO on
//! connect), pipelines, transactions, WATCH, AUTH, CLIENT, CONFIG and the server's lifecycle.

use crate::common;

use common::{resp, TestServer};
use redis::aio::MultiplexedConnection;
use redis::{AsyncCommands, Value};
use std::time::Duration;

async fn both_protocols(server: &TestServer) -> [MultiplexedConnection; 2] {
    [server.client().await, server.client3().await]
}

#[tokio::test]
async fn pipelines_work_in_resp2_and_resp3() {
    let server = TestServer::start().await;
    for (n, mut con) in both_protocols(&server).await.into_iter().enumerate() {
        let key = format!("p{n}");
        let (ok, value, counter, missing, len): (String, String, i64, Option<String>, i64) =
            redis::pipe()
                .cmd("SET")
                .arg(&key)
                .arg("hello")
                .get(&key)
                .incr(format!("{key}:n"), 5)
                .get("nosuchkey")
                .strlen(&key)
                .query_async(&mut con)
                .await
                .expect("pipeline");
        assert_eq!(
            (ok.as_str(), value.as_str(), counter, missing, len),
            ("OK", "hello", 5, None, 5)
        );
        let float: f64 = con
            .incr(format!("{key}:f"), 1.5f64)
            .await
            .expect("incrbyfloat");
        assert_eq!(float, 1.5);
        let ttl: i64 = con.ttl(&key).await.expect("ttl");
        assert_eq!(ttl, -1);
    }
}

#[tokio::test]
async fn atomic_pipelines_run_as_multi_exec() {
    let server = TestServer::start().await;
    for mut con in both_protocols(&server).await {
        let (a, b): (i64, i64) = redis::pipe()
            .atomic()
            .incr("tx", 1)
            .incr("tx", 10)
            .query_async(&mut con)
            .await
            .expect("exec");
        assert_eq!((a, b), (a, a + 10));
    }
    let mut con = server.client().await;
    let total: i64 = con.get("tx").await.expect("get");
    assert_eq!(total, 22);
}

/// WATCH k, let `interfere` touch k from another client, then MULTI/SET/EXEC: EXEC must abort.
async fn watch_aborts_after(server: &TestServer, setup: &[&[u8]], interfere: &[&[u8]]) {
    let mut watcher = server.raw().await;
    let mut other = server.raw().await;
    if !setup.is_empty() {
        other.command(setup).await;
    }
    assert_eq!(watcher.command(&[b"WATCH", b"k"]).await, b"+OK\r\n");
    if !interfere.is_empty() {
        other.command(interfere).await;
    } else {
        tokio::time::sleep(Duration::from_millis(120)).await; // let k expire
    }
    assert_eq!(watcher.command(&[b"MULTI"]).await, b"+OK\r\n");
    assert_eq!(
        watcher.command(&[b"SET", b"k", b"mine"]).await,
        b"+QUEUED\r\n"
    );
    assert_eq!(
        watcher.command(&[b"EXEC"]).await,
        b"*-1\r\n",
        "EXEC after {interfere:?}"
    );
    // Not applied; and the next transaction, without WATCH, runs.
    assert_ne!(other.command(&[b"GET", b"k"]).await, b"$4\r\nmine\r\n");
    watcher.send(&resp(&[b"MULTI"])).await;
    watcher.send(&resp(&[b"SET", b"k", b"mine"])).await;
    watcher.send(&resp(&[b"EXEC"])).await;
    assert_eq!(
        watcher.read_n(5 + 9 + 9).await,
        b"+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n"
    );
}

#[tokio::test]
async fn watch_aborts_exec_when_another_client_writes_deletes_or_the_key_expires() {
    let server = TestServer::start().await;
    watch_aborts_after(&server, &[], &[b"SET", b"k", b"theirs"]).await;
    watch_aborts_after(&server, &[b"SET", b"k", b"v"], &[b"DEL", b"k"]).await;
    watch_aborts_after(&server, &[b"SET", b"k", b"v"], &[b"APPEND", b"k", b"x"]).await;
    watch_aborts_after(&server, &[b"SET", b"k", b"v", b"PX", b"50"], &[]).await;
    // A write by the watcher itself before MULTI aborts too, as in Redis.
    let mut con = server.raw().await;
    con.command(&[b"WATCH", b"k"]).await;
    con.command(&[b"SET", b"k", b"self"]).await;
    con.command(&[b"MULTI"]).await;
    con.command(&[b"GET", b"k"]).await;
    assert_eq!(con.command(&[b"EXEC"]).await, b"*-1\r\n");
    // UNWATCH forgets.
    con.command(&[b"WATCH", b"k"]).await;
    let mut other = server.raw().await;
    other.command(&[b"SET", b"k", b"x"]).await;
    con.command(&[b"UNWATCH"]).await;
    con.command(&[b"MULTI"]).await;
    con.command(&[b"GET", b"k"]).await;
    assert_eq!(con.command(&[b"EXEC"]).await, b"*1\r\n$1\r\nx\r\n");
}

#[tokio::test]
async fn a_queued_error_makes_exec_abort_with_the_redis_crate() {
    let server = TestServer::start().await;
    for mut con in both_protocols(&server).await {
        let result: redis::RedisResult<Value> = redis::pipe()
            .atomic()
            .set("never", 1)
            .cmd("SET")
            .arg("only-a-key")
            .query_async(&mut con)
            .await;
        let error = result.expect_err("EXECABORT");
        // The crate reports EXECABORT as an aborted transaction with the queued error inside.
        let text = error.to_string();
        assert!(
            text.contains("Transaction aborted")
                && text.contains("wrong number of arguments for 'set' command"),
            "{text}"
        );
        let exists: bool = con.exists("never").await.expect("exists");
        assert!(!exists);
    }
    // A runtime error inside EXEC does not abort the others.
    let mut con = server.raw().await;
    con.command(&[b"SET", b"s", b"abc"]).await;
    con.command(&[b"MULTI"]).await;
    con.command(&[b"INCR", b"s"]).await;
    con.command(&[b"SET", b"t", b"1"]).await;
    assert_eq!(
        con.command(&[b"EXEC"]).await,
        b"*2\r\n-ERR value is not an integer or out of range\r\n+OK\r\n"
    );
}

/// Commands Redis flags `no-multi` (SHUTDOWN) are refused inside MULTI, doom the transaction, and
/// never run: the server is still up after EXEC. WATCH inside MULTI is refused without dooming it.
#[tokio::test]
async fn no_multi_commands_are_refused_not_queued() {
    let server = TestServer::start().await;
    let mut con = server.raw().await;
    con.command(&[b"SET", b"a", b"1"]).await;
    assert_eq!(con.command(&[b"MULTI"]).await, b"+OK\r\n");
    assert_eq!(con.command(&[b"SET", b"a", b"2"]).await, b"+QUEUED\r\n");
    for shutdown in [&[&b"SHUTDOWN"[..]][..], &[b"SHUTDOWN", b"NOSAVE", b"NOW"]] {
        assert_eq!(
            con.command(shutdown).await,
            b"-ERR Command not allowed inside a transaction\r\n"
        );
    }
    assert_eq!(
        con.command(&[b"EXEC"]).await,
        b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
    assert_eq!(con.command(&[b"GET", b"a"]).await, b"$1\r\n1\r\n");
    // A fresh client still gets answers: nothing was shut down.
    assert_eq!(server.raw().await.command(&[b"PING"]).await, b"+PONG\r\n");

    con.command(&[b"MULTI"]).await;
    assert_eq!(
        con.command(&[b"WATCH", b"a"]).await,
        b"-ERR WATCH inside MULTI is not allowed\r\n"
    );
    con.command(&[b"SET", b"a", b"3"]).await;
    assert_eq!(con.command(&[b"EXEC"]).await, b"*1\r\n+OK\r\n");

    // COMMAND INFO renders the flag under Redis's name.
    let info = con.command(&[b"COMMAND", b"INFO", b"shutdown"]).await;
    assert!(
        info.windows(8).any(|w| w == b"no_multi"),
        "{}",
        String::from_utf8_lossy(&info)
    );
}

#[tokio::test]
async fn requirepass_gates_every_command_until_auth() {
    let server = TestServer::start_with(|c| c.requirepass = "s3cret".into()).await;
    let mut raw = server.raw().await;
    for request in [&[&b"GET"[..], b"k"][..], &[b"PING"], &[b"CLIENT", b"ID"]] {
        assert_eq!(
            raw.command(request).await,
            b"-NOAUTH Authentication required.\r\n"
        );
    }
    assert_eq!(
        raw.command(&[b"AUTH", b"wrong"]).await,
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert_eq!(
        raw.command(&[b"AUTH", b"nobody", b"s3cret"]).await,
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert_eq!(
        raw.command(&[b"HELLO", b"3"]).await,
        b"-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n"
    );
    assert_eq!(raw.command(&[b"AUTH", b"s3cret"]).await, b"+OK\r\n");
    assert_eq!(raw.command(&[b"GET", b"k"]).await, b"$-1\r\n");
    // RESET logs the connection out again.
    assert_eq!(raw.command(&[b"RESET"]).await, b"+RESET\r\n");
    assert_eq!(
        raw.command(&[b"GET", b"k"]).await,
        b"-NOAUTH Authentication required.\r\n"
    );
    // HELLO 3 AUTH default <pass> authenticates and switches protocol in one step.
    let reply = raw
        .command(&[b"HELLO", b"3", b"AUTH", b"default", b"s3cret"])
        .await;
    assert!(
        reply.starts_with(b"%7\r\n"),
        "{}",
        String::from_utf8_lossy(&reply)
    );
    assert_eq!(raw.command(&[b"GET", b"k"]).await, b"_\r\n");

    // The redis crate: no password → NOAUTH; a bad one → WRONGPASS at connect; the right one works.
    let mut anonymous = server.client().await;
    let error = anonymous
        .get::<_, Option<String>>("k")
        .await
        .expect_err("NOAUTH");
    assert!(error.to_string().contains("NOAUTH"), "{error}");
    let bad = redis::Client::open(format!("redis://:nope@{}", server.addr)).expect("url");
    let error = bad
        .get_multiplexed_async_connection()
        .await
        .expect_err("WRONGPASS");
    // The crate maps -WRONGPASS (exact text checked above) to its authentication failure.
    assert_eq!(
        error.kind(),
        redis::ErrorKind::AuthenticationFailed,
        "{error}"
    );
    for url in [
        format!("redis://:s3cret@{}", server.addr),
        format!("redis://default:s3cret@{}/?protocol=resp3", server.addr),
    ] {
        let client = redis::Client::open(url).expect("url");
        let mut con = client
            .get_multiplexed_async_connection()
            .await
            .expect("auth");
        let () = con.set("k", "v").await.expect("set");
        let value: String = con.get("k").await.expect("get");
        assert_eq!(value, "v");
    }
}

#[tokio::test]
async fn client_names_list_and_kill() {
    let server = TestServer::start().await;
    let mut alpha = server.raw().await;
    let mut admin = server.client3().await;
    assert_eq!(
        alpha.command(&[b"CLIENT", b"SETNAME", b"alpha"]).await,
        b"+OK\r\n"
    );
    assert_eq!(
        alpha.command(&[b"CLIENT", b"GETNAME"]).await,
        b"$5\r\nalpha\r\n"
    );
    let id_reply = alpha.command(&[b"CLIENT", b"ID"]).await;
    let id: u64 = std::str::from_utf8(&id_reply[1..id_reply.len() - 2])
        .expect("utf8")
        .parse()
        .expect("id");

    // The redis crate announced itself with CLIENT SETINFO; its line says so.
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(&mut admin)
        .await
        .expect("client list");
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    let alpha_line = lines
        .iter()
        .find(|l| l.starts_with(&format!("id={id} ")))
        .expect("alpha listed");
    assert!(alpha_line.contains(" name=alpha "), "{alpha_line}");
    assert!(alpha_line.contains(" resp=2 "), "{alpha_line}");
    let admin_line = lines.iter().find(|l| **l != *alpha_line).expect("admin");
    assert!(admin_line.contains(" resp=3 "), "{admin_line}");
    assert!(admin_line.contains(" lib-name=redis-rs"), "{admin_line}");
    let by_id: String = redis::cmd("CLIENT")
        .arg("LIST")
        .arg("ID")
        .arg(id)
        .query_async(&mut admin)
        .await
        .expect("client list id");
    assert_eq!(by_id.lines().count(), 1);

    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(id)
        .query_async(&mut admin)
        .await
        .expect("kill");
    assert_eq!(killed, 1);
    assert!(
        alpha.is_closed().await,
        "a killed client's connection closes"
    );
    let again: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(id)
        .query_async(&mut admin)
        .await
        .expect("kill");
    assert_eq!(again, 0);

    // The old form by address.
    let mut beta = server.raw().await;
    let addr = beta.stream.local_addr().expect("addr").to_string();
    let ok: String = redis::cmd("CLIENT")
        .arg("KILL")
        .arg(&addr)
        .query_async(&mut admin)
        .await
        .expect("kill addr");
    assert_eq!(ok, "OK");
    assert!(beta.is_closed().await);
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(&mut admin)
        .await
        .expect("client list");
    assert_eq!(list.lines().count(), 1, "{list}");
}

#[tokio::test]
async fn config_set_then_get_in_both_protocols() {
    let server = TestServer::start().await;
    for (n, mut con) in both_protocols(&server).await.into_iter().enumerate() {
        let value = format!("{}", 100 + n);
        let () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxclients")
            .arg(&value)
            .arg("timeout")
            .arg("30")
            .query_async(&mut con)
            .await
            .expect("config set");
        let got: std::collections::HashMap<String, String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg("maxclients")
            .arg("timeout")
            .query_async(&mut con)
            .await
            .expect("config get");
        assert_eq!(got.get("maxclients"), Some(&value));
        assert_eq!(got.get("timeout").map(String::as_str), Some("30"));
        let memory: std::collections::HashMap<String, String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg("proto-max-bulk-len")
            .query_async(&mut con)
            .await
            .expect("config get");
        assert_eq!(memory["proto-max-bulk-len"], "536870912");
    }
    // A bad value changes nothing, even with a good pair before it.
    let mut raw = server.raw().await;
    assert_eq!(
        raw.command(&[b"CONFIG", b"SET", b"timeout", b"5", b"maxclients", b"x"]).await,
        b"-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer\r\n"
    );
    assert_eq!(
        raw.command(&[b"CONFIG", b"GET", b"timeout"]).await,
        b"*2\r\n$7\r\ntimeout\r\n$2\r\n30\r\n"
    );
}

#[tokio::test]
async fn shutdown_command_makes_run_return() {
    let mut server = TestServer::start().await;
    let task = server.task.take().expect("server task");
    let mut con = server.raw().await;
    let mut bystander = server.raw().await;
    con.send(&resp(&[b"SHUTDOWN", b"NOSAVE"])).await;
    assert!(con.is_closed().await, "SHUTDOWN closes without a reply");
    let result = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("server::run returned")
        .expect("task");
    assert!(result.is_ok());
    assert!(bystander.is_closed().await);
    assert!(tokio::net::TcpStream::connect(server.addr).await.is_err());
}

#[tokio::test]
async fn graceful_shutdown_finishes_a_reply_in_flight() {
    let server = TestServer::start().await;
    let big = vec![b'v'; 32 * 1024 * 1024];
    let mut con = server.raw().await;
    assert_eq!(con.command(&[b"SET", b"big", &big]).await, b"+OK\r\n");
    // The 32 MB reply cannot fit in the socket buffers while we do not read: the server is still
    // writing it when shutdown starts.
    con.send(&resp(&[b"GET", b"big"])).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let shutdown = tokio::spawn(server.shutdown());
    tokio::time::sleep(Duration::from_millis(50)).await;
    let header = b"$33554432\r\n";
    let reply = con.read_n(header.len() + big.len() + 2).await;
    assert_eq!(&reply[..header.len()], header);
    assert!(reply[header.len()..header.len() + big.len()] == big[..]);
    assert!(con.is_closed().await);
    tokio::time::timeout(Duration::from_secs(5), shutdown)
        .await
        .expect("shutdown finished")
        .expect("task")
        .expect("run");
}

#[tokio::test]
async fn quit_replies_then_closes_and_reset_restores_defaults() {
    let server = TestServer::start().await;
    let mut con = server.raw().await;
    con.command(&[b"HELLO", b"3", b"SETNAME", b"tmp"]).await;
    con.command(&[b"MULTI"]).await;
    assert_eq!(con.command(&[b"RESET"]).await, b"+RESET\r\n");
    assert_eq!(
        con.command(&[b"GET", b"nokey"]).await,
        b"$-1\r\n",
        "back to RESP2"
    );
    assert_eq!(con.command(&[b"CLIENT", b"GETNAME"]).await, b"$-1\r\n");
    assert_eq!(
        con.command(&[b"EXEC"]).await,
        b"-ERR EXEC without MULTI\r\n"
    );
    con.send(&resp(&[b"QUIT"])).await;
    con.send(&resp(&[b"PING"])).await;
    assert_eq!(con.read_n(5).await, b"+OK\r\n");
    assert!(con.is_closed().await, "nothing after QUIT is answered");
}

/// `tcp-keepalive` (Redis's default 300 s; `CONFIG SET` applies to new clients): the kernel probes
/// an idle client after that long, then every third of it, three times. Read on the server's own
/// socket: the test server runs in this process, and CLIENT INFO names the descriptor.
#[tokio::test]
async fn clients_get_tcp_keepalive_probes() {
    use std::os::fd::BorrowedFd;
    let server = TestServer::start().await;
    let server = &server;
    // (idle time, interval, probes) of the server's socket of a new client; None when off.
    let probes = |secs: Option<u64>| async move {
        let mut con = server.raw().await;
        if let Some(secs) = secs {
            let set = con
                .command(&[
                    b"CONFIG",
                    b"SET",
                    b"tcp-keepalive",
                    secs.to_string().as_bytes(),
                ])
                .await;
            assert_eq!(set, b"+OK\r\n");
            con = server.raw().await;
        }
        let info = String::from_utf8(con.command(&[b"CLIENT", b"INFO"]).await).expect("utf-8");
        let fd: i32 = info
            .split(' ')
            .find_map(|f| f.strip_prefix("fd="))
            .and_then(|n| n.parse().ok())
            .expect("fd= in CLIENT INFO");
        // SAFETY: `fd` is the server's socket of `con`'s connection, in this process, and stays
        // open while `con` is connected: it outlives the borrow, which ends in this block.
        let socket = unsafe { BorrowedFd::borrow_raw(fd) };
        let socket = socket2::SockRef::from(&socket);
        let on = socket.keepalive().expect("SO_KEEPALIVE");
        let probes = on.then(|| {
            (
                socket.tcp_keepalive_time().expect("TCP_KEEPIDLE").as_secs(),
                socket
                    .tcp_keepalive_interval()
                    .expect("TCP_KEEPINTVL")
                    .as_secs(),
                socket.tcp_keepalive_retries().expect("TCP_KEEPCNT"),
            )
        });
        drop(con);
        probes
    };
    assert_eq!(probes(None).await, Some((300, 100, 3)));
    assert_eq!(probes(Some(0)).await, None);
    assert_eq!(probes(Some(2)).await, Some((2, 1, 3)));
}
