//! Session state that can be replayed on any backend connection: default schema, system
//! variables (as the server reports them through session tracking), user variables and
//! LAST_INSERT_ID. Clients and backend connections each hold one; the difference between the
//! two is what a checkout must send.

use crate::charset;
use std::collections::BTreeMap;
use std::sync::Arc;
use tessera_protocol::response::SessionChange;
pub use tessera_sql::quote::{quote_ident, quote_string, quote_string_as};

/// Replayable session state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionVars {
    pub schema: Option<String>,
    /// System variable name (lowercase) -> value as reported by the server. Shared, copied on
    /// write: a connection synced to a session shares its map, so the check before every
    /// statement that both are equal is a pointer comparison.
    vars: Arc<BTreeMap<String, String>>,
    /// User variable name (lowercase, without @) -> SQL literal that recreates it.
    pub user_vars: BTreeMap<String, String>,
    pub last_insert_id: u64,
    /// `autocommit` is OFF in `vars` (kept with them: read before every statement).
    autocommit_off: bool,
    /// `max_statement_time` is in `vars`: the session set a statement time limit of its own
    /// (kept with them: read before every statement that may go through a lane).
    statement_time: bool,
    /// `sql_mode` in `vars` has `NO_BACKSLASH_ESCAPES` (kept with them: read before every
    /// statement is classified).
    no_backslash_escapes: bool,
}

/// What a checkout must make equal. System variables and the schema always; user variables
/// and LAST_INSERT_ID only for statements that can observe them (syncing them for every
/// statement would cost a round trip whenever sessions differ in state they never read).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncScope {
    pub user_vars: bool,
    pub last_insert_id: bool,
    /// The statement may assign LAST_INSERT_ID() (an insert, LAST_INSERT_ID(expr), a
    /// procedure): the connection's value is made the session's first, in the same write, so
    /// that the value read back afterwards tells whether it assigned one.
    pub writes_last_insert_id: bool,
    /// The statement is one insert or replace that neither reads nor sets LAST_INSERT_ID():
    /// it can assign it only by generating an id, never 0.
    pub generates_ids_only: bool,
}

impl SyncScope {
    pub const ALL: SyncScope = SyncScope {
        user_vars: true,
        last_insert_id: true,
        writes_last_insert_id: true,
        generates_ids_only: false,
    };
}

/// Variables under which a statement's text means something else: the server parses a
/// prepared statement under the values they had at PREPARE and keeps that reading. Character
/// sets come before the collation, which setting them resets.
pub const PARSE_VARIABLES: [&str; 4] = [
    "sql_mode",
    "character_set_client",
    "character_set_connection",
    "collation_connection",
];

/// System variables as one state holds them, shared (see [`SessionVars::vars_copy`]).
pub type SharedVars = Arc<BTreeMap<String, String>>;

/// Whether two sets of system variables parse a statement alike (equal [`PARSE_VARIABLES`];
/// a pointer compare when they are one copy).
pub fn parse_alike(a: &SharedVars, b: &SharedVars) -> bool {
    Arc::ptr_eq(a, b) || PARSE_VARIABLES.iter().all(|k| a.get(*k) == b.get(*k))
}

/// Whether the character set variables among [`PARSE_VARIABLES`] differ.
fn charsets_differ(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> bool {
    PARSE_VARIABLES[1..].iter().any(|k| a.get(*k) != b.get(*k))
}

/// Whether `text` reads as the same statement under `a` and `b`, whose parse variables
/// differ: changed character sets read non-ASCII text and string literals otherwise, and the
/// `sql_mode`s must read it alike (see [`tessera_sql::reads_alike`]).
pub fn text_reads_alike(text: &str, a: &SharedVars, b: &SharedVars) -> bool {
    if charsets_differ(a, b) && (!text.is_ascii() || text.contains(['\'', '"'])) {
        return false;
    }
    let mode = "sql_mode";
    tessera_sql::reads_alike(text, a.get(mode).map(String::as_str), b.get(mode).map(String::as_str))
}

/// The SET that gives a connection holding `have` the parse variables of `want` (a variable
/// `want` lacks is the server's default), parsed under `have`'s `sql_mode`; None when alike.
/// When a character set differs, all three character set variables are set (setting one
/// resets the collation on the server).
pub fn parse_variables_set(want: &BTreeMap<String, String>, have: &BTreeMap<String, String>) -> Option<String> {
    let escapes = !have.get("sql_mode").is_some_and(|m| has_no_backslash_escapes(m));
    let charsets_differ = charsets_differ(want, have);
    let parts: Vec<String> = PARSE_VARIABLES
        .iter()
        .filter(|k| want.get(**k) != have.get(**k) || (charsets_differ && **k != "sql_mode"))
        .map(|k| match want.get(*k) {
            Some(v) => format!("SESSION {k} = {}", variable_literal(k, v, escapes)),
            None => format!("SESSION {k} = DEFAULT"),
        })
        .collect();
    (!parts.is_empty()).then(|| format!("SET {}", parts.join(", ")))
}

/// Whether an `sql_mode` value holds `NO_BACKSLASH_ESCAPES`.
fn has_no_backslash_escapes(mode: &str) -> bool {
    mode.split(',')
        .any(|m| m.trim().eq_ignore_ascii_case("NO_BACKSLASH_ESCAPES"))
}

/// Variables the server reports but that must never be replayed. `timestamp` and
/// `insert_id` are replayed (a fixed clock, a forced next id), and forgotten when they end:
/// see [`SessionVars::remove_var`].
const NOT_REPLAYED: &[&str] = &["last_gtid", "last_insert_id", "identity", "rand_seed1", "rand_seed2"];

impl SessionVars {
    /// The state right after a handshake with collation `collation_id` and default `schema`.
    pub fn after_handshake(collation_id: u8, schema: Option<String>) -> Self {
        let vars = Arc::new(
            charset::handshake_variables(collation_id)
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        SessionVars {
            schema,
            vars,
            ..Default::default()
        }
    }

    /// Applies what a server reported in an OK packet.
    pub fn apply_changes(&mut self, changes: &[SessionChange]) {
        for change in changes {
            match change {
                SessionChange::SystemVariable { name, value } => {
                    let name = name.to_ascii_lowercase();
                    if !NOT_REPLAYED.contains(&name.as_str())
                        && !crate::tracking::TRACKING_VARIABLES.contains(&name.as_str())
                    {
                        self.set_var(name, value.clone());
                    }
                }
                SessionChange::Schema(s) => self.schema = Some(s.clone()).filter(|s| !s.is_empty()),
                _ => {}
            }
        }
    }

    /// The SET statement that turns `current` into `self` within `scope`, if anything differs
    /// (schema excluded: it is changed with COM_INIT_DB).
    pub fn set_statement_from(&self, current: &SessionVars, scope: SyncScope) -> Option<String> {
        // The usual case, equal state, in one ordered pass (no lookups per variable).
        if self.vars == current.vars
            && (!scope.user_vars || self.user_vars == current.user_vars)
            && (!scope.last_insert_id || self.last_insert_id == current.last_insert_id)
        {
            return None;
        }
        let mut parts: Vec<String> = Vec::new();
        // The statement is parsed under the connection's mode, before it changes anything.
        let escapes = current.backslash_escapes();
        for (k, v) in self.vars.iter() {
            if current.vars.get(k) != Some(v) {
                parts.push(format!("SESSION {k} = {}", variable_literal(k, v, escapes)));
            }
        }
        for k in current.vars.keys().filter(|k| !self.vars.contains_key(*k)) {
            parts.push(format!("SESSION {k} = DEFAULT"));
        }
        if scope.user_vars {
            self.user_var_assignments(current, &mut parts);
        }
        if scope.last_insert_id && self.last_insert_id != current.last_insert_id {
            parts.push(format!("SESSION last_insert_id = {}", self.last_insert_id));
        }
        (!parts.is_empty()).then(|| format!("SET {}", parts.join(", ")))
    }

    fn user_var_assignments(&self, current: &SessionVars, parts: &mut Vec<String>) {
        for (k, v) in &self.user_vars {
            if current.user_vars.get(k) != Some(v) {
                parts.push(format!("@{} = {v}", quote_ident(k)));
            }
        }
        for k in current.user_vars.keys().filter(|k| !self.user_vars.contains_key(*k)) {
            parts.push(format!("@{} = NULL", quote_ident(k)));
        }
    }

    /// The schema a checkout must switch to, if it differs.
    pub fn schema_change_from(&self, current: &SessionVars) -> Option<&str> {
        match (&self.schema, &current.schema) {
            (Some(want), have) if have.as_ref() != Some(want) => Some(want),
            _ => None,
        }
    }

    /// Sets one system variable (copying the map first if a connection shares it).
    pub fn set_var(&mut self, name: String, value: String) {
        if self.vars.get(&name) != Some(&value) {
            match name.as_str() {
                "autocommit" => self.autocommit_off = value.eq_ignore_ascii_case("off") || value == "0",
                "max_statement_time" => self.statement_time = true,
                "sql_mode" => self.no_backslash_escapes = has_no_backslash_escapes(&value),
                _ => {}
            }
            Arc::make_mut(&mut self.vars).insert(name, value);
        }
    }

    /// Forgets a variable the session no longer has a value of its own for (an unfixed
    /// `timestamp`, a spent `insert_id`): a connection that still holds one is set back to the
    /// default at its next sync.
    pub fn remove_var(&mut self, name: &str) {
        if self.vars.contains_key(name) {
            Arc::make_mut(&mut self.vars).remove(name);
        }
    }

    /// The system variables (written only through [`SessionVars::set_var`] and the syncs, which
    /// keep the flags read from them with them).
    pub fn vars(&self) -> &BTreeMap<String, String> {
        &self.vars
    }

    /// The system variables' shared copy itself: compared by pointer, and cloned by what keeps
    /// the state it was parsed under (a later change copies the map, leaving this copy as it was).
    pub fn vars_copy(&self) -> &SharedVars {
        &self.vars
    }

    /// Whether both hold equal system variables (a pointer compare when they share the map).
    pub fn same_vars(&self, other: &SessionVars) -> bool {
        self.vars == other.vars
    }

    /// Whether both share one copy of their system variables.
    pub fn shares_vars_with(&self, other: &SessionVars) -> bool {
        Arc::ptr_eq(&self.vars, &other.vars)
    }

    /// Whether a string literal is read with backslash escapes where this state holds: no
    /// `NO_BACKSLASH_ESCAPES` in the `sql_mode` set on it (a connection that never set
    /// `sql_mode` has the server's default, taken to have none).
    pub fn backslash_escapes(&self) -> bool {
        !self.no_backslash_escapes
    }

    /// Whether the session runs in autocommit mode (the default while `vars` do not say OFF).
    pub fn autocommit(&self) -> bool {
        !self.autocommit_off
    }

    /// Whether `max_statement_time` is among the variables (set by the session, to any value).
    pub fn has_statement_time(&self) -> bool {
        self.statement_time
    }

    /// After [`SessionVars::set_statement_from`] found nothing to send: `current` (a
    /// connection's state) shares this map from now on, so the next check is a pointer compare.
    pub fn share_vars_with(&self, current: &mut SessionVars) {
        if !Arc::ptr_eq(&self.vars, &current.vars) {
            current.vars = self.vars.clone();
            current.autocommit_off = self.autocommit_off;
            current.statement_time = self.statement_time;
            current.no_backslash_escapes = self.no_backslash_escapes;
        }
    }

    /// Makes `self` match `target` within `scope` after a successful sync. The database is
    /// not copied: only a COM_INIT_DB that succeeded changes it.
    pub fn sync_to(&mut self, target: &SessionVars, scope: SyncScope) {
        self.vars.clone_from(&target.vars);
        self.autocommit_off = target.autocommit_off;
        self.statement_time = target.statement_time;
        self.no_backslash_escapes = target.no_backslash_escapes;
        if scope.user_vars {
            self.user_vars.clone_from(&target.user_vars);
        }
        if scope.last_insert_id {
            self.last_insert_id = target.last_insert_id;
        }
    }
}

/// The value of variable `name` as SQL read with or without `backslash_escapes`. Session
/// tracking (and `@@name`) report a NULL value of the variables that take one as an empty
/// string, which must be replayed as NULL: no character set or storage engine has an empty name.
/// `system_versioning_asof` reads `DEFAULT` (the current time), a keyword to replay, not a
/// string.
pub fn variable_literal(name: &str, v: &str, backslash_escapes: bool) -> String {
    if v.is_empty() && NULLABLE_BY_EMPTY.contains(&name) {
        return "NULL".into();
    }
    if v == "DEFAULT" && name == "system_versioning_asof" {
        return "DEFAULT".into();
    }
    value_literal(v, backslash_escapes)
}

/// Session variables whose NULL reads back as an empty string, an empty value they refuse.
const NULLABLE_BY_EMPTY: [&str; 5] = [
    "character_set_results",
    "default_tmp_storage_engine",
    "enforce_storage_engine",
    "innodb_ft_user_stopword_table",
    "innodb_tmpdir",
];

/// A system variable value as SQL: numbers bare, NULL bare, everything else quoted (see
/// [`quote_string_as`]).
pub fn value_literal(v: &str, backslash_escapes: bool) -> String {
    let numeric = !v.is_empty()
        && v.strip_prefix('-')
            .unwrap_or(v)
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.')
        && v.chars().filter(|&c| c == '.').count() <= 1
        && !v.ends_with('.');
    if numeric || v == "NULL" {
        v.to_string()
    } else {
        quote_string_as(v, backslash_escapes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn autocommit_follows_the_variable_and_travels_with_a_sync() {
        let mut session = SessionVars::after_handshake(45, None);
        assert!(session.autocommit(), "on by default");
        session.set_var("autocommit".into(), "OFF".into());
        assert!(!session.autocommit());
        let mut conn = SessionVars::after_handshake(45, None);
        conn.sync_to(&session, SyncScope::ALL);
        assert!(!conn.autocommit());
        session.set_var("autocommit".into(), "ON".into());
        assert!(session.autocommit());
        session.share_vars_with(&mut conn);
        assert!(conn.autocommit());
        assert_eq!(conn.vars, session.vars);
    }

    #[test]
    fn a_statement_time_limit_is_known_and_travels_with_a_sync() {
        let mut session = SessionVars::after_handshake(45, None);
        assert!(!session.has_statement_time());
        let mut conn = SessionVars::after_handshake(45, None);
        conn.sync_to(&session, SyncScope::ALL);
        session.set_var("max_statement_time".into(), "5.000000".into());
        assert!(session.has_statement_time());
        assert!(!conn.has_statement_time(), "synced before the limit was set");
        session.share_vars_with(&mut conn);
        assert!(conn.has_statement_time());
        let mut other = SessionVars::after_handshake(45, None);
        other.sync_to(&session, SyncScope::default());
        assert!(other.has_statement_time());
    }

    #[test]
    fn diff_sets_changes_resets_extras_and_skips_equal() {
        let mut client = SessionVars::after_handshake(8, Some("test".into()));
        client.apply_changes(&[
            SessionChange::SystemVariable {
                name: "time_zone".into(),
                value: "+01:00".into(),
            },
            SessionChange::SystemVariable {
                name: "last_gtid".into(),
                value: "0-1-5".into(),
            },
        ]);
        client.user_vars.insert("a".into(), "5".into());
        client.last_insert_id = 7;
        let mut backend = SessionVars::after_handshake(45, None);
        backend.set_var("sql_mode".into(), "ANSI".into());
        backend.user_vars.insert("other".into(), "1".into());
        let set = client.set_statement_from(&backend, SyncScope::ALL).unwrap();
        let narrow = client.set_statement_from(&backend, SyncScope::default()).unwrap();
        assert!(!narrow.contains('@') && !narrow.contains("last_insert_id"), "{narrow}");
        assert!(set.contains("SESSION character_set_client = 'latin1'"), "{set}");
        assert!(set.contains("SESSION time_zone = '+01:00'"), "{set}");
        assert!(set.contains("SESSION sql_mode = DEFAULT"), "{set}");
        assert!(set.contains("@`a` = 5") && set.contains("@`other` = NULL"), "{set}");
        assert!(
            set.contains("last_insert_id = 7") && !set.contains("last_gtid"),
            "{set}"
        );
        assert_eq!(client.schema_change_from(&backend), Some("test"));
        backend.sync_to(&client, SyncScope::ALL);
        assert_eq!(client.set_statement_from(&backend, SyncScope::ALL), None);
        assert_eq!(
            client.schema_change_from(&backend),
            Some("test"),
            "the database changes only with a COM_INIT_DB that succeeded"
        );
        backend.schema = client.schema.clone();
        assert_eq!(client.schema_change_from(&backend), None);
    }

    #[test]
    fn literals() {
        assert_eq!(variable_literal("character_set_results", "", true), "NULL");
        assert_eq!(variable_literal("default_tmp_storage_engine", "", true), "NULL");
        assert_eq!(variable_literal("default_tmp_storage_engine", "Aria", true), "'Aria'");
        assert_eq!(variable_literal("system_versioning_asof", "DEFAULT", true), "DEFAULT");
        assert_eq!(
            variable_literal("default_master_connection", "DEFAULT", true),
            "'DEFAULT'"
        );
        assert_eq!(variable_literal("sql_mode", "", true), "''");
        assert_eq!(value_literal("262144", true), "262144");
        assert_eq!(value_literal("-1.5", true), "-1.5");
        assert_eq!(value_literal("ON", true), "'ON'");
        assert_eq!(value_literal("it's\\", true), "'it''s\\\\'");
        assert_eq!(value_literal("it's\\", false), "'it''s\\'");
        assert_eq!(value_literal("", true), "''");
        assert_eq!(value_literal("1.2.3", true), "'1.2.3'");
        assert_eq!(quote_ident("a`b"), "`a``b`");
    }

    fn vars(pairs: &[(&str, &str)]) -> SharedVars {
        Arc::new(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    #[test]
    fn parse_variables_are_set_and_set_back_whole() {
        let charsets = [
            ("character_set_client", "utf8mb4"),
            ("character_set_connection", "utf8mb4"),
            ("collation_connection", "utf8mb4_unicode_ci"),
        ];
        let have = vars(&charsets);
        let mut nbe = charsets.to_vec();
        nbe.push(("sql_mode", r"NO_BACKSLASH_ESCAPES"));
        let want = vars(&nbe);
        assert_eq!(
            parse_variables_set(&want, &have).as_deref(),
            Some("SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES'")
        );
        assert_eq!(
            parse_variables_set(&have, &want).as_deref(),
            Some("SET SESSION sql_mode = DEFAULT"),
            "a mode never set is the server's default"
        );
        assert_eq!(parse_variables_set(&have, &have), None);
        let latin1 = vars(&[
            ("character_set_client", "utf8mb4"),
            ("character_set_connection", "latin1"),
            ("collation_connection", "utf8mb4_unicode_ci"),
        ]);
        let set = parse_variables_set(&have, &latin1).expect("differs");
        assert_eq!(
            set,
            "SET SESSION character_set_client = 'utf8mb4', SESSION character_set_connection = 'utf8mb4', \
             SESSION collation_connection = 'utf8mb4_unicode_ci'",
            "the collation is set after the character set that resets it"
        );
    }

    #[test]
    fn a_text_reads_alike_unless_a_changed_variable_reads_something_in_it() {
        let base = vars(&[("character_set_connection", "utf8mb4")]);
        let strict = vars(&[
            ("character_set_connection", "utf8mb4"),
            ("sql_mode", "STRICT_ALL_TABLES"),
        ]);
        assert!(text_reads_alike(r"SELECT 'a\nb', `é`", &base, &strict));
        let nbe = vars(&[
            ("character_set_connection", "utf8mb4"),
            ("sql_mode", "NO_BACKSLASH_ESCAPES"),
        ]);
        assert!(text_reads_alike("SELECT c FROM t WHERE id = ?", &base, &nbe));
        assert!(!text_reads_alike(r"SELECT 'a\nb'", &base, &nbe));
        let latin1 = vars(&[("character_set_connection", "latin1")]);
        assert!(text_reads_alike("SELECT c FROM t WHERE id = ?", &base, &latin1));
        assert!(!text_reads_alike("SELECT 'c'", &base, &latin1));
        assert!(!text_reads_alike("SELECT `é` FROM t", &base, &latin1));
    }
}
