//! Topologies the kit measures, and starting their servers: a sandbox, or a server the user names.

use std::process::Command;

use tessera_sandbox::{Sandbox, SandboxOptions};

use crate::error::{BenchError, Result};
use crate::sysbench::Endpoint;

/// How the backend servers are laid out behind the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// One primary takes everything.
    Single,
    /// Primary + replica; reads go to the replica.
    Replica,
    /// Primary + replica; the primary also takes a share of the reads.
    PrimaryReads,
}

impl Topology {
    pub fn parse(text: &str) -> Result<Topology> {
        match text {
            "single" => Ok(Topology::Single),
            "replica" => Ok(Topology::Replica),
            "primary-reads" => Ok(Topology::PrimaryReads),
            other => Err(BenchError::Usage(format!(
                "unknown topology {other:?} (single, replica, primary-reads)"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Topology::Single => "single",
            Topology::Replica => "replica",
            Topology::PrimaryReads => "primary-reads",
        }
    }

    /// One line for the report.
    pub fn describe(self) -> &'static str {
        match self {
            Topology::Single => "one MariaDB primary; direct and proxied clients use it alike",
            Topology::Replica => {
                "primary + GTID replica; through Tessera reads go to the replica (primary read weight 0)"
            }
            Topology::PrimaryReads => "primary + GTID replica; the primary takes half of the reads (weights 1:1)",
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
}

/// Running servers for one topology. Dropping it stops a sandbox (a user's server is left alone).
pub struct Deployment {
    pub topology: Topology,
    /// Where direct clients connect (the primary).
    pub direct: Endpoint,
    pub backends: Backends,
    /// mariadbd processes we started (for `--pin`).
    pub server_pids: Vec<u32>,
    _sandbox: Option<Sandbox>,
}

/// Starts (or, with `mysql`, adopts) the servers of `topology` and makes sure `databases` exist.
pub fn deploy(topology: Topology, mysql: Option<&Endpoint>, databases: &[&str]) -> Result<Deployment> {
    match (mysql, topology) {
        (Some(server), Topology::Single) => adopt(topology, server, databases),
        (Some(_), _) => Err(BenchError::NotAvailable {
            topology: topology.name().to_string(),
            why: "with --mysql only the single topology can run (the kit starts replicas only in its sandbox)".into(),
        }),
        (None, _) => sandbox(topology, databases),
    }
}

fn sandbox(topology: Topology, databases: &[&str]) -> Result<Deployment> {
    let replicated = topology != Topology::Single;
    let sandbox = Sandbox::start(SandboxOptions {
        servers: if replicated { 2 } else { 1 },
        replication: replicated,
        databases: databases.iter().map(|d| d.to_string()).collect(),
        ..SandboxOptions::default()
    })?;
    let server = sandbox.server(0);
    let direct = Endpoint {
        host: server.host().to_string(),
        port: server.port(),
        user: "tessera".into(),
        password: "tessera".into(),
    };
    Ok(Deployment {
        topology,
        backends: Backends {
            primary: format!("{}:{}", direct.host, direct.port),
            primary_weight: match topology {
                Topology::Single => None,
                Topology::Replica => Some(0),
                Topology::PrimaryReads => Some(1),
            },
            replicas: sandbox.servers()[1..]
                .iter()
                .map(|r| (format!("{}:{}", r.host(), r.port()), 1))
                .collect(),
            user: direct.user.clone(),
            password: direct.password.clone(),
        },
        direct,
        server_pids: sandbox.servers().iter().filter_map(|s| s.pid()).collect(),
        _sandbox: Some(sandbox),
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
        },
        server_pids: Vec::new(),
        _sandbox: None,
    })
}

impl Deployment {
    /// Waits until every replica has applied what the primary has (after loading data).
    pub fn wait_for_replicas(&self) -> Result<()> {
        match &self._sandbox {
            Some(s) if s.servers().len() > 1 => Ok(s.wait_for_replicas(std::time::Duration::from_secs(300))?),
            _ => Ok(()),
        }
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
        for t in [Topology::Single, Topology::Replica, Topology::PrimaryReads] {
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
}
