//! The hybrid responder of the leg-floor probe: a tokio current_thread runtime whose tasks do
//! their socket reads and writes through one io_uring. The ring's fd sits in tokio's epoll; a
//! driver task submits what the tasks queued since it last ran (one `io_uring_enter` for all
//! of them) and wakes the tasks whose operations completed. This is the shape an io_uring
//! engine inside Tessera's tokio runtime would take.

use std::cell::RefCell;
use std::future::poll_fn;
use std::io;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::task::{Poll, Waker};

use io_uring::{opcode, squeue, types, IoUring};
use tokio::io::unix::AsyncFd;
use tokio::sync::Notify;

use super::{complete_requests, ANSWER};

/// One operation posted on the ring: its result once complete, and who waits for it.
#[derive(Default)]
struct Slot {
    result: Option<i32>,
    waker: Option<Waker>,
}

/// The ring and its operations, shared by the tasks of one thread.
struct Ring {
    ring: IoUring,
    slots: Vec<Slot>,
    free: Vec<usize>,
}

impl Ring {
    /// Queues `entry` (submitted by the driver's next turn); returns its slot.
    fn post(&mut self, entry: squeue::Entry) -> io::Result<usize> {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Slot::default());
            self.slots.len() - 1
        });
        // SAFETY: the buffers behind every entry are leaked by `respond`, so they outlive it.
        unsafe { self.ring.submission().push(&entry.user_data(slot as u64)) }
            .map_err(|_| io::Error::other("the submission queue is full"))?;
        Ok(slot)
    }

    /// Moves every completion into its slot and wakes its task.
    fn reap(&mut self) {
        let done: Vec<(u64, i32)> = self.ring.completion().map(|c| (c.user_data(), c.result())).collect();
        for (data, result) in done {
            if let Some(slot) = self.slots.get_mut(data as usize) {
                slot.result = Some(result);
                if let Some(w) = slot.waker.take() {
                    w.wake();
                }
            }
        }
    }
}

/// Runs `entry` on the ring and waits for its result.
async fn run(ring: &Rc<RefCell<Ring>>, kick: &Notify, entry: squeue::Entry) -> io::Result<i32> {
    let slot = ring.borrow_mut().post(entry)?;
    kick.notify_one();
    poll_fn(|cx| {
        let mut r = ring.borrow_mut();
        match r.slots[slot].result.take() {
            Some(result) => {
                r.free.push(slot);
                Poll::Ready(Ok(result))
            }
            None => {
                r.slots[slot].waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    })
    .await
}

/// Serves `streams` until every client has closed its socket, reads and writes through the ring.
pub fn respond(streams: Vec<TcpStream>) -> io::Result<()> {
    respond_with(streams, true)
}

/// Serves `streams` until every client has closed its socket: reads through tokio's epoll
/// readiness, writes through the ring.
pub fn respond_sends_only(streams: Vec<TcpStream>) -> io::Result<()> {
    respond_with(streams, false)
}

fn respond_with(streams: Vec<TcpStream>, ring_reads: bool) -> io::Result<()> {
    for s in &streams {
        s.set_nodelay(true)?;
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build()?;
    let entries = (2 * streams.len()).next_power_of_two().max(8) as u32;
    let ring = Rc::new(RefCell::new(Ring {
        ring: IoUring::builder().setup_coop_taskrun().build(entries)?,
        slots: Vec::new(),
        free: Vec::new(),
    }));
    let kick = Rc::new(Notify::new());
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async move {
        let driver = tokio::task::spawn_local(drive(Rc::clone(&ring), Rc::clone(&kick)));
        let serving: Vec<_> = streams
            .into_iter()
            .map(|s| tokio::task::spawn_local(serve(s, Rc::clone(&ring), Rc::clone(&kick), ring_reads)))
            .collect();
        for s in serving {
            let _ = s.await;
        }
        driver.abort();
    });
    Ok(())
}

/// The ring's fd, borrowed for tokio's epoll (the ring owns and closes it).
struct RingFd(RawFd);

impl AsRawFd for RingFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// Submits what was queued and hands out completions, each time a task queues something or
/// the ring's fd turns readable.
async fn drive(ring: Rc<RefCell<Ring>>, kick: Rc<Notify>) -> io::Result<()> {
    let fd: RawFd = ring.borrow().ring.as_raw_fd();
    // SAFETY: the ring, and so its fd, lives in `ring`, which this function holds until after
    // `readable` (a local, dropped first) is gone.
    let readable = unsafe { AsyncFd::register_with_interest(RingFd(fd), tokio::io::Interest::READABLE) }
        .map_err(|e| io::Error::other(e.to_string()))?;
    loop {
        {
            let mut r = ring.borrow_mut();
            r.ring.submit()?;
            r.reap();
        }
        tokio::select! {
            guard = readable.readable() => guard?.clear_ready(),
            () = kick.notified() => {}
        }
    }
}

/// One client: receive, answer, again. The receive goes through the ring, or (with
/// `ring_reads` false) through tokio's epoll readiness and a plain read.
async fn serve(stream: TcpStream, ring: Rc<RefCell<Ring>>, kick: Rc<Notify>, ring_reads: bool) {
    let fd = types::Fd(stream.as_raw_fd());
    let buf: &'static mut [u8] = Vec::leak(vec![0u8; 4096]);
    let answers: &'static [u8] = Vec::leak(vec![2u8; ANSWER * 16]);
    let readiness = match ring_reads {
        true => None,
        false => match stream.try_clone().and_then(|s| {
            s.set_nonblocking(true)?;
            tokio::net::TcpStream::from_std(s)
        }) {
            Ok(s) => Some(s),
            Err(_) => return,
        },
    };
    let mut pending = 0;
    loop {
        let received = match &readiness {
            Some(s) => read_when_ready(s, buf).await,
            None => {
                let receive = opcode::Recv::new(fd, buf.as_mut_ptr(), buf.len() as u32).build();
                run(&ring, &kick, receive).await
            }
        };
        let n = match received {
            Ok(n) if n > 0 => n as usize,
            _ => return,
        };
        let mut unsent = complete_requests(&mut pending, n).min(16) * ANSWER;
        while unsent > 0 {
            let send = opcode::Send::new(fd, answers.as_ptr(), unsent as u32).build();
            match run(&ring, &kick, send).await {
                Ok(n) if n > 0 => unsent = unsent.saturating_sub(n as usize),
                _ => return,
            }
        }
    }
}

/// Waits for `stream` to be readable (tokio's epoll), then reads what is there.
async fn read_when_ready(stream: &tokio::net::TcpStream, buf: &mut [u8]) -> io::Result<i32> {
    loop {
        stream.readable().await?;
        match stream.try_read(buf) {
            Ok(n) => return Ok(n as i32),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
}
