//! Loading a configuration from TOML and validating it; every error names the key and the fix.

use crate::model::{Config, MAX_READ_YOUR_WRITES_WAIT_MS};
use crate::schema::{fold_string_key, FunctionKind, KeyType, ListValue, SchemaConfig, TableConfig, TableKind};
use std::collections::HashSet;
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
    validated(config, origin)
}

/// Validates a configuration parsed from `origin`.
pub(crate) fn validated(config: Config, origin: &str) -> Result<Config, ConfigError> {
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
    validate_groups(c)?;
    validate_schemas_of(c)
}

/// Validates only the `[[schemas]]` of a configuration built or changed in code (files are fully
/// validated by [`parse_str`]); `origin` names it in errors.
pub fn validate_schemas(c: &Config, origin: &str) -> Result<(), ConfigError> {
    validate_schemas_of(c).map_err(|(key, problem, fix)| ConfigError::Invalid {
        path: origin.to_string(),
        key,
        problem,
        fix: fix.to_string(),
    })
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
    let plain_name =
        |n: &str| !n.is_empty() && n.len() <= 64 && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !plain_name(&s.xa_database) {
        return Err(invalid(
            "server.xa_database",
            format!("`{}` is not a plain database name", s.xa_database),
            "use letters, digits and underscores (default \"tessera\")",
        ));
    }
    if s.pipeline_lanes > 0 && (s.pipeline_depth == 0 || s.pipeline_statement_bound_ms == 0) {
        return Err(invalid(
            "server.pipeline_depth",
            "pipelining needs a depth and a statement bound of at least 1",
            "raise pipeline_depth / pipeline_statement_bound_ms, or set pipeline_lanes = 0",
        ));
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

fn validate_schemas_of(c: &Config) -> Result<(), Problem> {
    let mut names = HashSet::new();
    for (i, schema) in c.schemas.iter().enumerate() {
        let key = format!("schemas[{i}]");
        if schema.name.is_empty() || !names.insert(schema.name.as_str()) {
            return Err(invalid(
                format!("{key}.name"),
                format!("empty or duplicate schema name `{}`", schema.name),
                "give every [[schemas]] entry a unique name (the database clients use)",
            ));
        }
        validate_shard_entries(c, &key, schema)?;
        if schema.default_shard >= schema.shards.len() {
            return Err(invalid(
                format!("{key}.default_shard"),
                format!(
                    "shard {} does not exist: the schema has {} shards",
                    schema.default_shard,
                    schema.shards.len()
                ),
                "use a shard number from 0 to the number of shards - 1",
            ));
        }
        validate_tables(&key, schema)?;
    }
    Ok(())
}

/// Groups holding shards name the coordinator in XA gtrids (64 bytes in all).
const MAX_SHARD_GROUP_NAME: usize = 30;

fn validate_shard_entries(c: &Config, key: &str, schema: &SchemaConfig) -> Result<(), Problem> {
    if schema.shards.is_empty() {
        return Err(invalid(
            format!("{key}.shards"),
            "no shards",
            "list at least one \"group:database\" entry, e.g. shards = [\"g0:shop_0\", \"g1:shop_1\"]",
        ));
    }
    let mut seen = HashSet::new();
    for (j, (entry, parts)) in schema.shards.iter().zip(schema.shard_entries()).enumerate() {
        let shard_key = format!("{key}.shards[{j}]");
        let Some((group, _)) = parts else {
            return Err(invalid(
                shard_key,
                format!("`{entry}` is not \"group:database\""),
                "write the group name, a colon and the physical database, e.g. \"g0:shop_0\"",
            ));
        };
        if !c.groups.iter().any(|g| g.name == group) {
            let known: Vec<&str> = c.groups.iter().map(|g| g.name.as_str()).collect();
            return Err(invalid(
                shard_key,
                format!("unknown group `{group}` (configured groups: {})", known.join(", ")),
                "use the name of a [[groups]] entry, or add that group",
            ));
        }
        if group.len() > MAX_SHARD_GROUP_NAME {
            return Err(invalid(
                shard_key,
                format!("group name `{group}` is longer than {MAX_SHARD_GROUP_NAME} bytes"),
                "give groups holding shards a shorter name (it is part of XA transaction ids)",
            ));
        }
        if !seen.insert(entry.as_str()) {
            return Err(invalid(
                shard_key,
                format!("`{entry}` is listed twice"),
                "give every shard its own database (a group may hold several)",
            ));
        }
    }
    Ok(())
}

fn validate_tables(key: &str, schema: &SchemaConfig) -> Result<(), Problem> {
    let mut names = HashSet::new();
    for (j, table) in schema.tables.iter().enumerate() {
        let key = format!("{key}.tables[{j}]");
        let (prefix, _) = table.pattern();
        if table.name.is_empty() || prefix.contains('*') {
            return Err(invalid(
                format!("{key}.name"),
                format!("`{}` is not a table name nor a prefix pattern", table.name),
                "write a table name, or a prefix followed by one trailing '*' (e.g. \"sbtest*\")",
            ));
        }
        if !names.insert(table.name.as_str()) {
            return Err(invalid(
                format!("{key}.name"),
                format!("table `{}` has a rule already", table.name),
                "keep one rule per table name or pattern",
            ));
        }
        match table.kind {
            TableKind::Sharded => validate_sharded(&key, table, schema.shards.len())?,
            TableKind::Broadcast | TableKind::Single => validate_unsharded(&key, table, schema.shards.len())?,
        }
    }
    Ok(())
}

/// Broadcast and single tables take no shard function keys; only single tables take `shard`.
fn validate_unsharded(key: &str, t: &TableConfig, shards: usize) -> Result<(), Problem> {
    let given = [
        ("shard_key", t.shard_key.is_some()),
        ("function", t.function.is_some()),
        ("key_type", t.key_type.is_some()),
        ("bounds", t.bounds.is_some()),
        ("lists", t.lists.is_some()),
        ("unit", t.unit.is_some()),
        ("auto_increment", t.auto_increment),
    ];
    let kind = if t.kind == TableKind::Broadcast {
        "broadcast"
    } else {
        "single"
    };
    if let Some((name, _)) = given.iter().find(|(_, set)| *set) {
        return Err(invalid(
            format!("{key}.{name}"),
            format!("`{name}` is set on a {kind} table"),
            "remove it, or make the table kind = \"sharded\"",
        ));
    }
    match (t.kind, t.shard) {
        (TableKind::Broadcast, Some(_)) => Err(invalid(
            format!("{key}.shard"),
            "`shard` is set on a broadcast table (it lives on every shard)",
            "remove it, or make the table kind = \"single\"",
        )),
        (_, Some(s)) if s >= shards => Err(invalid(
            format!("{key}.shard"),
            format!("shard {s} does not exist: the schema has {shards} shards"),
            "use a shard number from 0 to the number of shards - 1",
        )),
        _ => Ok(()),
    }
}

fn validate_sharded(key: &str, t: &TableConfig, shards: usize) -> Result<(), Problem> {
    if matches!(t.shard_key.as_deref(), None | Some("")) {
        return Err(invalid(
            format!("{key}.shard_key"),
            "a sharded table needs a shard key",
            "set shard_key to the column whose value places a row, or make the table broadcast or single",
        ));
    }
    if t.shard.is_some() {
        return Err(invalid(
            format!("{key}.shard"),
            "`shard` is set on a sharded table",
            "remove it (a shard function places the rows), or make the table kind = \"single\"",
        ));
    }
    validate_function_keys(key, t)?;
    if t.auto_increment && t.key_type() != KeyType::Int {
        return Err(invalid(
            format!("{key}.auto_increment"),
            "auto_increment needs an integer shard key",
            "remove auto_increment, or shard by an integer AUTO_INCREMENT column (key_type = \"int\")",
        ));
    }
    match t.function() {
        FunctionKind::Range => validate_bounds(key, t.bounds.as_deref(), shards),
        FunctionKind::List => validate_lists(key, t.lists.as_deref(), t.key_type(), shards),
        FunctionKind::Hash | FunctionKind::Mod | FunctionKind::Date => Ok(()),
    }
}

/// Keys that belong to one function only, and the key types each function accepts.
fn validate_function_keys(key: &str, t: &TableConfig) -> Result<(), Problem> {
    let function = t.function();
    let misplaced = [
        (
            "bounds",
            t.bounds.is_some(),
            FunctionKind::Range,
            "bounds only applies to function = \"range\"",
        ),
        (
            "lists",
            t.lists.is_some(),
            FunctionKind::List,
            "lists only applies to function = \"list\"",
        ),
        (
            "unit",
            t.unit.is_some(),
            FunctionKind::Date,
            "unit only applies to function = \"date\"",
        ),
    ];
    for (name, set, owner, fix) in misplaced {
        if set && function != owner {
            return Err(invalid(
                format!("{key}.{name}"),
                format!("`{name}` is set for function `{}`", function_name(function)),
                fix,
            ));
        }
    }
    if function == FunctionKind::Date && t.unit.is_none() {
        return Err(invalid(
            format!("{key}.unit"),
            "function = \"date\" needs a unit",
            "set unit = \"year\", \"month\" or \"day\"",
        ));
    }
    match (function, t.key_type) {
        (FunctionKind::Mod | FunctionKind::Range, Some(KeyType::String)) => Err(invalid(
            format!("{key}.key_type"),
            format!("function `{}` places integers only", function_name(function)),
            "use function = \"hash\" or \"list\" for a string key, or key_type = \"int\"",
        )),
        (FunctionKind::Date, Some(_)) => Err(invalid(
            format!("{key}.key_type"),
            "function `date` takes a DATE or DATETIME key, not a key_type",
            "remove key_type",
        )),
        _ => Ok(()),
    }
}

fn function_name(f: FunctionKind) -> &'static str {
    match f {
        FunctionKind::Hash => "hash",
        FunctionKind::Mod => "mod",
        FunctionKind::Range => "range",
        FunctionKind::List => "list",
        FunctionKind::Date => "date",
    }
}

fn validate_bounds(key: &str, bounds: Option<&[i64]>, shards: usize) -> Result<(), Problem> {
    let key = format!("{key}.bounds");
    let Some(bounds) = bounds else {
        return Err(invalid(
            key,
            "function = \"range\" needs bounds",
            "list the first value of shards 1, 2, ... (shards - 1 ascending integers), e.g. bounds = [1000, 2000]",
        ));
    };
    if bounds.len() + 1 != shards {
        return Err(invalid(
            key,
            format!("{} bounds for {shards} shards", bounds.len()),
            "give exactly shards - 1 bounds: shard i holds [bounds[i-1], bounds[i])",
        ));
    }
    if let Some(w) = bounds.windows(2).find(|w| w[0] >= w[1]) {
        return Err(invalid(
            key,
            format!("not strictly ascending: {} is followed by {}", w[0], w[1]),
            "sort the bounds in ascending order without repeats",
        ));
    }
    Ok(())
}

fn validate_lists(
    key: &str,
    lists: Option<&[Vec<ListValue>]>,
    key_type: KeyType,
    shards: usize,
) -> Result<(), Problem> {
    let key = format!("{key}.lists");
    let Some(lists) = lists else {
        return Err(invalid(
            key,
            "function = \"list\" needs lists",
            "give one list of values per shard, e.g. lists = [[1, 2], [3]]",
        ));
    };
    if lists.len() != shards {
        return Err(invalid(
            key,
            format!("{} lists for {shards} shards", lists.len()),
            "give exactly one list per shard (an empty list [] for a shard without values)",
        ));
    }
    let mut seen = HashSet::new();
    for (i, value) in lists
        .iter()
        .enumerate()
        .flat_map(|(i, l)| l.iter().map(move |v| (i, v)))
    {
        let canonical = match (key_type, value) {
            (KeyType::Int, ListValue::Int(n)) => n.to_string(),
            (KeyType::String, ListValue::Str(s)) => fold_string_key(s),
            (KeyType::Int, ListValue::Str(_)) => {
                return Err(invalid(
                    format!("{key}[{i}]"),
                    format!("{value} is a string but key_type is \"int\""),
                    "write integers without quotes, or set key_type = \"string\"",
                ))
            }
            (KeyType::String, ListValue::Int(_)) => {
                return Err(invalid(
                    format!("{key}[{i}]"),
                    format!("{value} is an integer but key_type is \"string\""),
                    "quote the values, or set key_type = \"int\"",
                ))
            }
        };
        if !seen.insert(canonical) {
            return Err(invalid(
                format!("{key}[{i}]"),
                format!("{value} is listed twice (string values compare case-insensitively, trailing spaces ignored)"),
                "list every value once, on the shard that holds it",
            ));
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
    use crate::model::IoEngine;

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
    fn the_io_engine_is_auto_unless_one_is_asked_for() {
        assert_eq!(parse_str(GOOD, "t").unwrap().server.io, IoEngine::Auto);
        let epoll = GOOD.replace(
            "listen = \"127.0.0.1:6033\"",
            "listen = \"127.0.0.1:6033\"\nio = \"epoll\"",
        );
        assert_eq!(parse_str(&epoll, "t").unwrap().server.io, IoEngine::Epoll);
        let uring = GOOD.replace(
            "listen = \"127.0.0.1:6033\"",
            "listen = \"127.0.0.1:6033\"\nio = \"uring\"",
        );
        assert_eq!(parse_str(&uring, "t").unwrap().server.io, IoEngine::Uring);
        let e = err_of(&uring.replace("uring", "kqueue"));
        assert!(e.contains("kqueue"), "{e}");
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

    /// [`GOOD`] with a second group and a sharded schema; `tables` is appended to the schema.
    fn sharded(tables: &str) -> String {
        format!(
            r#"{GOOD}
        [[groups]]
        name = "g1"
        user = "tessera"
        primary = {{ address = "127.0.0.1:3316" }}
        [[schemas]]
        name = "shop"
        shards = ["main:shop_0", "main:shop_1", "g1:shop_2", "g1:shop_3"]
        {tables}
        "#
        )
    }

    fn table(lines: &str) -> String {
        sharded(&format!("[[schemas.tables]]\n{lines}"))
    }

    /// The error of `text`, checked to name `key` and to contain `words` (problem or fix).
    fn refused(text: &str, key: &str, words: &[&str]) {
        let e = err_of(text);
        assert!(e.contains(&format!("`{key}`")) && e.contains("; fix: "), "{key}: {e}");
        for w in words {
            assert!(e.contains(w), "{key}: `{w}` missing in {e}");
        }
    }

    #[test]
    fn sharded_schemas_parse_with_defaults() {
        let text = sharded(
            r#"default_shard = 1
        [[schemas.tables]]
        name = "orders"
        shard_key = "customer_id"
        [[schemas.tables]]
        name = "sbtest*"
        shard_key = "id"
        function = "range"
        bounds = [1000, 2000, 3000]
        [[schemas.tables]]
        name = "regions"
        shard_key = "code"
        function = "list"
        key_type = "string"
        lists = [["de", "at"], ["fr"], [], ["it "]]
        [[schemas.tables]]
        name = "events"
        shard_key = "day"
        function = "date"
        unit = "month"
        [[schemas.tables]]
        name = "countries"
        kind = "broadcast"
        [[schemas.tables]]
        name = "audit"
        kind = "single"
        shard = 3"#,
        );
        let c = parse_str(&text, "t").unwrap();
        let s = &c.schemas[0];
        assert_eq!(
            (s.name.as_str(), s.shards.len(), s.default_shard, s.tables.len()),
            ("shop", 4, 1, 6)
        );
        assert_eq!(s.tables[0].function(), FunctionKind::Hash);
        assert_eq!(s.tables[0].key_type(), KeyType::Int);
        assert_eq!(s.tables[3].unit, Some(crate::schema::DateUnit::Month));
        assert!(parse_str(GOOD, "t").unwrap().schemas.is_empty());
        let named_like_a_shard = sharded("").replace("name = \"shop\"", "name = \"shop_0\"");
        assert!(
            parse_str(&named_like_a_shard, "t").is_ok(),
            "a schema may share its name with a shard's database"
        );
    }

    #[test]
    fn shard_entry_errors() {
        let e = err_of(&sharded("").replace("g1:shop_2", "g7:shop_2"));
        assert!(
            e.contains("`schemas[0].shards[2]`") && e.contains("unknown group `g7`"),
            "{e}"
        );
        assert!(e.contains("configured groups: main, g1") && e.contains("fix:"), "{e}");
        refused(
            &sharded("").replace("g1:shop_2", "shop_2"),
            "schemas[0].shards[2]",
            &["group:database", "g0:shop_0"],
        );
        refused(
            &sharded("").replace("g1:shop_3", "g1:shop_2"),
            "schemas[0].shards[3]",
            &["twice", "own database"],
        );
        let none = sharded("").replace(r#"["main:shop_0", "main:shop_1", "g1:shop_2", "g1:shop_3"]"#, "[]");
        refused(&none, "schemas[0].shards", &["no shards", "at least one"]);
        refused(
            &sharded("default_shard = 4"),
            "schemas[0].default_shard",
            &["4 does not exist", "from 0"],
        );
        let twice = format!("{}\n[[schemas]]\nname = \"shop\"\nshards = [\"main:x\"]", sharded(""));
        refused(
            &twice,
            "schemas[1].name",
            &["duplicate schema name `shop`", "unique name"],
        );
    }

    #[test]
    fn table_rule_errors() {
        let two = table("name = \"t\"\nkind = \"broadcast\"\n[[schemas.tables]]\nname = \"t\"\nkind = \"single\"");
        refused(
            &two,
            "schemas[0].tables[1].name",
            &["`t` has a rule already", "one rule"],
        );
        refused(
            &table("name = \"a*b*\"\nkind = \"broadcast\""),
            "schemas[0].tables[0].name",
            &["trailing '*'"],
        );
        refused(
            &table("name = \"t\""),
            "schemas[0].tables[0].shard_key",
            &["needs a shard key", "broadcast or single"],
        );
        let keyed_broadcast = table("name = \"t\"\nkind = \"broadcast\"\nshard_key = \"id\"");
        refused(
            &keyed_broadcast,
            "schemas[0].tables[0].shard_key",
            &["broadcast table", "remove it"],
        );
        let fn_single = table("name = \"t\"\nkind = \"single\"\nfunction = \"mod\"");
        refused(&fn_single, "schemas[0].tables[0].function", &["single table"]);
        refused(
            &table("name = \"t\"\nkind = \"single\"\nshard = 4"),
            "schemas[0].tables[0].shard",
            &["4 does not exist"],
        );
        refused(
            &table("name = \"t\"\nkind = \"broadcast\"\nshard = 1"),
            "schemas[0].tables[0].shard",
            &["every shard"],
        );
        refused(
            &table("name = \"t\"\nshard_key = \"id\"\nshard = 1"),
            "schemas[0].tables[0].shard",
            &["sharded table"],
        );
        assert!(parse_str(&table("name = \"*\"\nkind = \"broadcast\""), "t").is_ok());
    }

    #[test]
    fn range_and_list_errors() {
        let range = |bounds: &str| {
            table(&format!(
                "name = \"t\"\nshard_key = \"id\"\nfunction = \"range\"\n{bounds}"
            ))
        };
        let key = "schemas[0].tables[0].bounds";
        refused(&range(""), key, &["needs bounds", "shards - 1"]);
        refused(
            &range("bounds = [1, 2]"),
            key,
            &["2 bounds for 4 shards", "exactly shards - 1"],
        );
        refused(&range("bounds = [1, 3, 3]"), key, &["3 is followed by 3", "ascending"]);
        refused(&range("bounds = [5, 3, 7]"), key, &["not strictly ascending"]);
        assert!(parse_str(&range("bounds = [-5, 0, 7]"), "t").is_ok());

        let list = |lists: &str| {
            table(&format!(
                "name = \"t\"\nshard_key = \"id\"\nfunction = \"list\"\n{lists}"
            ))
        };
        let key = "schemas[0].tables[0].lists";
        refused(&list(""), key, &["needs lists", "one list of values per shard"]);
        refused(
            &list("lists = [[1], [2]]"),
            key,
            &["2 lists for 4 shards", "empty list"],
        );
        refused(
            &list("lists = [[1], [2], [3, 1], []]"),
            &format!("{key}[2]"),
            &["1 is listed twice", "once"],
        );
        refused(
            &list("lists = [[1], [\"2\"], [3], []]"),
            &format!("{key}[1]"),
            &["is a string", "without quotes"],
        );
        let strings = |lists: &str| list(&format!("key_type = \"string\"\n{lists}"));
        refused(
            &strings("lists = [[\"a\"], [1], [], []]"),
            &format!("{key}[1]"),
            &["is an integer", "quote"],
        );
        refused(
            &strings("lists = [[\"Ab\"], [], [\"aB  \"], []]"),
            &format!("{key}[2]"),
            &["listed twice"],
        );
        assert!(
            parse_str(&strings("lists = [[\"a\"], [\"á\"], [], []]"), "t").is_ok(),
            "accents differ"
        );
    }

    #[test]
    fn function_key_errors() {
        let sharded_t = |more: &str| table(&format!("name = \"t\"\nshard_key = \"id\"\n{more}"));
        let key = |k: &str| format!("schemas[0].tables[0].{k}");
        refused(
            &sharded_t("function = \"date\""),
            &key("unit"),
            &["needs a unit", "\"month\""],
        );
        refused(
            &sharded_t("unit = \"day\""),
            &key("unit"),
            &["function `hash`", "only applies to function = \"date\""],
        );
        refused(
            &sharded_t("bounds = [1, 2, 3]"),
            &key("bounds"),
            &["only applies to function = \"range\""],
        );
        refused(
            &sharded_t("function = \"mod\"\nlists = []"),
            &key("lists"),
            &["function `mod`", "\"list\""],
        );
        for f in ["\"mod\"", "\"range\"\nbounds = [1, 2, 3]"] {
            let text = sharded_t(&format!("key_type = \"string\"\nfunction = {f}"));
            refused(
                &text,
                &key("key_type"),
                &["places integers only", "\"hash\" or \"list\""],
            );
        }
        refused(
            &sharded_t("function = \"date\"\nunit = \"day\"\nkey_type = \"int\""),
            &key("key_type"),
            &["DATE"],
        );
        assert!(parse_str(&sharded_t("key_type = \"string\""), "t").is_ok());
    }

    #[test]
    fn unknown_names_are_syntax_errors_listing_the_choices() {
        let sharded_t = |more: &str| err_of(&table(&format!("name = \"t\"\nshard_key = \"id\"\n{more}")));
        for (line, choices) in [
            ("function = \"crc\"", "`hash`, `mod`, `range`, `list`, `date`"),
            ("kind = \"replicated\"", "`sharded`, `broadcast`, `single`"),
            ("key_type = \"text\"", "`int` or `string`"),
            ("function = \"date\"\nunit = \"week\"", "`year`, `month`, `day`"),
        ] {
            let e = sharded_t(line);
            assert!(
                e.contains(line.lines().last().unwrap_or(line)) && e.contains(choices),
                "{e}"
            );
        }
        let e = sharded_t("shardkey = \"id\"");
        assert!(e.contains("unknown field `shardkey`"), "{e}");
        let e = sharded_t("function = \"list\"\nlists = [[1.5], [], [], []]");
        assert!(e.contains("expected an integer"), "{e}");
    }

    #[test]
    fn validate_schemas_checks_configs_built_in_code() {
        let mut c = parse_str(&sharded(""), "t").unwrap();
        assert!(validate_schemas(&c, "built").is_ok());
        c.schemas[0].default_shard = 9;
        let e = validate_schemas(&c, "built").unwrap_err().to_string();
        assert!(e.starts_with("built: `schemas[0].default_shard`"), "{e}");
    }
}
