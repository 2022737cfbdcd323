//! Pipelined lanes: short, side-effect-free autocommit reads of many sessions that share one
//! session state run over a few shared backend connections. A lane writes every statement
//! queued since its last write in one write, then reads the answers in order, so the server
//! reads several commands per wake-up and the proxy makes one backend write and few reads for
//! many statements. Each answer goes back whole to its session, which checks it before a byte
//! reaches the client: an answer with warnings or an error is dropped and the statement runs
//! again on a connection of its own, where its diagnostics area stays readable. The lane's
//! `max_statement_time` bounds how long any statement holds up those queued behind it.

use crate::backend::stmt_cache::SqlText;
use crate::backend::ServerRef;
use crate::error::ProxyError;
use crate::metrics::Metrics;
use crate::pool::{Flavour, PooledConn};
use crate::state::SessionVars;
use bytes::{Bytes, BytesMut};
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tessera_protocol::codec::Reader;
use tessera_protocol::flags::{CLIENT_DEPRECATE_EOF, SERVER_MORE_RESULTS_EXISTS};
use tessera_protocol::response::{is_eof, is_err, parse_eof, OkPacket, ERR_HEADER, OK_HEADER};
use tessera_protocol::stmt::drop_execute_types;
use tessera_protocol::whole::WholeResult;
use tokio::sync::{mpsc, oneshot};

/// Sets of lanes keyed by session state, at most this many per server (sessions in other
/// states take connections of their own).
const MAX_STATES: usize = 8;
/// A lane with nothing to do for this long gives its connection back.
const LANE_IDLE: Duration = Duration::from_secs(10);
/// With fewer answers than this outstanding, a lane writes a statement as soon as it comes
/// (low load: the wait would cost a round trip); with more it gathers them for the write
/// after the next answer (high load: one write carries several, see docs/benchmarks.md).
const WRITE_WHILE_WAITING: usize = 4;

/// How lanes behave (from `server.pipeline_*`).
#[derive(Debug, Clone, Copy)]
pub struct LaneSettings {
    pub lanes: usize,
    pub depth: usize,
    pub bound: Duration,
    /// Connections all lanes of a server may hold together (a quarter of its pool, so lanes
    /// never starve the sessions that need connections of their own).
    pub budget: usize,
}

/// One statement for a lane: the command payload, and for COM_STMT_EXECUTE what the lane
/// needs to complete it.
pub struct LaneRequest {
    pub execute: Option<LaneExecute>,
    pub command: BytesMut,
    pub reply: oneshot::Sender<LaneAnswer>,
}

/// A COM_STMT_EXECUTE for a lane: the text to prepare, whose handle the lane writes into the
/// payload's statement id (bytes 1..5), and where the payload carries the parameter types
/// (dropped when the lane's connection already holds exactly those).
pub struct LaneExecute {
    pub sql: SqlText,
    pub types: Option<Range<usize>>,
}

/// A lane's answer to one statement.
pub enum LaneAnswer {
    /// The whole response, without warnings or error.
    Clean(VecDeque<Bytes>, u32),
    /// One result set without warnings, its frames as the server sent them (numbered from 1),
    /// the session's to rewrite where they lie for its client.
    Whole(bytes::BytesMut, WholeResult, u32),
    /// The statement must run again on a connection of its own (warnings, an error, the bound).
    RunAlone,
}

/// The lanes of one backend server.
#[derive(Default)]
pub struct Lanes {
    sets: Mutex<Vec<Arc<LaneSet>>>,
    /// Lanes of this server alive now (each holds one pool connection).
    open: Arc<AtomicUsize>,
}

/// The lanes serving one session state.
pub struct LaneSet {
    state: SessionVars,
    flavour: Flavour,
    lanes: Mutex<Vec<Lane>>,
    open: Arc<AtomicUsize>,
}

/// A handle on one lane task.
#[derive(Clone)]
pub struct Lane {
    /// The lane's backend connection (server, thread id), where a KILL reaches its statements.
    pub at: (ServerRef, u32),
    tx: mpsc::Sender<LaneRequest>,
    queued: Arc<AtomicUsize>,
    alive: Arc<AtomicBool>,
}

/// What became of a statement offered to the lanes of a server.
pub enum Offer {
    /// Queued on the fullest lane with room, whose connection is this (server, thread id).
    Queued((ServerRef, u32)),
    /// No lane has room and the set may grow: the session opens one and sends it there.
    Open(Arc<LaneSet>, LaneRequest),
    /// No lane takes it now: the session runs it on a connection of its own.
    Refused,
}

/// True when a lane in `state` serves a session in `session` state.
fn same_state(lane: &SessionVars, session: &SessionVars) -> bool {
    lane.schema == session.schema && lane.same_vars(session)
}

impl Lanes {
    /// Offers a statement of a session in `state` to the lanes serving that state: queued on
    /// the fullest lane with room (below `settings.depth`), else handed back with an invitation
    /// to open a lane (while the set has fewer than `settings.lanes`), else refused. A session
    /// whose variables equal a set's takes the set's shared copy of them, so its next offer
    /// compares one pointer instead of every variable.
    pub fn offer(
        &self,
        state: &mut SessionVars,
        flavour: Flavour,
        settings: LaneSettings,
        request: LaneRequest,
    ) -> Offer {
        let Ok(mut sets) = self.sets.lock() else {
            return Offer::Refused;
        };
        let found = sets
            .iter()
            .position(|s| s.flavour == flavour && same_state(&s.state, state));
        let index = match found {
            Some(i) => {
                sets[i].state.share_vars_with(state);
                i
            }
            None => {
                // Sets without lanes that no session is opening one for make room.
                sets.retain(|s| s.lanes.lock().map(|l| !l.is_empty()).unwrap_or(false) || Arc::strong_count(s) > 1);
                if sets.len() >= MAX_STATES {
                    return Offer::Refused;
                }
                sets.push(Arc::new(LaneSet {
                    state: state.clone(),
                    flavour,
                    lanes: Mutex::new(Vec::new()),
                    open: self.open.clone(),
                }));
                sets.len() - 1
            }
        };
        sets[index].offer(settings, request)
    }
}

impl LaneSet {
    fn offer(self: &Arc<Self>, settings: LaneSettings, request: LaneRequest) -> Offer {
        let Ok(mut lanes) = self.lanes.lock() else {
            return Offer::Refused;
        };
        lanes.retain(|l| l.alive.load(Ordering::Relaxed));
        let queued = |l: &Lane| l.queued.load(Ordering::Relaxed);
        // Packed, not spread: the fullest lane with room, so each write carries as many
        // statements as can be had and a second lane (and server thread) only takes the
        // overflow of a full one.
        if let Some(l) = lanes
            .iter()
            .filter(|l| queued(l) < settings.depth)
            .max_by_key(|l| queued(l))
        {
            return match l.send(request) {
                Some(()) => Offer::Queued(l.at.clone()),
                None => Offer::Refused,
            };
        }
        if lanes.len() < settings.lanes && self.open.load(Ordering::Relaxed) < settings.budget {
            return Offer::Open(self.clone(), request);
        }
        Offer::Refused
    }

    /// The connection keeps its pool slot while the lane lives.
    pub fn open(&self, conn: PooledConn, settings: LaneSettings, metrics: Arc<Metrics>) -> Option<Lane> {
        let (tx, rx) = mpsc::channel(settings.depth);
        let lane = Lane {
            at: (conn.server.clone(), conn.thread_id),
            tx,
            queued: Arc::new(AtomicUsize::new(0)),
            alive: Arc::new(AtomicBool::new(true)),
        };
        let mut lanes = self.lanes.lock().ok()?;
        if lanes.len() >= settings.lanes {
            return lanes.iter().find(|l| l.alive.load(Ordering::Relaxed)).cloned();
        }
        lanes.push(lane.clone());
        self.open.fetch_add(1, Ordering::Relaxed);
        let task = LaneTask {
            conn,
            rx,
            open: self.open.clone(),
            queued: lane.queued.clone(),
            alive: lane.alive.clone(),
            depth: settings.depth,
            metrics,
        };
        tokio::spawn(task.run());
        Some(lane)
    }
}

impl Lane {
    /// Queues a statement; None when the lane is full or gone (run it elsewhere).
    pub fn send(&self, request: LaneRequest) -> Option<()> {
        self.queued.fetch_add(1, Ordering::Relaxed);
        if self.tx.try_send(request).is_err() {
            self.queued.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        Some(())
    }
}

/// The task that owns a lane's connection.
struct LaneTask {
    conn: PooledConn,
    open: Arc<AtomicUsize>,
    rx: mpsc::Receiver<LaneRequest>,
    queued: Arc<AtomicUsize>,
    alive: Arc<AtomicBool>,
    depth: usize,
    metrics: Arc<Metrics>,
}

impl LaneTask {
    async fn run(mut self) {
        let mut sent: VecDeque<LaneRequest> = VecDeque::with_capacity(self.depth);
        loop {
            if sent.is_empty() {
                match tokio::time::timeout(LANE_IDLE, self.rx.recv()).await {
                    Ok(Some(r)) => {
                        if self.send(r, &mut sent).await.is_err() {
                            break;
                        }
                    }
                    _ => break,
                }
            }
            // Whatever arrived since the last write goes out before the next answer is read,
            // so the server always has the next statements at hand; under low load, what comes
            // while that answer is awaited goes out at once too.
            if self.send_queued(&mut sent).await.is_err() || self.write_while_waiting(&mut sent).await.is_err() {
                break;
            }
            let Some(request) = sent.pop_front() else { continue };
            let answer = match self.answer(&request).await {
                Ok(answer) => answer,
                Err(_) => {
                    sent.push_front(request);
                    break;
                }
            };
            self.queued.fetch_sub(1, Ordering::Relaxed);
            let _ = request.reply.send(answer);
        }
        self.close(sent).await;
    }

    /// Takes the lane out of service: every statement not answered runs alone.
    async fn close(mut self, sent: VecDeque<LaneRequest>) {
        self.alive.store(false, Ordering::Relaxed);
        self.open.fetch_sub(1, Ordering::Relaxed);
        self.rx.close();
        let mut left: Vec<LaneRequest> = sent.into();
        while let Ok(request) = self.rx.try_recv() {
            left.push(request);
        }
        for request in left {
            self.queued.fetch_sub(1, Ordering::Relaxed);
            let _ = request.reply.send(LaneAnswer::RunAlone);
        }
        if !self.conn.broken && self.conn.reset().await.is_err() {
            self.conn.broken = true;
        }
    }

    /// Writes every queued request (up to the depth) in one write.
    async fn send_queued(&mut self, sent: &mut VecDeque<LaneRequest>) -> Result<(), ProxyError> {
        let mut wrote = false;
        while sent.len() < self.depth {
            let Ok(request) = self.rx.try_recv() else { break };
            wrote |= self.queue(request, sent).await?;
        }
        if wrote {
            self.flush().await?;
        }
        Ok(())
    }

    /// Until the first outstanding answer starts to arrive, writes each request that comes
    /// meanwhile (while there is room): at low load a statement then reaches the server at
    /// once instead of a round trip later, behind the answer being waited for. Waiting for
    /// input takes nothing from the stream, so dropping that wait for a request loses nothing.
    async fn write_while_waiting(&mut self, sent: &mut VecDeque<LaneRequest>) -> Result<(), ProxyError> {
        let room = WRITE_WHILE_WAITING.min(self.depth);
        while !sent.is_empty() && sent.len() < room && !self.conn.io.has_buffered_input() {
            tokio::select! {
                biased;
                input = self.conn.io.await_input() => {
                    input.map_err(|e| self.conn.lost(e))?;
                }
                request = self.rx.recv() => match request {
                    Some(request) => self.send(request, sent).await?,
                    None => return Ok(()),
                },
            }
        }
        Ok(())
    }

    /// Writes one request now.
    async fn send(&mut self, request: LaneRequest, sent: &mut VecDeque<LaneRequest>) -> Result<(), ProxyError> {
        if self.queue(request, sent).await? {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), ProxyError> {
        self.conn.flush().await?;
        Metrics::inc(&self.metrics.pipeline_writes);
        Ok(())
    }

    /// Queues a request's execution (preparing it first, once no answer is outstanding, when
    /// the connection lacks it); returns whether something was queued. A statement the server
    /// refuses to prepare runs alone, where the client gets the server's error.
    async fn queue(&mut self, mut request: LaneRequest, sent: &mut VecDeque<LaneRequest>) -> Result<bool, ProxyError> {
        let Some(execute) = request.execute.as_ref() else {
            let payload = &request.command;
            self.conn.begin_command(|b| b.extend_from_slice(payload));
            sent.push_back(request);
            return Ok(true);
        };
        let memo = match self.conn.stmts.remember(&execute.sql) {
            Some(memo) => memo,
            None => {
                self.drain(sent).await?;
                match self.conn.prepare(&execute.sql).await {
                    Ok(_) => match self.conn.stmts.remember(&execute.sql) {
                        Some(memo) => memo,
                        None => return Ok(self.run_alone(request)),
                    },
                    Err(ProxyError::Backend(_)) => return Ok(self.run_alone(request)),
                    Err(e) => {
                        sent.push_back(request);
                        return Err(e);
                    }
                }
            }
        };
        if let Some(slot) = request.command.get_mut(1..5) {
            slot.copy_from_slice(&memo.id().to_le_bytes());
        }
        if let Some(types) = execute.types.clone() {
            let held = request
                .command
                .get(types.clone())
                .is_some_and(|t| !self.conn.stmts.needs_types(&memo, t));
            if held {
                drop_execute_types(&mut request.command, types);
            }
        }
        let payload = &request.command;
        self.conn.begin_command(|b| b.extend_from_slice(payload));
        sent.push_back(request);
        Ok(true)
    }

    /// Sends a request back to run on a connection of its own; nothing was queued.
    fn run_alone(&self, request: LaneRequest) -> bool {
        self.queued.fetch_sub(1, Ordering::Relaxed);
        let _ = request.reply.send(LaneAnswer::RunAlone);
        false
    }

    /// Flushes what is queued and answers every outstanding request.
    async fn drain(&mut self, sent: &mut VecDeque<LaneRequest>) -> Result<(), ProxyError> {
        if sent.is_empty() {
            return Ok(());
        }
        self.flush().await?;
        while let Some(request) = sent.pop_front() {
            let answer = match self.answer(&request).await {
                Ok(answer) => answer,
                Err(e) => {
                    sent.push_front(request);
                    return Err(e);
                }
            };
            self.queued.fetch_sub(1, Ordering::Relaxed);
            let _ = request.reply.send(answer);
        }
        Ok(())
    }

    /// Reads the answer to the oldest outstanding request. A result set whole in the buffer
    /// (waited for once it has begun) comes back in one piece (a point select's five packets:
    /// one scan and one split instead of a `Bytes` and a queue slot each); anything else
    /// packet by packet.
    async fn answer(&mut self, request: &LaneRequest) -> Result<LaneAnswer, ProxyError> {
        if !self.conn.has_pending_answers() {
            // A lane's command goes with sequence id 0: its answer is numbered from 1.
            let limit = tessera_protocol::whole::WAIT_FOR_WHOLE_UP_TO;
            let whole = match self.conn.io.await_whole_result(1, limit).await {
                Ok(whole) => whole,
                Err(e) => return Err(self.conn.lost(e)),
            };
            if let Some(whole) = whole {
                let frames = self.conn.io.take_buffered(whole.len);
                return Ok(if whole.warnings == 0 {
                    LaneAnswer::Whole(frames, whole, self.conn.capabilities)
                } else {
                    self.not_clean(request)
                });
            }
        }
        Ok(match read_response(&mut self.conn).await? {
            (packets, true) => LaneAnswer::Clean(packets, self.conn.capabilities),
            (_, false) => self.not_clean(request),
        })
    }

    /// An answer with warnings or an error: the statement runs again alone.
    fn not_clean(&mut self, request: &LaneRequest) -> LaneAnswer {
        // The server may not hold the types sent with a failed execution.
        if let Some(execute) = &request.execute {
            self.conn.stmts.forget_types_of(&execute.sql);
        }
        LaneAnswer::RunAlone
    }
}

/// Packets of a small answer, allocated at once.
const ANSWER_PACKETS: usize = 8;

/// Reads one response (text or binary rows) whole; the flag says it ended without warnings or error.
async fn read_response(conn: &mut PooledConn) -> Result<(VecDeque<Bytes>, bool), ProxyError> {
    let caps = conn.capabilities;
    // Room for a one-row answer (column count, definition, EOF, row, end) without growing.
    let mut packets = VecDeque::with_capacity(ANSWER_PACKETS);
    loop {
        let first = conn.read().await?;
        packets.push_back(first.clone());
        let (warnings, status) = match first.first() {
            Some(&OK_HEADER) => {
                let ok = OkPacket::parse(&first, caps)?;
                (ok.warnings, ok.status)
            }
            Some(&ERR_HEADER) => return Ok((packets, false)),
            _ => match read_result_set(conn, &first, &mut packets).await? {
                Some(end) => end,
                None => return Ok((packets, false)),
            },
        };
        if status & SERVER_MORE_RESULTS_EXISTS == 0 {
            return Ok((packets, warnings == 0));
        }
    }
}

/// Column definitions, rows and the end of a result set; None when it ended with an error.
async fn read_result_set(
    conn: &mut PooledConn,
    first: &[u8],
    packets: &mut VecDeque<Bytes>,
) -> Result<Option<(u16, u16)>, ProxyError> {
    let caps = conn.capabilities;
    let columns = Reader::new(first).lenenc_int()?;
    for _ in 0..columns {
        packets.push_back(conn.read().await?);
    }
    if caps & CLIENT_DEPRECATE_EOF == 0 {
        packets.push_back(conn.read().await?);
    }
    loop {
        let p = conn.read().await?;
        let end = if is_eof(&p) {
            Some(parse_eof(&p, caps)?)
        } else if is_err(&p) {
            return Ok(None);
        } else {
            None
        };
        packets.push_back(p);
        if end.is_some() {
            return Ok(end);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lane with `queued` statements counted, and the receiver that keeps it open.
    fn lane(queued: usize) -> (Lane, mpsc::Receiver<LaneRequest>) {
        let (tx, rx) = mpsc::channel(8);
        let server = Arc::new(crate::backend::ServerInfo {
            name: "s".into(),
            address: "127.0.0.1:1".into(),
            user: "u".into(),
            password: String::new(),
            tls: false,
        });
        let lane = Lane {
            at: (server, 7),
            tx,
            queued: Arc::new(AtomicUsize::new(queued)),
            alive: Arc::new(AtomicBool::new(true)),
        };
        (lane, rx)
    }

    fn set(lanes: Vec<Lane>) -> Arc<LaneSet> {
        Arc::new(LaneSet {
            state: SessionVars::default(),
            flavour: Flavour::default(),
            lanes: Mutex::new(lanes),
            open: Arc::new(AtomicUsize::new(0)),
        })
    }

    fn request() -> LaneRequest {
        LaneRequest {
            execute: None,
            command: BytesMut::new(),
            reply: oneshot::channel().0,
        }
    }

    const SETTINGS: LaneSettings = LaneSettings {
        lanes: 2,
        depth: 4,
        bound: Duration::from_millis(50),
        budget: 8,
    };

    /// Offers a statement to a set of lanes with these queues (the lane at `dead` gone): the
    /// queue of the lane that took it, usize::MAX for "open one", None when refused.
    fn offered(queues: &[usize], dead: Option<usize>) -> Option<usize> {
        let made: Vec<_> = queues.iter().map(|&q| lane(q)).collect();
        if let Some(d) = dead {
            made[d].0.alive.store(false, Ordering::Relaxed);
        }
        match set(made.iter().map(|(l, _)| l.clone()).collect()).offer(SETTINGS, request()) {
            Offer::Queued(_) => made
                .iter()
                .zip(queues)
                .find(|((l, _), &q)| l.queued.load(Ordering::Relaxed) == q + 1)
                .map(|(_, &q)| q),
            Offer::Open(..) => Some(usize::MAX),
            Offer::Refused => None,
        }
    }

    #[test]
    fn the_fullest_lane_with_room_first_then_a_new_lane_once_all_are_full() {
        assert_eq!(offered(&[], None), Some(usize::MAX), "none yet: open one");
        assert_eq!(offered(&[0], None), Some(0), "an idle lane");
        assert_eq!(offered(&[2], None), Some(2), "busy but not full: packed onto it");
        assert_eq!(offered(&[1, 3], None), Some(3), "the fullest with room");
        assert_eq!(offered(&[4, 2], None), Some(2), "a full lane is passed over");
        assert_eq!(offered(&[4], None), Some(usize::MAX), "full: open another");
        assert_eq!(offered(&[4, 4], None), None, "all full");
        assert_eq!(offered(&[0, 4], Some(0)), Some(usize::MAX), "a dead lane is replaced");
    }

    #[test]
    fn sessions_in_different_states_get_different_sets() {
        let lanes = Lanes::default();
        let mut other = SessionVars::default();
        other.set_var("sql_mode".into(), "ANSI".into());
        let flavour = Flavour::default();
        let Offer::Open(a, _) = lanes.offer(&mut SessionVars::default(), flavour, SETTINGS, request()) else {
            panic!("a new set opens a lane");
        };
        let Offer::Open(b, _) = lanes.offer(&mut other, flavour, SETTINGS, request()) else {
            panic!("a new set opens a lane");
        };
        assert!(!Arc::ptr_eq(&a, &b));
        let mut equal = SessionVars::default();
        equal.set_var("sql_mode".into(), "ANSI".into());
        assert!(!equal.shares_vars_with(&other), "equal maps, not yet shared");
        let Offer::Open(again, _) = lanes.offer(&mut equal, flavour, SETTINGS, request()) else {
            panic!("still no lane");
        };
        assert!(Arc::ptr_eq(&b, &again));
        assert!(equal.shares_vars_with(&b.state), "the session takes the set's copy");
        assert_eq!(equal.vars(), other.vars());
    }

    #[test]
    fn unused_sets_make_room_for_new_states() {
        let lanes = Lanes::default();
        for i in 0..MAX_STATES + 3 {
            let mut state = SessionVars::default();
            state.set_var("sql_mode".into(), format!("MODE{i}"));
            let offer = lanes.offer(&mut state, Flavour::default(), SETTINGS, request());
            assert!(
                matches!(offer, Offer::Open(..)),
                "state {i}: sets nobody uses are dropped"
            );
        }
        let mut held = Vec::new();
        for i in 0..MAX_STATES + 1 {
            let mut state = SessionVars::default();
            state.set_var("time_zone".into(), format!("+0{i}:00"));
            match lanes.offer(&mut state, Flavour::default(), SETTINGS, request()) {
                Offer::Open(set, _) => held.push(set),
                _ => assert_eq!(i, MAX_STATES, "only past {MAX_STATES} sets being opened"),
            }
        }
        assert_eq!(held.len(), MAX_STATES);
    }
}
