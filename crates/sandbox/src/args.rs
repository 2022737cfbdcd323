//! Building the mariadbd command line for one server (pure, unit-tested).

use std::path::{Path, PathBuf};

/// Redo log size used both for the template and for every server, so the template's
/// log never has to be resized at start.
pub(crate) const INNODB_LOG_FILE_SIZE: &str = "256M";

/// File names inside each server's data dir.
pub(crate) const SOCKET_FILE: &str = "mysql.sock";
pub(crate) const PID_FILE: &str = "mysqld.pid";
pub(crate) const ERROR_LOG: &str = "error.log";
/// Where mariadbd's own stdout/stderr go (messages printed before the error log opens).
pub(crate) const CONSOLE_LOG: &str = "console.log";
/// Binary log base name (only with `binlog`).
pub(crate) const BINLOG_BASENAME: &str = "mysql-bin";
/// Relay log base name (only on replicas), fixed so it does not depend on the host name.
pub(crate) const RELAY_LOG_BASENAME: &str = "relay-bin";

/// Everything that varies between servers' command lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerSpec {
    pub datadir: PathBuf,
    pub socket: PathBuf,
    pub port: u16,
    pub server_id: u32,
    pub binlog: bool,
    /// A replica: `--read-only` and a relay log in the data dir.
    pub replica: bool,
    pub extra_args: Vec<String>,
}

impl ServerSpec {
    pub(crate) fn pid_file(&self) -> PathBuf {
        self.datadir.join(PID_FILE)
    }

    pub(crate) fn error_log(&self) -> PathBuf {
        self.datadir.join(ERROR_LOG)
    }

    /// The server's own temporary directory, beside its data dir: a MariaDB that starts removes
    /// every `#sql*` file of its tmpdir, so servers sharing /tmp would delete each other's
    /// temporary tables mid-query.
    pub(crate) fn tmpdir(&self) -> PathBuf {
        let name = self
            .datadir
            .file_name()
            .map_or_else(|| "server".into(), |n| n.to_string_lossy().into_owned());
        self.datadir.with_file_name(format!("{name}-tmp"))
    }
}

fn path_arg(flag: &str, p: &Path) -> String {
    format!("--{flag}={}", p.display())
}

/// The full argument list (without the program name). `--no-defaults` must come first;
/// `extra_args` come last so they override anything before them.
pub(crate) fn server_args(spec: &ServerSpec) -> Vec<String> {
    let mut args = vec![
        "--no-defaults".to_string(),
        "--user=root".to_string(),
        path_arg("datadir", &spec.datadir),
        format!("--port={}", spec.port),
        "--bind-address=127.0.0.1".to_string(),
        path_arg("socket", &spec.socket),
        path_arg("pid-file", &spec.pid_file()),
        path_arg("log-error", &spec.error_log()),
        path_arg("tmpdir", &spec.tmpdir()),
        format!("--server-id={}", spec.server_id),
        "--skip-name-resolve".to_string(),
        "--max-connections=4000".to_string(),
        "--innodb-buffer-pool-size=256M".to_string(),
        "--innodb-flush-log-at-trx-commit=2".to_string(),
        format!("--innodb-log-file-size={INNODB_LOG_FILE_SIZE}"),
        "--max-allowed-packet=64M".to_string(),
        "--open-files-limit=65535".to_string(),
    ];
    args.extend(binlog_args(spec));
    args.extend(replica_args(spec));
    args.extend(spec.extra_args.iter().cloned());
    args
}

fn binlog_args(spec: &ServerSpec) -> Vec<String> {
    if !spec.binlog {
        return vec!["--skip-log-bin".to_string()];
    }
    vec![
        path_arg("log-bin", &spec.datadir.join(BINLOG_BASENAME)),
        "--binlog-format=ROW".to_string(),
        "--log-slave-updates".to_string(),
    ]
}

/// Replicas refuse writes from ordinary users; replication itself is configured by SQL
/// (`CHANGE MASTER TO`), which mariadbd remembers in the data dir across restarts.
fn replica_args(spec: &ServerSpec) -> Vec<String> {
    if !spec.replica {
        return Vec::new();
    }
    vec![
        "--read-only".to_string(),
        path_arg("relay-log", &spec.datadir.join(RELAY_LOG_BASENAME)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ServerSpec {
        ServerSpec {
            datadir: PathBuf::from("/tmp/tsb/s0"),
            socket: PathBuf::from("/tmp/tsb/s0/mysql.sock"),
            port: 3307,
            server_id: 42,
            binlog: false,
            replica: false,
            extra_args: vec!["--max-prepared-stmt-count=500".to_string()],
        }
    }

    #[test]
    fn no_defaults_first_and_extra_args_last() {
        let args = server_args(&spec());
        assert_eq!(args[0], "--no-defaults");
        assert_eq!(args.last().unwrap(), "--max-prepared-stmt-count=500");
    }

    #[test]
    fn contains_the_per_server_settings() {
        let args = server_args(&spec());
        for want in [
            "--user=root",
            "--datadir=/tmp/tsb/s0",
            "--port=3307",
            "--bind-address=127.0.0.1",
            "--socket=/tmp/tsb/s0/mysql.sock",
            "--pid-file=/tmp/tsb/s0/mysqld.pid",
            "--log-error=/tmp/tsb/s0/error.log",
            "--tmpdir=/tmp/tsb/s0-tmp",
            "--server-id=42",
            "--skip-name-resolve",
            "--max-connections=4000",
            "--innodb-log-file-size=256M",
            "--skip-log-bin",
        ] {
            assert!(args.iter().any(|a| a == want), "missing {want} in {args:?}");
        }
    }

    #[test]
    fn binlog_replaces_skip_log_bin() {
        let mut s = spec();
        s.binlog = true;
        let args = server_args(&s);
        assert!(!args.iter().any(|a| a == "--skip-log-bin"));
        assert!(args.iter().any(|a| a == "--log-bin=/tmp/tsb/s0/mysql-bin"));
        assert!(args.iter().any(|a| a == "--binlog-format=ROW"));
        assert_eq!(args.last().unwrap(), "--max-prepared-stmt-count=500");
    }

    #[test]
    fn replicas_are_read_only_with_a_relay_log() {
        assert!(!server_args(&spec())
            .iter()
            .any(|a| a == "--read-only" || a.starts_with("--relay-log")));
        let mut s = spec();
        s.binlog = true;
        s.replica = true;
        let args = server_args(&s);
        assert!(args.iter().any(|a| a == "--read-only"));
        assert!(args.iter().any(|a| a == "--relay-log=/tmp/tsb/s0/relay-bin"));
        assert!(args.iter().any(|a| a == "--log-slave-updates"));
        assert_eq!(args.last().unwrap(), "--max-prepared-stmt-count=500");
    }
}
