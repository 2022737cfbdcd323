//! `tessera demo` (a sharded sandbox: two groups of MariaDB servers with sample schemas behind
//! Tessera, until Ctrl-C) and `tessera sandbox` (just the servers).
//!
//! Group `g0` is a primary with GTID replicas (`--replicas`, default 1) and group `g1` one
//! primary. The logical schema `shop` spreads over four shards, two per group; the
//! unsharded database `demo` lives on `g0`, as it did before sharding.

mod shop;

use crate::error::ProxyError;
use tessera_config::Config;
use tessera_sandbox::{Sandbox, SandboxOptions};

/// The unsharded sample database (on `g0`) and the client accounts (on every group).
const SAMPLE_SCHEMA: &str = "
CREATE DATABASE IF NOT EXISTS demo;
USE demo;
CREATE TABLE IF NOT EXISTS customers (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(64) NOT NULL, city VARCHAR(64));
CREATE TABLE IF NOT EXISTS orders (id BIGINT PRIMARY KEY AUTO_INCREMENT, customer_id INT NOT NULL,
  amount DECIMAL(10,2) NOT NULL, created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), KEY (customer_id));
INSERT INTO customers (name, city) VALUES ('Ada', 'London'), ('Grace', 'New York'), ('Linus', 'Helsinki');
INSERT INTO orders (customer_id, amount) VALUES (1, 12.50), (1, 99.99), (2, 5.00), (3, 42.00);
";

/// The accounts of the demo's Tessera configuration, also created on the servers (so that the
/// same clients can connect to MariaDB directly).
const ACCOUNTS: &str = "
CREATE USER IF NOT EXISTS 'app'@'%' IDENTIFIED BY 'app';
GRANT ALL PRIVILEGES ON *.* TO 'app'@'%';
CREATE USER IF NOT EXISTS 'app2'@'%' IDENTIFIED BY 'app2';
GRANT ALL PRIVILEGES ON *.* TO 'app2'@'%';
";

/// Knobs of `tessera demo` (the compat tests use them to shape the proxy).
#[derive(Debug, Clone)]
pub struct DemoOptions {
    pub listen: String,
    pub pool_max: usize,
    pub auth_plugin: String,
    /// Write TESSERA_PORT=..., MARIADB_PORT=... here once everything is up.
    pub env_file: Option<String>,
    pub prepared_cache_size: usize,
    /// GTID replicas of group g0's primary; reads are spread over them.
    pub replicas: usize,
    /// `server.worker_threads` (0: one per core; 1: the benchmark setting).
    pub workers: usize,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            listen: "127.0.0.1:6033".into(),
            pool_max: 16,
            auth_plugin: "mysql_native_password".into(),
            env_file: None,
            prepared_cache_size: 256,
            replicas: 1,
            workers: 0,
        }
    }
}

/// One group of the demo: a primary and its replicas, by port on 127.0.0.1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoGroup {
    pub name: String,
    pub primary: u16,
    pub replicas: Vec<u16>,
}

impl DemoGroup {
    fn of(name: &str, sandbox: &Sandbox) -> DemoGroup {
        DemoGroup {
            name: name.to_string(),
            primary: sandbox.primary().port(),
            replicas: sandbox.replicas().iter().map(|s| s.port()).collect(),
        }
    }
}

/// The configuration `tessera demo` runs with, for `groups` (the first one, `g0`, also holds
/// the unsharded databases).
pub fn demo_config(opts: &DemoOptions, groups: &[DemoGroup]) -> Result<Config, ProxyError> {
    tessera_config::parse_str(&demo_config_text(opts, groups), "demo").map_err(|e| ProxyError::Config(e.to_string()))
}

/// The TOML of [`demo_config`]: server, pool, admin, the accounts app and app2, `groups` and
/// the sharded schema `shop`.
pub fn demo_config_text(opts: &DemoOptions, groups: &[DemoGroup]) -> String {
    let DemoOptions {
        listen,
        pool_max,
        auth_plugin,
        prepared_cache_size,
        workers,
        ..
    } = opts;
    let mut text = format!(
        r#"[server]
listen = "{listen}"
worker_threads = {workers}
default_auth_plugin = "{auth_plugin}"
[pool]
max_size = {pool_max}
prepared_cache_size = {prepared_cache_size}
checkout_timeout_ms = 30000
[admin]
http_listen = "127.0.0.1:0"
[[users]]
name = "app"
password = "app"
[[users]]
name = "app2"
password = "app2"
"#
    );
    for group in groups {
        text.push_str(&group_toml(group));
    }
    text.push_str(&shop::schema_toml());
    text
}

fn group_toml(g: &DemoGroup) -> String {
    let mut text = format!(
        "[[groups]]\nname = \"{}\"\nuser = \"tessera\"\npassword = \"tessera\"\nprimary = {{ address = \"127.0.0.1:{}\" }}\n",
        g.name, g.primary
    );
    if !g.replicas.is_empty() {
        let replicas: Vec<String> = g
            .replicas
            .iter()
            .map(|p| format!("{{ address = \"127.0.0.1:{p}\" }}"))
            .collect();
        text.push_str(&format!("replicas = [{}]\n", replicas.join(", ")));
    }
    text
}

fn start_sandbox(servers: usize, replication: bool) -> Result<Sandbox, ProxyError> {
    start_group("sandbox", servers, replication, Vec::new())
}

/// Starts one group's servers with the sandbox's default databases plus `extra` ones.
fn start_group(name: &str, servers: usize, replication: bool, extra: Vec<String>) -> Result<Sandbox, ProxyError> {
    let mut databases = SandboxOptions::default().databases;
    databases.extend(extra);
    let opts = SandboxOptions {
        servers,
        replication: replication && servers > 1,
        databases,
        ..SandboxOptions::default()
    };
    Sandbox::start(opts).map_err(|e| ProxyError::Config(format!("sandbox {name}: {e}")))
}

/// The demo's servers: `g0` (a primary and `replicas` replicas) and `g1` (a primary).
struct DemoServers {
    g0: Sandbox,
    g1: Sandbox,
}

impl DemoServers {
    /// Starts both groups at once, with the shard databases created on their primaries.
    fn start(replicas: usize) -> Result<DemoServers, ProxyError> {
        std::thread::scope(|scope| {
            let g1 = scope.spawn(|| start_group("g1", 1, false, shop::databases_of("g1")));
            let g0 = start_group("g0", 1 + replicas, true, shop::databases_of("g0"));
            let g1 = g1
                .join()
                .map_err(|_| ProxyError::Config("sandbox g1: its start thread panicked".into()))?;
            Ok(DemoServers { g0: g0?, g1: g1? })
        })
    }

    /// Creates `demo` on g0, the accounts everywhere and fills every shard of `shop`; returns
    /// once g0's replicas have all of it.
    fn load_samples(&self) -> Result<(), ProxyError> {
        let failed = |what: String| move |e| ProxyError::Config(format!("sample schema ({what}): {e}"));
        let g0 = self.g0.primary();
        g0.sql(&format!("{SAMPLE_SCHEMA}{ACCOUNTS}"))
            .map_err(failed("demo on g0".into()))?;
        self.g1
            .primary()
            .sql(ACCOUNTS)
            .map_err(failed("accounts on g1".into()))?;
        for (shard, (group, database)) in shop::SHARDS.iter().enumerate() {
            let server = if *group == "g0" { g0 } else { self.g1.primary() };
            let sql = shop::shard_sql(shard).map_err(|e| ProxyError::Config(format!("sample rows: {e}")))?;
            server.sql(&sql).map_err(failed(format!("{group}:{database}")))?;
        }
        self.g0
            .wait_for_replicas(std::time::Duration::from_secs(60))
            .map_err(|e| ProxyError::Config(format!("replicas: {e}")))
    }

    fn groups(&self) -> [DemoGroup; 2] {
        [DemoGroup::of("g0", &self.g0), DemoGroup::of("g1", &self.g1)]
    }

    fn stop(self) {
        self.g0.stop();
        self.g1.stop();
    }
}

/// `KEY=value` lines for `--env-file`: Tessera's port, g0's primary (MARIADB_*) and replicas
/// as before sharding, and g1's primary. MARIADB_SOCKET stays the last line (readers wait for it).
fn env_lines(tessera_port: u16, servers: &DemoServers) -> String {
    let g0 = servers.g0.primary();
    let replicas: Vec<String> = servers.g0.replicas().iter().map(|s| s.port().to_string()).collect();
    format!(
        "TESSERA_PORT={tessera_port}\nMARIADB_PORT={}\nREPLICA_PORTS={}\nG1_PORT={}\nMARIADB_SOCKET={}\n",
        g0.port(),
        replicas.join(","),
        servers.g1.primary().port(),
        g0.socket().display()
    )
}

/// Runs the demo until SIGTERM / Ctrl-C; `park`: the hook of the runtime it runs on, if it
/// has one (see [`crate::uring::ParkHook`]).
pub async fn run_demo(opts: DemoOptions, park: Option<crate::uring::ParkHook>) -> Result<(), ProxyError> {
    let replicas = opts.replicas;
    println!(
        "Starting a sharded sandbox: group g0 (a MariaDB primary with {replicas} replica(s)) and group g1 (a MariaDB primary)..."
    );
    let servers = tokio::task::spawn_blocking(move || {
        let servers = DemoServers::start(replicas)?;
        servers.load_samples()?;
        Ok::<_, ProxyError>(servers)
    })
    .await
    .map_err(|e| ProxyError::Config(e.to_string()))??;
    let config = demo_config(&opts, &servers.groups())?;
    let running = crate::server::start_with_park(config, park).await?;
    let port = running.addr.port();
    if let Some(path) = &opts.env_file {
        std::fs::write(path, env_lines(port, &servers)).map_err(|e| ProxyError::Config(format!("{path}: {e}")))?;
    }
    print!("{}", banner(port, &servers.groups()));
    if let Some(admin) = running.admin_addr {
        println!("Where reads and writes go: tessera status --admin {admin}");
    }
    println!("Press Ctrl-C to stop and clean up.");
    crate::server::wait_for_signal().await;
    println!("Stopping...");
    running.shutdown().await;
    tokio::task::spawn_blocking(move || servers.stop()).await.ok();
    Ok(())
}

/// What the demo prints once it is up: where everything runs, how to connect, what to try.
fn banner(port: u16, groups: &[DemoGroup]) -> String {
    let mut text = format!("\nTessera is running on 127.0.0.1:{port}, in front of two groups of MariaDB servers:\n");
    for g in groups {
        let shards: Vec<String> = shop::SHARDS
            .iter()
            .enumerate()
            .filter(|(_, (group, _))| *group == g.name)
            .map(|(i, (_, db))| format!("shard {i} = {db}"))
            .collect();
        let unsharded = if g.name == "g0" {
            ", and the unsharded database demo"
        } else {
            ""
        };
        let replicas: String = g
            .replicas
            .iter()
            .map(|p| format!(", 127.0.0.1:{p} (replica)"))
            .collect();
        text.push_str(&format!(
            "  {}: 127.0.0.1:{} (primary){replicas}: {}{unsharded}\n",
            g.name,
            g.primary,
            shards.join(", ")
        ));
    }
    text.push_str(&format!(
        "\nThe sharded schema `shop`: customers by id and orders by customer_id (hash: CRC32(key) % 4), \
         products on every shard. Connect with:\n\n    mariadb -h127.0.0.1 -P{port} -uapp -papp shop\n\nTry:\n"
    ));
    for example in EXAMPLES {
        text.push_str(&format!("    {example}\n"));
    }
    text.push_str(&format!(
        "\nThe unsharded database `demo` works as before (on g0):\n\n    \
         mariadb -h127.0.0.1 -P{port} -uapp -papp demo\n\n"
    ));
    text
}

/// Statements the banner suggests for `shop`.
const EXAMPLES: [&str; 7] = [
    "EXPLAIN ROUTE SELECT * FROM orders WHERE customer_id = 7;",
    "SELECT * FROM orders WHERE customer_id = 7;",
    "SELECT customer_id, COUNT(*) FROM orders GROUP BY customer_id ORDER BY 2 DESC LIMIT 3;",
    "SELECT c.name, COUNT(*), SUM(o.amount) FROM customers c JOIN orders o ON o.customer_id = c.id \
     WHERE c.id = 5 GROUP BY c.name;",
    "SELECT p.name, SUM(o.quantity) FROM orders o JOIN products p ON p.id = o.product_id GROUP BY p.name ORDER BY 2 DESC;",
    "SELECT city, COUNT(*) FROM customers GROUP BY city ORDER BY city;",
    "START TRANSACTION; UPDATE orders SET quantity = quantity + 1 WHERE customer_id = 1; \
     UPDATE orders SET quantity = quantity - 1 WHERE customer_id = 2; COMMIT;  -- shards 3 and 1: XA",
];

/// Starts `servers` sandbox servers, prints how to reach them, waits for Ctrl-C.
pub async fn run_sandbox(servers: usize, replication: bool) -> Result<(), ProxyError> {
    let sandbox = tokio::task::spawn_blocking(move || start_sandbox(servers, replication))
        .await
        .map_err(|e| ProxyError::Config(e.to_string()))??;
    for s in sandbox.servers() {
        println!(
            "{}: mariadb -h{} -P{} -utessera -ptessera   (data dir {})",
            s.name(),
            s.host(),
            s.port(),
            s.datadir().display()
        );
    }
    println!("Press Ctrl-C to stop and clean up.");
    crate::server::wait_for_signal().await;
    tokio::task::spawn_blocking(move || sandbox.stop()).await.ok();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups() -> [DemoGroup; 2] {
        [
            DemoGroup {
                name: "g0".into(),
                primary: 4000,
                replicas: vec![4001],
            },
            DemoGroup {
                name: "g1".into(),
                primary: 4002,
                replicas: Vec::new(),
            },
        ]
    }

    #[test]
    fn config_has_both_groups_and_the_shop_schema() {
        let text = demo_config_text(&DemoOptions::default(), &groups());
        let expected_groups = r#"[[groups]]
name = "g0"
user = "tessera"
password = "tessera"
primary = { address = "127.0.0.1:4000" }
replicas = [{ address = "127.0.0.1:4001" }]
[[groups]]
name = "g1"
user = "tessera"
password = "tessera"
primary = { address = "127.0.0.1:4002" }
[[schemas]]
name = "shop"
"#;
        assert!(text.contains(expected_groups), "{text}");
        assert!(text.contains("listen = \"127.0.0.1:6033\""), "{text}");
        assert!(text.contains("name = \"app2\"\npassword = \"app2\""), "{text}");
        assert!(text.ends_with("kind = \"broadcast\"\n"), "{text}");
    }

    #[test]
    fn config_parses() {
        let config = demo_config(&DemoOptions::default(), &groups()).expect("the demo's configuration parses");
        assert_eq!(config.groups.len(), 2);
        assert_eq!(config.groups[0].replicas.len(), 1);
    }

    #[test]
    fn banner_shows_where_shards_live_and_the_examples() {
        let text = banner(6033, &groups());
        for needle in [
            "  g0: 127.0.0.1:4000 (primary), 127.0.0.1:4001 (replica): shard 0 = shop_0, shard 1 = shop_1, and the unsharded database demo\n",
            "  g1: 127.0.0.1:4002 (primary): shard 2 = shop_2, shard 3 = shop_3\n",
            "mariadb -h127.0.0.1 -P6033 -uapp -papp shop\n",
            "mariadb -h127.0.0.1 -P6033 -uapp -papp demo\n",
            "    EXPLAIN ROUTE SELECT * FROM orders WHERE customer_id = 7;\n",
            "GROUP BY customer_id ORDER BY 2 DESC LIMIT 3;",
            " JOIN orders o ON o.customer_id = c.id",
        ] {
            assert!(text.contains(needle), "{needle:?} missing:\n{text}");
        }
    }
}
