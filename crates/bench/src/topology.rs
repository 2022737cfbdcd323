//! Topologies the kit measures, and starting their servers: a sandbox, or a server the user names.

use std::path::Path;
use std::process::Command;

use tessera_sandbox::{Sandbox, SandboxOptions};

use crate::cgroup::{CpuCap, CPU_ROOT};
use crate::error::{BenchError, Result};
use crate::sysbench::Endpoint;

/// Shards on each group of the `sharded` topology.
pub const SHARDS_PER_GROUP: u32 = 2;
/// Groups of the `sharded` topology unless `--shard-groups` says otherwise.
pub const DEFAULT_SHARD_GROUPS: u32 = 2;
/// The sharded tables of the `sharded` topology, their shard key and function.
pub const SHARDED_TABLES: &str = "sbtest*";
pub const SHARD_KEY: &str = "id";
pub const SHARD_FUNCTION: &str = "hash";

/// How the backend servers are laid out behind the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// One primary takes everything.
    Single,
    /// Primary + replica; reads go to the replica.
    Replica,
    /// Primary + replica; the primary also takes a share of the reads.
    PrimaryReads,
    /// `groups` single-server groups with [`SHARDS_PER_GROUP`] shards each, `sbtest*` sharded by
    /// `id` (hash); direct clients use one more server holding all rows.
    Sharded { groups: u32 },
}

impl Topology {
    pub fn parse(text: &str) -> Result<Topology> {
        match text {
            "single" => Ok(Topology::Single),
            "replica" => Ok(Topology::Replica),
            "primary-reads" => Ok(Topology::PrimaryReads),
            "sharded" => Ok(Topology::Sharded {
                groups: DEFAULT_SHARD_GROUPS,
            }),
            other => Err(BenchError::Usage(format!(
                "unknown topology {other:?} (single, replica, primary-reads, sharded)"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Topology::Single => "single",
            Topology::Replica => "replica",
            Topology::PrimaryReads => "primary-reads",
            Topology::Sharded { .. } => "sharded",
        }
    }

    /// Whether direct clients and proxies use one and the same MariaDB server (where the
    /// `--relay` floor is measured: the relay fronts that server).
    pub fn is_single_server(self) -> bool {
        matches!(self, Topology::Single)
    }

    /// Whether sysbench's tables are spread over shards behind Tessera.
    pub fn is_sharded(self) -> bool {
        matches!(self, Topology::Sharded { .. })
    }

    /// One line for the report.
    pub fn describe(self) -> String {
        match self {
            Topology::Single => "one MariaDB primary; direct and proxied clients use it alike".into(),
            Topology::Replica => {
                "primary + GTID replica; through Tessera reads go to the replica (primary read weight 0)".into()
            }
            Topology::PrimaryReads => {
                "primary + GTID replica; the primary takes half of the reads (weights 1:1)".into()
            }
            Topology::Sharded { groups } => format!(
                "{groups} groups x {SHARDS_PER_GROUP} shards, {SHARDED_TABLES} by {SHARD_KEY} ({SHARD_FUNCTION}); \
                 direct is one MariaDB server with all rows; sysbench's defaults (ids of its AUTO_INCREMENT \
                 column from Tessera's sequence, unique over the shards)"
            ),
        }
    }
}

/// The servers a proxy puts in front of clients: addresses with read weights.
#[derive(Debug, Clone, PartialEq)]
pub struct Backends {
    pub primary: String,
    /// The primary's share of reads (None: Tessera's default, 0 when replicas exist).
    pub primary_weight: Option<u32>,
    pub replicas: Vec<(String, u32)>,
    /// The account the proxy logs in to the servers with.
    pub user: String,
    pub password: String,
    /// With the sharded topology: every group (the first one is `primary`) and the schema over them.
    pub sharding: Option<Sharding>,
}

/// A logical database spread over groups: shard `i` is database `<schema>_<i>` on group
/// `i / shards_per_group`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sharding {
    /// The logical database (sysbench's `--mysql-db`).
    pub schema: String,
    /// Each group's primary, as direct clients reach it (group `i` is named `g<i>`).
    pub groups: Vec<Endpoint>,
    pub shards_per_group: u32,
    /// The schema's table rules (`[[schemas.tables]]`), in config order.
    pub rules: Vec<TableRule>,
}

/// One `[[schemas.tables]]` entry of the generated config.
#[derive(Debug, Clone, PartialEq)]
pub struct TableRule {
    /// A table name or a prefix and `*`.
    pub name: String,
    pub kind: RuleKind,
}

/// How a rule's tables are laid out over the shards.
#[derive(Debug, Clone, PartialEq)]
pub enum RuleKind {
    /// Rows placed by `function` of `key`; `auto_increment`: ids from Tessera's sequence.
    Sharded {
        key: String,
        function: String,
        auto_increment: bool,
    },
    /// A copy on every shard.
    Broadcast,
}

impl TableRule {
    /// A table sharded by `key` with `function`.
    pub fn sharded(name: &str, key: &str, function: &str) -> TableRule {
        TableRule {
            name: name.to_string(),
            kind: RuleKind::Sharded {
                key: key.to_string(),
                function: function.to_string(),
                auto_increment: false,
            },
        }
    }

    /// A table copied to every shard.
    pub fn broadcast(name: &str) -> TableRule {
        TableRule {
            name: name.to_string(),
            kind: RuleKind::Broadcast,
        }
    }
}

/// The sysbench rule: `sbtest*` by `id` (hash), ids of id-less INSERTs from Tessera's sequence.
pub fn sysbench_rules() -> Vec<TableRule> {
    vec![TableRule {
        name: SHARDED_TABLES.to_string(),
        kind: RuleKind::Sharded {
            key: SHARD_KEY.to_string(),
            function: SHARD_FUNCTION.to_string(),
            auto_increment: true,
        },
    }]
}

/// How many groups to start, how many shards each holds, and the schema's rules.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardLayout {
    pub groups: u32,
    pub shards_per_group: u32,
    pub rules: Vec<TableRule>,
}

impl Sharding {
    /// `(group index, database)` of every logical shard, in shard order.
    pub fn shards(&self) -> Vec<(usize, String)> {
        let per_group = self.shards_per_group as usize;
        (0..self.groups.len() * per_group)
            .map(|i| (i / per_group, format!("{}_{i}", self.schema)))
            .collect()
    }

    /// The shard databases of group `group`.
    pub fn databases_of(&self, group: usize) -> Vec<String> {
        let per_group = self.shards_per_group as usize;
        (group * per_group..(group + 1) * per_group)
            .map(|i| format!("{}_{i}", self.schema))
            .collect()
    }
}

impl Sharding {
    /// Checks what was loaded through the proxy, on the shards themselves: each of `tables`
    /// tables has `rows` rows over all shards, and every row is on shard `CRC32(id) % shards`.
    pub fn check_placement(&self, tables: u32, rows: u64) -> Result<()> {
        let shards = self.shards();
        let mut totals = vec![0u64; tables as usize];
        for (shard, (group, db)) in shards.iter().enumerate() {
            let query = (1..=tables)
                .map(|t| {
                    format!(
                        "SELECT COUNT(*), COALESCE(SUM(CRC32({SHARD_KEY}) % {} <> {shard}), 0) FROM `{db}`.sbtest{t}",
                        shards.len()
                    )
                })
                .collect::<Vec<_>>()
                .join(" UNION ALL ");
            let server = self
                .groups
                .get(*group)
                .ok_or_else(|| placement(format!("no group {group}")))?;
            let out = sql(server, &query).map_err(|e| {
                placement(format!(
                    "counting the rows of {db} on g{group} ({}:{}): {}",
                    server.host,
                    server.port,
                    error_line(&e)
                ))
            })?;
            for (t, line) in out.lines().enumerate() {
                let (count, misplaced) = count_pair(line).ok_or_else(|| placement(format!("{db}: {line:?}")))?;
                if misplaced > 0 {
                    return Err(placement(format!(
                        "{db}.sbtest{}: {misplaced} rows belong on other shards",
                        t + 1
                    )));
                }
                if let Some(total) = totals.get_mut(t) {
                    *total += count;
                }
            }
        }
        match totals.iter().position(|&n| n != rows) {
            Some(t) => Err(placement(format!(
                "sbtest{} has {} rows over the shards, not {rows}",
                t + 1,
                totals[t]
            ))),
            None => Ok(()),
        }
    }
}

fn placement(why: String) -> BenchError {
    BenchError::ShardCheck(why)
}

/// The `ERROR ...` line of a failed `mariadb` call (else the whole error).
fn error_line(e: &BenchError) -> String {
    let text = e.to_string();
    match text.lines().find(|l| l.starts_with("ERROR")) {
        Some(line) => line.to_string(),
        None => text,
    }
}

/// `"10000\t0"` -> (10000, 0).
fn count_pair(line: &str) -> Option<(u64, u64)> {
    let mut fields = line.split('\t').map(|f| f.trim().parse::<u64>().ok());
    Some((fields.next()??, fields.next()??))
}

/// Running servers for one topology. Dropping it stops a sandbox (a user's server is left alone).
pub struct Deployment {
    pub topology: Topology,
    /// Where direct clients connect (the primary; with the sharded topology a server of its own).
    pub direct: Endpoint,
    pub backends: Backends,
    /// mariadbd processes we started (for `--pin`).
    pub server_pids: Vec<u32>,
    sandboxes: Vec<Sandbox>,
    /// `--cpu-cap` groups of the servers; declared after `sandboxes`, so the servers stop first.
    caps: Vec<CpuCap>,
}

/// Starts (or, with `mysql`, adopts) the servers of `topology` and makes sure `databases` exist.
pub fn deploy(topology: Topology, mysql: Option<&Endpoint>, databases: &[&str]) -> Result<Deployment> {
    match (mysql, topology) {
        (Some(server), Topology::Single) => adopt(topology, server, databases),
        (Some(_), _) => Err(BenchError::NotAvailable {
            topology: topology.name().to_string(),
            why: "with --mysql only the single topology can run (the kit starts replicas only in its sandbox)".into(),
        }),
        (None, Topology::Sharded { groups }) => deploy_shards(
            &ShardLayout {
                groups,
                shards_per_group: SHARDS_PER_GROUP,
                rules: sysbench_rules(),
            },
            databases,
        ),
        (None, _) => sandbox(topology, databases),
    }
}

fn start_sandbox(servers: usize, replication: bool, databases: Vec<String>) -> Result<Sandbox> {
    Ok(Sandbox::start(SandboxOptions {
        servers,
        replication,
        databases,
        ..SandboxOptions::default()
    })?)
}

/// The kit's account on a sandbox server.
fn endpoint_of(server: &tessera_sandbox::Server) -> Endpoint {
    Endpoint {
        host: server.host().to_string(),
        port: server.port(),
        user: "tessera".into(),
        password: "tessera".into(),
    }
}

fn sandbox(topology: Topology, databases: &[&str]) -> Result<Deployment> {
    let replicated = topology != Topology::Single;
    let databases = databases.iter().map(|d| d.to_string()).collect();
    let sandbox = start_sandbox(if replicated { 2 } else { 1 }, replicated, databases)?;
    let direct = endpoint_of(sandbox.server(0));
    Ok(Deployment {
        topology,
        backends: Backends {
            primary: format!("{}:{}", direct.host, direct.port),
            primary_weight: match topology {
                Topology::Replica => Some(0),
                Topology::PrimaryReads => Some(1),
                Topology::Single | Topology::Sharded { .. } => None,
            },
            replicas: sandbox.servers()[1..]
                .iter()
                .map(|r| (format!("{}:{}", r.host(), r.port()), 1))
                .collect(),
            user: direct.user.clone(),
            password: direct.password.clone(),
            sharding: None,
        },
        direct,
        server_pids: sandbox.servers().iter().filter_map(|s| s.pid()).collect(),
        sandboxes: vec![sandbox],
        caps: Vec::new(),
    })
}

/// `layout.groups` one-server groups holding the shard databases of `databases[0]` (created
/// directly on them), and one more server with all of `databases` for direct clients.
pub fn deploy_shards(shape: &ShardLayout, databases: &[&str]) -> Result<Deployment> {
    let groups = shape.groups;
    let schema = databases
        .first()
        .ok_or_else(|| BenchError::Usage("the sharded topology needs a database".into()))?;
    let single = start_sandbox(1, false, databases.iter().map(|d| d.to_string()).collect())?;
    let mut layout = Sharding {
        schema: schema.to_string(),
        groups: Vec::new(),
        shards_per_group: shape.shards_per_group,
        rules: shape.rules.clone(),
    };
    let mut sandboxes = vec![single];
    for g in 0..groups as usize {
        let group = start_sandbox(1, false, layout.databases_of(g))?;
        layout.groups.push(endpoint_of(group.server(0)));
        sandboxes.push(group);
    }
    let Some(first) = layout.groups.first().cloned() else {
        return Err(BenchError::Usage("--shard-groups must be at least 1".into()));
    };
    let direct = endpoint_of(sandboxes[0].server(0));
    Ok(Deployment {
        topology: Topology::Sharded { groups },
        backends: Backends {
            primary: format!("{}:{}", first.host, first.port),
            primary_weight: None,
            replicas: Vec::new(),
            user: first.user,
            password: first.password,
            sharding: Some(layout),
        },
        direct,
        server_pids: sandboxes
            .iter()
            .flat_map(|s| s.servers())
            .filter_map(|s| s.pid())
            .collect(),
        sandboxes,
        caps: Vec::new(),
    })
}

fn adopt(topology: Topology, server: &Endpoint, databases: &[&str]) -> Result<Deployment> {
    for db in databases {
        sql(server, &format!("CREATE DATABASE IF NOT EXISTS `{db}`"))?;
    }
    Ok(Deployment {
        topology,
        direct: server.clone(),
        backends: Backends {
            primary: format!("{}:{}", server.host, server.port),
            primary_weight: None,
            replicas: Vec::new(),
            user: server.user.clone(),
            password: server.password.clone(),
            sharding: None,
        },
        server_pids: Vec::new(),
        sandboxes: Vec::new(),
        caps: Vec::new(),
    })
}

impl Deployment {
    /// The label of each server in `server_pids` order: `direct`, `g0`, ... for the sharded
    /// layouts, `s0`, `s1`, ... otherwise.
    pub fn server_labels(&self) -> Vec<String> {
        let sharded = self.backends.sharding.is_some();
        (0..self.server_pids.len())
            .map(|i| match (sharded, i) {
                (true, 0) => "direct".to_string(),
                (true, i) => format!("g{}", i - 1),
                (false, i) => format!("s{i}"),
            })
            .collect()
    }

    /// Lifts `--cpu-cap` (the servers go back to the root group, the groups are removed): the
    /// checks after the measured runs need not crawl.
    pub fn uncap_cpu(&mut self) {
        self.caps.clear();
    }

    /// `--cpu-cap`: puts every server of this deployment into a cpu cgroup of its own limited to
    /// `fraction` of one core (removed when the deployment is dropped). Returns one line per server.
    pub fn cap_cpu(&mut self, fraction: f64) -> Result<Vec<String>> {
        crate::cgroup::reap_stale(Path::new(CPU_ROOT));
        let mut lines = Vec::new();
        for (label, &pid) in self.server_labels().iter().zip(&self.server_pids) {
            let cap = CpuCap::apply(Path::new(CPU_ROOT), label, pid, fraction)?;
            lines.push(format!(
                "{label} (mariadbd pid {pid}): {} cpu.cfs_quota_us = {} / cpu.cfs_period_us = {}",
                cap.dir().display(),
                cap.quota_us,
                crate::cgroup::PERIOD_US
            ));
            self.caps.push(cap);
        }
        Ok(lines)
    }

    /// Waits until every replica has applied what the primary has (after loading data).
    pub fn wait_for_replicas(&self) -> Result<()> {
        for s in &self.sandboxes {
            s.wait_for_replicas(std::time::Duration::from_secs(300))?;
        }
        Ok(())
    }
}

/// Runs one statement with the `mariadb` client (password passed in the environment).
pub fn sql(server: &Endpoint, statement: &str) -> Result<String> {
    let out = Command::new("mariadb")
        .args(["-h", &server.host, "-P", &server.port.to_string(), "-u", &server.user])
        .args(["-N", "-B", "-e", statement])
        .env("MYSQL_PWD", &server.password)
        .output()
        .map_err(|e| BenchError::io("running the mariadb client (apt-get install mariadb-client)", e))?;
    if !out.status.success() {
        return Err(BenchError::Command {
            what: format!("mariadb -e {statement:?}"),
            code: out.status.code(),
            output: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in [
            Topology::Single,
            Topology::Replica,
            Topology::PrimaryReads,
            Topology::Sharded { groups: 2 },
        ] {
            assert_eq!(Topology::parse(t.name()).unwrap(), t);
            assert!(!t.describe().is_empty());
        }
        assert!(Topology::parse("star").is_err());
    }

    #[test]
    fn replica_topologies_need_the_sandbox() {
        let server = Endpoint {
            host: "127.0.0.1".into(),
            port: 1,
            user: "root".into(),
            password: String::new(),
        };
        let err = deploy(Topology::Replica, Some(&server), &["sbtest"]).err().unwrap();
        assert!(matches!(err, BenchError::NotAvailable { .. }), "{err}");
        assert!(err.to_string().contains("--mysql"), "{err}");
    }

    #[test]
    fn sharded_layout_puts_two_shards_on_each_group() {
        let group = |port| Endpoint {
            host: "127.0.0.1".into(),
            port,
            user: "tessera".into(),
            password: "tessera".into(),
        };
        let layout = Sharding {
            schema: "sbtest".into(),
            groups: vec![group(1), group(2), group(3)],
            shards_per_group: SHARDS_PER_GROUP,
            rules: sysbench_rules(),
        };
        let shards = layout.shards();
        assert_eq!(shards.len(), 6);
        assert_eq!(shards[0], (0, "sbtest_0".to_string()));
        assert_eq!(shards[3], (1, "sbtest_3".to_string()));
        assert_eq!(shards[5], (2, "sbtest_5".to_string()));
        assert_eq!(layout.databases_of(1), ["sbtest_2", "sbtest_3"]);
        let line = Topology::Sharded { groups: 3 }.describe();
        assert!(line.starts_with("3 groups x 2 shards, sbtest* by id (hash)"), "{line}");
    }

    #[test]
    fn placement_counts_parse_strictly() {
        assert_eq!(count_pair("10000\t0"), Some((10000, 0)));
        assert_eq!(count_pair("2500\t7"), Some((2500, 7)));
        assert_eq!(count_pair("2500"), None);
        assert_eq!(count_pair("NULL\t0"), None);
    }
}
