//! Loading a configuration from TOML and validating it; every error names the key and the fix.

use crate::model::{Config, MAX_READ_YOUR_WRITES_WAIT_MS};
use std::net::ToSocketAddrs;
use std::path::Path;
use thiserror::Error;

/// Why a configuration was refused.
#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path}: {message}")]
    Syntax { path: String, message: String },
    #[error("{path}: `{key}`: {problem}; fix: {fix}")]
    Invalid {
        path: String,
        key: String,
        problem: String,
        fix: String,
    },
}

/// Reads and validates a TOML configuration file.
pub fn load_file(path: &Path) -> Result<Config, ConfigError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: shown.clone(),
        source,
    })?;
    parse_str(&text, &shown)
}

/// Parses and validates TOML text; `origin` names it in errors.
pub fn parse_str(text: &str, origin: &str) -> Result<Config, ConfigError> {
    let config: Config = toml::from_str(text).map_err(|e| ConfigError::Syntax {
        path: origin.to_string(),
        message: e.to_string(),
    })?;
    validate(&config).map_err(|(key, problem, fix)| ConfigError::Invalid {
        path: origin.to_string(),
        key,
        problem,
        fix: fix.to_string(),
    })?;
    Ok(config)
}

type Problem = (String, String, &'static str);

fn invalid(key: impl Into<String>, problem: impl Into<String>, fix: &'static str) -> Problem {
    (key.into(), problem.into(), fix)
}

fn validate(c: &Config) -> Result<(), Problem> {
    validate_server(c)?;
    validate_pool(c)?;
    validate_users(c)?;
    validate_groups(c)
}

fn validate_server(c: &Config) -> Result<(), Problem> {
    let s = &c.server;
    if s.listen.to_socket_addrs().is_err() {
        return Err(invalid(
            "server.listen",
            format!("`{}` is not host:port", s.listen),
            "write e.g. \"127.0.0.1:6033\"",
        ));
    }
    if !["mysql_native_password", "caching_sha2_password"].contains(&s.default_auth_plugin.as_str()) {
        return Err(invalid(
            "server.default_auth_plugin",
            format!("unknown plugin `{}`", s.default_auth_plugin),
            "use mysql_native_password or caching_sha2_password",
        ));
    }
    if s.tls_cert.is_some() != s.tls_key.is_some() {
        return Err(invalid(
            "server.tls_cert",
            "tls_cert and tls_key must be given together",
            "set both or neither",
        ));
    }
    if s.require_tls && s.tls_cert.is_none() {
        return Err(invalid(
            "server.require_tls",
            "TLS is required but no certificate is set",
            "set tls_cert and tls_key",
        ));
    }
    if s.max_allowed_packet < 1024 || s.max_allowed_packet > 1 << 30 {
        return Err(invalid(
            "server.max_allowed_packet",
            "out of range",
            "use a value between 1024 and 1073741824",
        ));
    }
    if s.max_connections == 0 {
        return Err(invalid("server.max_connections", "must be at least 1", "raise it"));
    }
    Ok(())
}

fn validate_pool(c: &Config) -> Result<(), Problem> {
    let p = &c.pool;
    if p.max_size == 0 {
        return Err(invalid("pool.max_size", "must be at least 1", "raise it"));
    }
    if p.min_idle > p.max_size {
        return Err(invalid(
            "pool.min_idle",
            "is larger than pool.max_size",
            "lower min_idle or raise max_size",
        ));
    }
    if p.prepared_cache_size == 0 {
        return Err(invalid(
            "pool.prepared_cache_size",
            "must be at least 1",
            "raise it (e.g. 256)",
        ));
    }
    for (key, v) in [
        ("pool.connect_timeout_ms", p.connect_timeout_ms),
        ("pool.checkout_timeout_ms", p.checkout_timeout_ms),
    ] {
        if v == 0 {
            return Err(invalid(key, "must be positive", "give a timeout in milliseconds"));
        }
    }
    Ok(())
}

fn validate_users(c: &Config) -> Result<(), Problem> {
    if c.users.is_empty() {
        return Err(invalid(
            "users",
            "no users are defined",
            "add a [[users]] table with name and password",
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for (i, u) in c.users.iter().enumerate() {
        let key = format!("users[{i}]");
        if u.name.is_empty() || !seen.insert(u.name.as_str()) {
            return Err(invalid(
                format!("{key}.name"),
                "empty or duplicate user name",
                "give every user a unique name",
            ));
        }
        match (&u.password, &u.password_hash) {
            (Some(_), Some(_)) => {
                return Err(invalid(key, "both password and password_hash are set", "keep only one"));
            }
            (None, Some(h)) if is_native_hash(h) => {}
            (None, Some(_)) => {
                return Err(invalid(
                    format!("{key}.password_hash"),
                    "not a mysql_native_password hash",
                    "use \"*\" followed by 40 hex digits, as SELECT PASSWORD('...') prints",
                ));
            }
            _ => {}
        }
        if u.backend_password.is_some() && u.backend_user.is_none() {
            return Err(invalid(
                format!("{key}.backend_password"),
                "backend_password without backend_user",
                "add backend_user (the MariaDB account this user's statements run as), or remove backend_password",
            ));
        }
        if !CONSISTENCY_LEVELS.contains(&u.read_consistency.as_str()) {
            return Err(invalid(
                format!("{key}.read_consistency"),
                format!("unknown level `{}`", u.read_consistency),
                "use eventual, session, global or strong",
            ));
        }
    }
    Ok(())
}

/// The read consistency levels a user or session may choose.
pub const CONSISTENCY_LEVELS: [&str; 4] = ["eventual", "session", "global", "strong"];

fn is_native_hash(h: &str) -> bool {
    let hex = h.strip_prefix('*').unwrap_or(h);
    hex.len() == 40 && hex.chars().all(|c| c.is_ascii_hexdigit())
}

fn validate_groups(c: &Config) -> Result<(), Problem> {
    if c.groups.is_empty() {
        return Err(invalid(
            "groups",
            "no backend group is defined",
            "add a [[groups]] table with a primary",
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for (i, g) in c.groups.iter().enumerate() {
        if g.name.is_empty() || !seen.insert(g.name.as_str()) {
            return Err(invalid(
                format!("groups[{i}].name"),
                "empty or duplicate group name",
                "name every group uniquely",
            ));
        }
        let servers = std::iter::once(("primary".to_string(), &g.primary)).chain(
            g.replicas
                .iter()
                .enumerate()
                .map(|(j, r)| (format!("replicas[{j}]"), r)),
        );
        if g.monitor_interval_ms < 100 {
            return Err(invalid(
                format!("groups[{i}].monitor_interval_ms"),
                "below 100 ms",
                "check servers at most 10 times a second (default 1000)",
            ));
        }
        if g.read_your_writes_wait_ms > MAX_READ_YOUR_WRITES_WAIT_MS {
            return Err(invalid(
                format!("groups[{i}].read_your_writes_wait_ms"),
                format!("above {MAX_READ_YOUR_WRITES_WAIT_MS} ms"),
                "let a read wait for a replica a few hundred ms at most; longer, the primary answers sooner",
            ));
        }
        let mut addresses = std::collections::HashSet::new();
        for (key, s) in servers {
            if !addresses.insert(s.address.as_str()) {
                return Err(invalid(
                    format!("groups[{i}].{key}.address"),
                    format!("`{}` appears twice in the group", s.address),
                    "list each server once",
                ));
            }
            if !valid_address(&s.address) {
                return Err(invalid(
                    format!("groups[{i}].{key}.address"),
                    format!("`{}` is not host:port nor unix:/path", s.address),
                    "write e.g. \"127.0.0.1:3306\" or \"unix:/run/mysqld/mysqld.sock\"",
                ));
            }
        }
    }
    Ok(())
}

fn valid_address(a: &str) -> bool {
    if let Some(path) = a.strip_prefix("unix:") {
        return path.starts_with('/');
    }
    match a.rsplit_once(':') {
        Some((host, port)) => !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
        [server]
        listen = "127.0.0.1:6033"
        [pool]
        max_size = 8
        [[users]]
        name = "app"
        password = "secret"
        [[users]]
        name = "ro"
        password_hash = "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19"
        [[groups]]
        name = "main"
        user = "tessera"
        password = "tessera"
        primary = { address = "127.0.0.1:3306" }
    "#;

    #[test]
    fn good_config_parses_with_defaults() {
        let c = parse_str(GOOD, "t.toml").unwrap();
        assert_eq!(c.pool.max_size, 8);
        assert_eq!(c.pool.prepared_cache_size, 256);
        assert_eq!(c.groups[0].primary_read_weight(), 1);
        assert!(
            !format!("{:?}", c).contains("secret"),
            "passwords never in Debug output"
        );
    }

    fn err_of(text: &str) -> String {
        parse_str(text, "t.toml").unwrap_err().to_string()
    }

    #[test]
    fn errors_name_key_and_fix() {
        let e = err_of(&GOOD.replace("127.0.0.1:3306", "nohost"));
        assert!(e.contains("groups[0].primary.address") && e.contains("fix:"), "{e}");
        assert!(parse_str(&GOOD.replace("127.0.0.1:3306", "unix:/run/mysqld.sock"), "t").is_ok());
        let e = err_of(&GOOD.replace("127.0.0.1:3306", "unix:relative.sock"));
        assert!(e.contains("unix:/path"), "{e}");
        let e = err_of(&GOOD.replace("max_size = 8", "max_size = 0"));
        assert!(e.contains("pool.max_size"), "{e}");
        let e = err_of(&GOOD.replace("*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19", "abc"));
        assert!(e.contains("users[1].password_hash"), "{e}");
        let e = err_of(&GOOD.replace("[pool]", "[pool]\nmax_sise = 3"));
        assert!(e.contains("max_sise"), "{e}");
        let e = err_of("[server]\n");
        assert!(e.contains("`users`"), "{e}");
    }

    #[test]
    fn read_write_splitting_keys() {
        let with_replicas = GOOD.replace(
            "primary = { address = \"127.0.0.1:3306\" }",
            "primary = { address = \"127.0.0.1:3306\" }\nreplicas = [{ address = \"127.0.0.1:3307\", weight = 3 }, { address = \"127.0.0.1:3308\" }]",
        );
        let c = parse_str(&with_replicas, "t").unwrap();
        let g = &c.groups[0];
        assert_eq!(
            g.primary_read_weight(),
            0,
            "with replicas the primary takes no reads by default"
        );
        assert_eq!(g.replicas[0].replica_read_weight(), 3);
        assert_eq!(g.replicas[1].replica_read_weight(), 1);
        assert_eq!((g.max_replica_lag_s, g.monitor_interval_ms), (10, 1000));
        assert!(c.users[0].read_write_split);
        assert_eq!(c.users[0].read_consistency, "global");
        let primary_reads = with_replicas.replace(
            "{ address = \"127.0.0.1:3306\" }",
            "{ address = \"127.0.0.1:3306\", weight = 2 }",
        );
        assert_eq!(
            parse_str(&primary_reads, "t").unwrap().groups[0].primary_read_weight(),
            2
        );

        let e = err_of(&with_replicas.replace("127.0.0.1:3308", "127.0.0.1:3306"));
        assert!(
            e.contains("groups[0].replicas[1].address") && e.contains("twice"),
            "{e}"
        );
        let e = err_of(&GOOD.replace(
            "password = \"secret\"",
            "password = \"secret\"\nread_consistency = \"sometimes\"",
        ));
        assert!(e.contains("users[0].read_consistency") && e.contains("eventual"), "{e}");
        let e = err_of(&GOOD.replace(
            "password = \"tessera\"",
            "password = \"tessera\"\nmonitor_interval_ms = 5",
        ));
        assert!(e.contains("monitor_interval_ms"), "{e}");
        assert_eq!(g.read_your_writes_wait_ms, 0, "no wait unless configured");
        let waits = |ms: u64| {
            GOOD.replace(
                "password = \"tessera\"",
                &format!("password = \"tessera\"\nread_your_writes_wait_ms = {ms}"),
            )
        };
        let c = parse_str(&waits(250), "t").unwrap();
        assert_eq!(c.groups[0].read_your_writes_wait().as_millis(), 250);
        let e = err_of(&waits(60_000));
        assert!(e.contains("groups[0].read_your_writes_wait_ms"), "{e}");
    }
}
