//! The admin HTTP endpoint: Prometheus metrics reflect what happened; /health follows the
//! backend's reachability.

use crate::common;

use common::Env;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.expect("connect admin");
    tcp.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
        .await
        .expect("request");
    let mut out = String::new();
    tcp.read_to_string(&mut out).await.expect("response");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_health() {
    let mut env = Env::start("", "backoff_max_ms = 200").await;
    let mut c = env.client_in_test().await;
    c.query("SELECT 1").await.expect("query");
    c.query("CREATE TEMPORARY TABLE t (a INT)").await.expect("pin");
    let _ = c.query("SELECT * FROM no_such_table").await;
    let proxy = env.proxy.as_ref().expect("proxy");
    let admin = proxy.admin_addr.expect("admin endpoint enabled by the test config");
    let metrics = get(admin, "/metrics").await;
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    assert!(metrics.contains("tessera_queries_total 3"), "{metrics}");
    assert!(
        metrics.contains("tessera_query_errors_total 0"),
        "backend errors are answers, not proxy errors"
    );
    assert!(
        metrics.contains("tessera_pins_total{reason=\"temporary_table\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("tessera_client_connections 1"), "{metrics}");
    assert!(metrics.contains("tessera_pool_pinned{group=\"main\""), "{metrics}");
    assert!(get(admin, "/health").await.starts_with("HTTP/1.1 200"));
    assert!(get(admin, "/nope").await.starts_with("HTTP/1.1 404"));
    env.sandbox.server_mut(0).kill().expect("kill backend");
    let mut other = env.client().await;
    // The first query may find an idle connection that died with the server (error 1158);
    // the next one needs a new connection, whose failure marks the server down.
    let _ = other.query("SELECT 1").await;
    let _ = other.query("SELECT 1").await;
    assert!(
        get(admin, "/health").await.starts_with("HTTP/1.1 503"),
        "unhealthy while the backend is down"
    );
}

/// Every connection a pool keeps open is lent or idle, whatever the flavour the client's
/// capabilities asked for. MariaDB Connector/C (sysbench's) asks for extended metadata, a
/// flavour the idle gauge (and the pool's own size checks) once left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_idle_gauge_counts_connections_of_every_flavour() {
    let env = Env::start("", "").await;
    let admin = env.proxy.as_ref().expect("proxy").admin_addr.expect("admin endpoint");
    // A first statement makes Tessera learn the backend's capabilities (extended metadata is
    // offered only then), and leaves one connection of the plain flavour.
    let mut c = env.client().await;
    c.query("SELECT 1").await.expect("query");
    drop(c);
    // Extended metadata is a flavour of its own: a connection opened for it serves only it.
    let mut extended = common::Client::connect_extended(
        env.port(),
        "app",
        "app",
        tessera_protocol::flags::MARIADB_CLIENT_EXTENDED_METADATA,
    )
    .await;
    extended.query("SELECT 1").await.expect("query");
    drop(extended);
    let key = |name: &str| {
        format!(
            "{name}{{group=\"main\",server=\"127.0.0.1:{}\"}}",
            env.sandbox.servers()[0].port()
        )
    };
    // A connection goes back to its pool just after its answer: wait for both to come back.
    let mut metrics = String::new();
    for _ in 0..200 {
        metrics = get(admin, "/metrics").await;
        let value = |name: &str| common::process::sample(&metrics, &key(name));
        if value("tessera_pool_in_use") == Some(0.0) && value("tessera_pool_idle") == value("tessera_pool_open") {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("open connections are neither lent nor idle: {metrics}");
}
