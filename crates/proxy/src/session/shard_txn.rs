//! A session's transaction on a sharded schema: the client's BEGIN waits for the first shard
//! (the coordinator, a plain transaction); each further shard joins with XA START. COMMIT and
//! ROLLBACK hand the branches to [`crate::txn::commit`]. A deadlock, a lock wait timeout or a
//! lost shard in a transaction that spans shards ends it on every shard. An XA transaction the
//! client opens itself stays on the one shard its first statement picks.

use super::txn_state::ClientXa;
use super::{Next, Session};
use crate::error::{ProxyError, ServerError};
use crate::pool::PooledConn;
use crate::topology::ShardedSchema;
use crate::txn::commit::{self, Branch};
use crate::txn::xid::Xid;
use tessera_sql::{Classification, Flags, StatementKind};

/// Whether a statement may change data on the shard it runs on.
pub fn may_write(class: &Classification) -> bool {
    class.kind.writes()
        || class.flags.contains(Flags::WRITES)
        || matches!(
            class.kind,
            StatementKind::Other | StatementKind::Execute | StatementKind::Do
        )
}

impl Session {
    /// Opens the transaction's branch on a shard's new connection: the client's BEGIN on the
    /// first shard, XA START on the others.
    pub async fn open_branch(
        &mut self,
        schema: &ShardedSchema,
        shard: usize,
        conn: &mut PooledConn,
    ) -> Result<(), ProxyError> {
        if let Some(xa) = self.txn.xa_starting().map(str::to_string) {
            return self.open_client_xa(shard, conn, &xa).await;
        }
        let first = self.txn.shards().coordinator.is_none() && self.txn.shards().branches.is_empty();
        if first {
            let begin = self
                .txn
                .shards_mut()
                .pending_begin
                .take()
                .unwrap_or_else(|| "START TRANSACTION".into());
            conn.simple_command(&begin).await?;
            self.txn.shards_mut().coordinator = Some(shard);
        } else {
            let gtrid = match &self.txn.shards().gtrid {
                Some(g) => g.clone(),
                None => {
                    let coordinator = self.txn.shards().coordinator.unwrap_or(shard);
                    let group = schema.shards[coordinator].group;
                    let g = self.ctx.new_gtrid(&self.gen.group_checked(group)?.name)?;
                    self.txn.shards_mut().gtrid = Some(g.clone());
                    g
                }
            };
            let xid = Xid {
                gtrid,
                bqual: schema.shards[shard].database.clone(),
            };
            let start = format!("XA START {}", xid.sql());
            if self.autocommit() {
                conn.simple_command(&start).await?;
            } else {
                // With autocommit off, Tessera's own reads on this connection (state sync,
                // LAST_INSERT_ID()) opened a transaction holding none of the client's work.
                commit::send(conn, &[commit::COMMIT, &start]);
                conn.flush().await?;
                for r in commit::answers(conn, 2).await {
                    r?;
                }
            }
            self.txn.shards_mut().branches.insert(shard, xid);
        }
        conn.in_transaction = true;
        Ok(())
    }

    /// After a statement on `shard` inside the session's transaction: notes a write, adopts an
    /// implicitly opened transaction (autocommit off) as the coordinator, and ends the
    /// transaction everywhere when a branch failed in a way that ends it.
    pub async fn after_shard_statement(
        &mut self,
        shard: usize,
        class: &Classification,
        error: Option<u16>,
    ) -> Result<(), ProxyError> {
        let held_in_txn = self.binding.held().is_some_and(|c| c.in_transaction);
        if held_in_txn
            && self.txn.shards().coordinator.is_none()
            && !self.txn.shards().branches.contains_key(&shard)
            && self.txn.xa_starting().is_none()
        {
            self.txn.shards_mut().coordinator = Some(shard);
        }
        if self.txn.shards().coordinator.is_some() || self.txn.shards().branches.contains_key(&shard) {
            if may_write(class) {
                self.txn.shards_mut().wrote.insert(shard);
            }
            if !held_in_txn && !self.txn.shards().spans_shards() && self.txn.shards().coordinator == Some(shard) {
                // The only branch ended on its own (a deadlock, an implicit commit).
                self.txn.end_shards();
            }
        }
        if let Some(code) = error {
            if self.txn.shards().spans_shards() && (code == 1213 || code == 1205) {
                tracing::info!(
                    session = self.id,
                    code,
                    shard,
                    "a branch failed; rolling back the transaction on every shard"
                );
                self.abort_sharded_txn().await;
            }
        }
        Ok(())
    }

    /// A shard's connection was lost inside a transaction that spans shards: the others roll
    /// back and the client learns why (the session goes on).
    pub async fn lost_in_txn(&mut self, shard: usize, e: ProxyError) -> ProxyError {
        let spans = self.txn.shards().spans_shards()
            || (self.txn.shards().coordinator.is_some() && self.txn.shards().coordinator != Some(shard));
        if !spans {
            return e;
        }
        self.fatal = false;
        self.abort_sharded_txn().await;
        ProxyError::TxnRolledBack(format!("shard {shard} failed during the transaction ({e})"))
    }

    /// Every branch of the session's transaction, taken from the session.
    fn take_branches(&mut self) -> Vec<Branch> {
        let mut conns: Vec<(usize, PooledConn)> = self.binding.take_others().into_iter().collect();
        let (current, held) = (self.binding.shard(), self.binding.take_held());
        if let (Some(shard), Some(conn)) = (current, held) {
            conns.push((shard, conn));
        }
        let mut out = Vec::new();
        for (shard, conn) in conns {
            let xid = self.txn.shards().branches.get(&shard).cloned();
            let member = xid.is_some() || self.txn.shards().coordinator == Some(shard);
            if !member {
                self.park_shard(shard, conn, false);
                continue;
            }
            out.push(Branch {
                shard,
                wrote: self.txn.shards().wrote.contains(&shard),
                xid,
                conn,
            });
        }
        out.sort_by_key(|b| b.xid.is_some());
        out
    }

    /// Gives the connections back (the current shard's stays held while the session is pinned).
    fn release_branches(&mut self, branches: Vec<Branch>) {
        for b in branches {
            if !b.conn.broken
                && self.binding.shard() == Some(b.shard)
                && self.pins.is_pinned()
                && self.binding.held().is_none()
            {
                self.binding.set_held(Some(b.conn));
            }
        }
    }

    /// COMMIT (`commit`) or ROLLBACK of the session's sharded transaction.
    pub async fn end_sharded_txn(&mut self, commit: bool) -> Result<(), ProxyError> {
        let gtrid = self.txn.shards().gtrid.clone();
        let members = self.txn.shards().branches.len() + usize::from(self.txn.shards().coordinator.is_some());
        let mut branches = self.take_branches();
        self.txn.end_shards();
        if commit && branches.len() < members {
            // A branch's connection is gone: its work is lost, so nothing may commit.
            commit::rollback(&mut branches).await;
            self.release_branches(branches);
            return Err(ProxyError::TxnRolledBack(
                "a shard's connection was lost during the transaction".into(),
            ));
        }
        let result = if commit {
            commit::commit(&self.ctx.commit_env(), gtrid.as_deref(), &mut branches)
                .await
                .map(drop)
        } else {
            commit::rollback(&mut branches).await;
            Ok(())
        };
        self.release_branches(branches);
        result
    }

    /// Rolls back every branch (the error that ended the transaction was already reported).
    pub async fn abort_sharded_txn(&mut self) {
        let mut branches = self.take_branches();
        self.txn.end_shards();
        commit::rollback(&mut branches).await;
        self.release_branches(branches);
    }

    /// The client's COMMIT / ROLLBACK [AND CHAIN] on a sharded schema.
    pub async fn client_ends_txn(&mut self, sql: &str, commit: bool) -> Result<Next, ProxyError> {
        let result = self.end_sharded_txn(commit).await;
        let (chain, release) = self.transaction_end(sql);
        if chain {
            self.txn.shards_mut().pending_begin = Some("START TRANSACTION".into());
        }
        result?;
        self.released = release;
        self.ok_with(0, 0, 0).await
    }

    /// The client's BEGIN / START TRANSACTION: commits an open transaction (as MariaDB does),
    /// then waits for the first shard.
    pub async fn client_begins_txn(&mut self, sql: &str) -> Result<Next, ProxyError> {
        if self.txn.xa_starting().is_some() || self.pins.in_xa() {
            return Err(xa_outside());
        }
        if self.sharded_transaction_open() {
            self.end_sharded_txn(true).await?;
        }
        self.txn.shards_mut().pending_begin = Some(sql.to_string());
        self.ok_with(0, 0, 0).await
    }

    /// The client's own XA statements: XA START waits for the shard of the first statement;
    /// the others go to that shard, or, for a prepared XA transaction of an earlier
    /// connection, to the shard whose server knows it.
    pub async fn client_xa_statement(&mut self, schema: &ShardedSchema, sql: &str) -> Result<Option<Next>, ProxyError> {
        let verb = tessera_sql::Lexer::new(sql)
            .filter(|t| t.is_significant())
            .nth(1)
            .map(|t| t.text.to_ascii_lowercase());
        match verb.as_deref() {
            Some("start") | Some("begin") => {
                if self.sharded_transaction_open() || self.txn.xa_starting().is_some() || self.pins.in_xa() {
                    return Err(xa_outside());
                }
                self.txn.set_client_xa(ClientXa::Starting(sql.to_string()));
                self.ok_with(0, 0, 0).await.map(Some)
            }
            Some("end") | Some("prepare") | Some("commit") | Some("rollback") if self.txn.xa_starting().is_some() => {
                // XA START never reached a shard: nothing ran in the XA transaction.
                self.txn.set_client_xa(ClientXa::None);
                Err(ServerError::XaUnknownXid.into())
            }
            Some("commit") | Some("rollback") if !self.pins.in_xa() => {
                self.xa_on_the_shard_that_knows(schema, sql).await.map(Some)
            }
            _ => Ok(None),
        }
    }

    async fn open_client_xa(&mut self, shard: usize, conn: &mut PooledConn, start: &str) -> Result<(), ProxyError> {
        conn.simple_command(start).await?;
        conn.in_transaction = true;
        self.txn.set_client_xa(ClientXa::On(shard));
        let class = tessera_sql::classify(start);
        self.pins.after_statement(start, &class, true, true);
        self.ctx.metrics.pinned("xa");
        Ok(())
    }

    /// XA COMMIT/ROLLBACK of a prepared transaction: tried on each shard's server in turn.
    async fn xa_on_the_shard_that_knows(&mut self, schema: &ShardedSchema, sql: &str) -> Result<Next, ProxyError> {
        let mut last = None;
        for shard in &schema.shards {
            let mut conn = self.side_conn(shard).await?;
            match conn.simple_command(sql).await {
                Ok(_) => return self.ok_with(0, 0, 0).await,
                Err(ProxyError::Backend(p)) if p.code == 1397 => last = Some(ProxyError::Backend(p)),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| ServerError::XaUnknownXid.into()))
    }

    /// Refuses a statement on another shard than the client's XA transaction's.
    pub fn check_client_xa_shard(&mut self, shard: usize) -> Result<(), ProxyError> {
        if !self.pins.in_xa() {
            if self.txn.xa_shard().is_some() {
                self.txn.set_client_xa(ClientXa::None);
            }
            return Ok(());
        }
        match self.txn.xa_shard() {
            Some(s) if s != shard => Err(ProxyError::NotSharded(format!(
                "a statement on shard {shard} inside the client's XA transaction on shard {s} (an XA transaction \
                 opened by the client stays on one shard; Tessera's own transactions span shards with XA)"
            ))),
            _ => Ok(()),
        }
    }
}

/// `SET [SESSION] autocommit = 1|ON|TRUE` (alone or among other assignments).
pub fn sets_autocommit_on(sql: &str) -> bool {
    let words: Vec<String> = tessera_sql::Lexer::new(sql)
        .filter(|t| t.is_significant())
        .map(|t| t.text.trim_start_matches("@@").to_ascii_lowercase())
        .collect();
    words.windows(3).any(|w| {
        (w[0] == "autocommit" || w[0].ends_with(".autocommit"))
            && (w[1] == "=" || w[1] == ":=")
            && matches!(w[2].as_str(), "1" | "on" | "true")
    })
}

fn xa_outside() -> ProxyError {
    ServerError::XaOutside.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn autocommit_on_is_recognised() {
        assert!(sets_autocommit_on("SET autocommit = 1"));
        assert!(sets_autocommit_on("set @@session.autocommit=ON"));
        assert!(sets_autocommit_on("SET sql_mode = '', autocommit = true"));
        assert!(!sets_autocommit_on("SET autocommit = 0"));
    }
}
