//! `SET` statements that assign the client's session tracking (`session_track_*`), such as
//! MariaDB Connector/J's `SET autocommit=1, session_track_schema=1,
//! session_track_system_variables=CONCAT(@@session_track_system_variables, ',autocommit'),
//! names utf8mb4`. Tessera keeps the tracking variables of its backend connections as they
//! are (it needs everything tracked) and records what the client asked for instead; the other
//! assignments of the statement run on a backend as usual.

use super::execute::Stmt;
use super::rewrite::{replace_terms, Term};
use super::Session;
use crate::error::{ProxyError, ServerError};
use crate::pool::PooledConn;
use crate::tracking::{ClientTracking, TrackingFrom, GLOBAL_TRACKING_READ, TRACKING_VARIABLES};
use tessera_protocol::response::ErrPacket;
use tessera_sql::{set_assignments, unquote, Lexer, StatementKind, TokenKind};

/// One assignment of a SET statement, split into its parts.
#[derive(Debug, PartialEq, Eq)]
struct Assignment<'a> {
    global: bool,
    /// Variable name, lower case.
    name: String,
    value: &'a str,
}

impl Session {
    /// After a SET GLOBAL of session tracking went through: reads the servers' new defaults,
    /// which sessions that start from now on track (as new connections to the server would).
    pub(super) async fn follow_global_tracking(&mut self, conn: &mut PooledConn, stmts: &[Stmt<'_>]) {
        let sets_defaults =
            |s: &Stmt<'_>| matches!(s.class.kind, StatementKind::Set(_)) && assigns_global_tracking(s.sql);
        if conn.broken || !stmts.iter().any(sets_defaults) {
            return;
        }
        match conn.query_rows(GLOBAL_TRACKING_READ).await {
            Ok((_, rows)) => rows
                .first()
                .into_iter()
                .for_each(|row| self.ctx.tracking_defaults.learn(row)),
            Err(e) => tracing::warn!(session = self.id, error = %e, "could not read the servers' tracking defaults"),
        }
    }

    /// Applies the tracking assignments of `sql` to the session. Returns the statement that
    /// runs the other assignments on a backend, or None when nothing else remains.
    pub async fn set_tracking(&mut self, sql: &str) -> Result<Option<String>, ProxyError> {
        let mut tracking = self.tracking.clone();
        let rest = self.apply_tracking_set(sql, &mut tracking).await?;
        tracing::debug!(session = self.id, tracking = ?tracking, "client session tracking set");
        self.tracking = tracking;
        Ok(rest)
    }

    /// Applies the tracking assignments of the SET `sql` to `tracking` (all or none: an
    /// error leaves it as it was). Returns the SET of the other assignments, if any.
    async fn apply_tracking_set(
        &mut self,
        sql: &str,
        tracking: &mut ClientTracking,
    ) -> Result<Option<String>, ProxyError> {
        let assignments =
            set_assignments(sql).ok_or_else(|| ProxyError::Unsupported("this form of SET session_track_*".into()))?;
        let mut changed = tracking.clone();
        let mut rest = Vec::new();
        let mut global = false;
        for text in assignments {
            match parse_assignment(text, &mut global) {
                Some(a) if !a.global && TRACKING_VARIABLES.contains(&a.name.as_str()) => {
                    self.assign(&mut changed, &a).await?
                }
                _ => rest.push(text),
            }
        }
        *tracking = changed;
        Ok((!rest.is_empty()).then(|| format!("SET {}", rest.join(", "))))
    }

    /// One tracking assignment, its value evaluated and checked as MariaDB checks it.
    async fn assign(&mut self, tracking: &mut ClientTracking, a: &Assignment<'_>) -> Result<(), ProxyError> {
        let value = match self.evaluate(a.value, tracking).await? {
            Evaluated::Default => None,
            Evaluated::Null => return Err(wrong_value(&a.name, "NULL")),
            Evaluated::Value(v) => Some(v),
        };
        let value = match (a.name.as_str(), value) {
            ("session_track_system_variables", Some(list)) => Some(self.variable_list(&list).await?),
            (_, value) => value,
        };
        tracking
            .set(&a.name, value.as_deref())
            .map_err(|bad| wrong_value(&a.name, &bad))
    }

    /// For `SET STATEMENT session_track_x = v, ... FOR <statement>`: the client's tracking
    /// while the statement runs, and the statement without those assignments (the inner
    /// statement alone when no other is left). None when the statement sets no tracking.
    pub async fn statement_tracking(&mut self, sql: &str) -> Result<Option<(ClientTracking, String)>, ProxyError> {
        let Some(parts) = tessera_sql::statement_set_parts(sql) else {
            return Ok(None);
        };
        let mut tracking = self.tracking.clone();
        let mut rest = Vec::new();
        for text in &parts.assignments {
            match parse_assignment(text, &mut false) {
                Some(a) if TRACKING_VARIABLES.contains(&a.name.as_str()) => self.assign(&mut tracking, &a).await?,
                _ => rest.push(*text),
            }
        }
        if rest.len() == parts.assignments.len() {
            return Ok(None);
        }
        let head = match rest.is_empty() {
            true => String::new(),
            false => format!("SET STATEMENT {} FOR", rest.join(", ")),
        };
        let statement = format!("{}{head}{}", &sql[..parts.head.start], &sql[parts.head.end..]);
        Ok(Some((tracking, statement)))
    }

    /// A multi-statement query whose SETs assign the client's tracking, each taken apart here
    /// and replaced by what runs on a backend in its place: the SET of its other assignments,
    /// or `DO 0` (answered as a SET is: an OK, ROW_COUNT() 0). A SET MariaDB would refuse is
    /// replaced by a SIGNAL of the same error, so the server stops the query there. Returns the
    /// query and the tracking from the first such SET's result on (None: that one is refused).
    /// (Values are evaluated before the query runs: one that reads a user variable an earlier
    /// statement of the same query sets reads it as it was.)
    pub async fn tracking_sets_replaced(
        &mut self,
        text: &str,
        stmts: &[Stmt<'_>],
    ) -> Result<(String, Option<TrackingFrom>), ProxyError> {
        let mut query = String::with_capacity(text.len());
        let mut copied = 0;
        let mut tracking = self.tracking.clone();
        let mut from = None;
        for (i, s) in stmts.iter().enumerate() {
            if !matches!(s.class.kind, StatementKind::Set(_)) || !assigns_tracking(s.sql) {
                continue;
            }
            let start = s.sql.as_ptr() as usize - text.as_ptr() as usize;
            query.push_str(&text[copied..start]);
            copied = start + s.sql.len();
            match self.apply_tracking_set(s.sql, &mut tracking).await {
                Ok(rest) => {
                    query.push_str(rest.as_deref().unwrap_or("DO 0"));
                    from.get_or_insert(i);
                }
                Err(ProxyError::Backend(err)) => {
                    query.push_str(&signal_of(&err, self.state.backslash_escapes()));
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        query.push_str(&text[copied..]);
        let later = from.map(|from| TrackingFrom {
            from,
            tracking,
            reached: false,
        });
        Ok((query, later))
    }

    /// The value of an assignment's expression: a literal as written, any other expression
    /// evaluated by a backend (with the client's own tracking values in it).
    async fn evaluate(&mut self, expr: &str, tracking: &ClientTracking) -> Result<Evaluated, ProxyError> {
        let tokens: Vec<_> = Lexer::new(expr).filter(|t| t.is_significant()).collect();
        match tokens.as_slice() {
            [t] if t.is_word("DEFAULT") => return Ok(Evaluated::Default),
            [t] if t.is_word("NULL") => return Ok(Evaluated::Null),
            [t] if t.kind == TokenKind::String => return Ok(Evaluated::Value(unquote(t.text).into_owned())),
            [t] if matches!(t.kind, TokenKind::Word | TokenKind::Number) => {
                return Ok(Evaluated::Value(t.text.to_string()))
            }
            _ => {}
        }
        let values = tracking.values_sql(self.ctx.tracking_defaults.off_sql());
        let terms: Vec<Term<'_>> = super::info::tracking_terms(&values).collect();
        let expr = replace_terms(expr, &terms, self.state.backslash_escapes()).unwrap_or_else(|| expr.to_string());
        Ok(match self.first_value(&format!("SELECT {expr}")).await? {
            Some(v) => Evaluated::Value(v),
            None => Evaluated::Null,
        })
    }

    /// A tracking list as MariaDB stores it: `*` if it ends with `*`, else its names lower
    /// case, sorted, each once. Refused as MariaDB refuses it (1193), naming the first entry
    /// in list order that is empty or names a variable the server does not have.
    async fn variable_list(&mut self, list: &str) -> Result<String, ProxyError> {
        let entries = list_entries(list);
        let names: Vec<&str> = entries
            .iter()
            .filter_map(|e| match e {
                Entry::Name(n) => Some(n.as_str()),
                _ => None,
            })
            .collect();
        // One round trip (Connector/J sets a list at every login): the names the server has.
        let known: std::collections::BTreeSet<Vec<u8>> = if names.is_empty() {
            Default::default()
        } else {
            let quoted: Vec<String> = names.iter().map(|n| crate::state::quote_string(n)).collect();
            let sql = format!(
                "SELECT LOWER(VARIABLE_NAME) FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME IN (UPPER({}))",
                quoted.join("), UPPER(")
            );
            let rows = self.backend_rows(&sql).await?;
            rows.into_iter()
                .filter_map(|r| r.into_iter().next().flatten())
                .collect()
        };
        let mut stored = std::collections::BTreeSet::new();
        let mut all = false;
        for entry in entries {
            match entry {
                Entry::Empty(rest) => return Err(unknown_variable(rest)),
                Entry::All => all = true,
                Entry::Name(n) if !known.contains(n.as_bytes()) => return Err(unknown_variable(&n)),
                Entry::Name(n) => {
                    stored.insert(n);
                }
            }
        }
        Ok(if all {
            "*".into()
        } else {
            stored.into_iter().collect::<Vec<_>>().join(",")
        })
    }

    /// The first column of the first row `sql` answers (None: NULL or no row), read on the
    /// held connection when there is one (a transaction or pin may hold the only one).
    async fn first_value(&mut self, sql: &str) -> Result<Option<String>, ProxyError> {
        let rows = self.backend_rows(sql).await?;
        let value = rows.first().and_then(|r| r.first()).cloned().flatten();
        Ok(value.map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// The rows `sql` answers, read on the held connection when there is one.
    async fn backend_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<Vec<u8>>>>, ProxyError> {
        let (_, rows) = match self.binding.held_mut() {
            Some(conn) => conn.query_rows(sql).await?,
            None => {
                let pool = self.gen.groups[0].primary().pool_for(&self.user).clone();
                let mut conn = pool.checkout(self.flavour(), self.state.schema.is_none()).await?;
                conn.query_rows(sql).await?
            }
        };
        Ok(rows)
    }
}

/// What a tracking assignment's expression came to.
enum Evaluated {
    Default,
    Null,
    Value(String),
}

/// Whether a SET assigns one of the client's own session tracking variables (a session
/// assignment of `session_track_*`); reading one (`SET @v = @@session_track_schema`) does not.
pub fn assigns_tracking(sql: &str) -> bool {
    let Some(assignments) = set_assignments(sql) else {
        return false;
    };
    let mut global = false;
    assignments.into_iter().any(|text| {
        parse_assignment(text, &mut global).is_some_and(|a| !a.global && TRACKING_VARIABLES.contains(&a.name.as_str()))
    })
}

/// Whether a SET assigns the servers' defaults of session tracking (`SET GLOBAL
/// session_track_*`), which new sessions start with.
pub fn assigns_global_tracking(sql: &str) -> bool {
    let Some(assignments) = set_assignments(sql) else {
        return false;
    };
    let mut global = false;
    assignments.into_iter().any(|text| {
        parse_assignment(text, &mut global).is_some_and(|a| a.global && TRACKING_VARIABLES.contains(&a.name.as_str()))
    })
}

/// The session assignments of a SET as (lower-case name, value text), the scope words and
/// `@@` prefixes taken off; empty for anything else.
pub fn session_assignments(sql: &str) -> Vec<(String, &str)> {
    let mut global = false;
    set_assignments(sql)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|text| parse_assignment(text, &mut global))
        .filter(|a| !a.global)
        .map(|a| (a.name, a.value))
        .collect()
}

/// The variables (lower case) a `SET STATEMENT a = 1, b = 2 FOR ...` sets for its inner
/// statement only; empty for anything else.
pub fn statement_only_variables(sql: &str) -> Vec<String> {
    let mut global = false;
    tessera_sql::statement_set_assignments(sql)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|text| parse_assignment(text, &mut global))
        .map(|a| a.name)
        .collect()
}

/// `[GLOBAL|SESSION|LOCAL] name = value`, `@@[scope.]name := value`; `global` carries a scope
/// word over to the following assignments, as MariaDB does. None for other forms (NAMES ...).
fn parse_assignment<'a>(text: &'a str, global: &mut bool) -> Option<Assignment<'a>> {
    let mut rest = text.trim_start();
    loop {
        let word_end = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
        let scope = rest[..word_end].to_ascii_lowercase();
        match scope.as_str() {
            "global" | "persist" | "persist_only" => *global = true,
            "session" | "local" => *global = false,
            _ => break,
        }
        rest = rest[word_end..].trim_start();
    }
    let mut is_global = *global;
    if let Some(var) = rest.strip_prefix("@@") {
        let lower = var.to_ascii_lowercase();
        let (skip, scope_global) = [("global.", true), ("session.", false), ("local.", false)]
            .iter()
            .find(|(p, _)| lower.starts_with(p))
            .map_or((0, is_global), |(p, g)| (p.len(), *g));
        is_global = scope_global;
        rest = &var[skip..];
    }
    let eq = rest.find('=')?;
    let name = rest[..eq]
        .trim_end_matches(':')
        .trim()
        .trim_matches('`')
        .to_ascii_lowercase();
    Some(Assignment {
        global: is_global,
        name,
        value: rest[eq + 1..].trim(),
    })
}

/// One entry of a tracking list, as MariaDB reads it.
#[derive(Debug, PartialEq, Eq)]
enum Entry<'a> {
    /// A variable name, trimmed, lower case (it may be one the server does not have).
    Name(String),
    /// `*`: every variable. MariaDB compares the rest of the text with "*", so only a last
    /// entry with nothing after the star means it; elsewhere `*` is an unknown name.
    All,
    /// An empty entry; MariaDB's error names the rest of the list from it.
    Empty(&'a str),
}

/// The entries of a tracking list in order (an empty list has none).
fn list_entries(list: &str) -> Vec<Entry<'_>> {
    let mut entries = Vec::new();
    if list.is_empty() {
        return entries;
    }
    let mut rest = list;
    loop {
        let (entry, after) = rest.split_once(',').map_or((rest, None), |(e, a)| (e, Some(a)));
        entries.push(match entry.trim() {
            "" => Entry::Empty(rest.trim_start()),
            "*" if after.is_none() && entry.trim_start() == "*" => Entry::All,
            name => Entry::Name(name.to_ascii_lowercase()),
        });
        match after {
            Some(a) => rest = a,
            None => return entries,
        }
    }
}

fn unknown_variable(name: &str) -> ProxyError {
    ServerError::UnknownSystemVariable(name.to_string()).into()
}

/// A statement the server answers with `err` and nothing else (its message cut to the 128
/// characters a SIGNAL takes).
fn signal_of(err: &ErrPacket, backslash_escapes: bool) -> String {
    let message: String = err.message.chars().take(128).collect();
    format!(
        "SIGNAL SQLSTATE {} SET MYSQL_ERRNO = {}, MESSAGE_TEXT = {}",
        crate::state::quote_string(&String::from_utf8_lossy(&err.sql_state)),
        err.code,
        crate::state::quote_string_as(&message, backslash_escapes)
    )
}

/// MariaDB's 1231 for a value a variable does not take.
fn wrong_value(name: &str, value: &str) -> ProxyError {
    ServerError::WrongValueForVariable {
        name: name.to_string(),
        value: value.to_string(),
        hint: "",
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments_with_scopes() {
        let mut global = false;
        let a = parse_assignment("SESSION session_track_schema = 1", &mut global).unwrap();
        assert_eq!(
            (a.global, a.name.as_str(), a.value),
            (false, "session_track_schema", "1")
        );
        let a = parse_assignment("@@session.Session_Track_State_Change:=ON", &mut global).unwrap();
        assert_eq!(
            (a.global, a.name.as_str(), a.value),
            (false, "session_track_state_change", "ON")
        );
        let a = parse_assignment("GLOBAL session_track_schema=0", &mut global).unwrap();
        assert!(a.global && global);
        let a = parse_assignment("session_track_schema=0", &mut global).unwrap();
        assert!(a.global, "GLOBAL carries over");
        let a = parse_assignment("@@local.session_track_schema=0", &mut global).unwrap();
        assert!(!a.global);
        assert_eq!(parse_assignment("names utf8mb4", &mut false), None);
    }

    #[test]
    fn reading_a_tracking_variable_is_not_assigning_it() {
        assert!(assigns_tracking("SET session_track_schema = 0"));
        assert!(assigns_tracking("SET @x = 1, @@session_track_state_change := 1"));
        assert!(assigns_tracking("/*!40101 SET session_track_system_variables = '' */"));
        assert!(!assigns_tracking("SET @save = @@session_track_system_variables"));
        assert!(!assigns_tracking("SET GLOBAL session_track_schema = 0"));
        assert!(!assigns_tracking("SET @a = 'session_track_schema = 1'"));
    }

    #[test]
    fn list_entries_as_mariadb_reads_them() {
        use Entry::*;
        let name = |n: &str| Name(n.to_string());
        assert_eq!(list_entries(""), vec![]);
        assert_eq!(list_entries("Time_Zone, *"), vec![name("time_zone"), All]);
        assert_eq!(list_entries("*,autocommit"), vec![name("*"), name("autocommit")]);
        assert_eq!(list_entries("autocommit,* "), vec![name("autocommit"), name("*")]);
        assert_eq!(list_entries("bogus,,x"), vec![name("bogus"), Empty(",x"), name("x")]);
        assert_eq!(list_entries("a,"), vec![name("a"), Empty("")]);
    }
}
