//! Running a routed statement that spans shards (see `route::sharded::routed`): a read merged
//! from several shards ([`read`]), a write on several shards all or none ([`write`](mod@write)),
//! DDL and the shard databases ([`ddl`]), LOAD DATA LOCAL split by key ([`load`], its file cut
//! into records by [`load_file`]). The executor reaches the session's shard connections, its
//! client and its transaction through [`ShardSession`], so it holds no session of its own.

pub mod ddl;
pub mod load;
pub mod load_file;
pub mod read;
pub mod write;

use crate::error::ProxyError;
use crate::net::Stream;
use crate::pool::PooledConn;
use crate::registry::SessionHandle;
use crate::topology::{Shard, ShardedSchema};
use std::future::Future;
use tessera_protocol::resultset::MetadataDialect;
use tessera_protocol::PacketStream;

/// The marker a shard statement carries where the shard's physical database name goes (the
/// planner's `DATABASE_MARKER`, owned here so that the executor needs no planner).
pub const DATABASE_MARKER: &str = "\u{1}tessera-db\u{1}";

/// The marker of a UNION branch that must run on one shard of a scatter only: `1=1` there,
/// `1=0` on the others.
pub const ONCE_MARKER: &str = "\u{1}tessera-once\u{1}";

/// What the executor needs of the session it runs a statement for.
pub trait ShardSession: Send {
    /// A connection to `shard` with the session's state: the one it holds there, else a new
    /// checkout; inside the session's transaction when one is open.
    fn shard_conn(
        &mut self,
        schema: &ShardedSchema,
        shard: usize,
    ) -> impl Future<Output = Result<PooledConn, ProxyError>> + Send;
    /// Gives a shard connection back to the session: kept while `keep`, a transaction or a
    /// pin needs it, else returned to its pool.
    fn park_shard(&mut self, shard: usize, conn: PooledConn, keep: bool);
    /// A connection of Tessera's own to a shard's primary, outside the client's session.
    fn side_conn(&self, shard: &Shard) -> impl Future<Output = Result<PooledConn, ProxyError>> + Send;
    fn client(&mut self) -> &mut PacketStream<Stream>;
    /// How results go to this client.
    fn reply(&self) -> Reply;
    /// A transaction is open on the session's shards.
    fn in_transaction(&self) -> bool;
    /// `shard` ran a statement that may have written (its branch must commit).
    fn wrote(&mut self, shard: usize);
    /// Rolls the session's transaction back on every shard it touched.
    fn abort_transaction(&mut self) -> impl Future<Output = ()> + Send;
    /// The session's registry entry (KILL finds its running statements there).
    fn handle(&self) -> &SessionHandle;
    /// Interrupts the session's running statements when a KILL came since `seen`.
    fn catch_up_kill(&self, seen: u64) -> impl Future<Output = ()> + Send;
}

/// What the client negotiated, and the status it is in, for results Tessera writes.
#[derive(Clone, Copy)]
pub struct Reply {
    pub capabilities: u32,
    pub status: u16,
    pub dialect: MetadataDialect,
}

/// The counts of one statement that ran on several shards, for the client's OK packet.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Summed {
    pub affected: u64,
    pub warnings: u16,
    pub insert_id: u64,
}

/// The SQL with the logical schema's qualifiers naming shard `shard`'s database.
pub fn for_shard<'s>(sql: &'s str, schema: &ShardedSchema, shard: usize) -> std::borrow::Cow<'s, str> {
    if !sql.contains(DATABASE_MARKER) {
        return std::borrow::Cow::Borrowed(sql);
    }
    let db = crate::state::quote_ident(&schema.shards[shard].database);
    std::borrow::Cow::Owned(sql.replace(DATABASE_MARKER, &db))
}

/// Tessera's refusal of a statement it does not run across shards.
pub fn unsupported(m: &str) -> ProxyError {
    ProxyError::NotSharded(m.to_string())
}

/// Writes an OK packet with these counts and `info`.
pub async fn write_ok<S: ShardSession>(s: &mut S, sum: Summed, info: Vec<u8>) -> Result<(), ProxyError> {
    let reply = s.reply();
    let ok = tessera_protocol::response::OkPacket {
        affected_rows: sum.affected,
        last_insert_id: sum.insert_id,
        status: reply.status,
        warnings: sum.warnings,
        info,
        ..Default::default()
    };
    let client = s.client();
    client.write_with(|b| ok.encode(b, reply.capabilities));
    client.flush().await?;
    Ok(())
}
