//! Pass-through of one backend response to the client. Rows are copied (or, in a whole result
//! from a live connection, lent), never decoded; only OK/ERR/EOF packets are parsed, to learn
//! status flags, affected rows, insert ids and session changes. Sequence ids are rewritten by
//! the client stream where they differ.

use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::gtid::NewestGtid;
use crate::tracking::ClientTracking;
use bytes::{Bytes, BytesMut};
use std::time::Duration;
use tessera_protocol::codec::Reader;
use tessera_protocol::flags::*;
use tessera_protocol::packet::SendBuffer;
use tessera_protocol::response::*;
use tessera_protocol::whole::{Framing, WholeResult, WAIT_FOR_WHOLE_UP_TO};
use tessera_protocol::PacketStream;
use tokio::io::AsyncRead;

/// Flush to the client once this much is queued, even mid-result.
const FLUSH_AT: usize = 64 * 1024;
/// While the backend works, what the client sends (a pipelined command) is buffered up to this;
/// beyond, its leaving is noticed only when its answer is written.
const CLIENT_INPUT_WATCHED_UP_TO: usize = 64 * 1024;

/// What kind of response the backend is about to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// COM_QUERY: text rows, multi-results, LOCAL INFILE.
    Text,
    /// COM_STMT_EXECUTE: binary rows, possibly a cursor instead of rows.
    Binary,
    /// COM_STMT_FETCH: rows then EOF, no metadata.
    Fetch,
    /// COM_FIELD_LIST: column definitions then EOF.
    FieldList,
}

/// What a forwarded response told us.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub status: u16,
    pub warnings: u16,
    pub affected_rows: u64,
    /// Insert id of the last OK packet that carried one (0 if none).
    pub last_insert_id: u64,
    /// Rows in the last result set; None when the last result was an OK.
    pub result_rows: Option<u64>,
    pub changes: Vec<SessionChange>,
    pub error: Option<ErrPacket>,
    pub cursor_opened: bool,
    /// Set by the caller when LAST_INSERT_ID() was read right after this response.
    pub last_insert_id_known: bool,
    /// A binary result went to a client with cached metadata together with its column
    /// definitions: these (their frames, numbered from 2) are what the client now holds for
    /// the statement (see [`Metadata::Cached`]).
    pub columns_sent: Option<Bytes>,
    /// Results forwarded (OKs, errors and result sets; a multi-statement query has several).
    pub results: usize,
    /// An OK or the end of a result set carried SERVER_SESSION_STATE_CHANGED. The server sets
    /// it for any change, also one it does not describe: a classic EOF packet has no room for
    /// session_state_info, and tracking that stored code turned off reports nothing.
    pub state_changed: bool,
}

/// MariaDB's deadlock error: the server rolled the transaction back.
pub const ER_LOCK_DEADLOCK: u16 = 1213;

impl Outcome {
    pub fn in_transaction(&self) -> bool {
        self.status & SERVER_STATUS_IN_TRANS != 0
    }
}

/// MariaDB's `MARIADB_CLIENT_CACHE_METADATA` as the client negotiated it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Metadata<'t> {
    /// Not negotiated: column counts go as the server framed them.
    #[default]
    Plain,
    /// Negotiated: every column count carries a "metadata follows" byte. A binary result
    /// whose column definitions are byte for byte `known` (the frames, numbered from 2, that
    /// the client holds for the executed statement: from its PREPARE, or the last result that
    /// carried them) goes without them, and the client uses the ones it holds.
    Cached { known: Option<&'t [u8]> },
}

/// How the client side of a forward behaves.
#[derive(Debug, Clone, Copy)]
pub struct ClientSide<'t> {
    pub capabilities: u32,
    pub metadata: Metadata<'t>,
    /// A flush to the client that takes longer fails (the client stopped reading).
    pub write_timeout: Duration,
    /// The session tracking the client asked for: its OK packets carry only that.
    pub tracking: &'t ClientTracking,
    /// The tracking that replaces `tracking` from the result of that index on (a SET of the
    /// client's tracking inside a multi-statement query).
    pub later_tracking: Option<(usize, &'t ClientTracking)>,
    /// Where a write's GTID is recorded before its OK reaches the client (`global` reads).
    pub acknowledged: Option<&'t NewestGtid>,
}

/// Where a forwarded response comes from: a backend connection, or the packets a pipelined
/// lane already read for this statement.
pub trait ResponseSource {
    /// The next packet of the response.
    fn packet(&mut self) -> impl std::future::Future<Output = Result<Bytes, ProxyError>>;
    /// The next packet when it is already whole in memory (None: read it with [`Self::packet`]).
    fn buffered_packet(&mut self) -> Option<Bytes>;
    /// More of the response can be read without waiting.
    fn has_buffered_input(&self) -> bool;
    /// Capabilities negotiated with the backend (EOF/OK framing).
    fn capabilities(&self) -> u32;
    /// The backend connection itself, when the response is read live from it.
    fn connection(&mut self) -> Option<&mut BackendConn>;
}

impl ResponseSource for BackendConn {
    async fn packet(&mut self) -> Result<Bytes, ProxyError> {
        self.read().await
    }
    fn buffered_packet(&mut self) -> Option<Bytes> {
        self.read_buffered()
    }
    fn has_buffered_input(&self) -> bool {
        self.io.has_buffered_input()
    }
    fn capabilities(&self) -> u32 {
        self.capabilities
    }
    fn connection(&mut self) -> Option<&mut BackendConn> {
        Some(self)
    }
}

/// A response read in full by a pipelined lane.
pub struct ReadResponse {
    pub packets: std::collections::VecDeque<Bytes>,
    pub capabilities: u32,
}

impl ResponseSource for ReadResponse {
    async fn packet(&mut self) -> Result<Bytes, ProxyError> {
        self.packets.pop_front().ok_or_else(|| {
            ProxyError::Client(tessera_protocol::ProtocolError::Io(
                std::io::ErrorKind::UnexpectedEof.into(),
            ))
        })
    }
    fn buffered_packet(&mut self) -> Option<Bytes> {
        self.packets.pop_front()
    }
    fn has_buffered_input(&self) -> bool {
        !self.packets.is_empty()
    }
    fn capabilities(&self) -> u32 {
        self.capabilities
    }
    fn connection(&mut self) -> Option<&mut BackendConn> {
        None
    }
}

/// Forwards the backend's response to the client and flushes it.
pub async fn forward<C>(
    backend: &mut BackendConn,
    client: &mut PacketStream<C>,
    side: ClientSide<'_>,
    mode: Mode,
) -> Result<Outcome, ProxyError>
where
    C: AsyncRead + SendBuffer,
{
    backend.response_started = false;
    // An error answer carries no status: the transaction state stays what it was.
    let status = if backend.in_transaction {
        SERVER_STATUS_IN_TRANS
    } else {
        0
    };
    let mut f = Forwarder::new(&mut *backend, client, side, status);
    let result = match f.whole_result_passed(mode).await {
        Ok(true) => Ok(()),
        Ok(false) => f.run(mode).await,
        Err(e) => Err(e),
    };
    match f.finish(result).await {
        Ok(()) => Ok(f.out),
        Err(e) => {
            backend.broken = true;
            Err(e)
        }
    }
}

/// Forwards a response from any source; `status` is the transaction state before it.
pub async fn forward_from<S, C>(
    source: &mut S,
    client: &mut PacketStream<C>,
    side: ClientSide<'_>,
    mode: Mode,
    status: u16,
) -> Result<Outcome, ProxyError>
where
    S: ResponseSource,
    C: AsyncRead + SendBuffer,
{
    let mut f = Forwarder::new(source, client, side, status);
    let result = f.run(mode).await;
    f.finish(result).await?;
    Ok(f.out)
}

/// Passes a result set that a pipelined lane found whole (`frames`, numbered from 1 as the
/// server sent them) to the client in one copy when the client's sequence goes on at 1: as it
/// is to a client of the server's dialect, rewritten where it lies for a client with cached
/// metadata that holds the definitions, else copied in the client's framing; packet by
/// packet like any lane answer when the client's sequence does not go on at 1.
pub async fn pass_whole<C>(
    client: &mut PacketStream<C>,
    side: ClientSide<'_>,
    mode: Mode,
    mut frames: BytesMut,
    whole: &tessera_protocol::whole::WholeResult,
    capabilities: u32,
) -> Result<Outcome, ProxyError>
where
    C: AsyncRead + SendBuffer,
{
    if client.seq() != 1 {
        let packets = payloads(&frames.freeze());
        return forward_from(&mut ReadResponse { packets, capabilities }, client, side, mode, 0).await;
    }
    let (framing, columns_sent) = whole_framing(side.capabilities, side.metadata, mode, &frames, whole);
    let in_place = match framing {
        Framing {
            deprecate_eof: false,
            metadata_follows: Some(false),
        } => tessera_protocol::whole::drop_definitions_in_place(&mut frames, whole),
        _ => None,
    };
    match in_place {
        Some((start, next)) => client.write_frames(&frames[start..whole.len], next),
        None if framing.is_servers() => client.write_frames(&frames, whole.next_seq),
        None => client.write_framed(&frames, whole, framing, side.capabilities),
    }
    flush_client(client, side.write_timeout).await?;
    Ok(Outcome {
        status: whole.status,
        warnings: whole.warnings,
        result_rows: Some(whole.rows),
        columns_sent,
        state_changed: whole.status & SERVER_SESSION_STATE_CHANGED != 0,
        ..Outcome::default()
    })
}

/// How a whole result (`frames`, numbered from 1) goes to the client, and, when its column
/// definitions go with a binary result to a client with cached metadata, those definitions
/// (what the client then holds for the statement).
fn whole_framing(
    capabilities: u32,
    metadata: Metadata<'_>,
    mode: Mode,
    frames: &[u8],
    whole: &WholeResult,
) -> (Framing, Option<Bytes>) {
    let deprecate_eof = capabilities & CLIENT_DEPRECATE_EOF != 0;
    let framing = |follows| Framing {
        deprecate_eof,
        metadata_follows: follows,
    };
    let Metadata::Cached { known } = metadata else {
        return (framing(None), None);
    };
    if mode != Mode::Binary {
        return (framing(Some(true)), None);
    }
    let definitions = tessera_protocol::whole::definitions(frames, whole);
    if known == Some(definitions) {
        (framing(Some(false)), None)
    } else {
        (framing(Some(true)), Some(Bytes::copy_from_slice(definitions)))
    }
}

/// A column count packet with the "metadata follows" byte after it.
fn column_count_follows(out: &mut BytesMut, count: &[u8], follows: bool) {
    out.extend_from_slice(count);
    out.extend_from_slice(&[u8::from(follows)]);
}

/// The payloads of whole frames, in order.
fn payloads(frames: &Bytes) -> std::collections::VecDeque<Bytes> {
    let mut packets = std::collections::VecDeque::new();
    let mut at = 0;
    while let Some(header) = frames.get(at..at + 4) {
        let end = (at + 4 + tessera_protocol::packet::frame_len(header)).min(frames.len());
        packets.push_back(frames.slice(at + 4..end));
        at = end;
    }
    packets
}

/// Waits for the backend's next answer (`answer`) unless the client closes its connection
/// first. Then the statement is abandoned: the caller closes the backend connection (a failed
/// forward breaks it), and the server sees its client leave, as it would see this client leave
/// without Tessera in between (a lock wait or SLEEP ends, a statement that writes nothing runs
/// on to its end, a transaction rolls back).
async fn unless_client_left<T, C: AsyncRead + SendBuffer>(
    client: &mut PacketStream<C>,
    answer: impl std::future::Future<Output = Result<T, ProxyError>>,
) -> Result<T, ProxyError> {
    tokio::select! {
        biased;
        answer = answer => answer,
        () = client_left(client) => {
            Err(ProxyError::Client(tessera_protocol::ProtocolError::Closed))
        }
    }
}

/// Completes when the client closes its connection while a statement of its session runs
/// (what it sends meanwhile is kept for later, up to 64 KiB;
/// beyond, it stays pending). Cancel-safe.
pub async fn client_left<C: AsyncRead + SendBuffer>(client: &mut PacketStream<C>) {
    client.peer_closed(CLIENT_INPUT_WATCHED_UP_TO).await
}

/// Flushes what was written to the client; a flush that takes longer than `write_timeout`
/// fails (the client stopped reading).
async fn flush_client<C: AsyncRead + SendBuffer>(
    client: &mut PacketStream<C>,
    write_timeout: Duration,
) -> Result<(), ProxyError> {
    let mut flush = std::pin::pin!(client.flush());
    // The usual case: the socket takes everything at once, and no timer is armed (nor the
    // clock read) for it.
    if let std::task::Poll::Ready(r) = poll_once(&mut flush).await {
        return Ok(r?);
    }
    // A write through io_uring waits for the previous send, which completes when the
    // ring's driver submits it, later in this turn of the runtime: let it run before
    // deciding the client is slow.
    tokio::task::yield_now().await;
    if let std::task::Poll::Ready(r) = poll_once(&mut flush).await {
        return Ok(r?);
    }
    match tokio::time::timeout(write_timeout, flush).await {
        Ok(r) => Ok(r?),
        Err(_) => Err(ProxyError::Client(tessera_protocol::ProtocolError::Io(
            std::io::ErrorKind::TimedOut.into(),
        ))),
    }
}

/// Polls `f` once: its output, or Pending (the waker stays registered).
async fn poll_once<F: std::future::Future + Unpin>(f: &mut F) -> std::task::Poll<F::Output> {
    std::future::poll_fn(|cx| std::task::Poll::Ready(std::pin::Pin::new(&mut *f).poll(cx))).await
}

struct Forwarder<'a, S, C> {
    backend: &'a mut S,
    client: &'a mut PacketStream<C>,
    client_caps: u32,
    metadata: Metadata<'a>,
    write_timeout: Duration,
    tracking: &'a ClientTracking,
    later_tracking: Option<(usize, &'a ClientTracking)>,
    acknowledged: Option<&'a NewestGtid>,
    out: Outcome,
}

impl<C: AsyncRead + SendBuffer> Forwarder<'_, BackendConn, C> {
    /// The usual read: a result set that arrived whole from a live connection goes on in one
    /// piece, counted but not parsed packet by packet. For a client of the backend's dialect
    /// (classic EOF packets) as it came (large ones lent to the client's stream: no copy); for
    /// a client with `CLIENT_DEPRECATE_EOF` in one copy without the EOF packets.
    /// False leaves everything to the packet-by-packet road.
    async fn whole_result_passed(&mut self, mode: Mode) -> Result<bool, ProxyError> {
        let conn = &mut *self.backend;
        if !matches!(mode, Mode::Text | Mode::Binary) || self.client.pending_write() != 0 || conn.has_pending_answers()
        {
            return Ok(false);
        }
        let seq = self.client.seq();
        let awaited = unless_client_left(self.client, async {
            conn.io
                .await_whole_result(seq, WAIT_FOR_WHOLE_UP_TO)
                .await
                .map_err(|e| conn.lost(e))
        });
        let whole = match awaited.await? {
            Some(whole) => whole,
            None => return Ok(false),
        };
        conn.response_started = true;
        let frames = &conn.io.buffered()[..whole.len];
        let (framing, columns_sent) = whole_framing(self.client_caps, self.metadata, mode, frames, &whole);
        match framing {
            f if f.is_servers() => conn.io.pass_buffered_to(self.client, &whole),
            Framing {
                deprecate_eof: false,
                metadata_follows: Some(follows),
            } => conn.io.pass_buffered_cached(self.client, &whole, follows),
            _ => conn
                .io
                .pass_buffered_framed(self.client, &whole, framing, self.client_caps),
        }
        self.out.columns_sent = columns_sent;
        self.out.status = whole.status;
        self.out.state_changed |= whole.status & SERVER_SESSION_STATE_CHANGED != 0;
        self.out.warnings = whole.warnings;
        self.out.result_rows = Some(whole.rows);
        self.out.affected_rows = 0;
        self.out.results = 1;
        Ok(true)
    }
}

impl<'a, S: ResponseSource, C: AsyncRead + SendBuffer> Forwarder<'a, S, C> {
    fn new(backend: &'a mut S, client: &'a mut PacketStream<C>, side: ClientSide<'a>, status: u16) -> Self {
        Forwarder {
            backend,
            client,
            client_caps: side.capabilities,
            metadata: side.metadata,
            write_timeout: side.write_timeout,
            tracking: side.tracking,
            later_tracking: side.later_tracking,
            acknowledged: side.acknowledged,
            out: Outcome {
                status,
                ..Outcome::default()
            },
        }
    }

    /// Flushes the client once the response went through (the outcome is then `self.out`).
    async fn finish(&mut self, result: Result<(), ProxyError>) -> Result<(), ProxyError> {
        result?;
        self.flush_client().await
    }

    async fn flush_client(&mut self) -> Result<(), ProxyError> {
        flush_client(self.client, self.write_timeout).await
    }

    async fn next(&mut self) -> Result<Bytes, ProxyError> {
        // Most packets of a response arrive with the one before them: taken without the
        // reading machinery (and, with input buffered, no flush is due below FLUSH_AT).
        if self.client.pending_write() < FLUSH_AT {
            if let Some(packet) = self.backend.buffered_packet() {
                self.note_started();
                return Ok(packet);
            }
        }
        if self.client.pending_write() >= FLUSH_AT
            || (self.client.pending_write() > 0 && !self.backend.has_buffered_input())
        {
            self.flush_client().await?;
        }
        let packet = unless_client_left(self.client, self.backend.packet()).await?;
        self.note_started();
        Ok(packet)
    }

    /// Part of the response was taken: a live connection cannot be reused for another command.
    fn note_started(&mut self) {
        if let Some(conn) = self.backend.connection() {
            conn.response_started = true;
        }
    }

    async fn run(&mut self, mode: Mode) -> Result<(), ProxyError> {
        match mode {
            Mode::Fetch => return self.rows_then_end(Mode::Fetch).await.map(|_| ()),
            Mode::FieldList => return self.field_list().await,
            _ => {}
        }
        loop {
            let first = self.next().await?;
            let more = match first.first() {
                Some(&OK_HEADER) => self.ok(&first)?,
                Some(&ERR_HEADER) => self.err(&first)?,
                Some(&LOCAL_INFILE_HEADER) if mode == Mode::Text => self.local_infile(first).await?,
                _ => self.result_set(&first, mode).await?,
            };
            self.out.results += 1;
            if let Some((from, later)) = self.later_tracking.filter(|(from, _)| *from == self.out.results) {
                (self.tracking, self.later_tracking) = (later, None);
                tracing::trace!(from, "client tracking changed inside the query");
            }
            if !more {
                return Ok(());
            }
        }
    }

    /// Forwards an OK packet; returns whether more results follow.
    fn ok(&mut self, p: &[u8]) -> Result<bool, ProxyError> {
        let mut ok = OkPacket::parse(p, self.backend.capabilities())?;
        // The client's last result when a statement of Tessera's own follows it.
        let ends_before_own_tail = ok.status & SERVER_MORE_RESULTS_EXISTS != 0 && self.own_tail_follows();
        if ends_before_own_tail {
            ok.status &= !SERVER_MORE_RESULTS_EXISTS;
        }
        let changes = ok.session_changes()?;
        if let Some((newest, gtid)) = self.acknowledged.zip(crate::gtid::written_gtid(&changes)) {
            newest.note(gtid);
        }
        if let Some(conn) = self.backend.connection() {
            conn.apply_changes(&changes);
        }
        self.out.changes.extend(changes);
        self.out.state_changed |= ok.status & SERVER_SESSION_STATE_CHANGED != 0;
        self.out.status = ok.status;
        self.out.warnings = ok.warnings;
        self.out.affected_rows = ok.affected_rows;
        if ok.last_insert_id != 0 {
            self.out.last_insert_id = ok.last_insert_id;
        }
        self.out.result_rows = None;
        let tracked = self.client_caps & CLIENT_SESSION_TRACK != 0;
        let state_as_is = ok.session_state.is_empty() || self.tracking.wants_everything();
        if tracked && state_as_is && !ends_before_own_tail {
            self.client.write_packet(p);
        } else if tracked && !state_as_is {
            let filtered = OkPacket {
                session_state: self.tracking.filter(&ok.session_state)?,
                ..ok
            };
            self.client.write_with(|b| filtered.encode(b, self.client_caps));
        } else {
            self.client.write_with(|b| ok.encode(b, self.client_caps));
        }
        Ok(ok.status & SERVER_MORE_RESULTS_EXISTS != 0)
    }

    /// Whether the backend connection's next result is a statement Tessera appended (marking
    /// it due: the caller reads it after the client's response).
    fn own_tail_follows(&mut self) -> bool {
        use crate::backend::conn::OwnTail;
        match self.backend.connection() {
            Some(conn) if conn.own_tail == OwnTail::Appended => {
                conn.own_tail = OwnTail::Due;
                true
            }
            _ => false,
        }
    }

    fn err(&mut self, p: &[u8]) -> Result<bool, ProxyError> {
        let e = ErrPacket::parse(p)?;
        if e.code == ER_LOCK_DEADLOCK {
            // A deadlock rolls back the whole transaction.
            self.out.status &= !SERVER_STATUS_IN_TRANS;
        }
        self.out.error = Some(e);
        self.client.write_packet(p);
        Ok(false)
    }

    /// Column count, definitions, EOF, rows, end. Returns whether more results follow.
    async fn result_set(&mut self, first: &[u8], mode: Mode) -> Result<bool, ProxyError> {
        let columns = Reader::new(first).lenenc_int()?;
        match self.metadata {
            Metadata::Cached { known } if mode == Mode::Binary => {
                self.definitions_cached(first, columns, known).await?
            }
            metadata => {
                if metadata == Metadata::Plain {
                    self.client.write_packet(first);
                } else {
                    self.client.write_with(|b| column_count_follows(b, first, true));
                }
                for _ in self.take_buffered_definitions(columns)..columns {
                    let def = self.next().await?;
                    self.client.write_packet(&def);
                }
            }
        }
        let eof = self.next().await?;
        let (_, status) = parse_eof(&eof, self.backend.capabilities())?;
        if mode == Mode::Binary && status & SERVER_STATUS_CURSOR_EXISTS != 0 {
            // A cursor was opened: the metadata ends with an EOF and rows come with FETCH.
            self.client.write_packet(&eof);
            self.out.status = status;
            self.out.cursor_opened = true;
            self.out.result_rows = Some(0);
            return Ok(false);
        }
        if self.client_caps & CLIENT_DEPRECATE_EOF == 0 {
            self.client.write_packet(&eof);
        }
        self.rows_then_end(mode).await
    }

    /// A binary result's column count and definitions for a client with cached metadata: the
    /// definitions are read whole first, and go only when they differ from what the client
    /// holds for the statement (`known`, or what an earlier result of this response sent).
    async fn definitions_cached(&mut self, first: &[u8], columns: u64, known: Option<&[u8]>) -> Result<(), ProxyError> {
        let mut payloads = Vec::new();
        for _ in 0..columns {
            payloads.push(self.next().await?);
        }
        let definitions = tessera_protocol::whole::frame_definitions(payloads.iter().map(|d| &d[..]));
        let held = self.out.columns_sent.as_deref().or(known);
        let follows = held != Some(&definitions[..]);
        self.client.write_with(|b| column_count_follows(b, first, follows));
        if follows {
            for def in &payloads {
                self.client.write_packet(def);
            }
            self.out.columns_sent = Some(definitions.freeze());
        }
        Ok(())
    }

    /// Rows until the end packet (or an ERR). Returns whether more results follow.
    async fn rows_then_end(&mut self, _mode: Mode) -> Result<bool, ProxyError> {
        let mut rows = 0u64;
        loop {
            rows += self.take_buffered_rows();
            let p = self.next().await?;
            if is_eof(&p) {
                let (warnings, status) = parse_eof(&p, self.backend.capabilities())?;
                self.end_packet(&p, warnings, status);
                self.out.result_rows = Some(rows);
                self.out.affected_rows = 0;
                return Ok(status & SERVER_MORE_RESULTS_EXISTS != 0);
            }
            if is_err(&p) {
                return self.err(&p);
            }
            rows += 1;
            self.client.write_packet(&p);
        }
    }

    /// Copies up to `columns` column definitions already buffered from a live backend straight
    /// to the client, in one piece; returns how many.
    fn take_buffered_definitions(&mut self, columns: u64) -> u64 {
        let mut wanted = columns;
        self.copy_buffered(|_| {
            let take = wanted > 0;
            wanted = wanted.saturating_sub(1);
            take
        })
    }

    /// Copies the rows already buffered from a live backend straight to the client.
    fn take_buffered_rows(&mut self) -> u64 {
        self.copy_buffered(|p| !(is_eof(p) || is_err(p)))
    }

    /// Copies the packets already buffered from a live backend that `take` accepts straight to
    /// the client (see [`PacketStream::copy_buffered_to`]); returns how many.
    fn copy_buffered(&mut self, take: impl FnMut(&[u8]) -> bool) -> u64 {
        let client = &mut *self.client;
        let Some(conn) = self.backend.connection() else {
            return 0;
        };
        let taken = conn.io.copy_buffered_to(client, take);
        if taken > 0 {
            conn.response_started = true;
        }
        taken as u64
    }

    fn end_packet(&mut self, raw: &[u8], warnings: u16, status: u16) {
        self.out.status = status;
        self.out.state_changed |= status & SERVER_SESSION_STATE_CHANGED != 0;
        self.out.warnings = warnings;
        if self.client_caps & CLIENT_DEPRECATE_EOF != 0 {
            self.client
                .write_with(|b| encode_result_end(b, warnings, status, self.client_caps));
        } else {
            self.client.write_packet(raw);
        }
    }

    async fn field_list(&mut self) -> Result<(), ProxyError> {
        loop {
            let p = self.next().await?;
            if is_err(&p) {
                return self.err(&p).map(|_| ());
            }
            if is_eof(&p) {
                let (warnings, status) = parse_eof(&p, self.backend.capabilities())?;
                self.end_packet(&p, warnings, status);
                return Ok(());
            }
            self.client.write_packet(&p);
        }
    }

    /// LOAD DATA LOCAL INFILE: relay the file request to the client and its data back.
    async fn local_infile(&mut self, request: Bytes) -> Result<bool, ProxyError> {
        if self.backend.connection().is_none() {
            return Err(ProxyError::Unsupported("LOCAL INFILE in a pipelined response".into()));
        }
        self.client.write_packet(&request);
        self.flush_client().await?;
        loop {
            let chunk = self.client.read_packet().await?;
            let Some(conn) = self.backend.connection() else { break };
            conn.io.write_packet(&chunk);
            if chunk.is_empty() {
                break;
            }
            if conn.io.pending_write() >= FLUSH_AT {
                conn.flush().await?;
            }
        }
        if let Some(conn) = self.backend.connection() {
            conn.flush().await?;
        }
        let answer = self.next().await?;
        match answer.first() {
            Some(&OK_HEADER) => self.ok(&answer),
            _ => self.err(&answer),
        }
    }
}

#[cfg(test)]
mod tests {
    //! The forwarder against a scripted fake backend over in-memory pipes: no database needed.

    use super::*;
    use crate::backend::ServerInfo;
    use crate::net::Stream;
    use bytes::BytesMut;
    use std::sync::Arc;
    use tessera_protocol::codec::{put_lenenc_bytes, put_lenenc_int};
    use tessera_protocol::resultset::{encode_text_row, ColumnDefinition};
    use tokio::io::DuplexStream;

    const BACKEND_CAPS: u32 = CLIENT_PROTOCOL_41 | CLIENT_SESSION_TRACK | CLIENT_MULTI_RESULTS;

    struct Rig {
        backend: BackendConn,
        server: PacketStream<DuplexStream>,
        client: PacketStream<DuplexStream>,
        peer: PacketStream<DuplexStream>,
    }

    fn rig() -> Rig {
        let (a, b) = tokio::io::duplex(1 << 20);
        let (c, d) = tokio::io::duplex(1 << 20);
        let info = Arc::new(ServerInfo {
            name: "fake".into(),
            address: "memory".into(),
            user: "u".into(),
            password: String::new(),
            tls: false,
        });
        let backend = BackendConn::new(
            PacketStream::new(Stream::Memory(a)),
            info,
            7,
            BACKEND_CAPS,
            "fake".into(),
            4,
        );
        let mut server = PacketStream::new(b);
        server.set_seq(1);
        let mut client = PacketStream::new(c);
        client.set_seq(1);
        Rig {
            backend,
            server,
            client,
            peer: PacketStream::new(d),
        }
    }

    fn packet(build: impl FnOnce(&mut BytesMut)) -> Vec<u8> {
        let mut b = BytesMut::new();
        build(&mut b);
        b.to_vec()
    }

    fn column_count(n: u64) -> Vec<u8> {
        packet(|b| put_lenenc_int(b, n))
    }

    fn eof(status: u16) -> Vec<u8> {
        packet(|b| encode_eof(b, 0, status))
    }

    fn row(v: &str) -> Vec<u8> {
        packet(|b| encode_text_row(b, &[Some(v.as_bytes())]))
    }

    async fn script(server: &mut PacketStream<DuplexStream>, packets: &[Vec<u8>]) {
        for p in packets {
            server.write_packet(p);
        }
        server.flush().await.expect("fake backend writes");
    }

    async fn read_n(peer: &mut PacketStream<DuplexStream>, n: usize) -> Vec<(u8, Vec<u8>)> {
        let mut out = Vec::new();
        for _ in 0..n {
            let (seq, p) = peer.read_packet_with_seq().await.expect("client receives");
            out.push((seq, p.to_vec()));
        }
        out
    }

    static EVERYTHING: std::sync::LazyLock<ClientTracking> = std::sync::LazyLock::new(|| ClientTracking {
        system_variables: "*".into(),
        schema: true,
        state_change: true,
    });

    fn side(capabilities: u32) -> ClientSide<'static> {
        ClientSide {
            capabilities,
            metadata: Metadata::Plain,
            write_timeout: Duration::from_secs(5),
            tracking: &EVERYTHING,
            later_tracking: None,
            acknowledged: None,
        }
    }

    fn result_set(status_end: u16) -> Vec<Vec<u8>> {
        let def = packet(|b| ColumnDefinition::text("a").encode(b));
        vec![column_count(1), def, eof(0x0002), row("x"), row("y"), eof(status_end)]
    }

    /// A classic-EOF client whose sequence continues at `first` gets the backend's packets
    /// unchanged, numbered from `first` on: passed on as they came when the numbers agree
    /// (the backend's start at 1), renumbered packet by packet when they do not.
    async fn classic_client_gets_identical_packets_numbered_from(first: u8) {
        let mut r = rig();
        r.client.set_seq(first);
        let packets = result_set(0x0002);
        script(&mut r.server, &packets).await;
        let out = forward(&mut r.backend, &mut r.client, side(CLIENT_PROTOCOL_41), Mode::Text)
            .await
            .expect("forward");
        assert_eq!(out.result_rows, Some(2));
        let got = read_n(&mut r.peer, packets.len()).await;
        for (i, ((seq, p), want)) in got.iter().zip(&packets).enumerate() {
            assert_eq!(*seq as usize, i + first as usize);
            assert_eq!(p, want);
        }
    }

    #[tokio::test]
    async fn classic_eof_client_gets_identical_packets_and_fresh_sequence_ids() {
        classic_client_gets_identical_packets_numbered_from(1).await;
    }

    #[tokio::test]
    async fn a_whole_result_out_of_the_clients_sequence_is_renumbered() {
        classic_client_gets_identical_packets_numbered_from(3).await;
    }

    /// A large result that arrives whole goes on as it came (lent to the client's stream,
    /// not copied), with its outcome counted, and what is written after it (the next answer)
    /// reaches the client after it, numbered on.
    #[tokio::test]
    async fn a_whole_large_result_goes_on_as_it_came_and_what_follows_comes_after_it() {
        let mut r = rig();
        let def = packet(|b| ColumnDefinition::text("a").encode(b));
        let mut packets = vec![column_count(1), def, eof(0x0002)];
        packets.extend((0..500).map(|i| row(&format!("row number {i}"))));
        packets.push(packet(|b| encode_eof(b, 3, 0x0022)));
        script(&mut r.server, &packets).await;
        let out = forward(&mut r.backend, &mut r.client, side(CLIENT_PROTOCOL_41), Mode::Text)
            .await
            .expect("forward");
        assert_eq!((out.result_rows, out.warnings, out.status), (Some(500), 3, 0x0022));
        r.client.write_packet(b"after");
        r.client.flush().await.expect("flush");
        let got = read_n(&mut r.peer, packets.len() + 1).await;
        for (i, ((seq, p), want)) in got.iter().zip(&packets).enumerate() {
            assert_eq!(*seq as usize % 256, (i + 1) % 256);
            assert_eq!(p, want, "packet {i}");
        }
        let (seq, last) = got.last().expect("the packet written after");
        assert_eq!(
            (*seq as usize, last.as_slice()),
            ((packets.len() + 1) % 256, &b"after"[..])
        );
    }

    /// Five definitions, of which the first read finds `buffered` packets; the rest arrives
    /// afterwards and the fake backend then closes, so a forwarder that miscounts fails.
    async fn forward_definitions_arriving_in_two_parts(buffered: usize) {
        let mut r = rig();
        let defs: Vec<Vec<u8>> = (0..5)
            .map(|i| packet(|b| ColumnDefinition::text(&format!("col{i}")).encode(b)))
            .collect();
        let mut packets = vec![column_count(5)];
        packets.extend(defs);
        packets.extend([eof(0x0002), row("x"), eof(0x0002)]);
        script(&mut r.server, &packets[..buffered]).await;
        let mut server = r.server;
        let rest = async {
            tokio::task::yield_now().await;
            script(&mut server, &packets[buffered..]).await;
            drop(server);
        };
        let forwarding = forward(&mut r.backend, &mut r.client, side(CLIENT_PROTOCOL_41), Mode::Text);
        let (out, ()) = tokio::join!(forwarding, rest);
        assert_eq!(out.expect("forward").result_rows, Some(1), "{buffered} buffered");
        let got = read_n(&mut r.peer, packets.len()).await;
        for (i, ((seq, p), want)) in got.iter().zip(&packets).enumerate() {
            assert_eq!(*seq as usize, i + 1, "packet {i}, {buffered} buffered");
            assert_eq!(p, want, "packet {i}, {buffered} buffered");
        }
    }

    #[tokio::test]
    async fn definitions_buffered_in_part_or_whole_reach_the_client_whole_and_in_sequence() {
        for buffered in [1, 3, 6, 7, 9] {
            forward_definitions_arriving_in_two_parts(buffered).await;
        }
    }

    #[tokio::test]
    async fn deprecate_eof_client_gets_no_middle_eof_and_an_ok_at_the_end() {
        let mut r = rig();
        script(&mut r.server, &result_set(0x0002)).await;
        let caps = CLIENT_PROTOCOL_41 | CLIENT_DEPRECATE_EOF;
        forward(&mut r.backend, &mut r.client, side(caps), Mode::Text)
            .await
            .expect("forward");
        let got = read_n(&mut r.peer, 5).await;
        assert_eq!(got[2].1, row("x"), "definitions are followed directly by rows");
        let end = &got[4].1;
        assert!(
            is_result_end_ok(end) && end.len() > 5,
            "an OK with the 0xFE header ends the rows"
        );
        assert_eq!(parse_eof(end, caps).expect("end").1, 0x0002);
    }

    #[tokio::test]
    async fn ok_with_session_state_is_tracked_and_reencoded_for_clients_without_tracking() {
        let mut r = rig();
        let mut state = BytesMut::new();
        let mut var = BytesMut::new();
        put_lenenc_bytes(&mut var, b"time_zone");
        put_lenenc_bytes(&mut var, b"+02:00");
        state.extend_from_slice(&[SESSION_TRACK_SYSTEM_VARIABLES]);
        put_lenenc_bytes(&mut state, &var);
        let ok = OkPacket {
            affected_rows: 3,
            last_insert_id: 9,
            status: 0x0002 | SERVER_SESSION_STATE_CHANGED,
            info: b"Rows matched: 3".to_vec(),
            session_state: state.to_vec(),
            ..Default::default()
        };
        script(&mut r.server, &[packet(|b| ok.encode(b, BACKEND_CAPS))]).await;
        let out = forward(&mut r.backend, &mut r.client, side(CLIENT_PROTOCOL_41), Mode::Text)
            .await
            .expect("forward");
        assert_eq!((out.affected_rows, out.last_insert_id), (3, 9));
        assert_eq!(
            r.backend.state.vars().get("time_zone").map(String::as_str),
            Some("+02:00")
        );
        let got = read_n(&mut r.peer, 1).await;
        let seen = OkPacket::parse(&got[0].1, CLIENT_PROTOCOL_41).expect("ok");
        assert_eq!(seen.info, b"Rows matched: 3");
        assert_eq!(seen.status & SERVER_SESSION_STATE_CHANGED, 0);
        assert_eq!(
            got[0].1[got[0].1.len() - 16],
            15,
            "info is length-prefixed, as servers send it"
        );
    }

    #[tokio::test]
    async fn multi_results_end_with_the_last_status_and_errors_stop_the_stream() {
        let mut r = rig();
        let mut packets = result_set(0x0002 | SERVER_MORE_RESULTS_EXISTS);
        packets.push(packet(|b| {
            OkPacket {
                status: 0x0002,
                ..Default::default()
            }
            .encode(b, BACKEND_CAPS)
        }));
        script(&mut r.server, &packets).await;
        let out = forward(&mut r.backend, &mut r.client, side(CLIENT_PROTOCOL_41), Mode::Text)
            .await
            .expect("forward");
        assert_eq!(out.status & SERVER_MORE_RESULTS_EXISTS, 0);
        assert_eq!(out.result_rows, None, "the last result was an OK");
        read_n(&mut r.peer, packets.len()).await;

        let err = packet(|b| ErrPacket::new(1317, "70100", "Query execution was interrupted").encode(b));
        let def = packet(|b| ColumnDefinition::text("a").encode(b));
        script(&mut r.server, &[column_count(1), def, eof(2), row("x"), err.clone()]).await;
        let out = forward(&mut r.backend, &mut r.client, side(CLIENT_PROTOCOL_41), Mode::Text)
            .await
            .expect("forward");
        assert_eq!(out.error.map(|e| e.code), Some(1317));
        assert_eq!(read_n(&mut r.peer, 5).await[4].1, err);
    }

    #[tokio::test]
    async fn backend_gone_mid_result_is_lost_backend_and_breaks_the_connection() {
        let mut r = rig();
        let def = packet(|b| ColumnDefinition::text("a").encode(b));
        script(&mut r.server, &[column_count(1), def]).await;
        drop(r.server);
        let e = forward(&mut r.backend, &mut r.client, side(CLIENT_PROTOCOL_41), Mode::Text)
            .await
            .expect_err("lost");
        assert!(matches!(e, ProxyError::LostBackend { .. }), "{e}");
        assert!(r.backend.broken);
    }

    #[tokio::test]
    async fn cursor_response_keeps_its_eof_and_opens_a_cursor() {
        let mut r = rig();
        let def = packet(|b| ColumnDefinition::text("a").encode(b));
        script(
            &mut r.server,
            &[column_count(1), def, eof(0x0002 | SERVER_STATUS_CURSOR_EXISTS)],
        )
        .await;
        let caps = CLIENT_PROTOCOL_41 | CLIENT_DEPRECATE_EOF;
        let out = forward(&mut r.backend, &mut r.client, side(caps), Mode::Binary)
            .await
            .expect("forward");
        assert!(out.cursor_opened);
        let got = read_n(&mut r.peer, 3).await;
        assert!(is_eof(&got[2].1));
    }

    #[tokio::test]
    async fn a_whole_lane_result_goes_on_as_framed_or_renumbered_for_the_client() {
        let def = packet(|b| ColumnDefinition::text("a").encode(b));
        let payloads = [column_count(1), def, eof(0x0002), row("x"), eof(0x0002)];
        let mut frames = BytesMut::new();
        for (seq, p) in (1u8..).zip(&payloads) {
            frames.extend_from_slice(&(p.len() as u32).to_le_bytes()[..3]);
            frames.extend_from_slice(&[seq]);
            frames.extend_from_slice(p);
        }
        let frames = frames.freeze();
        let whole = tessera_protocol::whole::whole_result(&frames, 1, 1 << 20).expect("whole");
        // A client whose sequence goes on at 1 takes the frames as they are; another one
        // gets them renumbered in its own sequence.
        passes_whole_as(&frames, &whole, CLIENT_PROTOCOL_41, &payloads).await;
        // A client with CLIENT_DEPRECATE_EOF: no EOF after the definition, the end as an OK
        // packet with the EOF header, numbered on from its own sequence either way.
        let caps = CLIENT_PROTOCOL_41 | CLIENT_DEPRECATE_EOF;
        let end = packet(|b| encode_result_end(b, 0, 0x0002, caps));
        let want = [column_count(1), payloads[1].clone(), row("x"), end];
        passes_whole_as(&frames, &whole, caps, &want).await;
    }

    /// `pass_whole` of `frames` to a client with `caps` whose sequence goes on at 1 or at 3:
    /// the client reads `want`, numbered from there.
    async fn passes_whole_as(
        frames: &Bytes,
        whole: &tessera_protocol::whole::WholeResult,
        caps: u32,
        want: &[Vec<u8>],
    ) {
        for start in [1u8, 3] {
            let mut r = rig();
            r.client.set_seq(start);
            let out = pass_whole(
                &mut r.client,
                side(caps),
                Mode::Text,
                BytesMut::from(&frames[..]),
                whole,
                BACKEND_CAPS,
            )
            .await
            .expect("pass");
            assert_eq!((out.result_rows, out.status), (Some(1), 0x0002));
            let got = read_n(&mut r.peer, want.len()).await;
            for (i, ((seq, payload), want)) in got.iter().zip(want).enumerate() {
                assert_eq!(*seq, start.wrapping_add(i as u8), "packet {i}, client from {start}");
                assert_eq!(payload, want, "packet {i}, client from {start}");
            }
        }
    }
}
