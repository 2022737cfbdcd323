//! The session's backend connections, [`Binding`]: none, one kept across statements (a
//! transaction or a pin), or one per shard on a logical schema (the current shard's and the
//! others an open transaction or a pin keeps); and the session as the sharded executor sees
//! it ([`ShardSession`]).

use super::Session;
use crate::error::ProxyError;
use crate::exec::sharded::{Reply, ShardSession};
use crate::net::Stream;
use crate::pool::PooledConn;
use crate::registry::SessionHandle;
use crate::topology::{Shard, ShardedSchema};
use std::collections::BTreeMap;
use tessera_protocol::PacketStream;

/// The backend connections a session keeps between statements.
#[derive(Default)]
pub enum Binding {
    /// None: every statement checks one out.
    #[default]
    None,
    /// One connection, kept for a transaction or a pin.
    One(PooledConn),
    /// On a logical schema: a connection per shard.
    PerShard(Shards),
}

/// A session's connections on the shards of a logical schema.
#[derive(Default)]
pub struct Shards {
    /// The shard the session's statements run on now (None after a USE of another database).
    pub current: Option<usize>,
    /// The connection kept on the current shard.
    pub held: Option<PooledConn>,
    /// The other shards' connections an open transaction or a pin keeps.
    pub others: BTreeMap<usize, PooledConn>,
}

impl Binding {
    /// The connection statements run on now, when one is kept.
    pub fn held(&self) -> Option<&PooledConn> {
        match self {
            Binding::None => None,
            Binding::One(conn) => Some(conn),
            Binding::PerShard(s) => s.held.as_ref(),
        }
    }

    pub fn held_mut(&mut self) -> Option<&mut PooledConn> {
        match self {
            Binding::None => None,
            Binding::One(conn) => Some(conn),
            Binding::PerShard(s) => s.held.as_mut(),
        }
    }

    /// Takes the current connection (the shard binding stays).
    pub fn take_held(&mut self) -> Option<PooledConn> {
        let taken = match std::mem::take(self) {
            Binding::None => None,
            Binding::One(conn) => Some(conn),
            Binding::PerShard(mut s) => {
                let conn = s.held.take();
                *self = Binding::PerShard(s);
                conn
            }
        };
        self.settle();
        taken
    }

    /// Keeps `conn` (or nothing) as the current connection; a connection kept before is
    /// dropped (given back to its pool).
    pub fn set_held(&mut self, conn: Option<PooledConn>) {
        match self {
            Binding::PerShard(s) => s.held = conn,
            _ => *self = conn.map_or(Binding::None, Binding::One),
        }
        self.settle();
    }

    /// The shard the session is on.
    pub fn shard(&self) -> Option<usize> {
        match self {
            Binding::PerShard(s) => s.current,
            _ => None,
        }
    }

    /// The other shards' kept connections.
    pub fn others(&self) -> impl Iterator<Item = (&usize, &PooledConn)> {
        let others = match self {
            Binding::PerShard(s) => Some(&s.others),
            _ => None,
        };
        others.into_iter().flatten()
    }

    /// Whether any other shard's connection is kept.
    pub fn has_others(&self) -> bool {
        self.others().next().is_some()
    }

    /// Takes every other shard's connection.
    pub fn take_others(&mut self) -> BTreeMap<usize, PooledConn> {
        let taken = match self {
            Binding::PerShard(s) => std::mem::take(&mut s.others),
            _ => BTreeMap::new(),
        };
        self.settle();
        taken
    }

    /// Takes the kept connection of `shard` among the others.
    pub fn take_other(&mut self, shard: usize) -> Option<PooledConn> {
        let taken = match self {
            Binding::PerShard(s) => s.others.remove(&shard),
            _ => None,
        };
        self.settle();
        taken
    }

    /// Keeps `conn` as another shard's connection.
    pub fn keep_other(&mut self, shard: usize, conn: PooledConn) {
        self.shards().others.insert(shard, conn);
    }

    /// Makes `shard` the current one; the current connection moves among the others when
    /// `keep` says so for it, else it is given back. The new current connection is the one
    /// kept for `shard`, if any.
    pub fn switch_to(&mut self, shard: usize, keep: impl FnOnce(&PooledConn) -> bool) {
        if self.shard() == Some(shard) {
            return;
        }
        let previous = self.shard();
        let shards = self.shards();
        if let (Some(conn), Some(prev)) = (shards.held.take(), previous) {
            if keep(&conn) {
                shards.others.insert(prev, conn);
            }
        }
        shards.held = shards.others.remove(&shard);
        shards.current = Some(shard);
    }

    /// Leaves the shards (a USE of another database): the kept connections stay.
    pub fn leave_shard(&mut self) {
        if let Binding::PerShard(s) = self {
            s.current = None;
        }
        self.settle();
    }

    /// The per-shard form, made from what is kept now.
    fn shards(&mut self) -> &mut Shards {
        if !matches!(self, Binding::PerShard(_)) {
            let held = self.take_held();
            *self = Binding::PerShard(Shards {
                held,
                ..Shards::default()
            });
        }
        match self {
            Binding::PerShard(s) => s,
            _ => unreachable!("made per shard above"),
        }
    }

    /// A per-shard binding on no shard with no other shard's connection is one connection
    /// (or none).
    fn settle(&mut self) {
        if let Binding::PerShard(s) = self {
            if s.current.is_none() && s.others.is_empty() {
                *self = s.held.take().map_or(Binding::None, Binding::One);
            }
        }
    }
}

impl ShardSession for Session {
    async fn shard_conn(&mut self, schema: &ShardedSchema, shard: usize) -> Result<PooledConn, ProxyError> {
        Session::shard_conn(self, schema, shard).await
    }

    fn park_shard(&mut self, shard: usize, conn: PooledConn, keep: bool) {
        Session::park_shard(self, shard, conn, keep)
    }

    async fn side_conn(&self, shard: &Shard) -> Result<PooledConn, ProxyError> {
        Session::side_conn(self, shard).await
    }

    fn client(&mut self) -> &mut PacketStream<Stream> {
        &mut self.client
    }

    fn reply(&self) -> Reply {
        Reply {
            capabilities: self.capabilities,
            status: self.status_flags(),
            dialect: self.metadata_dialect(),
        }
    }

    fn in_transaction(&self) -> bool {
        self.sharded_transaction_open()
    }

    fn wrote(&mut self, shard: usize) {
        self.txn.shards_mut().wrote.insert(shard);
    }

    async fn abort_transaction(&mut self) {
        self.abort_sharded_txn().await
    }

    fn handle(&self) -> &SessionHandle {
        &self.handle
    }

    async fn catch_up_kill(&self, seen: u64) {
        Session::catch_up_kill(self, seen).await
    }
}
