//! Sends through io_uring (`server.io`: "auto", the default, or "uring"): one ring per worker
//! thread of the runtime (a thread queues its streams' sends on its own), each with an eventfd
//! in tokio's epoll. A ring's lock covers queueing and reaping, never the `io_uring_enter` that
//! submits (the kernel runs the sends in that call). A packet stream's flush hands its whole write buffer to
//! the ring, which owns it until the kernel has taken every byte, and takes the stream's spare
//! buffer in exchange (a plain write copies its bytes into that spare); a flush returns at once (the
//! ring sends every byte on its own, the rest of a short send included), so a session is not
//! woken when its send completes. A driver task submits every send queued since its last turn
//! in one `io_uring_enter` and wakes the streams that wait for a send's end (the next write).
//! The eventfd tells the driver only of completions it did not reap in its own turn (a send
//! that waited for room in a full socket). Reads stay on tokio's readiness (reads through the
//! ring measured a loss: docs/benchmarks.md). On loopback this spends a third less CPU per
//! answered request than a `write` per send (`tessera-bench leg-floor 16 10 epoll,hybrid-sends`).
//!
//! On a runtime built by [`runtime_with_park`] the sends of a whole turn of the runtime go
//! out together: the park hook of its threads ([`ParkHook`]) submits what is queued just
//! before a thread sleeps, so the driver is not woken per turn; a parking thread also submits
//! another thread's ring that has sends waiting (the driver does, when that ring is locked).
//! A send queued while another thread of the runtime sleeps kicks the driver at once (the
//! queueing thread may stay busy for long, and the sleeper would not look). A runtime that
//! stays busy still sends: the driver is kicked once [`PARK_BATCH`] sends are queued, once a
//! stream waits for its own send, or once the ring's streams have read [`STALE_READS`] times
//! since the oldest queued send (the runtime runs on without parking).

use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{ready, Context, Poll, Waker};

use bytes::BytesMut;
use io_uring::{opcode, squeue, types, IoUring};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// Submission queue entries (completions: twice as many, and never dropped by the kernel).
const ENTRIES: u32 = 4096;
/// The same for each ring of a runtime with several worker threads (one ring per thread).
const SHARD_ENTRIES: u32 = 1024;
/// The most bytes one send copies from a write; a longer write is taken in turns.
const MAX_SEND: usize = 256 << 10;
/// The user data of cancellations (no slot has this index).
const CANCEL: u64 = u64::MAX;
/// A stream keeps a sent buffer as its spare (the packet stream's next write buffer) unless
/// it grew beyond this: enough for a result of a few hundred rows without growing again.
const KEEP_BUFFER: usize = 64 << 10;
/// `IORING_RECVSEND_POLL_FIRST`: wait for room before trying (a send that found none).
const POLL_FIRST: u16 = 1;
/// Sends submitted at the runtime's park: the driver is kicked once this many are queued
/// (a busy runtime that parks rarely still sends in batches of this size).
pub const PARK_BATCH: usize = 16;
/// Sends submitted at the runtime's park: the driver is kicked once the ring's streams have
/// read this many times with a send queued (the runtime keeps running without parking, and
/// no batch fills: a task streams a large input while a lone answer waits).
pub const STALE_READS: u32 = 64;

/// One worker thread's io_uring: the sends its thread queues, submitted at its park or by its
/// driver task.
struct Shard {
    /// Submitted without the lock; queued on and reaped under it (see [`Inner`]).
    ring: Arc<IoUring>,
    inner: Mutex<Inner>,
    /// Wakes the driver when a send is queued.
    kick: Notify,
    /// Sends queued, and the system calls that submitted them.
    sends: AtomicU64,
    submissions: AtomicU64,
    /// Sends are submitted by the runtime's park hook ([`ParkHook`]), not at each first send.
    at_park: bool,
    /// At park: a send is queued (mirrors `queued > 0` for the reads' check, without the lock).
    deferred: AtomicBool,
    /// At park: reads on the ring's streams since the oldest queued send.
    reads_deferred: AtomicU32,
    /// At park: the runtime's threads asleep now (shared by the shards of one runtime).
    asleep: Arc<AtomicUsize>,
    /// The eventfd the ring signals completions on, which the driver waits for.
    events: Arc<EventFd>,
}

/// The process's io_uring sends: one ring (`Shard`) per worker thread of the runtime. A
/// thread queues its streams' sends on its own ring and submits them at its park, so that no
/// other thread waits for that ring's lock, which a submission holds across `io_uring_enter`
/// (the kernel runs the sends in it). A send in flight stays with the ring it was queued on.
pub struct Ring {
    shards: Box<[Arc<Shard>]>,
    /// Threads given a shard so far (at their first park or send).
    threads: AtomicUsize,
    /// Sends are submitted by the runtime's park hook ([`ParkHook`]).
    at_park: bool,
    /// The runtime's threads asleep now: a send queued while one sleeps kicks the driver,
    /// since the queueing thread may stay busy long before it parks.
    asleep: Arc<AtomicUsize>,
}

thread_local! {
    /// The shard of this thread (taken at its first park or send; see [`Ring::local`]).
    static THREAD_SHARD: Cell<Option<usize>> = const { Cell::new(None) };
    /// This thread is counted in [`Ring::asleep`] (between its park and its unpark).
    static COUNTED_ASLEEP: Cell<bool> = const { Cell::new(false) };
}

/// Submits the ring's queued sends when a thread of its runtime is about to park, so that
/// one `io_uring_enter` carries every send of the turn. Only [`runtime_with_park`]
/// makes one, with the hook installed; hand it to [`Ring::start`] on that runtime.
#[derive(Clone)]
pub struct ParkHook(Arc<OnceLock<Arc<Ring>>>);

impl ParkHook {
    fn before_park(&self) {
        if let Some(ring) = self.0.get() {
            // Counted before it looks at the queues: a send queued after that look sees it
            // asleep and kicks the driver (both sides order through SeqCst).
            ring.asleep.fetch_add(1, Ordering::SeqCst);
            COUNTED_ASLEEP.with(|c| c.set(true));
            ring.submit_at_park();
        }
    }

    fn after_unpark(&self) {
        if let Some(ring) = self.0.get() {
            if COUNTED_ASLEEP.with(|c| c.replace(false)) {
                ring.asleep.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}

/// A tokio runtime (I/O and time enabled) whose threads' park submits the queued sends of the
/// ring started on it with the returned hook: `workers` = 1 a current_thread runtime, else a
/// multi-thread one with that many workers (0: one per core).
pub fn runtime_with_park(workers: usize) -> io::Result<(tokio::runtime::Runtime, ParkHook)> {
    let hook = ParkHook(Arc::new(OnceLock::new()));
    let (at_park, at_unpark) = (hook.clone(), hook.clone());
    let mut builder = match workers {
        1 => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    if workers > 1 {
        builder.worker_threads(workers);
    }
    let runtime = builder
        .on_thread_park(move || at_park.before_park())
        .on_thread_unpark(move || at_unpark.after_unpark())
        .enable_all()
        .build()?;
    Ok((runtime, hook))
}

struct Inner {
    /// Also the shard's, which submits without the lock.
    ring: Arc<IoUring>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    /// Entries queued since the driver's last submission (the first one kicks the driver).
    queued: usize,
    /// Slots whose send stopped short, to send the rest of (reused between turns).
    resend: Vec<usize>,
}

/// One send the ring owns: its bytes until the kernel has taken all of them (the ring sends
/// the rest of a send that stopped short itself), then its result: the bytes sent, or the
/// error.
#[derive(Default)]
struct Slot {
    bytes: BytesMut,
    fd: RawFd,
    /// Bytes the kernel has taken so far.
    done: usize,
    /// The bytes are lent by another buffer: released as soon as the send is over (so that
    /// they do not hold that buffer's memory), never given back for reuse.
    lent: bool,
    /// The kernel found no room: the rest waits for room before it is tried.
    wait_for_room: bool,
    result: Option<i32>,
    waker: Option<Waker>,
    /// The stream went away while its send was queued: its socket stays open (so that its fd
    /// number is not reused before the send is submitted) and closes with the completion.
    orphan: Option<TcpStream>,
}

impl Ring {
    /// Sets up one ring per worker thread of the current tokio runtime (one on a current_thread
    /// runtime) and spawns their drivers on it. `park`: the runtime's park hook (from
    /// [`runtime_with_park`]), which then submits the sends; only for a runtime whose streams
    /// that read all go through this ring (what keeps a busy runtime sending counts their reads).
    pub fn start(park: Option<&ParkHook>) -> io::Result<Arc<Ring>> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| io::Error::other("no tokio runtime to drive the ring"))?;
        let park = park.filter(|p| p.0.get().is_none());
        let count = match runtime.runtime_flavor() {
            tokio::runtime::RuntimeFlavor::CurrentThread => 1,
            _ => runtime.metrics().num_workers().max(1),
        };
        let entries = if count == 1 { ENTRIES } else { SHARD_ENTRIES };
        let asleep = Arc::new(AtomicUsize::new(0));
        let shards = (0..count)
            .map(|_| Shard::start(&runtime, park.is_some(), entries, Arc::clone(&asleep)))
            .collect::<io::Result<Vec<_>>>()?;
        let ring = Arc::new(Ring {
            shards: shards.into(),
            threads: AtomicUsize::new(0),
            at_park: park.is_some(),
            asleep,
        });
        if let Some(park) = park {
            // Cannot fail: the hook was checked unset above, on this thread.
            let _ = park.0.set(Arc::clone(&ring));
        }
        Ok(ring)
    }

    /// The calling thread's shard and its index: its own, taken at its first park or first
    /// send (a loaded machine may start a worker late, busy before it ever parks).
    #[inline]
    fn local(&self) -> (usize, &Shard) {
        let index = match self.shards.len() {
            1 => 0,
            n => self.own_index() % n,
        };
        (index, &self.shards[index])
    }

    /// The shard of a thread that only reads: its own if it has one, else the first.
    #[inline]
    fn reading(&self) -> &Shard {
        let index = match self.shards.len() {
            1 => 0,
            n => THREAD_SHARD.with(Cell::get).map_or(0, |i| i % n),
        };
        &self.shards[index]
    }

    /// The calling thread's index among the ring's threads, taken on first use.
    fn own_index(&self) -> usize {
        THREAD_SHARD.with(|t| match t.get() {
            Some(index) => index,
            None => {
                let index = self.threads.fetch_add(1, Ordering::Relaxed);
                t.set(Some(index));
                index
            }
        })
    }

    /// The park hook's work: submit the parking thread's sends, then those of any other shard
    /// with sends waiting that no thread holds (its own thread may be busy for a while).
    fn submit_at_park(&self) {
        let n = self.shards.len();
        if n == 1 {
            return self.shards[0].submit_at_park();
        }
        let own = self.own_index() % n;
        self.shards[own].submit_at_park();
        for (i, shard) in self.shards.iter().enumerate() {
            if i != own && shard.deferred.load(Ordering::SeqCst) {
                shard.submit_if_free();
            }
        }
    }

    /// Sends queued on the rings so far.
    pub fn sends(&self) -> u64 {
        self.shards.iter().map(|s| s.sends.load(Ordering::Relaxed)).sum()
    }

    /// The system calls that submitted them (sends per submission = `sends / submissions`).
    pub fn submissions(&self) -> u64 {
        self.shards.iter().map(|s| s.submissions.load(Ordering::Relaxed)).sum()
    }

    /// Whether the runtime's park submits the sends (see [`ParkHook`]).
    pub fn sends_wait_for_park(&self) -> bool {
        self.at_park
    }
}

impl Shard {
    /// Sets up a ring and spawns its driver on `runtime`. On a current_thread runtime
    /// completions may wait for the driver's next submission instead of interrupting the thread
    /// (IORING_SETUP_COOP_TASKRUN). `at_park`: the runtime's park hook submits the sends.
    fn start(
        runtime: &tokio::runtime::Handle,
        at_park: bool,
        entries: u32,
        asleep: Arc<AtomicUsize>,
    ) -> io::Result<Arc<Shard>> {
        let mut builder = IoUring::builder();
        if runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread {
            builder.setup_coop_taskrun();
        }
        let ring = Arc::new(builder.build(entries)?);
        // The eventfd tells the driver of completions it did not reap itself (see `turn`).
        let events = Arc::new(EventFd::new()?);
        ring.submitter().register_eventfd(events.0.as_raw_fd())?;
        let shard = Arc::new(Shard {
            ring: Arc::clone(&ring),
            inner: Mutex::new(Inner {
                ring,
                slots: Vec::new(),
                free: Vec::new(),
                queued: 0,
                resend: Vec::new(),
            }),
            kick: Notify::new(),
            sends: AtomicU64::new(0),
            submissions: AtomicU64::new(0),
            at_park,
            deferred: AtomicBool::new(false),
            reads_deferred: AtomicU32::new(0),
            asleep,
            events: Arc::clone(&events),
        });
        // SAFETY: the AsyncFd shares the eventfd, which stays open as long as it does. (Called
        // on `runtime`, from `Ring::start`.)
        let events = unsafe { AsyncFd::register_with_interest(events, tokio::io::Interest::READABLE) }
            .map_err(|e| io::Error::other(e.to_string()))?;
        runtime.spawn(drive(Arc::clone(&shard), events));
        Ok(shard)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves slots that are still consistent: keep going.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a send of `bytes` on `fd`; returns its slot.
    fn post_send(&self, fd: RawFd, bytes: BytesMut, lent: bool) -> io::Result<usize> {
        let mut inner = self.lock();
        let slot = inner.free.pop().unwrap_or_else(|| {
            inner.slots.push(Slot::default());
            inner.slots.len() - 1
        });
        let s = &mut inner.slots[slot];
        s.bytes = bytes;
        s.fd = fd;
        s.done = 0;
        s.lent = lent;
        s.wait_for_room = false;
        let entry = s.send_entry(slot);
        if let Err(e) = inner.push(&entry) {
            let s = &mut inner.slots[slot];
            drop(std::mem::take(&mut s.bytes));
            inner.free.push(slot);
            return Err(e);
        }
        let first = inner.queued == 1;
        let kick = match self.at_park {
            false => first,
            true => {
                if first {
                    self.deferred.store(true, Ordering::SeqCst);
                }
                inner.queued == PARK_BATCH
            }
        };
        drop(inner);
        self.sends.fetch_add(1, Ordering::Relaxed);
        if kick {
            self.kick.notify_one();
        } else if self.at_park && first && self.asleep.load(Ordering::SeqCst) > 0 {
            // The first send of a turn waits for a park, unless another thread sleeps now:
            // this one may stay busy long before it parks (see `before_park`). The eventfd
            // wakes the sleeper (a kick would queue the driver behind this thread's task).
            self.events.signal();
        }
        Ok(slot)
    }

    /// A read on one of the ring's streams: with sends waiting for the park, counts towards
    /// kicking the driver (a runtime that keeps reading without parking still sends).
    #[inline]
    fn note_read(&self) {
        if self.deferred.load(Ordering::Relaxed) && self.reads_deferred.fetch_add(1, Ordering::Relaxed) == STALE_READS {
            self.kick.notify_one();
        }
    }

    /// One turn of the ring (see [`Inner::begin_turn`], [`Inner::end_turn`]), counted when it
    /// entered the kernel.
    fn turn(&self, signalled: Option<&EventFd>, wake: &mut Vec<Waker>, close: &mut Vec<TcpStream>) -> io::Result<bool> {
        self.turn_locked(self.lock(), signalled, wake, close)
    }

    /// [`Shard::turn`] from the lock taken; released for the submission itself.
    fn turn_locked(
        &self,
        mut inner: MutexGuard<'_, Inner>,
        signalled: Option<&EventFd>,
        wake: &mut Vec<Waker>,
        close: &mut Vec<TcpStream>,
    ) -> io::Result<bool> {
        let queued = inner.begin_turn(signalled);
        drop(inner);
        // Outside the lock: the kernel runs the sends in this call, and the streams of other
        // threads may meanwhile queue sends or take results.
        let submitted = match queued {
            0 => Ok(()),
            _ => self.ring.submit().map(drop),
        };
        let mut inner = self.lock();
        let turned = inner.end_turn(queued, submitted, wake, close);
        if self.at_park {
            // What is still queued (the rest of a short send) waits for the next park.
            self.deferred.store(inner.queued > 0, Ordering::Relaxed);
            self.reads_deferred.store(0, Ordering::Relaxed);
        }
        drop(inner);
        if let Ok(true) = turned {
            self.submissions.fetch_add(1, Ordering::Relaxed);
        }
        turned
    }

    /// The park hook's turns: submit what is queued, the rests of short sends included, before
    /// the thread sleeps (nothing queued: no system call). What a few turns leave, or a failed
    /// submission, is the driver's (it retries).
    fn submit_at_park(&self) {
        let (mut wake, mut close) = (Vec::new(), Vec::new());
        for _ in 0..4 {
            if !self.deferred.load(Ordering::Relaxed) {
                break;
            }
            if let Err(e) = self.turn(None, &mut wake, &mut close) {
                tracing::debug!(error = %e, "io_uring submission at park failed; the driver retries");
                break;
            }
        }
        self.after_park_turns(wake, close);
    }

    /// After a park's turns: what is still queued is the driver's; wakes the streams and closes
    /// the sockets the turns freed.
    fn after_park_turns(&self, wake: Vec<Waker>, close: Vec<TcpStream>) {
        if self.deferred.load(Ordering::Relaxed) {
            self.kick.notify_one();
        }
        wake.into_iter().for_each(Waker::wake);
        drop(close);
    }

    /// Another thread's park: one turn if no thread holds the lock (never waits for it; the
    /// driver is kicked instead); what it leaves is the driver's.
    fn submit_if_free(&self) {
        let inner = match self.inner.try_lock() {
            Ok(inner) => inner,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            // Its thread is queueing or reaping: the driver takes the turn instead, so that
            // this thread's sleep does not leave a send behind.
            Err(std::sync::TryLockError::WouldBlock) => return self.kick.notify_one(),
        };
        let (mut wake, mut close) = (Vec::new(), Vec::new());
        if let Err(e) = self.turn_locked(inner, None, &mut wake, &mut close) {
            tracing::debug!(error = %e, "io_uring submission at park failed; the driver retries");
        }
        self.after_park_turns(wake, close);
    }

    /// The result of the send in `slot` and its buffer back, once complete (the slot is then
    /// free); until then the task is woken when it completes.
    fn poll_send(&self, slot: usize, cx: &mut Context<'_>) -> Poll<(i32, BytesMut)> {
        let mut inner = self.lock();
        if let Some(done) = inner.take_result(slot) {
            return Poll::Ready(done);
        }
        let s = &mut inner.slots[slot];
        if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            s.waker = Some(cx.waker().clone());
        }
        // A stream that waits for its send does not wait for the park.
        let kick = self.at_park && inner.queued > 0;
        drop(inner);
        if kick {
            self.kick.notify_one();
        }
        Poll::Pending
    }

    /// [`Shard::poll_send`] without waiting: None while the send is not complete (no wake-up is
    /// asked for).
    fn try_send_result(&self, slot: usize) -> Option<(i32, BytesMut)> {
        self.lock().take_result(slot)
    }

    /// Whether the send in `slot` is complete (its result not yet taken).
    fn is_complete(&self, slot: usize) -> bool {
        self.lock().slots[slot].result.is_some()
    }

    /// The stream owning the send in `slot` is gone: the slot closes `tcp` and frees itself
    /// when the send completes (at once if it already has); a send still waiting is cancelled,
    /// so that a peer that reads nothing cannot keep the socket open.
    fn abandon(&self, slot: usize, tcp: TcpStream) {
        let mut inner = self.lock();
        let s = &mut inner.slots[slot];
        s.waker = None;
        if s.result.take().is_some() {
            s.bytes = BytesMut::new();
            inner.free.push(slot);
            drop(inner);
            drop(tcp);
            return;
        }
        s.orphan = Some(tcp);
        let cancel = opcode::AsyncCancel::new(slot as u64).build().user_data(CANCEL);
        if let Err(e) = inner.push(&cancel) {
            tracing::warn!(error = %e, "could not cancel an abandoned io_uring send");
        }
        let first = inner.queued == 1;
        drop(inner);
        if first {
            self.kick.notify_one();
        }
    }
}

impl Slot {
    /// The send of this slot's bytes not yet taken by the kernel. MSG_WAITALL: the kernel
    /// itself sends the rest of a send that found room for part of it only.
    fn send_entry(&self, slot: usize) -> squeue::Entry {
        let rest = &self.bytes[self.done..];
        opcode::Send::new(types::Fd(self.fd), rest.as_ptr(), rest.len() as u32)
            .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
            .ioprio(if self.wait_for_room { POLL_FIRST } else { 0 })
            .build()
            .user_data(slot as u64)
    }

    /// Takes in a completion; returns whether the send is over (else the rest is to be sent).
    fn complete(&mut self, result: i32) -> bool {
        let sent = usize::try_from(result).unwrap_or(0);
        self.wait_for_room = result == -libc::EAGAIN;
        if (sent > 0 && self.done + sent < self.bytes.len()) || self.wait_for_room {
            self.done += sent;
            return false;
        }
        self.result = Some(match sent {
            0 => result,
            _ => (self.done + sent) as i32,
        });
        true
    }
}

impl Inner {
    fn take_result(&mut self, slot: usize) -> Option<(i32, BytesMut)> {
        let s = &mut self.slots[slot];
        let result = s.result.take()?;
        let bytes = std::mem::take(&mut s.bytes);
        s.waker = None;
        self.free.push(slot);
        Some((result, bytes))
    }

    /// Queues `entry`, submitting what is queued first when the queue is full.
    fn push(&mut self, entry: &squeue::Entry) -> io::Result<()> {
        for _ in 0..2 {
            // SAFETY: the entry's buffer is a slot's `bytes`, which the ring keeps (never moved
            // or freed) until the entry's completion has been reaped; under the shard's lock
            // this is the only submission queue view (a submission outside the lock only reads
            // the published tail).
            if unsafe { self.ring.submission_shared().push(entry) }.is_ok() {
                self.queued += 1;
                return Ok(());
            }
            self.ring.submit()?;
            self.queued = 0;
        }
        Err(io::Error::other("the io_uring submission queue stays full"))
    }

    /// The start of a turn (see [`Shard::turn`]): quiets the eventfd (completions posted while
    /// the turn is in the kernel, a send to a socket with room, nearly every one, are reaped by
    /// the turn itself) and resets it when it woke the driver; returns the entries to submit.
    fn begin_turn(&mut self, signalled: Option<&EventFd>) -> usize {
        self.completions().disable_eventfd();
        if let Some(events) = signalled {
            events.drain();
        }
        std::mem::take(&mut self.queued)
    }

    /// The end of a turn, after the submission of `queued` entries (`submitted`): hands every
    /// completion to its slot; returns the streams to wake and the abandoned sockets to close
    /// (after the lock is released), and whether it entered the kernel. The rest of a send that
    /// stopped short is queued again (the caller turns again while anything is queued). The
    /// eventfd tells of the other completions: a send that found its socket full completes
    /// when the peer has read, through the kernel's deferred work, outside any submission. A
    /// signal comes after its completion was posted, so it needs no entry into the kernel,
    /// only the reap.
    fn end_turn(
        &mut self,
        queued: usize,
        submitted: io::Result<()>,
        wake: &mut Vec<Waker>,
        close: &mut Vec<TcpStream>,
    ) -> io::Result<bool> {
        // Re-enabled before reaping: a completion posted after the reap below signals.
        self.completions().enable_eventfd();
        if let Err(e) = submitted {
            // Still in the submission queue: the next turn submits them.
            self.queued += queued;
            return Err(e);
        }
        // SAFETY: under the shard's lock, the only completion queue view.
        let completions = unsafe { self.ring.completion_shared() };
        let Inner {
            slots, free, resend, ..
        } = self;
        for cqe in completions {
            let slot = cqe.user_data() as usize;
            let Some(s) = slots.get_mut(slot) else {
                continue;
            };
            match s.orphan.take() {
                Some(tcp) => {
                    s.bytes = BytesMut::new();
                    free.push(slot);
                    close.push(tcp);
                }
                None if s.complete(cqe.result()) => {
                    if s.lent {
                        s.bytes = BytesMut::new();
                    }
                    wake.extend(s.waker.take());
                }
                None => resend.push(slot),
            }
        }
        self.resend_rests(wake);
        Ok(queued > 0)
    }

    /// The completion queue (under the shard's lock, the only view of it).
    fn completions(&self) -> io_uring::CompletionQueue<'_> {
        // SAFETY: the caller holds the shard's lock: no other completion queue view exists.
        unsafe { self.ring.completion_shared() }
    }

    /// Queues the rest of every send that stopped short. A rest that cannot be queued (the
    /// submission queue stays full) fails its send: the stream sees the error at its next
    /// write, flush or drain and its connection closes, instead of waiting for ever.
    fn resend_rests(&mut self, wake: &mut Vec<Waker>) {
        let mut resend = std::mem::take(&mut self.resend);
        for slot in resend.drain(..) {
            let entry = self.slots[slot].send_entry(slot);
            if let Err(e) = self.push(&entry) {
                tracing::warn!(error = %e, "could not queue the rest of a short io_uring send: it fails");
                let s = &mut self.slots[slot];
                s.result = Some(-e.raw_os_error().unwrap_or(libc::EIO));
                wake.extend(s.waker.take());
            }
        }
        self.resend = resend;
    }
}

impl Drop for Inner {
    /// The ring closes with the process's runtime: a send the kernel may still hold keeps its
    /// buffer (leaked) rather than have it freed under the kernel.
    fn drop(&mut self) {
        for s in &mut self.slots {
            if s.result.is_none() && s.bytes.capacity() > 0 {
                std::mem::forget(std::mem::take(&mut s.bytes));
            }
        }
    }
}

/// The eventfd the ring signals when a completion is posted outside a submission.
struct EventFd(OwnedFd);

impl EventFd {
    fn new() -> io::Result<EventFd> {
        // SAFETY: eventfd(2) has no preconditions; a non-negative result is a new fd we own.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and nothing else owns it.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Makes it readable: wakes the driver through the runtime's epoll (whichever thread
    /// sleeps in it), where a task wake-up would wait behind a busy thread's task.
    fn signal(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: the fd is open and `one` has the 8 bytes an eventfd write needs.
        let _ = unsafe { libc::write(self.0.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }

    /// Resets the counter (it is non-blocking: nothing to read is fine).
    fn drain(&self) {
        let mut count = [0u8; 8];
        // SAFETY: the fd is open and `count` has the 8 bytes an eventfd read needs.
        let _ = unsafe { libc::read(self.0.as_raw_fd(), count.as_mut_ptr().cast(), count.len()) };
    }
}

impl AsRawFd for EventFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// Submits the queued sends and delivers completions whenever a send is queued or the
/// eventfd tells of a completion posted outside a submission. Runs as long as the runtime.
async fn drive(ring: Arc<Shard>, events: AsyncFd<Arc<EventFd>>) {
    let (mut wake, mut close, mut signalled) = (Vec::new(), Vec::new(), true);
    let mut failing = false;
    loop {
        let turned = ring.turn(signalled.then(|| &**events.get_ref()), &mut wake, &mut close);
        match turned {
            Ok(_) => {}
            Err(ref e) if !failing => tracing::warn!(error = %e, "io_uring submission failed; retrying"),
            Err(ref e) => tracing::debug!(error = %e, "io_uring submission failed again; retrying"),
        }
        failing = turned.is_err();
        wake.drain(..).for_each(Waker::wake);
        close.clear();
        if failing {
            // What is queued stays queued, and a new send does not kick the driver while
            // anything is: retry on a timer (not at once: a lasting failure must not spin).
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            signalled = true;
            continue;
        }
        if turned.is_ok() && ring.lock().queued > 0 {
            // The rest of a send that stopped short, or a send queued meanwhile.
            signalled = false;
            continue;
        }
        signalled = tokio::select! {
            guard = events.readable() => match guard {
                Ok(mut guard) => {
                    guard.clear_ready();
                    true
                }
                Err(e) => return tracing::error!(error = %e, "io_uring driver stopped"),
            },
            () = ring.kick.notified() => false,
        };
    }
}

/// Where a stream's sending stands.
enum Sending {
    Idle,
    /// Queued, in the kernel, or complete with its result not yet taken, in this slot of this
    /// shard; `lent`: the bytes were lent (nothing to keep once sent).
    Posted {
        shard: usize,
        slot: usize,
        lent: bool,
    },
}

/// A TCP stream that sends through the ring and reads on readiness.
pub struct UringTcp {
    /// Always `Some` until dropped or taken back by [`UringTcp::into_tcp`].
    tcp: Option<TcpStream>,
    ring: Arc<Ring>,
    sending: Sending,
    spare: BytesMut,
}

impl std::fmt::Debug for UringTcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UringTcp")
            .field("tcp", &self.tcp)
            .finish_non_exhaustive()
    }
}

impl UringTcp {
    pub fn new(tcp: TcpStream, ring: Arc<Ring>) -> UringTcp {
        UringTcp {
            tcp: Some(tcp),
            ring,
            sending: Sending::Idle,
            spare: BytesMut::new(),
        }
    }

    pub fn tcp(&self) -> io::Result<&TcpStream> {
        self.tcp.as_ref().ok_or_else(gone)
    }

    /// The plain stream back (for a TLS handshake), once every byte written has been sent.
    pub async fn into_tcp(mut self) -> io::Result<TcpStream> {
        self.drained().await?;
        self.tcp.take().ok_or_else(gone)
    }

    /// Waits until the kernel has taken every byte written (a flush does not wait for it).
    pub async fn drained(&mut self) -> io::Result<()> {
        std::future::poll_fn(|cx| self.poll_sent(cx)).await
    }

    /// Writes at once if no send is in flight, best effort (a goodbye before closing).
    pub fn try_write_now(&self, bytes: &[u8]) -> io::Result<usize> {
        let idle = match self.sending {
            Sending::Idle => true,
            Sending::Posted { shard, slot, .. } => self.ring.shards[shard].is_complete(slot),
        };
        match &self.tcp {
            Some(tcp) if idle => tcp.try_write(bytes),
            _ => Ok(0),
        }
    }

    /// Drives the current send to its end: Ready once idle.
    fn poll_sent(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Sending::Posted { shard, slot, lent } = self.sending else {
            return Poll::Ready(Ok(()));
        };
        let (result, bytes) = ready!(self.ring.shards[shard].poll_send(slot, cx));
        Poll::Ready(self.sent(result, bytes, lent))
    }

    /// Takes in the result of the current send if it is complete, without waiting.
    fn settle(&mut self) -> io::Result<()> {
        let Sending::Posted { shard, slot, lent } = self.sending else {
            return Ok(());
        };
        match self.ring.shards[shard].try_send_result(slot) {
            Some((result, bytes)) => self.sent(result, bytes, lent),
            None => Ok(()),
        }
    }

    /// Takes in a completed send's result: every byte (a slot reports a positive count only
    /// once the kernel has taken all of them), or the error.
    fn sent(&mut self, result: i32, bytes: BytesMut, lent: bool) -> io::Result<()> {
        self.sending = Sending::Idle;
        match result {
            n if n > 0 => {
                if !lent {
                    self.keep(bytes);
                }
                Ok(())
            }
            0 => Err(io::ErrorKind::WriteZero.into()),
            n => Err(io::Error::from_raw_os_error(-n)),
        }
    }

    fn keep(&mut self, mut bytes: BytesMut) {
        if bytes.capacity() <= KEEP_BUFFER {
            bytes.clear();
            self.spare = bytes;
        }
    }

    /// Takes `buf` whole to send, once the previous send is done, and leaves the spare buffer
    /// in its place: the bytes are not copied. Errors of a send show as [`AsyncWrite::poll_write`]'s.
    pub fn poll_send_buffer(&mut self, cx: &mut Context<'_>, buf: &mut BytesMut) -> Poll<io::Result<()>> {
        ready!(self.poll_sent(cx))?;
        if buf.is_empty() {
            return Poll::Ready(Ok(()));
        }
        let fd = self.tcp()?.as_raw_fd();
        let bytes = std::mem::replace(buf, std::mem::take(&mut self.spare));
        self.post(fd, bytes, false)
    }

    /// Takes lent bytes (a part of another stream's read buffer) whole to send, once the
    /// previous send is done; the ring releases them as soon as they are sent.
    pub fn poll_send_lent(&mut self, cx: &mut Context<'_>, buf: &mut BytesMut) -> Poll<io::Result<()>> {
        ready!(self.poll_sent(cx))?;
        if buf.is_empty() {
            return Poll::Ready(Ok(()));
        }
        let fd = self.tcp()?.as_raw_fd();
        self.post(fd, std::mem::take(buf), true)
    }
}

impl UringTcp {
    /// Queues a send of `bytes` on the calling thread's ring.
    fn post(&mut self, fd: RawFd, bytes: BytesMut, lent: bool) -> Poll<io::Result<()>> {
        let (shard, ring) = self.ring.local();
        let slot = ring.post_send(fd, bytes, lent)?;
        self.sending = Sending::Posted { shard, slot, lent };
        Poll::Ready(Ok(()))
    }
}

fn gone() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "the stream was taken")
}

impl Drop for UringTcp {
    fn drop(&mut self) {
        if let (Sending::Posted { shard, slot, .. }, Some(tcp)) = (&self.sending, self.tcp.take()) {
            self.ring.shards[*shard].abandon(*slot, tcp);
        }
    }
}

impl AsyncRead for UringTcp {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.ring.reading().note_read();
        match this.tcp.as_mut() {
            Some(tcp) => Pin::new(tcp).poll_read(cx, buf),
            None => Poll::Ready(Err(gone())),
        }
    }
}

impl AsyncWrite for UringTcp {
    /// Takes up to `MAX_SEND` bytes into a buffer the ring sends from, once the previous
    /// send is done; errors of a send show at the next write or flush.
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_sent(cx))?;
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let fd = this.tcp()?.as_raw_fd();
        let n = buf.len().min(MAX_SEND);
        let mut bytes = std::mem::take(&mut this.spare);
        bytes.extend_from_slice(&buf[..n]);
        ready!(this.post(fd, bytes, false))?;
        Poll::Ready(Ok(n))
    }

    /// Ready once every byte written is the ring's to send: the ring sends all of it on its
    /// own, so the task need not be woken again when it is done. An error of a finished send
    /// shows here; one of a send still in flight at the next write, flush or shutdown.
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.get_mut().settle())
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_sent(cx))?;
        match this.tcp.as_mut() {
            Some(tcp) => Pin::new(tcp).poll_shutdown(cx),
            None => Poll::Ready(Ok(())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A connected pair: the near end sending through `ring`, the far end plain.
    async fn pair(ring: &Arc<Ring>) -> (UringTcp, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let near = TcpStream::connect(listener.local_addr().expect("addr"))
            .await
            .expect("connect");
        let (far, _) = listener.accept().await.expect("accept");
        (UringTcp::new(near, Arc::clone(ring)), far)
    }

    /// Everything the far end receives until the near end closes.
    async fn read_all(mut far: TcpStream) -> Vec<u8> {
        let mut got = Vec::new();
        far.read_to_end(&mut got).await.expect("read");
        got
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8).collect()
    }

    /// Megabytes written faster than the peer reads: sends wait for room in the kernel (or
    /// the ring sends their rest); every byte arrives, in order.
    async fn big_writes_arrive_whole(ring: Arc<Ring>) {
        let (mut near, far) = pair(&ring).await;
        let sent = pattern(5 << 20);
        let reader = tokio::spawn(read_all(far));
        for chunk in sent.chunks(700_001) {
            near.write_all(chunk).await.expect("write");
        }
        near.shutdown().await.expect("shutdown");
        drop(near);
        let got = reader.await.expect("reader");
        assert_eq!(got.len(), sent.len());
        assert!(got == sent, "bytes differ");
        let (sends, calls) = (ring.sends(), ring.submissions());
        assert!(sends >= 20 && calls >= 1, "sends {sends}, submissions {calls}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn big_writes_arrive_whole_on_one_thread() {
        big_writes_arrive_whole(Ring::start(None).expect("io_uring")).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn big_writes_arrive_whole_on_several_threads() {
        big_writes_arrive_whole(Ring::start(None).expect("io_uring")).await;
    }

    /// A buffer sent through the ring is the very allocation the ring's slot holds (nothing
    /// is copied), and a packet stream's flushes, which send that way, of every size,
    /// megabytes included, arrive whole and in order with such sends between them.
    async fn packet_flushes_hand_their_buffer_over(ring: Arc<Ring>) {
        let (near, far) = pair(&ring).await;
        let mut packets = tessera_protocol::PacketStream::new(crate::net::Stream::Uring(near));
        let sizes = [10, 3000, 70_000, 5 << 20, 1, 200_000];
        let reader = tokio::spawn(read_all(far));
        let mut expected = Vec::new();
        for (seq, size) in sizes.iter().enumerate() {
            let crate::net::Stream::Uring(uring) = packets.get_mut() else {
                unreachable!("built as a ring stream")
            };
            let mut wbuf = BytesMut::new();
            wbuf.extend_from_slice(b"probe");
            let at = wbuf.as_ptr();
            std::future::poll_fn(|cx| uring.poll_send_buffer(cx, &mut wbuf))
                .await
                .expect("send");
            assert!(wbuf.is_empty(), "the buffer went to the ring");
            let Sending::Posted { shard, slot, .. } = uring.sending else {
                panic!("a send is posted")
            };
            assert_eq!(
                ring.shards[shard].lock().slots[slot].bytes.as_ptr(),
                at,
                "the ring holds the same allocation"
            );
            expected.extend_from_slice(b"probe");
            let payload = pattern(*size);
            packets.set_seq(seq as u8);
            packets.write_packet(&payload);
            expected.extend_from_slice(&(*size as u32).to_le_bytes()[..3]);
            expected.push(seq as u8);
            expected.extend_from_slice(&payload);
            packets.flush().await.expect("flush");
        }
        let crate::net::Stream::Uring(mut uring) = packets.into_parts().0 else {
            unreachable!("built as a ring stream")
        };
        uring.shutdown().await.expect("shutdown");
        drop(uring);
        let got = reader.await.expect("reader");
        assert_eq!(got.len(), expected.len());
        assert!(got == expected, "bytes differ");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn packet_flushes_hand_their_buffer_over_on_one_thread() {
        packet_flushes_hand_their_buffer_over(Ring::start(None).expect("io_uring")).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn packet_flushes_hand_their_buffer_over_on_several_threads() {
        packet_flushes_hand_their_buffer_over(Ring::start(None).expect("io_uring")).await;
    }

    /// Lent bytes (part of another buffer) are sent whole and released by the ring as soon as
    /// the send is over, before the stream takes the result; the stream's spare is untouched,
    /// and the lending buffer owns all its memory again.
    #[tokio::test(flavor = "current_thread")]
    async fn lent_bytes_are_sent_then_released_at_once_and_never_kept() {
        let ring = Ring::start(None).expect("io_uring");
        let (mut near, mut far) = pair(&ring).await;
        near.spare = BytesMut::with_capacity(1000);
        let mut parent = BytesMut::with_capacity(64 << 10);
        parent.extend_from_slice(&pattern(50_000));
        let mut lent = parent.split_to(30_000);
        let expected = lent.to_vec();
        std::future::poll_fn(|cx| near.poll_send_lent(cx, &mut lent))
            .await
            .expect("send");
        assert!(lent.is_empty(), "taken whole");
        let mut got = vec![0; expected.len()];
        far.read_exact(&mut got).await.expect("read");
        assert!(got == expected, "bytes differ");
        let Sending::Posted {
            shard,
            slot,
            lent: true,
        } = near.sending
        else {
            panic!("a lent send is posted")
        };
        while !ring.shards[shard].is_complete(slot) {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            ring.shards[shard].lock().slots[slot].bytes.capacity(),
            0,
            "released on completion"
        );
        near.drained().await.expect("drained");
        assert!(near.spare.capacity() >= 1000, "the spare stays");
        parent.clear();
        assert!(parent.try_reclaim(64 << 10), "the lending buffer owns its memory again");
    }

    /// A flush hands the bytes to the ring and returns: the ring sends all of them even while
    /// the peer reads late and nobody polls the stream again; `drained` waits for the end.
    #[tokio::test(flavor = "current_thread")]
    async fn a_flushed_write_reaches_a_peer_that_reads_late_without_more_polls() {
        let ring = Ring::start(None).expect("io_uring");
        let (mut near, mut far) = pair(&ring).await;
        let sent = pattern(200 << 10);
        near.write_all(&sent).await.expect("write");
        near.flush().await.expect("flush");
        assert!(matches!(near.sending, Sending::Posted { .. }), "a flush does not wait");
        // Nothing is read until the send has met a full socket buffer.
        tokio::task::yield_now().await;
        let mut got = vec![0u8; sent.len()];
        far.read_exact(&mut got).await.expect("read");
        assert!(got == sent);
        near.drained().await.expect("drained");
        assert!(near.into_tcp().await.is_ok(), "idle once drained");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_stream_dropped_before_its_send_went_out_still_sends_it_then_closes() {
        let ring = Ring::start(None).expect("io_uring");
        let (mut near, far) = pair(&ring).await;
        near.write_all(b"goodbye").await.expect("write");
        assert!(
            matches!(near.sending, Sending::Posted { .. }),
            "queued, not yet submitted"
        );
        drop(near);
        assert_eq!(read_all(far).await, b"goodbye");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_plain_stream_comes_back_once_its_sends_are_done() {
        let ring = Ring::start(None).expect("io_uring");
        let (mut near, far) = pair(&ring).await;
        near.write_all(b"hello").await.expect("write");
        near.flush().await.expect("flush");
        assert!(
            matches!(near.sending, Sending::Posted { .. }),
            "queued, not yet submitted"
        );
        let mut plain = near.into_tcp().await.expect("the stream after its send");
        plain.write_all(b" world").await.expect("plain write");
        drop(plain);
        assert_eq!(read_all(far).await, b"hello world");
    }

    /// A send queued on a socket whose buffer is already full waits in the kernel for room and
    /// completes through the kernel's deferred work, outside any submission: the eventfd must
    /// still wake the driver once the peer reads, with no other traffic on the ring.
    async fn a_send_to_a_full_socket_completes_once_the_peer_reads(ring: Arc<Ring>) {
        let (mut near, mut far) = pair(&ring).await;
        let chunk = pattern(64 << 10);
        let mut filled = 0usize;
        loop {
            match near.tcp().expect("tcp").try_write(&chunk) {
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("filling the socket: {e}"),
            }
        }
        near.write_all(b"last").await.expect("write");
        let writer = tokio::spawn(async move { near.drained().await });
        let mut got = vec![0u8; filled + 4];
        far.read_exact(&mut got).await.expect("read");
        assert_eq!(&got[filled..], b"last");
        // Without the signal this waits forever: bounded so that the failure is reported.
        let flushed = tokio::time::timeout(std::time::Duration::from_secs(30), writer).await;
        assert!(
            matches!(flushed, Ok(Ok(Ok(())))),
            "the flush never completed: {flushed:?}"
        );
    }

    /// A waker that counts its wake-ups.
    struct Counting(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Counting {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The rest of a short send that cannot be queued (here: a ring that refuses submissions,
    /// its queue full) fails that send and wakes its stream; it does not leave it waiting.
    #[test]
    fn a_rest_that_cannot_be_queued_fails_its_send_and_wakes_the_stream() {
        let ring = IoUring::builder().setup_r_disabled().build(4).expect("io_uring");
        let mut inner = Inner {
            ring: Arc::new(ring),
            slots: Vec::new(),
            free: Vec::new(),
            queued: 0,
            resend: Vec::new(),
        };
        while inner.push(&opcode::Nop::new().build().user_data(CANCEL)).is_ok() {}
        let woken = Arc::new(Counting(std::sync::atomic::AtomicUsize::new(0)));
        inner.slots.push(Slot {
            bytes: BytesMut::from(&pattern(100)[..]),
            done: 40,
            waker: Some(Waker::from(Arc::clone(&woken))),
            ..Slot::default()
        });
        inner.resend.push(0);
        let mut wake = Vec::new();
        inner.resend_rests(&mut wake);
        wake.drain(..).for_each(Waker::wake);
        assert_eq!(woken.0.load(Ordering::Relaxed), 1, "the stream is woken");
        let (result, _) = inner.take_result(0).expect("the send is over");
        assert!(result < 0, "with an error: {result}");
        assert!(inner.resend.is_empty());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_send_to_a_full_socket_completes_on_one_thread() {
        a_send_to_a_full_socket_completes_once_the_peer_reads(Ring::start(None).expect("io_uring")).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_send_to_a_full_socket_completes_on_several_threads() {
        a_send_to_a_full_socket_completes_once_the_peer_reads(Ring::start(None).expect("io_uring")).await;
    }

    /// Runs `test` on a ring whose sends wait for the park of a runtime of `workers` threads.
    fn at_park_on<F: std::future::Future<Output = ()>>(workers: usize, test: impl FnOnce(Arc<Ring>) -> F) {
        let (runtime, park) = runtime_with_park(workers).expect("runtime");
        runtime.block_on(async {
            let ring = Ring::start(Some(&park)).expect("io_uring");
            assert!(ring.at_park);
            test(ring).await;
        });
    }

    /// [`at_park_on`] a current_thread runtime.
    fn at_park<F: std::future::Future<Output = ()>>(test: impl FnOnce(Arc<Ring>) -> F) {
        at_park_on(1, test);
    }

    /// A task that keeps the runtime from parking (its yields are deferred), until stopped.
    fn keep_busy() -> Arc<AtomicBool> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        tokio::spawn(async move {
            while !flag.load(Ordering::Relaxed) {
                tokio::task::yield_now().await;
            }
        });
        stop
    }

    /// Fails the test instead of hanging when a send never goes out.
    async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
        tokio::time::timeout(std::time::Duration::from_secs(30), f)
            .await
            .unwrap_or_else(|_| panic!("{what}: never happened"))
    }

    #[test]
    fn the_sends_of_a_turn_go_out_in_one_submission_when_the_runtime_parks() {
        at_park(|ring| async move {
            let mut pairs = Vec::new();
            for _ in 0..3 {
                pairs.push(pair(&ring).await);
            }
            let (sends, submissions) = (ring.sends(), ring.submissions());
            for (i, (near, _)) in pairs.iter_mut().enumerate() {
                near.write_all(&[i as u8; 5]).await.expect("write");
                near.flush().await.expect("flush");
            }
            assert_eq!(ring.submissions(), submissions, "nothing before the park");
            for (i, (_, far)) in pairs.iter_mut().enumerate() {
                let mut got = [0u8; 5];
                far.read_exact(&mut got).await.expect("read");
                assert_eq!(got, [i as u8; 5]);
            }
            assert_eq!(ring.sends() - sends, 3);
            assert_eq!(ring.submissions() - submissions, 1, "one system call for the three");
        });
    }

    #[test]
    fn big_writes_arrive_whole_when_sends_wait_for_the_park() {
        at_park(big_writes_arrive_whole);
    }

    #[test]
    fn a_send_to_a_full_socket_completes_when_sends_wait_for_the_park() {
        at_park(a_send_to_a_full_socket_completes_once_the_peer_reads);
    }

    #[test]
    fn packet_flushes_hand_their_buffer_over_when_sends_wait_for_the_park() {
        at_park(packet_flushes_hand_their_buffer_over);
    }

    #[test]
    fn on_several_threads_big_writes_arrive_whole_when_sends_wait_for_the_parks() {
        at_park_on(2, big_writes_arrive_whole);
    }

    #[test]
    fn on_several_threads_a_send_to_a_full_socket_completes_when_sends_wait_for_the_parks() {
        at_park_on(2, a_send_to_a_full_socket_completes_once_the_peer_reads);
    }

    #[test]
    fn on_several_threads_packet_flushes_hand_their_buffer_over_when_sends_wait_for_the_parks() {
        at_park_on(2, packet_flushes_hand_their_buffer_over);
    }

    /// Spins (holding the worker thread: no park, no read) until `flag` is set; false after
    /// 30 s instead of hanging.
    fn hold_thread_until(flag: &AtomicBool) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !flag.load(Ordering::Acquire) && std::time::Instant::now() < deadline {
            std::hint::spin_loop();
        }
        flag.load(Ordering::Acquire)
    }

    #[test]
    fn on_several_threads_each_worker_queues_its_sends_on_a_ring_of_its_own() {
        at_park_on(2, |ring| async move {
            assert_eq!(ring.shards.len(), 2, "one ring per worker thread");
            let arrived = Arc::new(AtomicUsize::new(0));
            let mut tasks = Vec::new();
            for _ in 0..2 {
                let (mut near, far) = pair(&ring).await;
                let arrived = Arc::clone(&arrived);
                tasks.push(tokio::spawn(async move {
                    // Both tasks at once: each holds a worker thread of its own.
                    arrived.fetch_add(1, Ordering::AcqRel);
                    let both = std::time::Instant::now() + std::time::Duration::from_secs(30);
                    while arrived.load(Ordering::Acquire) < 2 && std::time::Instant::now() < both {
                        std::hint::spin_loop();
                    }
                    near.write_all(b"x").await.expect("write");
                    let Sending::Posted { shard, .. } = near.sending else {
                        panic!("a send is posted")
                    };
                    drop(near);
                    (shard, far)
                }));
            }
            let mut shards = Vec::new();
            for task in tasks {
                let (shard, far) = task.await.expect("task");
                assert_eq!(within("the send", read_all(far)).await, b"x");
                shards.push(shard);
            }
            assert_ne!(shards[0], shards[1], "two threads, two rings: {shards:?}");
        });
    }

    /// A thread busy with other work (no park, no read) does not hold up a send it queued:
    /// another worker's park submits it.
    #[test]
    fn on_several_threads_a_busy_threads_send_goes_out_at_another_threads_park() {
        at_park_on(2, |ring| async move {
            let (mut near, mut far) = pair(&ring).await;
            let got = Arc::new(AtomicBool::new(false));
            let seen = Arc::clone(&got);
            let reader = tokio::spawn(async move {
                let mut bytes = [0u8; 5];
                far.read_exact(&mut bytes).await.expect("read");
                seen.store(true, Ordering::Release);
                bytes
            });
            let busy = tokio::spawn(async move {
                near.write_all(b"hello").await.expect("write");
                near.flush().await.expect("flush");
                hold_thread_until(&got)
            });
            assert!(
                busy.await.expect("busy task"),
                "the send waited for its own thread's park"
            );
            assert_eq!(reader.await.expect("reader"), *b"hello");
        });
    }

    #[test]
    fn a_runtime_that_never_parks_sends_once_a_batch_is_queued() {
        at_park(|ring| async move {
            let mut pairs = Vec::new();
            for _ in 0..PARK_BATCH {
                pairs.push(pair(&ring).await);
            }
            let stop = keep_busy();
            for (near, _) in &mut pairs {
                near.write_all(b"x").await.expect("write");
            }
            for (_, far) in &mut pairs {
                let mut got = [0u8; 1];
                within("a full batch sent", far.read_exact(&mut got))
                    .await
                    .expect("read");
            }
            stop.store(true, Ordering::Relaxed);
        });
    }

    #[test]
    fn a_runtime_that_never_parks_sends_a_lone_send_once_its_streams_have_read_on() {
        at_park(|ring| async move {
            let (mut lone, lone_far) = pair(&ring).await;
            let (mut reader, mut source) = pair(&ring).await;
            let stop = keep_busy();
            lone.write_all(b"answer").await.expect("write");
            source.write_all(&[7u8; STALE_READS as usize + 1]).await.expect("write");
            for _ in 0..=STALE_READS {
                let mut byte = [0u8; 1];
                reader.read_exact(&mut byte).await.expect("read");
            }
            drop(lone);
            assert_eq!(within("the lone send", read_all(lone_far)).await, b"answer");
            stop.store(true, Ordering::Relaxed);
        });
    }

    #[test]
    fn a_runtime_that_never_parks_sends_what_a_stream_waits_for() {
        at_park(|ring| async move {
            let (mut near, far) = pair(&ring).await;
            let stop = keep_busy();
            near.write_all(b"one").await.expect("write");
            within("the second write", near.write_all(b"two")).await.expect("write");
            within("the shutdown", near.shutdown()).await.expect("shutdown");
            drop(near);
            assert_eq!(within("the far end", read_all(far)).await, b"onetwo");
            stop.store(true, Ordering::Relaxed);
        });
    }
}
