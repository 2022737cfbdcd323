//! The values Tessera answers for a client's own session, whatever backend connection runs
//! the statement: CONNECTION_ID() is Tessera's connection id (the one `KILL` takes), USER(),
//! SESSION_USER() and SYSTEM_USER() the client's account and address, CURRENT_USER the account
//! it authenticated as, `@@session_track_*` the tracking it asked for.

use super::rewrite::Term;
use super::Session;
use crate::state::quote_string;
use crate::tracking::TRACKING_VARIABLES;

/// The replacement SQL of every session value, ready for [`super::rewrite::replace_terms`].
pub struct SessionInfo {
    connection_id: String,
    user: String,
    /// None when the backend account is the client's own (per-user backend credentials): the
    /// server then answers CURRENT_USER itself, with the host pattern of its account.
    current_user: Option<String>,
    tracking: [String; 3],
}

impl SessionInfo {
    pub fn terms(&self) -> Vec<Term<'_>> {
        let mut terms = vec![
            Term::Call("CONNECTION_ID", &self.connection_id),
            Term::Call("USER", &self.user),
            Term::Call("SESSION_USER", &self.user),
            Term::Call("SYSTEM_USER", &self.user),
        ];
        if let Some(current) = &self.current_user {
            terms.push(Term::CallOrBare("CURRENT_USER", current));
        }
        terms.extend(tracking_terms(&self.tracking));
        terms
    }
}

/// `@@session_track_*` replaced by the values of [`crate::tracking::ClientTracking::values_sql`].
pub fn tracking_terms(values: &[String; 3]) -> impl Iterator<Item = Term<'_>> {
    TRACKING_VARIABLES
        .iter()
        .zip(values)
        .map(|(name, value)| Term::SessionVar(name, value))
}

/// A connection id typed as CONNECTION_ID() is (INT UNSIGNED, 10 digits): a bare literal is
/// typed by its own length, which a `CREATE TABLE ... SELECT` or a client's metadata would see.
fn typed_connection_id(id: u32) -> String {
    match id {
        0..=999_999_999 => format!("COALESCE({id}, 999999999)"),
        _ => id.to_string(),
    }
}

/// An account name typed as USER() is (utf8mb3, 384 characters).
fn account(name: &str) -> String {
    format!("CAST({} AS CHAR(384) CHARACTER SET utf8mb3)", quote_string(name))
}

impl Session {
    /// This session's values, as SQL literals.
    pub fn session_info(&self) -> SessionInfo {
        let own_backend_account = self.gen.users.get(&self.user).is_some_and(|c| c.backend.is_some());
        SessionInfo {
            connection_id: typed_connection_id(self.id),
            user: account(&format!("{}@{}", self.user, self.host)),
            current_user: (!own_backend_account).then(|| account(&format!("{}@%", self.user))),
            tracking: self.tracking.values_sql(self.ctx.tracking_defaults.off_sql()),
        }
    }
}
