//! The session as the sharded executor sees it ([`ShardSession`]): its shard connections,
//! its client, its transaction and its registry entry.

use super::Session;
use crate::error::ProxyError;
use crate::exec::sharded::{Reply, ShardSession};
use crate::net::Stream;
use crate::pool::PooledConn;
use crate::registry::SessionHandle;
use crate::topology::{Shard, ShardedSchema};
use tessera_protocol::PacketStream;

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
        self.txn.wrote.insert(shard);
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
