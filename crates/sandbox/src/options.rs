//! What a sandbox should look like: [`SandboxOptions`] and its defaults.

use std::path::PathBuf;

use crate::error::{Result, SandboxError};
use crate::replication::REPL_USER;

/// How to build a [`crate::Sandbox`]. Construct with `..Default::default()` so that
/// fields added later do not break callers.
#[derive(Debug, Clone)]
pub struct SandboxOptions {
    /// How many independent servers to start (`s0`, `s1`, ...). Default 1.
    pub servers: usize,
    /// Where the data dirs go (one sub dir per server). Default: a fresh dir
    /// `tessera-sandbox-<pid>-<counter>` under the temp dir. Keep it short: the unix
    /// socket `<base_dir>/sN/mysql.sock` must fit in 107 bytes.
    pub base_dir: Option<PathBuf>,
    /// `(name, password)` pairs created as `name@'%'`, `name@'localhost'` and
    /// `name@'127.0.0.1'` with mysql_native_password and ALL PRIVILEGES ... WITH GRANT OPTION
    /// (with `replication`: on the primary only). Default `[("tessera", "tessera")]`.
    pub users: Vec<(String, String)>,
    /// Databases created at start (with `replication`: on the primary only).
    /// Default `["test", "sbtest"]`.
    pub databases: Vec<String>,
    /// Extra mariadbd arguments, appended last (so they override ours).
    pub extra_args: Vec<String>,
    /// Keep the data dirs when the sandbox is dropped (default false: removed).
    pub keep_on_drop: bool,
    /// Enable the binary log (`--log-bin`, ROW format, `--log-slave-updates`) instead of
    /// `--skip-log-bin`. Implied by `replication`. Default false.
    pub binlog: bool,
    /// GTID replication: `s0` is the primary and every other server a `--read-only` replica
    /// of it (`MASTER_USE_GTID=slave_pos`), all with the binary log on. Users and databases
    /// are created on the primary only, together with the replication account
    /// [`crate::REPL_USER`], and reach the replicas through replication;
    /// [`crate::Sandbox::start`] returns once every replica has caught up. Needs
    /// `servers >= 2`, and no user in `users` may be named [`crate::REPL_USER`]. Default false.
    pub replication: bool,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        SandboxOptions {
            servers: 1,
            base_dir: None,
            users: vec![("tessera".to_string(), "tessera".to_string())],
            databases: vec!["test".to_string(), "sbtest".to_string()],
            extra_args: Vec::new(),
            keep_on_drop: false,
            binlog: false,
            replication: false,
        }
    }
}

impl SandboxOptions {
    /// Rejects options that cannot work, before anything is created on disk.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.servers == 0 {
            return Err(SandboxError::InvalidOptions("servers must be at least 1".to_string()));
        }
        if let Some((name, _)) = self.users.iter().find(|(n, _)| n.is_empty()) {
            return Err(SandboxError::InvalidOptions(format!("user name {name:?} is empty")));
        }
        if let Some(db) = self.databases.iter().find(|d| d.is_empty()) {
            return Err(SandboxError::InvalidOptions(format!("database name {db:?} is empty")));
        }
        self.validate_replication()
    }

    fn validate_replication(&self) -> Result<()> {
        if !self.replication {
            return Ok(());
        }
        if self.servers < 2 {
            return Err(SandboxError::InvalidOptions(format!(
                "replication needs at least 2 servers (a primary and a replica), got {}",
                self.servers
            )));
        }
        if self.users.iter().any(|(n, _)| n == REPL_USER) {
            return Err(SandboxError::InvalidOptions(format!(
                "user {REPL_USER:?} is reserved for the replication account"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_documented_ones() {
        let o = SandboxOptions::default();
        assert_eq!(o.servers, 1);
        assert!(o.base_dir.is_none());
        assert_eq!(o.users, vec![("tessera".into(), "tessera".into())]);
        assert_eq!(o.databases, vec!["test".to_string(), "sbtest".to_string()]);
        assert!(o.extra_args.is_empty());
        assert!(!o.keep_on_drop);
        assert!(!o.binlog);
        assert!(!o.replication);
        assert!(o.validate().is_ok());
    }

    #[test]
    fn zero_servers_is_rejected() {
        let o = SandboxOptions {
            servers: 0,
            ..Default::default()
        };
        assert!(matches!(o.validate(), Err(SandboxError::InvalidOptions(_))));
    }

    #[test]
    fn empty_names_are_rejected() {
        let o = SandboxOptions {
            users: vec![(String::new(), "x".into())],
            ..Default::default()
        };
        assert!(o.validate().is_err());
        let o = SandboxOptions {
            databases: vec![String::new()],
            ..Default::default()
        };
        assert!(o.validate().is_err());
    }

    #[test]
    fn replication_needs_a_replica_and_the_repl_name() {
        for servers in [0, 1] {
            let o = SandboxOptions {
                servers,
                replication: true,
                ..Default::default()
            };
            assert!(
                matches!(o.validate(), Err(SandboxError::InvalidOptions(_))),
                "servers = {servers}"
            );
        }
        for servers in [2, 3] {
            let o = SandboxOptions {
                servers,
                replication: true,
                ..Default::default()
            };
            assert!(o.validate().is_ok(), "servers = {servers}");
        }
        let o = SandboxOptions {
            servers: 2,
            replication: true,
            users: vec![("repl".into(), "other".into())],
            ..Default::default()
        };
        let err = o.validate().unwrap_err();
        assert!(err.to_string().contains("reserved"), "{err}");
        let no_replication = SandboxOptions {
            replication: false,
            ..o
        };
        assert!(no_replication.validate().is_ok());
    }
}
