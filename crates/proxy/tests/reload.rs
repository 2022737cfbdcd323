//! Live reload (issue 44, point 3): the configuration file read again through `POST /reload`
//! (what SIGHUP and `tessera reload` do) becomes the next generation while clients stay
//! connected. A replica joins and gets reads, leaves and has its connections closed; a user is
//! added and a password changed for new logins; an invalid file and a setting only a restart
//! applies are refused whole, the running generation going on; a transaction open across a
//! reload finishes on the generation it began on. Every wait is on progress (a generation
//! number, a counter, a server's process list), never a sleep of fixed length.

use crate::common::{wait_for, Client};
use std::path::PathBuf;
use std::time::Duration;
use tessera_proxy::server::{start, Running};
use tessera_sandbox::{Sandbox, SandboxOptions};

struct Reloadable {
    sandbox: Sandbox,
    proxy: Running,
    file: PathBuf,
    _dir: tempdir::Dir,
}

/// A scratch directory removed on drop.
mod tempdir {
    pub struct Dir(pub std::path::PathBuf);
    impl Dir {
        pub fn new(tag: &str) -> Dir {
            let path = std::env::temp_dir().join(format!("tessera-reload-{tag}-{}", std::process::id()));
            std::fs::create_dir_all(&path).expect("scratch dir");
            Dir(path)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The configuration text: `listen` and the admin address stay those the proxy bound (a reload
/// may not move them); `replica` adds server 1 as a replica; `users` are extra [[users]].
fn text(listen: &str, admin: &str, primary: u16, replica: Option<u16>, users: &str) -> String {
    let replicas = replica.map_or(String::new(), |p| {
        format!("replicas = [{{ address = \"127.0.0.1:{p}\" }}]")
    });
    format!(
        r#"
[server]
listen = "{listen}"
[admin]
http_listen = "{admin}"
[[users]]
name = "app"
password = "app"
{users}
[[groups]]
name = "main"
user = "tessera"
password = "tessera"
monitor_interval_ms = 200
max_replica_lag_s = 5
primary = {{ address = "127.0.0.1:{primary}" }}
{replicas}
"#
    )
}

impl Reloadable {
    async fn start() -> Reloadable {
        let sandbox = tokio::task::spawn_blocking(|| {
            let s = Sandbox::start(SandboxOptions {
                servers: 2,
                replication: true,
                ..SandboxOptions::default()
            })
            .expect("sandbox");
            s.server(0)
                .sql("CREATE TABLE test.r (id INT PRIMARY KEY) ENGINE=InnoDB")
                .expect("table");
            s.wait_for_replicas(Duration::from_secs(60))
                .expect("replica catches up");
            s
        })
        .await
        .expect("thread");
        let dir = tempdir::Dir::new(&sandbox.server(0).port().to_string());
        let file = dir.0.join("tessera.toml");
        // Bind first on free ports, then write the file with the addresses bound.
        let first = text("127.0.0.1:0", "127.0.0.1:0", sandbox.server(0).port(), None, "");
        let proxy = start(tessera_config::parse_str(&first, "reload").expect("config"))
            .await
            .expect("proxy starts");
        let env = Reloadable {
            file,
            proxy,
            sandbox,
            _dir: dir,
        };
        env.write(None, "");
        // The running configuration must match the file for the first reload to pass: start
        // over from the file as `tessera --config` would.
        env.proxy.ctx.config_path.set(env.file.clone()).expect("path set once");
        env
    }

    fn write(&self, replica: Option<u16>, users: &str) {
        let listen = "127.0.0.1:0";
        let admin = "127.0.0.1:0";
        let body = text(listen, admin, self.sandbox.server(0).port(), replica, users);
        std::fs::write(&self.file, body).expect("write config");
    }

    fn write_raw(&self, body: &str) {
        std::fs::write(&self.file, body).expect("write config");
    }

    /// POST /reload: Ok(body) when a generation was made, Err(refusal) otherwise.
    fn reload(&self) -> Result<String, String> {
        let admin = self.proxy.admin_addr.expect("admin").to_string();
        tessera_proxy::admin::post(&admin, "/reload").map_err(|e| e.to_string())
    }

    fn generation(&self) -> u64 {
        self.proxy.ctx.generation_number()
    }

    async fn client(&self, user: &str, password: &str) -> Result<Client, tessera_protocol::response::ErrPacket> {
        Client::connect(self.proxy.addr.port(), user, password, Some("test")).await
    }

    /// Connections of Tessera's backend account open on `server` now.
    fn backend_connections(&self, server: usize) -> u64 {
        self.sandbox
            .server(server)
            .sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'tessera' AND ID <> CONNECTION_ID()")
            .expect("process list")
            .trim()
            .parse()
            .expect("count")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_adds_and_retires_a_replica_while_clients_stay_connected() {
    let env = Reloadable::start().await;
    assert_eq!(env.generation(), 1);
    let replica = env.sandbox.server(1).port();
    let replica_id = env
        .sandbox
        .server(1)
        .sql("SELECT @@server_id")
        .expect("id")
        .trim()
        .to_string();
    let mut idle = env.client("app", "app").await.expect("login");
    let mut in_txn = env.client("app", "app").await.expect("login");
    in_txn.query("BEGIN").await.expect("begin");
    in_txn.query("INSERT INTO r VALUES (1)").await.expect("insert");

    env.write(Some(replica), "");
    let done = env.reload().expect("the replica joins");
    assert!(done.starts_with("generation 2"), "{done}");
    assert_eq!(env.generation(), 2);
    // The transaction goes on and commits on the connection it began on.
    in_txn
        .query("INSERT INTO r VALUES (2)")
        .await
        .expect("insert after reload");
    in_txn.query("COMMIT").await.expect("commit");
    // New statements (on any connection) reach the replica once its monitor sees it serve.
    let mut reached = false;
    for _ in 0..600 {
        if idle.value("SELECT @@server_id").await.as_deref() == Some(replica_id.as_str()) {
            reached = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(reached, "no read reached the replica that joined");
    assert_eq!(idle.value("SELECT COUNT(*) FROM r").await.as_deref(), Some("2"));

    env.write(None, "");
    let done = env.reload().expect("the replica leaves");
    assert!(done.starts_with("generation 3") && done.contains("1 retired"), "{done}");
    for _ in 0..20 {
        assert_ne!(idle.value("SELECT @@server_id").await.unwrap_or_default(), replica_id);
    }
    wait_for("the retired replica's connections close", || {
        env.backend_connections(1) == 0
    })
    .await;
    assert_eq!(in_txn.value("SELECT COUNT(*) FROM r").await.as_deref(), Some("2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_change_for_new_logins_and_a_bad_file_changes_nothing() {
    let env = Reloadable::start().await;
    assert_eq!(env.client("ops", "one").await.expect_err("unknown yet").code, 1045);
    let mut app = env.client("app", "app").await.expect("login");

    env.write(None, "[[users]]\nname = \"ops\"\npassword = \"one\"");
    env.reload().expect("a user added");
    let mut ops = env.client("ops", "one").await.expect("the new user logs in");
    assert_eq!(ops.value("SELECT 1").await.as_deref(), Some("1"));

    env.write(None, "[[users]]\nname = \"ops\"\npassword = \"two\"");
    env.reload().expect("a password changed");
    assert_eq!(env.client("ops", "one").await.expect_err("old password").code, 1045);
    env.client("ops", "two").await.expect("new password");
    assert_eq!(
        ops.value("SELECT 2").await.as_deref(),
        Some("2"),
        "a logged-in session goes on"
    );

    let before = env.generation();
    env.write_raw("[server\nlisten = ");
    let refused = env.reload().expect_err("not TOML");
    assert!(
        refused.contains("409") && refused.contains(&format!("generation {before} goes on")),
        "{refused}"
    );
    env.write_raw(&text(
        "127.0.0.1:1",
        "127.0.0.1:0",
        env.sandbox.server(0).port(),
        None,
        "",
    ));
    let refused = env.reload().expect_err("listen only changes with a restart");
    assert!(
        refused.contains("server.listen cannot change while Tessera runs"),
        "{refused}"
    );
    assert_eq!(env.generation(), before);
    assert_eq!(app.value("SELECT 3").await.as_deref(), Some("3"));
    env.client("ops", "two")
        .await
        .expect("the last good generation still serves");
    let metrics =
        tessera_proxy::admin::fetch(&env.proxy.admin_addr.expect("admin").to_string(), "/metrics").expect("metrics");
    assert!(
        metrics.contains(&format!("tessera_config_generation {before}")),
        "{metrics}"
    );
    assert!(metrics.contains("tessera_config_reloads_refused_total 2"), "{metrics}");
}
