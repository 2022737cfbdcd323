//! A fleet's configuration in two parts: the document every proxy shares (published in etcd)
//! and the few settings each process keeps for itself (its sockets, threads and TLS files),
//! composed into one [`Config`] and validated whole.

use crate::load::{validated, ConfigError};
use crate::model::Config;

/// The settings each proxy of a fleet keeps for itself: `(table, key, how to set it)`. The
/// shared document may not set them (one value cannot fit every process).
pub const PER_PROCESS_KEYS: [(&str, &str, &str); 7] = [
    ("server", "listen", "--listen ADDR"),
    ("server", "reuse_port", "its --local file"),
    ("server", "worker_threads", "--workers N"),
    ("server", "io", "its --local file"),
    ("server", "tls_cert", "its --local file"),
    ("server", "tls_key", "its --local file"),
    ("admin", "http_listen", "--admin-listen ADDR"),
];

/// A proxy's own settings: a table of [`PER_PROCESS_KEYS`] only.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LocalSettings(toml::Table);

impl LocalSettings {
    /// Parses a `--local` file's text; any key that is not per-process is refused by name.
    pub fn parse(text: &str, origin: &str) -> Result<Self, ConfigError> {
        let table: toml::Table = toml::from_str(text).map_err(|e| syntax(origin, e))?;
        for (section, value) in &table {
            let keys = value
                .as_table()
                .map(|t| t.keys().cloned().collect())
                .unwrap_or_else(Vec::new);
            for key in keys
                .iter()
                .map(String::as_str)
                .chain(value.as_table().is_none().then_some(""))
            {
                if per_process(section, key).is_none() {
                    return Err(invalid(
                        origin,
                        format!("{section}.{key}").trim_end_matches('.'),
                        "is shared by the fleet, not set per process",
                        "publish it with `tessera ctl publish`; a --local file holds only server.listen, \
                         server.reuse_port, server.worker_threads, server.io, server.tls_cert, server.tls_key and admin.http_listen",
                    ));
                }
            }
        }
        Ok(LocalSettings(table))
    }

    /// Sets one per-process key (a command-line option); `value` is TOML-typed by the key.
    pub fn set(&mut self, section: &str, key: &str, value: toml::Value) {
        let table = self
            .0
            .entry(section)
            .or_insert_with(|| toml::Value::Table(Default::default()));
        if let Some(t) = table.as_table_mut() {
            t.insert(key.to_string(), value);
        }
    }

    /// One setting, if given.
    pub fn get(&self, section: &str, key: &str) -> Option<&toml::Value> {
        self.0.get(section)?.get(key)
    }
}

/// Composes the shared document `shared` (named `origin` in errors) with a proxy's own
/// settings, and validates the whole. The shared document may not set a per-process key.
pub fn compose(shared: &str, origin: &str, local: &LocalSettings) -> Result<Config, ConfigError> {
    let mut table: toml::Table = toml::from_str(shared).map_err(|e| syntax(origin, e))?;
    for (section, key, how) in PER_PROCESS_KEYS {
        if table.get(section).and_then(|s| s.get(key)).is_some() {
            return Err(invalid(
                origin,
                &format!("{section}.{key}"),
                "is set per process, so the shared configuration may not set it",
                match how {
                    "its --local file" => "remove it here; set it in each proxy's --local file",
                    _ => "remove it here; set it on each proxy's command line (--listen, --workers, --admin-listen) or in its --local file",
                },
            ));
        }
    }
    for (section, values) in &local.0 {
        let into = table
            .entry(section.clone())
            .or_insert_with(|| toml::Value::Table(Default::default()));
        if let (Some(into), Some(values)) = (into.as_table_mut(), values.as_table()) {
            into.extend(values.clone());
        }
    }
    let config: Config = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| syntax(origin, e))?;
    validated(config, origin)
}

/// The local settings a check of a shared document uses (`tessera ctl publish` validates a
/// document before publishing it): an ephemeral listen address.
pub fn placeholder_local() -> LocalSettings {
    let mut local = LocalSettings::default();
    local.set("server", "listen", toml::Value::String("127.0.0.1:0".into()));
    local
}

fn per_process(section: &str, key: &str) -> Option<&'static str> {
    PER_PROCESS_KEYS
        .iter()
        .find(|(s, k, _)| *s == section && *k == key)
        .map(|(_, _, how)| *how)
}

fn syntax(origin: &str, e: toml::de::Error) -> ConfigError {
    ConfigError::Syntax {
        path: origin.to_string(),
        message: e.to_string(),
    }
}

fn invalid(origin: &str, key: &str, problem: &str, fix: &'static str) -> ConfigError {
    ConfigError::Invalid {
        path: origin.to_string(),
        key: key.to_string(),
        problem: problem.to_string(),
        fix: fix.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHARED: &str = "[[users]]\nname = \"app\"\npassword = \"app\"\n\
        [[groups]]\nname = \"g\"\nuser = \"u\"\nprimary = { address = \"127.0.0.1:1\" }\n";

    #[test]
    fn local_settings_fill_the_shared_document() {
        let mut local = LocalSettings::parse("[server]\nworker_threads = 2\n", "local.toml").expect("local");
        local.set("server", "listen", toml::Value::String("127.0.0.1:7001".into()));
        local.set("admin", "http_listen", toml::Value::String("127.0.0.1:7002".into()));
        let config = compose(SHARED, "etcd v1", &local).expect("composes");
        assert_eq!(config.server.listen, "127.0.0.1:7001");
        assert_eq!(config.server.worker_threads, 2);
        assert_eq!(config.admin.http_listen, "127.0.0.1:7002");
        assert_eq!(config.users[0].name, "app");
    }

    #[test]
    fn a_shared_document_may_not_set_a_per_process_key() {
        let shared = format!("[server]\nlisten = \"127.0.0.1:3306\"\n{SHARED}");
        let e = compose(&shared, "etcd v2", &placeholder_local()).expect_err("refused");
        assert!(e.to_string().contains("`server.listen`: is set per process"), "{e}");
        let shared = format!("[admin]\nhttp_listen = \"127.0.0.1:1\"\n{SHARED}");
        assert!(compose(&shared, "etcd v3", &placeholder_local()).is_err());
    }

    #[test]
    fn a_local_file_may_only_hold_per_process_keys() {
        let e = LocalSettings::parse("[pool]\nmax_size = 3\n", "local.toml").expect_err("refused");
        assert!(e.to_string().contains("`pool.max_size`: is shared by the fleet"), "{e}");
        assert!(LocalSettings::parse("[server]\nio = \"epoll\"\ntls_cert = \"c.pem\"\n", "l").is_ok());
    }

    #[test]
    fn the_composed_whole_is_validated() {
        let shared = SHARED.replace("127.0.0.1:1", "not an address");
        let e = compose(&shared, "etcd v4", &placeholder_local()).expect_err("invalid");
        assert!(e.to_string().starts_with("etcd v4: `groups"), "{e}");
    }
}
