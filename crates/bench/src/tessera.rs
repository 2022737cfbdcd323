//! A Tessera process started by the kit in front of a deployment, with a generated config.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::child::{on_free_port, ServerProcess};
use crate::error::{BenchError, Result};
use crate::sysbench::Endpoint;
use crate::topology::{Backends, RuleKind, Sharding, TableRule};

const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// The account clients use through the kit's Tessera.
pub const CLIENT_USER: &str = "bench";

/// How the kit configures Tessera.
#[derive(Debug, Clone)]
pub struct TesseraSettings {
    pub bin: PathBuf,
    pub workers: u32,
    pub pool_max: u32,
    /// The client user's `read_consistency` (None: Tessera's default).
    pub consistency: Option<String>,
}

/// A running Tessera; stopped with SIGTERM (then SIGKILL) when dropped.
pub struct TesseraProcess {
    process: ServerProcess,
    pub endpoint: Endpoint,
    pub config_path: PathBuf,
    /// `host:port` of its admin HTTP endpoint (`/metrics`).
    pub admin: String,
}

/// The tessera binary: the given path, or the one next to this program.
pub fn locate_binary(given: Option<&Path>) -> Result<PathBuf> {
    let candidate = match given {
        Some(p) => p.to_path_buf(),
        None => std::env::current_exe()
            .map_err(|e| BenchError::io("locating tessera-bench", e))?
            .with_file_name("tessera"),
    };
    if candidate.is_file() {
        return Ok(candidate);
    }
    Err(BenchError::MissingTool {
        tool: "tessera",
        fix: format!(
            "{} does not exist; run `cargo build --release --bin tessera` or pass --tessera-bin",
            candidate.display()
        ),
    })
}

/// The TOML config for `backends`, listening on `port`, `/metrics` on `admin_port`.
pub fn config_text(settings: &TesseraSettings, backends: &Backends, port: u16, admin_port: u16) -> String {
    let mut text = format!(
        "[server]\nlisten = \"127.0.0.1:{port}\"\nworker_threads = {}\nmax_connections = 20000\n\n\
         [admin]\nhttp_listen = \"127.0.0.1:{admin_port}\"\n\n\
         [pool]\nmax_size = {}\ncheckout_timeout_ms = 30000\n\n\
         [[users]]\nname = \"{CLIENT_USER}\"\npassword = \"{CLIENT_USER}\"\n{}\n",
        settings.workers,
        settings.pool_max,
        settings
            .consistency
            .as_ref()
            .map_or(String::new(), |c| format!("read_consistency = {c:?}\n")),
    );
    match &backends.sharding {
        Some(sharding) => text.push_str(&sharded_groups_toml(backends, sharding)),
        None => text.push_str(&group_toml(backends)),
    }
    text
}

/// The one group `main`: a primary and its replicas with their read weights.
fn group_toml(backends: &Backends) -> String {
    let mut text = format!(
        "[[groups]]\nname = \"main\"\nuser = {:?}\npassword = {:?}\nprimary = {{ address = {:?}{} }}\n",
        backends.user,
        backends.password,
        backends.primary,
        backends
            .primary_weight
            .map_or(String::new(), |w| format!(", weight = {w}"))
    );
    for (address, weight) in &backends.replicas {
        text.push_str(&format!(
            "[[groups.replicas]]\naddress = {address:?}\nweight = {weight}\n"
        ));
    }
    text
}

/// Groups `g0`, `g1`, ... and the schema spread over them with its table rules.
fn sharded_groups_toml(backends: &Backends, sharding: &Sharding) -> String {
    let mut text = String::new();
    for (i, g) in sharding.groups.iter().enumerate() {
        text.push_str(&format!(
            "[[groups]]\nname = \"g{i}\"\nuser = {:?}\npassword = {:?}\nprimary = {{ address = \"{}:{}\" }}\n",
            backends.user, backends.password, g.host, g.port
        ));
    }
    let shards: Vec<String> = sharding
        .shards()
        .iter()
        .map(|(group, db)| format!("\"g{group}:{db}\""))
        .collect();
    text.push_str(&format!(
        "[[schemas]]\nname = {:?}\nshards = [{}]\ndefault_shard = 0\n",
        sharding.schema,
        shards.join(", ")
    ));
    for rule in &sharding.rules {
        text.push_str(&rule_toml(rule));
    }
    text
}

/// One `[[schemas.tables]]` entry.
fn rule_toml(rule: &TableRule) -> String {
    match &rule.kind {
        RuleKind::Sharded {
            key,
            function,
            auto_increment,
        } => format!(
            "[[schemas.tables]]\nname = {:?}\nshard_key = {key:?}\nfunction = {function:?}\n{}",
            rule.name,
            if *auto_increment { "auto_increment = true\n" } else { "" }
        ),
        RuleKind::Broadcast => format!("[[schemas.tables]]\nname = {:?}\nkind = \"broadcast\"\n", rule.name),
    }
}

impl TesseraProcess {
    /// Writes the config into `dir`, starts Tessera and waits until it accepts connections. A port
    /// taken between choosing it and binding it (by a concurrent process) means another try.
    pub fn start(settings: &TesseraSettings, backends: &Backends, dir: &Path, label: &str) -> Result<TesseraProcess> {
        on_free_port(|| Self::start_on_free_port(settings, backends, dir, label))
    }

    fn start_on_free_port(
        settings: &TesseraSettings,
        backends: &Backends,
        dir: &Path,
        label: &str,
    ) -> Result<TesseraProcess> {
        let port = tessera_sandbox::free_port()?;
        let mut admin_port = tessera_sandbox::free_port()?;
        while admin_port == port {
            admin_port = tessera_sandbox::free_port()?;
        }
        let config_path = dir.join(format!("tessera-{label}.toml"));
        std::fs::write(&config_path, config_text(settings, backends, port, admin_port))
            .map_err(|e| BenchError::io(format!("writing {}", config_path.display()), e))?;
        let log_path = dir.join(format!("tessera-{label}.log"));
        let mut process =
            ServerProcess::spawn(Command::new(&settings.bin).arg("--config").arg(&config_path), &log_path)?;
        let addr = format!("127.0.0.1:{port}");
        // The log line proves that this Tessera bound the port, not some other process.
        process
            .wait_ready(&addr, "tessera listening", READY_TIMEOUT)
            .map_err(BenchError::Tessera)?;
        Ok(TesseraProcess {
            process,
            endpoint: Endpoint {
                host: "127.0.0.1".into(),
                port,
                user: CLIENT_USER.into(),
                password: CLIENT_USER.into(),
            },
            config_path,
            admin: format!("127.0.0.1:{admin_port}"),
        })
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_config_names_backends_users_and_knobs() {
        let settings = TesseraSettings {
            bin: "tessera".into(),
            workers: 1,
            pool_max: 64,
            consistency: Some("eventual".into()),
        };
        let backends = Backends {
            primary: "127.0.0.1:3306".into(),
            primary_weight: Some(0),
            replicas: vec![("127.0.0.1:3307".into(), 2)],
            user: "tessera".into(),
            password: "p\"w".into(),
            sharding: None,
        };
        let text = config_text(&settings, &backends, 6033, 9090);
        assert!(text.contains("listen = \"127.0.0.1:6033\""));
        assert!(text.contains("[admin]\nhttp_listen = \"127.0.0.1:9090\""), "{text}");
        assert!(text.contains("worker_threads = 1"));
        assert!(text.contains("max_size = 64"));
        assert!(text.contains("password = \"p\\\"w\""), "{text}");
        assert!(text.contains("address = \"127.0.0.1:3307\"\nweight = 2"));
        assert!(
            text.contains("primary = { address = \"127.0.0.1:3306\", weight = 0 }"),
            "{text}"
        );
        assert!(text.contains("name = \"bench\""));
        assert!(text.contains("read_consistency = \"eventual\""), "{text}");
        tessera_config::parse_str(&text, "generated").expect("a valid config");
    }

    fn sharded_backends(groups: u16) -> Backends {
        let endpoint = |port| Endpoint {
            host: "127.0.0.1".into(),
            port,
            user: "tessera".into(),
            password: "tessera".into(),
        };
        Backends {
            primary: "127.0.0.1:4000".into(),
            primary_weight: None,
            replicas: Vec::new(),
            user: "tessera".into(),
            password: "tessera".into(),
            sharding: Some(Sharding {
                schema: "sbtest".into(),
                groups: (0..groups).map(|g| endpoint(4000 + g)).collect(),
                shards_per_group: 2,
                rules: crate::topology::sysbench_rules(),
            }),
        }
    }

    #[test]
    fn sharded_config_has_a_group_per_server_and_sbtest_by_id() {
        let settings = TesseraSettings {
            bin: "tessera".into(),
            workers: 1,
            pool_max: 64,
            consistency: None,
        };
        let text = config_text(&settings, &sharded_backends(2), 6033, 9090);
        let expected = r#"[[groups]]
name = "g0"
user = "tessera"
password = "tessera"
primary = { address = "127.0.0.1:4000" }
[[groups]]
name = "g1"
user = "tessera"
password = "tessera"
primary = { address = "127.0.0.1:4001" }
[[schemas]]
name = "sbtest"
shards = ["g0:sbtest_0", "g0:sbtest_1", "g1:sbtest_2", "g1:sbtest_3"]
default_shard = 0
[[schemas.tables]]
name = "sbtest*"
shard_key = "id"
function = "hash"
auto_increment = true
"#;
        assert!(text.ends_with(expected), "{text}");
        assert!(!text.contains("name = \"main\""), "{text}");
        let config = tessera_config::parse_str(&text, "generated").expect("a valid config");
        assert_eq!(config.groups.len(), 2);

        let three = config_text(&settings, &sharded_backends(3), 6033, 9090);
        assert!(
            three.contains(r#""g1:sbtest_3", "g2:sbtest_4", "g2:sbtest_5"]"#),
            "{three}"
        );
        tessera_config::parse_str(&three, "generated").expect("a valid config");
    }
}
