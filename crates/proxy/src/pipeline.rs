//! Pipelined lanes: short, side-effect-free autocommit reads of many sessions that share one
//! session state run over a few shared backend connections. A lane writes every statement
//! queued since its last write in one write, then reads the answers in order, so the server
//! reads several commands per wake-up and the proxy makes one backend write and few reads for
//! many statements. Each answer goes back whole to its session, which checks it before a byte
//! reaches the client: an answer with warnings or an error is dropped and the statement runs
//! again on a connection of its own, where its diagnostics area stays readable. The lane's
//! `max_statement_time` bounds how long any statement holds up those queued behind it.

use crate::backend::stmt_cache::SqlText;
use crate::error::ProxyError;
use crate::context::Context;
use crate::metrics::Metrics;
use crate::pool::{Flavour, PooledConn};
use crate::state::SessionVars;
use bytes::{Bytes, BytesMut};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tessera_protocol::codec::Reader;
use tessera_protocol::flags::{CLIENT_DEPRECATE_EOF, SERVER_MORE_RESULTS_EXISTS};
use tessera_protocol::response::{is_eof, is_err, parse_eof, OkPacket, ERR_HEADER, OK_HEADER};
use tokio::sync::{mpsc, oneshot};

/// Sets of lanes keyed by session state, at most this many per server (sessions in other
/// states take connections of their own).
const MAX_STATES: usize = 8;
/// A lane with nothing to do for this long gives its connection back.
const LANE_IDLE: Duration = Duration::from_secs(10);

/// How lanes behave (from `server.pipeline_*`).
#[derive(Debug, Clone, Copy)]
pub struct LaneSettings {
    pub lanes: usize,
    pub depth: usize,
    pub bound: Duration,
}

/// One statement for a lane: the text to prepare and the COM_STMT_EXECUTE payload whose
/// statement id (bytes 1..5) the lane fills in with its own handle.
pub struct LaneRequest {
    pub sql: SqlText,
    pub execute: BytesMut,
    pub reply: oneshot::Sender<LaneAnswer>,
}

/// A lane's answer to one statement.
pub enum LaneAnswer {
    /// The whole response, without warnings or error.
    Clean(VecDeque<Bytes>, u32),
    /// The statement must run again on a connection of its own (warnings, an error, the bound).
    RunAlone,
}

/// The lanes of one backend server.
#[derive(Default)]
pub struct Lanes {
    sets: Mutex<Vec<Arc<LaneSet>>>,
}

/// The lanes serving one session state.
pub struct LaneSet {
    state: SessionVars,
    flavour: Flavour,
    lanes: Mutex<Vec<Lane>>,
}

/// A handle on one lane task.
#[derive(Clone)]
pub struct Lane {
    tx: mpsc::Sender<LaneRequest>,
    queued: Arc<AtomicUsize>,
    alive: Arc<AtomicBool>,
}

/// Where a session's statement goes: a lane with room, or a new lane the session must open.
pub enum Pick {
    Lane(Lane),
    Open(Arc<LaneSet>),
    None,
}

/// True when a lane in `state` serves a session in `session` state.
fn same_state(lane: &SessionVars, session: &SessionVars) -> bool {
    lane.schema == session.schema && lane.vars == session.vars
}

impl Lanes {
    /// The lane for a session in `state`: the least busy one with room, else an invitation to
    /// open one (while the set has fewer than `settings.lanes`), else none.
    pub fn pick(&self, state: &SessionVars, flavour: Flavour, settings: LaneSettings) -> Pick {
        let Ok(mut sets) = self.sets.lock() else {
            return Pick::None;
        };
        sets.retain(|s| s.lanes.lock().map(|l| !l.is_empty()).unwrap_or(false) || Arc::strong_count(s) > 1);
        let set = match sets.iter().find(|s| s.flavour == flavour && same_state(&s.state, state)) {
            Some(s) => s.clone(),
            None if sets.len() < MAX_STATES => {
                let set = Arc::new(LaneSet {
                    state: state.clone(),
                    flavour,
                    lanes: Mutex::new(Vec::new()),
                });
                sets.push(set.clone());
                set
            }
            None => return Pick::None,
        };
        drop(sets);
        set.pick(settings)
    }
}

impl LaneSet {
    fn pick(self: &Arc<Self>, settings: LaneSettings) -> Pick {
        let Ok(mut lanes) = self.lanes.lock() else {
            return Pick::None;
        };
        lanes.retain(|l| l.alive.load(Ordering::Relaxed));
        let best = lanes.iter().min_by_key(|l| l.queued.load(Ordering::Relaxed));
        match best {
            Some(l) if l.queued.load(Ordering::Relaxed) == 0 || lanes.len() >= settings.lanes => {
                if l.queued.load(Ordering::Relaxed) < settings.depth {
                    Pick::Lane(l.clone())
                } else {
                    Pick::None
                }
            }
            _ => Pick::Open(self.clone()),
        }
    }

    /// Starts a lane on `conn` (already in this set's state) and returns it.
    /// The connection keeps its pool slot while the lane lives.
    pub fn open(&self, conn: PooledConn, settings: LaneSettings, ctx: Arc<Context>) -> Option<Lane> {
        let (tx, rx) = mpsc::channel(settings.depth);
        let lane = Lane {
            tx,
            queued: Arc::new(AtomicUsize::new(0)),
            alive: Arc::new(AtomicBool::new(true)),
        };
        let mut lanes = self.lanes.lock().ok()?;
        if lanes.len() >= settings.lanes {
            return lanes.iter().find(|l| l.alive.load(Ordering::Relaxed)).cloned();
        }
        lanes.push(lane.clone());
        let task = LaneTask {
            conn,
            rx,
            queued: lane.queued.clone(),
            alive: lane.alive.clone(),
            depth: settings.depth,
            ctx,
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
    rx: mpsc::Receiver<LaneRequest>,
    queued: Arc<AtomicUsize>,
    alive: Arc<AtomicBool>,
    depth: usize,
    ctx: Arc<Context>,
}

impl LaneTask {
    async fn run(mut self) {
        let mut batch = Vec::with_capacity(self.depth);
        loop {
            let first = match tokio::time::timeout(LANE_IDLE, self.rx.recv()).await {
                Ok(Some(r)) => r,
                _ => break,
            };
            batch.push(first);
            while batch.len() < self.depth {
                match self.rx.try_recv() {
                    Ok(r) => batch.push(r),
                    Err(_) => break,
                }
            }
            let served = self.serve(&mut batch).await;
            self.queued.fetch_sub(batch.len(), Ordering::Relaxed);
            for request in batch.drain(..) {
                let _ = request.reply.send(LaneAnswer::RunAlone);
            }
            if served.is_err() || self.conn.broken {
                break;
            }
        }
        self.alive.store(false, Ordering::Relaxed);
        self.rx.close();
        while let Ok(request) = self.rx.try_recv() {
            self.queued.fetch_sub(1, Ordering::Relaxed);
            let _ = request.reply.send(LaneAnswer::RunAlone);
        }
        if !self.conn.broken && self.conn.reset().await.is_err() {
            self.conn.broken = true;
        }
    }

    /// Prepares what the connection lacks, writes the batch at once, then answers each
    /// request in order. Requests left in `batch` were not answered.
    async fn serve(&mut self, batch: &mut Vec<LaneRequest>) -> Result<(), ProxyError> {
        let mut ids = Vec::with_capacity(batch.len());
        for request in batch.iter() {
            ids.push(match self.conn.prepare(&request.sql).await {
                Ok(stmt) => Some(stmt.id),
                Err(ProxyError::Backend(_)) => None,
                Err(e) => return Err(e),
            });
        }
        for (request, id) in batch.iter_mut().zip(&ids) {
            if let (Some(id), Some(slot)) = (id, request.execute.get_mut(1..5)) {
                slot.copy_from_slice(&id.to_le_bytes());
                let payload = &request.execute;
                self.conn.begin_command(|b| b.extend_from_slice(payload));
            }
        }
        self.conn.flush().await?;
        Metrics::inc(&self.ctx.metrics.pipeline_writes);
        let capabilities = self.conn.capabilities;
        let mut answered = 0;
        for (request, id) in batch.drain(..).zip(ids) {
            let answer = match id {
                None => LaneAnswer::RunAlone,
                Some(_) => match read_response(&mut self.conn).await {
                    Ok((packets, true)) => LaneAnswer::Clean(packets, capabilities),
                    Ok((_, false)) => LaneAnswer::RunAlone,
                    Err(e) => {
                        self.queued.fetch_sub(answered + 1, Ordering::Relaxed);
                        let _ = request.reply.send(LaneAnswer::RunAlone);
                        return Err(e);
                    }
                },
            };
            answered += 1;
            let _ = request.reply.send(answer);
        }
        self.queued.fetch_sub(answered, Ordering::Relaxed);
        Ok(())
    }
}

/// Reads one binary-protocol response whole; the flag says it ended without warnings or error.
async fn read_response(conn: &mut PooledConn) -> Result<(VecDeque<Bytes>, bool), ProxyError> {
    let caps = conn.capabilities;
    let mut packets = VecDeque::new();
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
