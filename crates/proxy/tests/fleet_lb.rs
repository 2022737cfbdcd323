//! The fleet behind a load balancer (issue 45, point 5): three `tessera --etcd` processes
//! behind the repository's own `deploy/haproxy/haproxy.cfg` (a real HAProxy checking each
//! proxy's `/health`). A rolling restart (each proxy in turn: SIGTERM, it drains, it starts
//! again) under a write load through HAProxy loses no statement: a drained proxy ends each
//! connection between two transactions, the client opens another through the balancer.
//!
//! The load is the test's own: Debian's sysbench 1.0.20 cannot reconnect at all (its
//! `mysql_drv_reconnect` reuses the MYSQL handle `mysql_close` freed, and crashes with
//! libmariadb, against MariaDB itself just as through a proxy).

use crate::common::process::TesseraProcess;
use crate::common::{wait_for, Client, Failure};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tessera_sandbox::haproxy::{Backend, SHIPPED_CONFIG};
use tessera_sandbox::{EtcdServer, HaProxy, Sandbox, SandboxOptions};

const CLUSTER: &str = "lb";

fn shared(primary: u16, replica: u16) -> String {
    format!(
        "[[users]]\nname = \"app\"\npassword = \"app\"\n\
         [[groups]]\nname = \"main\"\nuser = \"tessera\"\npassword = \"tessera\"\nmonitor_interval_ms = 200\n\
         max_replica_lag_s = 5\nprimary = {{ address = \"127.0.0.1:{primary}\" }}\n\
         replicas = [{{ address = \"127.0.0.1:{replica}\" }}]\n"
    )
}

fn publish(etcd: &str, document: &str) {
    let file = std::env::temp_dir().join(format!("tessera-fleet-lb-{}.toml", std::process::id()));
    std::fs::write(&file, document).expect("document");
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["ctl", "--etcd", etcd, "--cluster", CLUSTER, "publish", "--wait", "0"])
        .arg(&file)
        .output()
        .expect("ctl runs");
    let _ = std::fs::remove_file(&file);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// What the load saw: statements answered, statements failed (with why), reconnects.
#[derive(Default)]
struct Tally {
    answered: AtomicU64,
    reconnects: AtomicU64,
    failures: Mutex<Vec<String>>,
    /// Ids whose INSERT was acknowledged (each must be in the table once).
    acknowledged: Mutex<Vec<u64>>,
}

/// Clients through the balancer that behave like a connection pool's users: autocommit
/// INSERTs and two-row transactions, one connection each. A connection found closed at the
/// first statement after a transaction's end (what a drained proxy does) is opened again
/// through the balancer and the statement sent again; anything else that fails is a failed
/// statement. A statement sent again that had run before would fail on its duplicate key.
struct Load {
    stop: Arc<AtomicBool>,
    tally: Arc<Tally>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    async fn start(port: u16, clients: u64) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let tally = Arc::new(Tally::default());
        let tasks = (0..clients)
            .map(|k| tokio::spawn(client_loop(port, k * 10_000_000, stop.clone(), tally.clone())))
            .collect();
        Load { stop, tally, tasks }
    }

    /// Waits until `more` further statements were answered.
    async fn moves(&self, more: u64) {
        let from = self.tally.answered.load(Ordering::Relaxed);
        let tally = self.tally.clone();
        wait_for("the load runs on", move || {
            tally.answered.load(Ordering::Relaxed) >= from + more
        })
        .await;
    }

    async fn finish(self) -> Arc<Tally> {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            t.await.expect("load task");
        }
        self.tally
    }
}

/// Waits until the balancer has checked each proxy twice (it knows their check interval).
async fn checked_twice(proxies: &[TesseraProcess]) {
    wait_for("two health checks of each proxy", || {
        proxies
            .iter()
            .all(|p| p.metric("tessera_health_checks_total").is_some_and(|n| n >= 2.0))
    })
    .await;
}

async fn connect(port: u16) -> Client {
    for _ in 0..600 {
        if let Ok(c) = Client::try_connect(port, "app", "app", Some("test")).await {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no login through the balancer");
}

async fn client_loop(port: u16, base: u64, stop: Arc<AtomicBool>, tally: Arc<Tally>) {
    let mut client = connect(port).await;
    let mut n = base;
    while !stop.load(Ordering::Relaxed) {
        n += 2;
        let statements = match n % 4 {
            0 => vec![format!("INSERT INTO test.r VALUES ({n})")],
            _ => vec![
                "BEGIN".to_string(),
                format!("INSERT INTO test.r VALUES ({n})"),
                format!("INSERT INTO test.r VALUES ({})", n + 1),
                "COMMIT".to_string(),
            ],
        };
        let mut i = 0;
        while i < statements.len() {
            match client.try_query(&statements[i]).await {
                Ok(_) => {
                    tally.answered.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
                Err(Failure::Io(_)) if i == 0 => {
                    tally.reconnects.fetch_add(1, Ordering::Relaxed);
                    client = connect(port).await;
                }
                Err(e) => {
                    tally
                        .failures
                        .lock()
                        .expect("failures")
                        .push(format!("{}: {e:?}", statements[i]));
                    client = connect(port).await;
                    break;
                }
            }
        }
        if i == statements.len() {
            let mut acked = tally.acknowledged.lock().expect("acknowledged");
            acked.push(n);
            if statements.len() > 1 {
                acked.push(n + 1);
            }
        }
    }
}

fn servers() -> Sandbox {
    let s = Sandbox::start(SandboxOptions {
        servers: 2,
        replication: true,
        ..SandboxOptions::default()
    })
    .expect("sandbox");
    s.server(0)
        .sql("CREATE TABLE test.r (id BIGINT PRIMARY KEY) ENGINE=InnoDB")
        .expect("table");
    s.wait_for_replicas(Duration::from_secs(60)).expect("replica");
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_behind_haproxy_loses_no_statement() {
    let sandbox = tokio::task::spawn_blocking(servers).await.expect("sandbox");
    let etcd = tokio::task::spawn_blocking(|| EtcdServer::start().expect("etcd"))
        .await
        .expect("etcd");
    let url = etcd.client_url();
    publish(&url, &shared(sandbox.server(0).port(), sandbox.server(1).port()));
    let mut proxies: Vec<TesseraProcess> = ["p1", "p2", "p3"]
        .iter()
        .map(|n| TesseraProcess::start_member(n, &url, CLUSTER, &[]))
        .collect();
    let backends: Vec<Backend> = proxies
        .iter()
        .map(|p| Backend {
            port: p.port,
            admin_port: p.admin.port(),
        })
        .collect();
    let haproxy = HaProxy::start(SHIPPED_CONFIG, &backends).expect("haproxy");
    haproxy.wait_until(&[true; 3], Duration::from_secs(30)).expect("all up");
    checked_twice(&proxies).await;
    let load = Load::start(haproxy.port(), 12).await;
    load.moves(500).await;
    for i in 0..proxies.len() {
        let status = proxies[i].terminate(Duration::from_secs(60)).expect("drains and exits");
        assert!(status.success(), "{status}: {}", proxies[i].log_tail(20));
        let log = proxies[i].log();
        assert!(
            log.contains("balancer_noticed=true"),
            "the balancer saw the drain: {log}"
        );
        let mut wanted = [true; 3];
        wanted[i] = false;
        haproxy
            .wait_until(&wanted, Duration::from_secs(30))
            .expect("marked down");
        load.moves(200).await;
        proxies[i].restart();
        haproxy
            .wait_until(&[true; 3], Duration::from_secs(30))
            .expect("back up");
        checked_twice(&proxies).await;
        load.moves(200).await;
    }
    let tally = load.finish().await;
    let failures = tally.failures.lock().expect("failures").clone();
    let answered = tally.answered.load(Ordering::Relaxed);
    assert!(
        failures.is_empty(),
        "{} of {answered} statements failed: {failures:?}",
        failures.len()
    );
    assert!(
        tally.reconnects.load(Ordering::Relaxed) > 0,
        "drained sessions reconnected through the balancer"
    );
    let acknowledged = tally.acknowledged.lock().expect("acknowledged").len();
    eprintln!(
        "rolling restart: {answered} statements answered, 0 failed, {} reconnects, {acknowledged} rows",
        tally.reconnects.load(Ordering::Relaxed)
    );
    let rows = sandbox.server(0).sql("SELECT COUNT(*) FROM test.r").expect("count");
    assert_eq!(rows.trim(), acknowledged.to_string(), "every acknowledged row, once");
    drop(haproxy);
    drop(proxies);
}
