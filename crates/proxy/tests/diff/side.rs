//! One side of the comparison (the reference MariaDB, Tessera, or a direct server): a client
//! that reconnects after a broken connection and bounds every statement with a timeout.

use crate::common::stmt::{Outcome, Param, StmtError};
use crate::common::Client;
use std::time::Duration;

/// What a statement answered: an outcome, the server's error, or a broken connection.
pub type Answer = Result<Outcome, StmtError>;

/// How long one statement may take before it counts as broken.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(60);

/// A named connection target with its (re)connecting client.
pub struct Side {
    pub label: String,
    port: u16,
    user: String,
    password: String,
    db: Option<String>,
    client: Option<Client>,
}

impl Side {
    /// A side logging in as `user` into `db`; connects lazily.
    pub fn new(label: &str, port: u16, user: &str, password: &str, db: Option<&str>) -> Side {
        Side {
            label: label.to_string(),
            port,
            user: user.to_string(),
            password: password.to_string(),
            db: db.map(str::to_string),
            client: None,
        }
    }

    /// A side logged in as the sandbox's admin account `tessera`.
    pub fn admin(label: &str, port: u16, db: Option<&str>) -> Side {
        Side::new(label, port, "tessera", "tessera", db)
    }

    async fn client(&mut self) -> Result<&mut Client, StmtError> {
        if self.client.is_none() {
            let connect = Client::connect(self.port, &self.user, &self.password, self.db.as_deref());
            let client = tokio::time::timeout(STATEMENT_TIMEOUT, connect)
                .await
                .map_err(|_| StmtError::Io(format!("{}: login timed out", self.label)))?
                .map_err(StmtError::Server)?;
            self.client = Some(client);
        }
        Ok(self.client.as_mut().expect("connected just above"))
    }

    /// Drops the connection; the next statement logs in again (a fresh session).
    pub fn reset(&mut self) {
        self.client = None;
    }

    /// Forgets the connection after a failure (the next statement reconnects).
    fn settle(&mut self, answer: Answer) -> Answer {
        if matches!(answer, Err(StmtError::Io(_))) {
            self.client = None;
        }
        answer
    }

    /// `sql` over the text protocol (COM_QUERY).
    pub async fn text(&mut self, sql: &str) -> Answer {
        let answer = match self.client().await {
            Ok(c) => tokio::time::timeout(STATEMENT_TIMEOUT, c.query_outcome(sql))
                .await
                .unwrap_or_else(|_| Err(StmtError::Io("statement timed out".into()))),
            Err(e) => Err(e),
        };
        self.settle(answer)
    }

    /// `sql` over the binary protocol: prepare, execute with `params`, close.
    pub async fn binary(&mut self, sql: &str, params: &[Param]) -> Answer {
        let answer = match self.client().await {
            Ok(c) => tokio::time::timeout(STATEMENT_TIMEOUT, c.stmt_run(sql, params))
                .await
                .unwrap_or_else(|_| Err(StmtError::Io("statement timed out".into()))),
            Err(e) => Err(e),
        };
        self.settle(answer)
    }

    /// `sql` over the binary protocol on one prepared statement: executed with `params`, then
    /// with `again` (same parameter types, sent without them as drivers do), then closed. The
    /// second answer is None when the first execution left no usable connection.
    pub async fn binary_twice(&mut self, sql: &str, params: &[Param], again: &[Param]) -> (Answer, Option<Answer>) {
        let client = match self.client().await {
            Ok(c) => c,
            Err(e) => return (self.settle(Err(e)), None),
        };
        let twice = tokio::time::timeout(STATEMENT_TIMEOUT, async {
            let stmt = client.stmt_prepare(sql).await?;
            let first = client.stmt_execute(&stmt, params).await;
            if matches!(first, Err(StmtError::Io(_))) {
                return Ok((first, None));
            }
            let second = client.stmt_execute_again(&stmt, again).await;
            if !matches!(second, Err(StmtError::Io(_))) {
                client.stmt_close(&stmt).await?;
            }
            Ok((first, Some(second)))
        })
        .await
        .unwrap_or_else(|_| Err(StmtError::Io("statement timed out".into())));
        match twice {
            Ok((first, None)) => (self.settle(first), None),
            Ok((first, Some(second))) => (first, Some(self.settle(second))),
            Err(e) => (self.settle(Err(e)), None),
        }
    }

    /// Runs `sql` (setup and checks): panics with the statement on any error.
    pub async fn must(&mut self, sql: &str) -> Outcome {
        match self.text(sql).await {
            Ok(o) => o,
            Err(e) => panic!("{}: {e}\n  in: {}", self.label, abbreviate(sql, 300)),
        }
    }

    /// The rows of `sql` (setup and checks): panics on any error.
    pub async fn rows(&mut self, sql: &str) -> Vec<Vec<Option<String>>> {
        self.must(sql).await.rows
    }
}

/// The first `max` characters of `s` (with an ellipsis when cut).
pub fn abbreviate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max).collect();
    format!("{cut}...")
}
