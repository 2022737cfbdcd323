//! The session tracking a client asked for (`session_track_system_variables`,
//! `session_track_schema`, `session_track_state_change`). Tessera's backend connections always
//! track everything, because Tessera learns session state from it; what a client sees in its
//! OK packets is filtered down to what it asked for, as its own server would have sent.

use tessera_protocol::response::{retain_session_state, SessionChange};

/// The tracking variables a client may set.
pub const TRACKING_VARIABLES: [&str; 3] = [
    "session_track_system_variables",
    "session_track_schema",
    "session_track_state_change",
];

/// MariaDB's default for `session_track_system_variables` (10.5 and later).
pub const DEFAULT_TRACKED_VARIABLES: &str =
    "autocommit,character_set_client,character_set_connection,character_set_results,time_zone";

/// The client's tracking as a SET inside a multi-statement query changed it: the OK packets
/// of the query's results from index `from` on carry what it asks for, and the session takes
/// it when the server got that far (`reached`).
#[derive(Debug, Clone)]
pub struct TrackingFrom {
    pub from: usize,
    pub tracking: ClientTracking,
    pub reached: bool,
}

/// Reads the server's defaults for new sessions, in [`ClientTracking::from_row`]'s order, and
/// [`OFF_VARIABLE`] (whether it reads OFF on this server).
pub const GLOBAL_TRACKING_READ: &str = "SELECT @@global.session_track_system_variables, \
     @@global.session_track_schema, @@global.session_track_state_change, @@global.locked_in_memory";

/// A read-only boolean that is OFF on any server not started with `--memlock`: what a
/// client's OFF tracking switch is rewritten to, so it reads `0` as a number and `OFF` as a
/// string (`CONCAT(@@session_track_state_change)`), typed as the variable itself is.
pub const OFF_VARIABLE: &str = "@@global.locked_in_memory";

/// Whether [`OFF_VARIABLE`] reads OFF on every server a connection was opened to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum OffVariable {
    /// No server answered yet: the literal 0 stands in.
    #[default]
    Unknown = 0,
    Off = 1,
    /// Some server has it ON (started with `--memlock`): the literal 0 stands in from now on.
    OnSomewhere = 2,
}

/// The tracking a new session starts with: the servers' GLOBAL values, learnt whenever a
/// backend connection opens and after a client's `SET GLOBAL session_track_*` (shared by
/// every session of the process; MariaDB's defaults until a server said otherwise).
#[derive(Debug, Default)]
pub struct TrackingDefaults {
    learnt: std::sync::RwLock<Option<ClientTracking>>,
    /// An [`OffVariable`], as its `u8`.
    off_variable: std::sync::atomic::AtomicU8,
    /// Clients' `SET GLOBAL session_track_*` whose new defaults are not learnt yet (the
    /// client may have its OK already): sessions that start meanwhile wait for them.
    changing: std::sync::atomic::AtomicUsize,
    changed: tokio::sync::Notify,
}

/// How long a starting session waits for a `SET GLOBAL session_track_*` in flight.
const CHANGE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl TrackingDefaults {
    /// What a session that starts (or resets) now tracks.
    pub fn get(&self) -> ClientTracking {
        self.learnt.read().ok().and_then(|t| t.clone()).unwrap_or_default()
    }

    /// [`TrackingDefaults::get`] once no client's change of the defaults is in flight (or
    /// 5 s have passed): a client that logs in after another's `SET GLOBAL` was
    /// answered tracks the new defaults, as with the server itself.
    pub async fn settled(&self) -> ClientTracking {
        use std::sync::atomic::Ordering;
        let _ = tokio::time::timeout(CHANGE_WAIT, async {
            loop {
                let notified = self.changed.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.changing.load(Ordering::Acquire) == 0 {
                    return;
                }
                notified.await;
            }
        })
        .await;
        self.get()
    }

    /// Marks a change of the defaults in flight until the returned guard drops (after the
    /// new defaults were read back, or the change failed).
    pub fn changing(&self) -> ChangingDefaults<'_> {
        self.changing.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        ChangingDefaults(self)
    }

    /// Records the servers' defaults from a row of [`GLOBAL_TRACKING_READ`].
    pub fn learn(&self, row: &[Option<Vec<u8>>]) {
        if let (Some(tracking), Ok(mut slot)) = (ClientTracking::from_row(row), self.learnt.write()) {
            *slot = Some(tracking);
        }
        let learnt = match row.get(3).and_then(|v| v.as_deref()) {
            Some(b"0") => OffVariable::Off,
            Some(_) => OffVariable::OnSomewhere,
            None => return,
        };
        // OnSomewhere is final; Off only replaces Unknown.
        let _ = self
            .off_variable
            .fetch_max(learnt as u8, std::sync::atomic::Ordering::AcqRel);
    }

    /// What an OFF tracking switch is rewritten to: [`OFF_VARIABLE`] once every server that
    /// answered reads it OFF, else the literal `0` (reads `0`, not `OFF`, as a string).
    pub fn off_sql(&self) -> &'static str {
        match self.off_variable.load(std::sync::atomic::Ordering::Acquire) {
            v if v == OffVariable::Off as u8 => OFF_VARIABLE,
            _ => "0",
        }
    }
}

/// A change of the tracking defaults in flight ([`TrackingDefaults::changing`]).
pub struct ChangingDefaults<'a>(&'a TrackingDefaults);

impl Drop for ChangingDefaults<'_> {
    fn drop(&mut self) {
        self.0.changing.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
        self.0.changed.notify_waiters();
    }
}

/// What one client asked to be told in its OK packets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientTracking {
    /// `session_track_system_variables` as the client set it: names separated by commas, or `*`.
    pub system_variables: String,
    pub schema: bool,
    pub state_change: bool,
}

impl Default for ClientTracking {
    /// MariaDB's defaults for a new session.
    fn default() -> Self {
        ClientTracking {
            system_variables: DEFAULT_TRACKED_VARIABLES.to_string(),
            schema: true,
            state_change: false,
        }
    }
}

impl ClientTracking {
    /// The three values of a row that reads `session_track_system_variables`,
    /// `session_track_schema` and `session_track_state_change`, in that order.
    pub fn from_row(row: &[Option<Vec<u8>>]) -> Option<ClientTracking> {
        let text = |i: usize| row.get(i)?.as_deref().map(|v| String::from_utf8_lossy(v).into_owned());
        let on = |v: String| v == "1" || v.eq_ignore_ascii_case("on");
        Some(ClientTracking {
            system_variables: text(0)?,
            schema: on(text(1)?),
            state_change: on(text(2)?),
        })
    }

    /// True when the client wants everything a backend connection reports (no filtering).
    pub fn wants_everything(&self) -> bool {
        self.schema && self.state_change && self.system_variables.trim() == "*"
    }

    /// True when changes of system variable `name` are reported to the client.
    pub fn tracks_variable(&self, name: &str) -> bool {
        self.system_variables
            .split(',')
            .map(str::trim)
            .any(|v| v == "*" || v.eq_ignore_ascii_case(name))
    }

    /// Whether the client asked for this entry. Entries Tessera never asks backends for
    /// (GTIDs, transaction state) only come when the client enabled them itself: kept.
    pub fn wants(&self, change: &SessionChange) -> bool {
        match change {
            SessionChange::SystemVariable { name, .. } => self.tracks_variable(name),
            SessionChange::Schema(_) => self.schema,
            SessionChange::StateChanged => self.state_change,
            _ => true,
        }
    }

    /// The session_state_info the client gets for a backend's `raw` one.
    pub fn filter(&self, raw: &[u8]) -> Result<Vec<u8>, tessera_protocol::ProtocolError> {
        retain_session_state(raw, |c| self.wants(c))
    }

    /// Sets one tracking variable (`name` lower case, one of [`TRACKING_VARIABLES`]) to
    /// `value` (already evaluated, unquoted); None for `DEFAULT`. Err: the value MariaDB refuses.
    pub fn set(&mut self, name: &str, value: Option<&str>) -> Result<(), String> {
        let defaults = ClientTracking::default();
        match (name, value) {
            ("session_track_system_variables", None) => self.system_variables = defaults.system_variables,
            ("session_track_system_variables", Some(v)) => self.system_variables = v.to_string(),
            ("session_track_schema", v) => self.schema = v.map_or(Ok(defaults.schema), parse_switch)?,
            ("session_track_state_change", v) => {
                self.state_change = v.map_or(Ok(defaults.state_change), parse_switch)?
            }
            _ => return Err(value.unwrap_or("DEFAULT").to_string()),
        }
        Ok(())
    }

    /// The values `SELECT @@name` answers for each of [`TRACKING_VARIABLES`], as SQL, with
    /// `off` for an OFF switch ([`TrackingDefaults::off_sql`]).
    pub fn values_sql(&self, off: &str) -> [String; 3] {
        TRACKING_VARIABLES.map(|name| self.value_sql(name, off))
    }

    /// The value `SELECT @@name` answers, as SQL (a quoted string or a variable). ON is
    /// the backend connection's own variable, which Tessera always sets ON: it reads 1 as a
    /// number and `ON` as a string (`CONCAT(@@session_track_schema)`), as the client's would.
    /// OFF is `off`: [`OFF_VARIABLE`] reads the same way, the fallback literal 0 reads `0`.
    pub fn value_sql(&self, name: &str, off: &str) -> String {
        let switch = |on: bool, var: &str| match on {
            true => format!("@@session.{var}"),
            false => off.to_string(),
        };
        match name {
            "session_track_schema" => switch(self.schema, name),
            "session_track_state_change" => switch(self.state_change, name),
            _ => tessera_sql::quote::quote_string(&self.system_variables),
        }
    }
}

/// ON/OFF as MariaDB accepts it for a boolean variable.
fn parse_switch(v: &str) -> Result<bool, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "on" | "1" | "true" => Ok(true),
        "off" | "0" | "false" => Ok(false),
        _ => Err(v.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_filter_to_the_default_variables_and_schema() {
        let t = ClientTracking::default();
        assert!(!t.wants_everything());
        assert!(t.wants(&SessionChange::Schema("db".into())));
        assert!(!t.wants(&SessionChange::StateChanged));
        let var = |name: &str| SessionChange::SystemVariable {
            name: name.into(),
            value: "x".into(),
        };
        assert!(t.wants(&var("autocommit")) && t.wants(&var("TIME_ZONE")));
        assert!(!t.wants(&var("last_gtid")) && !t.wants(&var("sql_mode")));
    }

    #[test]
    fn the_off_variable_stands_in_once_every_server_read_it_off() {
        let row = |off: &[u8]| {
            vec![
                Some(b"*".to_vec()),
                Some(b"1".to_vec()),
                Some(b"0".to_vec()),
                Some(off.to_vec()),
            ]
        };
        let d = TrackingDefaults::default();
        assert_eq!(d.off_sql(), "0", "no server answered yet");
        d.learn(&row(b"0"));
        assert_eq!(d.off_sql(), OFF_VARIABLE);
        d.learn(&row(b"1"));
        assert_eq!(d.off_sql(), "0", "a server started with --memlock");
        d.learn(&row(b"0"));
        assert_eq!(d.off_sql(), "0", "stays the literal once a server had it ON");
        assert_eq!(
            d.get().system_variables,
            "*",
            "the defaults are learnt from the same row"
        );
    }

    #[test]
    fn setting_values() {
        let mut t = ClientTracking::default();
        t.set("session_track_system_variables", Some("*")).unwrap();
        t.set("session_track_state_change", Some("ON")).unwrap();
        assert!(t.wants_everything());
        assert_eq!(
            t.value_sql("session_track_state_change", OFF_VARIABLE),
            "@@session.session_track_state_change"
        );
        t.set("session_track_schema", Some("0")).unwrap();
        assert_eq!(t.value_sql("session_track_schema", OFF_VARIABLE), OFF_VARIABLE);
        assert_eq!(t.value_sql("session_track_schema", "0"), "0");
        assert!(t.set("session_track_schema", Some("maybe")).is_err());
        t.set("session_track_system_variables", None).unwrap();
        assert_eq!(
            t.value_sql("session_track_system_variables", "0"),
            format!("'{DEFAULT_TRACKED_VARIABLES}'")
        );
    }
}
