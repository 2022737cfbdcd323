//! A scripted fake shard server for unit tests of the scatter executor and the transaction
//! protocol: it logs every statement it receives, answers by rules matched on a statement
//! prefix (whole answers, or the packets of a result set one by one), and tracks each
//! connection's transaction and the prepared XA branches as a server would.

use super::conn::TextResult;
use super::shard_conn::ShardConn;
use crate::error::ProxyError;
use bytes::Bytes;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use tessera_protocol::error::ProtocolError;
use tessera_protocol::response::{ErrPacket, OkPacket};

/// How the fake answers a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Ok,
    Err(u16, String),
    /// A result set (text values; None is NULL).
    Rows(Vec<Vec<Option<String>>>),
    /// The connection breaks: the statement reached the server, its answer is an error.
    Lose,
    /// No answer ever comes.
    Stall,
    /// These packets, one per read, as the server sends them (see [`packets`]); None: no
    /// further packet ever comes (the server stalls there).
    Packets(Vec<Option<Bytes>>),
}

/// Packets of the wire protocol as a server sends them, for [`Answer::Packets`]. The fake
/// negotiates CLIENT_DEPRECATE_EOF: a result set ends with an OK packet (0xfe).
pub mod packets {
    use bytes::{Bytes, BytesMut};
    use tessera_protocol::resultset::ColumnDefinition;

    /// A result set's header: the column count and the column definitions.
    pub fn header(columns: &[ColumnDefinition]) -> Vec<Option<Bytes>> {
        let mut count = BytesMut::new();
        tessera_protocol::codec::put_lenenc_int(&mut count, columns.len() as u64);
        let mut out = vec![Some(count.freeze())];
        for c in columns {
            let mut def = BytesMut::new();
            c.encode(&mut def);
            out.push(Some(def.freeze()));
        }
        out
    }

    /// One text row.
    pub fn row(values: &[Option<&str>]) -> Option<Bytes> {
        let mut out = BytesMut::new();
        tessera_protocol::resultset::encode_text_row(&mut out, values);
        Some(out.freeze())
    }

    /// The end of a result set, with its warning count.
    pub fn end(warnings: u16) -> Option<Bytes> {
        let mut out = BytesMut::new();
        tessera_protocol::response::encode_result_end(&mut out, warnings, 0x0002, super::CAPABILITIES);
        Some(out.freeze())
    }

    /// An ERR packet.
    pub fn err(code: u16, message: &str) -> Option<Bytes> {
        let mut out = BytesMut::new();
        tessera_protocol::response::ErrPacket::new(code, "HY000", message).encode(&mut out);
        Some(out.freeze())
    }

    /// A whole result set: header, rows and end.
    pub fn result_set(columns: &[ColumnDefinition], rows: &[&[Option<&str>]], warnings: u16) -> Vec<Option<Bytes>> {
        let mut out = header(columns);
        out.extend(rows.iter().map(|r| row(r)));
        out.push(end(warnings));
        out
    }
}

/// What a fake connection negotiated.
const CAPABILITIES: u32 = tessera_protocol::flags::CLIENT_PROTOCOL_41
    | tessera_protocol::flags::CLIENT_TRANSACTIONS
    | tessera_protocol::flags::CLIENT_DEPRECATE_EOF;

/// A connection's transaction as the server sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerTxn {
    #[default]
    None,
    Plain,
    XaActive,
    XaIdle,
    XaPrepared,
}

struct Rule {
    prefix: String,
    answer: Answer,
    /// How many more statements the rule answers (None: all).
    left: Option<usize>,
}

#[derive(Default)]
struct Server {
    name: String,
    rules: Vec<Rule>,
    log: Vec<String>,
    conns: HashMap<usize, ServerTxn>,
    prepared: BTreeSet<String>,
    timeline: Timeline,
}

/// Every statement every fake server received, in order, as `server: statement`.
#[derive(Clone, Default)]
pub struct Timeline(Arc<Mutex<Vec<String>>>);

impl Timeline {
    pub fn entries(&self) -> Vec<String> {
        lock(&self.0).clone()
    }

    /// The position of the first entry starting with `prefix` (panics when there is none).
    pub fn position(&self, prefix: &str) -> usize {
        let entries = self.entries();
        entries
            .iter()
            .position(|e| e.starts_with(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` in {entries:#?}"))
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One fake server; clones share it.
#[derive(Clone)]
pub struct FakeServer(Arc<Mutex<Server>>);

impl FakeServer {
    pub fn new(name: &str, timeline: &Timeline) -> FakeServer {
        FakeServer(Arc::new(Mutex::new(Server {
            name: name.to_string(),
            timeline: timeline.clone(),
            ..Server::default()
        })))
    }

    /// Answers statements starting with `prefix` (case-insensitive) with `answer`; the first
    /// matching rule wins.
    pub fn rule(self, prefix: &str, answer: Answer) -> FakeServer {
        self.add_rule(prefix, answer, None)
    }

    /// Like [`Self::rule`], for the first `times` matching statements only.
    pub fn rule_times(self, prefix: &str, answer: Answer, times: usize) -> FakeServer {
        self.add_rule(prefix, answer, Some(times))
    }

    fn add_rule(self, prefix: &str, answer: Answer, left: Option<usize>) -> FakeServer {
        lock(&self.0).rules.push(Rule {
            prefix: prefix.to_ascii_uppercase(),
            answer,
            left,
        });
        self
    }

    /// A new connection to this server.
    pub fn connect(&self) -> FakeConn {
        let mut s = lock(&self.0);
        let id = s.conns.len();
        s.conns.insert(id, ServerTxn::None);
        FakeConn {
            server: self.clone(),
            id,
            queued: Vec::new(),
            pending: VecDeque::new(),
            packets: VecDeque::new(),
            broken: false,
            in_transaction: false,
        }
    }

    /// The statements received, in order.
    pub fn log(&self) -> Vec<String> {
        lock(&self.0).log.clone()
    }

    /// The received statements starting with `prefix`.
    pub fn received(&self, prefix: &str) -> Vec<String> {
        self.log().into_iter().filter(|s| s.starts_with(prefix)).collect()
    }

    /// The XIDs (as XA statements write them) prepared and not finished.
    pub fn prepared(&self) -> Vec<String> {
        lock(&self.0).prepared.iter().cloned().collect()
    }

    /// Connection `id`'s transaction.
    pub fn txn(&self, id: usize) -> ServerTxn {
        lock(&self.0).conns.get(&id).copied().unwrap_or_default()
    }

    /// Receives one statement on connection `id`: logs it, answers it and applies it.
    fn receive(&self, id: usize, sql: &str) -> Answer {
        let mut s = lock(&self.0);
        s.log.push(sql.to_string());
        let entry = format!("{}: {sql}", s.name);
        lock(&s.timeline.0).push(entry);
        let answer = s.answer(sql);
        match answer {
            Answer::Ok | Answer::Rows(_) => s.apply(id, sql),
            Answer::Lose => s.disconnect(id),
            Answer::Err(..) | Answer::Stall | Answer::Packets(_) => {}
        }
        answer
    }
}

impl Server {
    fn answer(&mut self, sql: &str) -> Answer {
        let upper = sql.to_ascii_uppercase();
        let Some(rule) = self
            .rules
            .iter_mut()
            .find(|r| upper.starts_with(&r.prefix) && r.left != Some(0))
        else {
            return Answer::Ok;
        };
        if let Some(n) = rule.left.as_mut() {
            *n -= 1;
        }
        rule.answer.clone()
    }

    /// The transaction effect of a statement that succeeded.
    fn apply(&mut self, id: usize, sql: &str) {
        let upper = sql.to_ascii_uppercase();
        let xid = |verb: &str| sql[verb.len()..].trim_end_matches(" ONE PHASE").to_string();
        let next = if upper.starts_with("BEGIN") || upper.starts_with("START TRANSACTION") {
            ServerTxn::Plain
        } else if upper.starts_with("COMMIT") || upper.starts_with("ROLLBACK") {
            ServerTxn::None
        } else if upper.starts_with("XA START") {
            ServerTxn::XaActive
        } else if upper.starts_with("XA END") {
            ServerTxn::XaIdle
        } else if upper.starts_with("XA PREPARE ") {
            self.prepared.insert(xid("XA PREPARE "));
            ServerTxn::XaPrepared
        } else if upper.starts_with("XA COMMIT ") || upper.starts_with("XA ROLLBACK ") {
            let verb = if upper.starts_with("XA COMMIT ") {
                "XA COMMIT "
            } else {
                "XA ROLLBACK "
            };
            self.prepared.remove(&xid(verb));
            ServerTxn::None
        } else {
            return;
        };
        self.conns.insert(id, next);
    }

    /// The connection closed: its plain or unprepared transaction rolls back; a prepared
    /// branch stays for recovery.
    fn disconnect(&mut self, id: usize) {
        self.conns.insert(id, ServerTxn::None);
    }
}

/// A connection to a [`FakeServer`].
pub struct FakeConn {
    server: FakeServer,
    pub id: usize,
    queued: Vec<String>,
    pending: VecDeque<Answer>,
    /// What is left of the answer being read packet by packet.
    packets: VecDeque<Option<Bytes>>,
    broken: bool,
    in_transaction: bool,
}

fn lost() -> ProxyError {
    ProxyError::LostBackend {
        server: "fake".into(),
        source: ProtocolError::Closed,
    }
}

impl FakeConn {
    /// The next answer: pending forever for [`Answer::Stall`], an error when the connection
    /// is broken or nothing was sent.
    async fn next(&mut self) -> Result<Answer, ProxyError> {
        if self.broken {
            return Err(lost());
        }
        match self.pending.pop_front() {
            None => Err(ProxyError::LostBackend {
                server: "fake".into(),
                source: ProtocolError::Malformed("read with no statement sent"),
            }),
            Some(Answer::Stall) => std::future::pending().await,
            Some(Answer::Lose) => {
                self.broken = true;
                Err(lost())
            }
            Some(Answer::Err(code, message)) => Err(ProxyError::Backend(ErrPacket::new(code, "HY000", message))),
            Some(a) => Ok(a),
        }
    }
}

impl FakeConn {
    /// The next answer as packets: a whole answer ([`Answer::Ok`], [`Answer::Err`],
    /// [`Answer::Rows`] of text columns) becomes the packets a server would send.
    async fn next_packets(&mut self) -> Result<Vec<Option<Bytes>>, ProxyError> {
        use tessera_protocol::resultset::ColumnDefinition;
        Ok(match self.next().await {
            Ok(Answer::Packets(p)) => p,
            Ok(Answer::Rows(rows)) => {
                let width = rows.first().map_or(1, Vec::len);
                let columns: Vec<_> = (0..width).map(|i| ColumnDefinition::text(&format!("c{i}"))).collect();
                let mut out = packets::header(&columns);
                out.extend(rows.iter().map(|r| {
                    let values: Vec<Option<&str>> = r.iter().map(Option::as_deref).collect();
                    packets::row(&values)
                }));
                out.push(packets::end(0));
                out
            }
            Ok(_) => {
                let mut ok = bytes::BytesMut::new();
                OkPacket::default().encode(&mut ok, CAPABILITIES);
                vec![Some(ok.freeze())]
            }
            Err(ProxyError::Backend(e)) => {
                let mut out = bytes::BytesMut::new();
                e.encode(&mut out);
                vec![Some(out.freeze())]
            }
            Err(e) => return Err(e),
        })
    }
}

impl ShardConn for FakeConn {
    fn queue_query(&mut self, sql: &str) {
        self.queued.push(sql.to_string());
    }

    async fn flush(&mut self) -> Result<(), ProxyError> {
        if self.broken {
            self.queued.clear();
            return Err(lost());
        }
        for sql in std::mem::take(&mut self.queued) {
            let answer = self.server.receive(self.id, &sql);
            let lose = answer == Answer::Lose;
            self.pending.push_back(answer);
            if lose {
                // Nothing after a lost statement reaches the server.
                break;
            }
        }
        Ok(())
    }

    async fn read_ok(&mut self) -> Result<OkPacket, ProxyError> {
        match self.next().await? {
            Answer::Rows(_) => {
                self.broken = true;
                Err(ProxyError::LostBackend {
                    server: "fake".into(),
                    source: ProtocolError::Malformed("a result set where OK was expected"),
                })
            }
            _ => Ok(OkPacket::default()),
        }
    }

    async fn simple_command(&mut self, sql: &str) -> Result<OkPacket, ProxyError> {
        self.queue_query(sql);
        self.flush().await?;
        self.read_ok().await
    }

    async fn query_rows(&mut self, sql: &str) -> Result<TextResult, ProxyError> {
        self.queue_query(sql);
        self.flush().await?;
        let rows = match self.next().await? {
            Answer::Rows(rows) => rows,
            _ => Vec::new(),
        };
        let bytes = |v: Option<String>| v.map(String::into_bytes);
        Ok((
            Vec::new(),
            rows.into_iter().map(|r| r.into_iter().map(bytes).collect()).collect(),
        ))
    }

    fn broken(&self) -> bool {
        self.broken
    }

    fn mark_broken(&mut self) {
        self.broken = true;
    }

    fn in_transaction(&self) -> bool {
        self.in_transaction
    }

    fn set_in_transaction(&mut self, open: bool) {
        self.in_transaction = open;
    }

    fn side(&self) -> impl Future<Output = Result<FakeConn, ProxyError>> + Send {
        let conn = self.server.connect();
        async move { Ok(conn) }
    }

    async fn read_packet(&mut self) -> Result<Bytes, ProxyError> {
        loop {
            if self.broken {
                return Err(lost());
            }
            match self.packets.pop_front() {
                Some(Some(p)) => return Ok(p),
                Some(None) => return std::future::pending().await,
                None => {
                    let next = self.next_packets().await?;
                    self.packets.extend(next);
                }
            }
        }
    }

    fn lost(&mut self, e: ProtocolError) -> ProxyError {
        self.broken = true;
        ProxyError::LostBackend {
            server: "fake".into(),
            source: e,
        }
    }

    fn extended_metadata(&self) -> bool {
        false
    }

    fn capabilities(&self) -> u32 {
        CAPABILITIES
    }
}
