//! The fleet (issue 45, points 1-3): three `tessera --etcd` processes share one configuration
//! published in a real etcd. A published version runs on every proxy and `tessera ctl` shows
//! it; a version the proxies cannot run is refused by each, which go on serving the one
//! before; a rollback brings that one back as a new version; etcd away past the proxies'
//! leases and back: they keep serving, rejoin and catch up. Clients stay connected through
//! all of it, with no failed statement. Membership: ids unique in the cluster, a stopped
//! proxy leaves at once, a killed one when its lease ends, and its id is taken again.

use crate::common::process::TesseraProcess;
use crate::common::{wait_for, Client};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tessera_proxy::fleet::etcd::Etcd;
use tessera_proxy::fleet::keys::Keys;
use tessera_proxy::fleet::member::{members, Member};
use tessera_sandbox::{EtcdServer, Sandbox, SandboxOptions};

const CLUSTER: &str = "test";

/// The shared document: one group on `primary`, with `replica` (and its weight) when given,
/// and `extra` appended (more users, settings).
fn shared(primary: u16, replica: Option<(u16, u32)>, extra: &str) -> String {
    let replicas = replica.map_or(String::new(), |(p, w)| {
        format!("replicas = [{{ address = \"127.0.0.1:{p}\", weight = {w} }}]")
    });
    format!(
        "[[users]]\nname = \"app\"\npassword = \"app\"\n{extra}\n\
         [[groups]]\nname = \"main\"\nuser = \"tessera\"\npassword = \"tessera\"\nmonitor_interval_ms = 200\n\
         max_replica_lag_s = 5\nprimary = {{ address = \"127.0.0.1:{primary}\" }}\n{replicas}\n"
    )
}

const OPS_USER: &str = "[[users]]\nname = \"ops\"\npassword = \"ops\"\n";

/// `tessera ctl --etcd .. --cluster test ARGS` with `document` as its FILE (if any): exit
/// status and output.
fn ctl(etcd: &str, document: Option<&str>, args: &[&str]) -> (bool, String) {
    let file = std::env::temp_dir().join(format!("tessera-fleet-{}-{}.toml", std::process::id(), rand_tag()));
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"));
    command.args(["ctl", "--etcd", etcd, "--cluster", CLUSTER]).args(args);
    if let Some(text) = document {
        std::fs::write(&file, text).expect("document");
        command.arg(&file);
    }
    let out = command.output().expect("ctl runs");
    let _ = std::fs::remove_file(&file);
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

fn rand_tag() -> u64 {
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

async fn live(etcd: &str) -> Vec<Member> {
    members(&Etcd::new(etcd).expect("url"), &Keys::new(CLUSTER).expect("cluster"))
        .await
        .unwrap_or_default()
}

/// Clients on every proxy writing and reading the whole time, each on one connection: how
/// many statements ran and failed.
struct Load {
    stop: Arc<AtomicBool>,
    ran: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<Vec<String>>>,
}

impl Load {
    async fn start(ports: &[u16]) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let ran = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for (i, port) in ports.iter().enumerate() {
            for k in 0..2 {
                let mut client = Client::connect(*port, "app", "app", Some("test")).await.expect("login");
                let (stop, ran) = (stop.clone(), ran.clone());
                let id = (i * 2 + k) as u64 * 1_000_000;
                tasks.push(tokio::spawn(async move {
                    let mut failures = Vec::new();
                    let mut n = id;
                    while !stop.load(Ordering::Relaxed) {
                        n += 1;
                        for sql in [
                            format!("INSERT INTO test.f VALUES ({n})"),
                            format!("SELECT id FROM test.f WHERE id = {n}"),
                        ] {
                            if let Err(e) = client.try_query(&sql).await {
                                failures.push(format!("{sql}: {e:?}"));
                            }
                        }
                        ran.fetch_add(2, Ordering::Relaxed);
                    }
                    failures
                }));
            }
        }
        Load { stop, ran, tasks }
    }

    /// Waits until `more` further statements ran (the load is moving).
    async fn moves(&self, more: u64) {
        let from = self.ran.load(Ordering::Relaxed);
        let ran = self.ran.clone();
        wait_for("the load runs on", move || ran.load(Ordering::Relaxed) >= from + more).await;
    }

    /// Stops the load and asserts that no statement failed.
    async fn finish_without_failures(self) {
        let (ran, failures) = self.finish().await;
        assert!(
            failures.is_empty(),
            "{} of {ran} statements failed: {:?}",
            failures.len(),
            &failures[..failures.len().min(5)]
        );
    }

    async fn finish(self) -> (u64, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        let mut failures = Vec::new();
        for t in self.tasks {
            failures.extend(t.await.expect("load task"));
        }
        (self.ran.load(Ordering::Relaxed), failures)
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
        .sql("CREATE TABLE test.f (id BIGINT PRIMARY KEY) ENGINE=InnoDB")
        .expect("table");
    s.wait_for_replicas(Duration::from_secs(60)).expect("replica");
    s
}

/// Waits until every live proxy (`count` of them) runs `version`; their records.
async fn all_run(etcd: &str, count: usize, version: u64) -> Vec<Member> {
    for _ in 0..600 {
        let fleet = live(etcd).await;
        if fleet.len() == count && fleet.iter().all(|m| m.config_version == version) {
            return fleet;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "never: {count} proxies running version {version}: {:?}",
        live(etcd).await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn published_versions_run_on_every_proxy_refused_ones_change_nothing_and_rollback_restores() {
    let sandbox = tokio::task::spawn_blocking(servers).await.expect("sandbox");
    let (primary, replica) = (sandbox.server(0).port(), sandbox.server(1).port());
    let etcd = tokio::task::spawn_blocking(|| EtcdServer::start().expect("etcd"))
        .await
        .expect("etcd");
    let url = etcd.client_url();
    let (ok, out) = ctl(
        &url,
        Some(&shared(primary, None, "")),
        &["publish", "-m", "first", "--wait", "0"],
    );
    assert!(ok, "{out}");
    let proxies: Vec<TesseraProcess> = ["p1", "p2", "p3"]
        .iter()
        .map(|n| TesseraProcess::start_member(n, &url, CLUSTER, &[]))
        .collect();
    let fleet = all_run(&url, 3, 1).await;
    let mut ids: Vec<u16> = fleet.iter().map(|m| m.id).collect();
    ids.sort();
    assert_eq!(ids, [1, 2, 3], "ids are unique in the cluster");
    let ports: Vec<u16> = proxies.iter().map(|p| p.port).collect();
    let load = Load::start(&ports).await;
    load.moves(200).await;

    // A replica added with a weight, and a user: every proxy runs it, ctl says so.
    let (ok, out) = ctl(
        &url,
        Some(&shared(primary, Some((replica, 3)), OPS_USER)),
        &["publish", "-m", "replica + ops", "--wait", "30"],
    );
    assert!(
        ok && out.contains("rollout of version 2: 3 of 3 proxies run it, 0 refused"),
        "{out}"
    );
    assert!(all_run(&url, 3, 2)
        .await
        .iter()
        .all(|m| m.generation == 2 && m.refused.is_none()));
    for port in &ports {
        let mut ops = Client::connect(*port, "ops", "ops", None)
            .await
            .expect("the new user logs in on every proxy");
        assert_eq!(ops.value("SELECT 1").await.as_deref(), Some("1"));
    }
    let (_, status) = ctl(&url, None, &["status"]);
    assert_eq!(
        status
            .lines()
            .filter(|l| l.contains("127.0.0.1") && l.contains(" 2 "))
            .count(),
        3,
        "{status}"
    );
    load.moves(200).await;

    // A version no proxy can run (validation) and one a restart would apply: each is refused
    // by all three, which go on serving version 2.
    let invalid = shared(
        primary,
        Some((replica, 3)),
        &format!("{OPS_USER}[pool]\nmax_size = 0\n"),
    );
    let (ok, out) = ctl(&url, Some(&invalid), &["publish", "--force", "--wait", "30"]);
    assert!(
        !ok && out.contains("rollout of version 3: 0 of 3 proxies run it, 3 refused"),
        "{out}"
    );
    let frozen = shared(
        primary,
        Some((replica, 3)),
        &format!("{OPS_USER}[server]\nxa_database = \"elsewhere\"\n"),
    );
    let (ok, out) = ctl(&url, Some(&frozen), &["publish", "--wait", "30"]);
    assert!(
        !ok && out.contains("3 refused") && out.contains("server.xa_database cannot change"),
        "{out}"
    );
    for m in live(&url).await {
        assert_eq!((m.config_version, m.generation), (2, 2), "{m:?}");
        assert_eq!(m.refused.as_ref().map(|r| r.version), Some(4), "{m:?}");
    }
    Client::connect(ports[0], "ops", "ops", None)
        .await
        .expect("version 2 still serves");

    // Rollback: version 2's document again, as version 5.
    let (ok, out) = ctl(&url, None, &["rollback", "--wait", "30"]);
    assert!(ok && out.contains("rollout of version 5: 3 of 3"), "{out}");
    let (_, history) = ctl(&url, None, &["history"]);
    assert!(
        history.contains("5 (head)") && history.contains("rollback to version 2"),
        "{history}"
    );
    let (_, shown) = ctl(&url, None, &["show", "5"]);
    assert_eq!(shown, shared(primary, Some((replica, 3)), OPS_USER));
    let (_, diff) = ctl(&url, None, &["diff", "1", "5"]);
    assert!(
        diff.contains("+name = \"ops\"")
            && diff.contains(&format!(
                "+replicas = [{{ address = \"127.0.0.1:{replica}\", weight = 3 }}]"
            )),
        "{diff}"
    );
    load.moves(200).await;

    load.finish_without_failures().await;
    drop(proxies);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxies_serve_through_an_etcd_outage_then_rejoin_and_catch_up() {
    let sandbox = tokio::task::spawn_blocking(servers).await.expect("sandbox");
    let primary = sandbox.server(0).port();
    let mut etcd = tokio::task::spawn_blocking(|| EtcdServer::start().expect("etcd"))
        .await
        .expect("etcd");
    let url = etcd.client_url();
    assert!(ctl(&url, Some(&shared(primary, None, "")), &["publish", "--wait", "0"]).0);
    let proxies: Vec<TesseraProcess> = ["a", "b", "c"]
        .iter()
        .map(|n| TesseraProcess::start_member(n, &url, CLUSTER, &[]))
        .collect();
    let before = all_run(&url, 3, 1).await;
    let ports: Vec<u16> = proxies.iter().map(|p| p.port).collect();
    let load = Load::start(&ports).await;
    load.moves(100).await;

    // 30 s without etcd: three times the lease's TTL, so every record is gone when it is back.
    etcd.stop();
    let outage_end = tokio::time::Instant::now() + Duration::from_secs(30);
    while tokio::time::Instant::now() < outage_end {
        load.moves(100).await;
        Client::connect(ports[1], "app", "app", None)
            .await
            .expect("new logins go on without etcd");
    }
    let mut etcd = tokio::task::spawn_blocking(move || {
        etcd.restart().expect("etcd back");
        etcd
    })
    .await
    .expect("restart");
    let back = all_run(&url, 3, 1).await;
    let ids = |fleet: &[Member]| {
        let mut v: Vec<(String, u16)> = fleet.iter().map(|m| (m.name.clone(), m.id)).collect();
        v.sort();
        v
    };
    assert_eq!(ids(&back), ids(&before), "each proxy rejoined under its own id");
    let (ok, out) = ctl(
        &url,
        Some(&shared(primary, None, OPS_USER)),
        &["publish", "--wait", "30"],
    );
    assert!(ok, "{out}");
    for port in &ports {
        Client::connect(*port, "ops", "ops", None)
            .await
            .expect("caught up after the outage");
    }
    load.finish_without_failures().await;
    etcd.stop();
    drop(proxies);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_proxy_leaves_at_once_a_killed_one_with_its_lease_and_its_id_is_taken_again() {
    let sandbox = tokio::task::spawn_blocking(tessera_sandbox_one).await.expect("sandbox");
    let primary = sandbox.server(0).port();
    let etcd = tokio::task::spawn_blocking(|| EtcdServer::start().expect("etcd"))
        .await
        .expect("etcd");
    let url = etcd.client_url();
    let (ok, out) = ctl(&url, None, &["status"]);
    assert!(ok && out.lines().count() == 1, "no proxy yet: {out}");
    let early = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["--etcd", &url, "--cluster", CLUSTER, "--listen", "127.0.0.1:0"])
        .output()
        .expect("runs");
    let said = String::from_utf8_lossy(&early.stderr);
    assert!(
        !early.status.success() && said.contains("nothing is published for cluster `test` yet"),
        "{said}"
    );
    assert!(ctl(&url, Some(&shared(primary, None, "")), &["publish", "--wait", "0"]).0);
    let mut p = vec![
        TesseraProcess::start_member("one", &url, CLUSTER, &[]),
        TesseraProcess::start_member("two", &url, CLUSTER, &[]),
        TesseraProcess::start_member("three", &url, CLUSTER, &[]),
    ];
    all_run(&url, 3, 1).await;
    assert!(
        p[0].terminate(Duration::from_secs(30)).is_some(),
        "a stopped proxy exits"
    );
    let fleet = all_run(&url, 2, 1).await;
    assert!(
        fleet.iter().all(|m| m.name != "one"),
        "the stopped proxy left at once: {fleet:?}"
    );
    p[1].kill();
    let fleet = all_run(&url, 1, 1).await;
    assert_eq!(fleet[0].name, "three", "the killed proxy left when its lease ended");
    p.push(TesseraProcess::start_member("four", &url, CLUSTER, &[]));
    let fleet = all_run(&url, 2, 1).await;
    let four = fleet.iter().find(|m| m.name == "four").expect("four joined");
    assert_eq!(four.id, 1, "the lowest free id is taken again");
}

fn tessera_sandbox_one() -> Sandbox {
    Sandbox::start(SandboxOptions::default()).expect("sandbox")
}
