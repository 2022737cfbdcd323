//! The session's transaction as Tessera tracks it, one state at a time: nothing; a plain
//! BEGIN answered here and not sent yet; a transaction that began so and ran only pure reads;
//! or, on a logical schema, the shards of Tessera's transaction with the client's own XA
//! transaction beside it. (Each held connection also carries the server's `in_transaction`.)

use crate::txn::ShardTxn;

/// One session's transaction state.
#[derive(Debug, Default)]
pub enum TxnState {
    #[default]
    None,
    /// The client's plain BEGIN, answered here: it travels with the next statement (see
    /// `Session::defer_transaction_edge`).
    BeginDeferred,
    /// The open transaction began with a deferred BEGIN and ran only pure reads since: its
    /// plain COMMIT or ROLLBACK may travel with the connection's next command.
    ReadsOnly,
    /// On a logical schema: the shards of the session's transaction, and the client's XA.
    Shards { txn: ShardTxn, client_xa: ClientXa },
}

/// The client's own XA transaction on a logical schema (it stays on one shard).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub enum ClientXa {
    #[default]
    None,
    /// Its XA START, until the first statement picks the shard.
    Starting(String),
    /// Running on this shard.
    On(usize),
}

/// The shard transaction of a state that has none.
static NO_SHARD_TXN: ShardTxn = ShardTxn::EMPTY;
static NO_CLIENT_XA: ClientXa = ClientXa::None;

impl TxnState {
    /// A deferred BEGIN waits for the next statement.
    pub fn begin_deferred(&self) -> bool {
        matches!(self, TxnState::BeginDeferred)
    }

    /// The transaction ran only pure reads since its deferred BEGIN.
    pub fn reads_only(&self) -> bool {
        matches!(self, TxnState::ReadsOnly)
    }

    /// Whether the state is a logical schema's (a shard transaction or the client's XA).
    pub fn on_shards(&self) -> bool {
        matches!(self, TxnState::Shards { .. })
    }

    /// The shards of the session's transaction (empty when none).
    pub fn shards(&self) -> &ShardTxn {
        match self {
            TxnState::Shards { txn, .. } => txn,
            _ => &NO_SHARD_TXN,
        }
    }

    /// The shard transaction to note a begin, a branch or a write in (the plain states end).
    pub fn shards_mut(&mut self) -> &mut ShardTxn {
        if !self.on_shards() {
            *self = TxnState::Shards {
                txn: ShardTxn::default(),
                client_xa: ClientXa::None,
            };
        }
        match self {
            TxnState::Shards { txn, .. } => txn,
            _ => unreachable!("a shard state was made above"),
        }
    }

    /// Forgets the shard transaction (after COMMIT or ROLLBACK); the client's XA stays.
    pub fn end_shards(&mut self) {
        if let TxnState::Shards { client_xa, .. } = self {
            *self = match std::mem::take(client_xa) {
                ClientXa::None => TxnState::None,
                xa => TxnState::Shards {
                    txn: ShardTxn::default(),
                    client_xa: xa,
                },
            };
        }
    }

    pub fn client_xa(&self) -> &ClientXa {
        match self {
            TxnState::Shards { client_xa, .. } => client_xa,
            _ => &NO_CLIENT_XA,
        }
    }

    /// The client's XA START not sent yet.
    pub fn xa_starting(&self) -> Option<&str> {
        match self.client_xa() {
            ClientXa::Starting(sql) => Some(sql),
            _ => None,
        }
    }

    /// The shard the client's XA transaction runs on.
    pub fn xa_shard(&self) -> Option<usize> {
        match self.client_xa() {
            ClientXa::On(shard) => Some(*shard),
            _ => None,
        }
    }

    pub fn set_client_xa(&mut self, xa: ClientXa) {
        if xa == ClientXa::None && !self.on_shards() {
            return;
        }
        self.shards_mut();
        if let TxnState::Shards { txn, client_xa } = self {
            *client_xa = xa;
            if *client_xa == ClientXa::None && txn.is_empty() {
                *self = TxnState::None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_transaction_ends_without_ending_the_clients_xa() {
        let mut state = TxnState::BeginDeferred;
        state.shards_mut().coordinator = Some(1);
        assert!(state.shards().is_open() && !state.begin_deferred());
        state.set_client_xa(ClientXa::On(1));
        state.end_shards();
        assert!(!state.shards().is_open());
        assert_eq!(state.xa_shard(), Some(1));
        state.set_client_xa(ClientXa::None);
        assert!(matches!(state, TxnState::None));
        state.end_shards();
        assert!(matches!(state, TxnState::None));
    }

    #[test]
    fn the_plain_states_have_no_shards_and_no_xa() {
        for state in [TxnState::None, TxnState::BeginDeferred, TxnState::ReadsOnly] {
            assert!(!state.shards().is_open() && state.xa_starting().is_none() && state.xa_shard().is_none());
        }
        let mut state = TxnState::ReadsOnly;
        state.set_client_xa(ClientXa::Starting("XA START 'x'".into()));
        assert_eq!(state.xa_starting(), Some("XA START 'x'"));
        assert!(!state.reads_only());
    }
}
