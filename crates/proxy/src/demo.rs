//! `tessera demo` (a sandbox MariaDB with a sample schema behind Tessera, until Ctrl-C) and
//! `tessera sandbox` (just the servers).

use crate::error::ProxyError;
use tessera_config::Config;
use tessera_sandbox::{Sandbox, SandboxOptions};

const SAMPLE_SCHEMA: &str = "
CREATE DATABASE IF NOT EXISTS demo;
USE demo;
CREATE TABLE IF NOT EXISTS customers (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(64) NOT NULL, city VARCHAR(64));
CREATE TABLE IF NOT EXISTS orders (id BIGINT PRIMARY KEY AUTO_INCREMENT, customer_id INT NOT NULL,
  amount DECIMAL(10,2) NOT NULL, created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), KEY (customer_id));
INSERT INTO customers (name, city) VALUES ('Ada', 'London'), ('Grace', 'New York'), ('Linus', 'Helsinki');
INSERT INTO orders (customer_id, amount) VALUES (1, 12.50), (1, 99.99), (2, 5.00), (3, 42.00);
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
    /// GTID replicas of the sandbox primary; reads are spread over them.
    pub replicas: usize,
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
        }
    }
}

/// The configuration `tessera demo` runs with, for a primary on `backend_port` and replicas
/// on `replica_ports`.
pub fn demo_config(opts: &DemoOptions, backend_port: u16, replica_ports: &[u16]) -> Result<Config, ProxyError> {
    let DemoOptions {
        listen,
        pool_max,
        auth_plugin,
        prepared_cache_size,
        ..
    } = opts;
    let text = format!(
        r#"
[server]
listen = "{listen}"
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
[[groups]]
name = "main"
user = "tessera"
password = "tessera"
primary = {{ address = "127.0.0.1:{backend_port}" }}
{replicas}
"#,
        replicas = replicas_toml(replica_ports)
    );
    tessera_config::parse_str(&text, "demo").map_err(|e| ProxyError::Config(e.to_string()))
}

fn replicas_toml(ports: &[u16]) -> String {
    ports
        .iter()
        .map(|p| format!("[[groups.replicas]]\naddress = \"127.0.0.1:{p}\"\n"))
        .collect()
}

fn start_sandbox(servers: usize, replication: bool) -> Result<Sandbox, ProxyError> {
    let opts = SandboxOptions {
        servers,
        replication: replication && servers > 1,
        ..SandboxOptions::default()
    };
    Sandbox::start(opts).map_err(|e| ProxyError::Config(format!("sandbox: {e}")))
}

/// Runs the demo until SIGTERM / Ctrl-C.
pub async fn run_demo(opts: DemoOptions) -> Result<(), ProxyError> {
    let servers = 1 + opts.replicas;
    println!(
        "Starting a sandbox MariaDB primary with {} replica(s)...",
        opts.replicas
    );
    let sandbox = tokio::task::spawn_blocking(move || start_sandbox(servers, true))
        .await
        .map_err(|e| ProxyError::Config(e.to_string()))??;
    let server = &sandbox.servers()[0];
    server
        .sql(SAMPLE_SCHEMA)
        .map_err(|e| ProxyError::Config(format!("sample schema: {e}")))?;
    if opts.replicas > 0 {
        sandbox
            .wait_for_replicas(std::time::Duration::from_secs(60))
            .map_err(|e| ProxyError::Config(format!("replicas: {e}")))?;
    }
    let replica_ports: Vec<u16> = sandbox.servers()[1..].iter().map(|s| s.port()).collect();
    let config = demo_config(&opts, server.port(), &replica_ports)?;
    let running = crate::server::start(config).await?;
    let port = running.addr.port();
    if let Some(path) = &opts.env_file {
        let replicas: Vec<String> = replica_ports.iter().map(u16::to_string).collect();
        let env = format!(
            "TESSERA_PORT={port}\nMARIADB_PORT={}\nMARIADB_SOCKET={}\nREPLICA_PORTS={}\n",
            server.port(),
            server.socket().display(),
            replicas.join(",")
        );
        std::fs::write(path, env).map_err(|e| ProxyError::Config(format!("{path}: {e}")))?;
    }
    println!();
    println!(
        "Tessera is running on 127.0.0.1:{port}, in front of MariaDB on 127.0.0.1:{} (primary){}.",
        server.port(),
        replica_ports
            .iter()
            .map(|p| format!(" and 127.0.0.1:{p} (replica)"))
            .collect::<String>()
    );
    println!("Connect with:");
    println!();
    println!("    mariadb -h127.0.0.1 -P{port} -uapp -papp demo");
    println!();
    println!(
        "Try: SELECT c.name, SUM(o.amount) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.name;"
    );
    if let Some(admin) = running.admin_addr {
        println!("Where reads and writes go: tessera status --admin {admin}");
    }
    println!("Press Ctrl-C to stop and clean up.");
    crate::server::wait_for_signal().await;
    println!("Stopping...");
    running.shutdown().await;
    tokio::task::spawn_blocking(move || sandbox.stop()).await.ok();
    Ok(())
}

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
