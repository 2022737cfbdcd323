//! `SET` statements that assign the client's session tracking (`session_track_*`), such as
//! MariaDB Connector/J's `SET autocommit=1, session_track_schema=1,
//! session_track_system_variables=CONCAT(@@session_track_system_variables, ',autocommit'),
//! names utf8mb4`. Tessera keeps the tracking variables of its backend connections as they
//! are (it needs everything tracked) and records what the client asked for instead; the other
//! assignments of the statement run on a backend as usual.

use super::rewrite::{replace_terms, Term};
use super::Session;
use crate::error::ProxyError;
use crate::tracking::{ClientTracking, TRACKING_VARIABLES};
use tessera_protocol::response::ErrPacket;
use tessera_sql::{set_assignments, unquote, Lexer, TokenKind};

/// One assignment of a SET statement, split into its parts.
#[derive(Debug, PartialEq, Eq)]
struct Assignment<'a> {
    global: bool,
    /// Variable name, lower case.
    name: String,
    value: &'a str,
}

impl Session {
    /// Applies the tracking assignments of `sql` to the session. Returns the statement that
    /// runs the other assignments on a backend, or None when nothing else remains.
    pub async fn set_tracking(&mut self, sql: &str) -> Result<Option<String>, ProxyError> {
        let assignments =
            set_assignments(sql).ok_or_else(|| ProxyError::Unsupported("this form of SET session_track_*".into()))?;
        let mut tracking = self.tracking.clone();
        let mut rest = Vec::new();
        let mut global = false;
        for text in assignments {
            match parse_assignment(text, &mut global) {
                Some(a) if !a.global && TRACKING_VARIABLES.contains(&a.name.as_str()) => {
                    let value = match self.evaluate(a.value, &tracking).await? {
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
                        .map_err(|bad| wrong_value(&a.name, &bad))?;
                }
                _ => rest.push(text),
            }
        }
        tracing::debug!(session = self.id, tracking = ?tracking, "client session tracking set");
        self.tracking = tracking;
        Ok((!rest.is_empty()).then(|| format!("SET {}", rest.join(", "))))
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
        let values = tracking.values_sql();
        let terms: Vec<Term<'_>> = super::info::tracking_terms(&values).collect();
        let expr = replace_terms(expr, &terms, self.state.backslash_escapes()).unwrap_or_else(|| expr.to_string());
        Ok(match self.first_value(&format!("SELECT {expr}")).await? {
            Some(v) => Evaluated::Value(v),
            None => Evaluated::Null,
        })
    }

    /// A tracking list as MariaDB stores it: `*` if it names `*`, else its names lower case,
    /// sorted, each once. Refused as MariaDB refuses it (1193) when an entry is empty or names
    /// a variable the server does not have.
    async fn variable_list(&mut self, list: &str) -> Result<String, ProxyError> {
        let names = list_entries(list).map_err(unknown_variable)?;
        if names.iter().any(|n| n == "*") {
            return Ok("*".into());
        }
        if names.is_empty() {
            return Ok(String::new());
        }
        // One round trip (Connector/J sets a list at every login): the names the server has.
        let quoted: Vec<String> = names.iter().map(|n| crate::state::quote_string(n)).collect();
        let sql = format!(
            "SELECT LOWER(VARIABLE_NAME) FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME IN (UPPER({}))",
            quoted.join("), UPPER(")
        );
        let rows = self.backend_rows(&sql).await?;
        let known: std::collections::BTreeSet<&[u8]> = rows.iter().filter_map(|r| r.first()?.as_deref()).collect();
        if let Some(unknown) = names.iter().find(|n| !known.contains(n.as_bytes())) {
            return Err(unknown_variable(unknown));
        }
        Ok(names.into_iter().collect::<Vec<_>>().join(","))
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
        let (_, rows) = match self.held.as_mut() {
            Some(conn) => conn.query_rows(sql).await?,
            None => {
                let pool = self.ctx.groups[0].primary().pool_for(&self.user).clone();
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

/// MariaDB's 1231 for a value a variable does not take.
/// The entries of a tracking list, trimmed, lower case, sorted and each once; Err: the text
/// MariaDB names for an empty entry (the rest of the list from it).
fn list_entries(list: &str) -> Result<std::collections::BTreeSet<String>, &str> {
    let mut names = std::collections::BTreeSet::new();
    if list.is_empty() {
        return Ok(names);
    }
    let mut rest = list;
    loop {
        let (entry, after) = rest.split_once(',').map_or((rest, None), |(e, a)| (e, Some(a)));
        if entry.trim().is_empty() {
            return Err(rest.trim_start());
        }
        names.insert(entry.trim().to_ascii_lowercase());
        match after {
            Some(a) => rest = a,
            None => return Ok(names),
        }
    }
}

fn unknown_variable(name: &str) -> ProxyError {
    ProxyError::Backend(ErrPacket::new(
        1193,
        "HY000",
        format!("Unknown system variable '{name}'"),
    ))
}

fn wrong_value(name: &str, value: &str) -> ProxyError {
    ProxyError::Backend(ErrPacket::new(
        1231,
        "42000",
        format!("Variable '{name}' can't be set to the value of '{value}'"),
    ))
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
}
