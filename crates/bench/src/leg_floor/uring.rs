//! The io_uring responder of the leg-floor probe: a receive kept posted on every socket; each
//! completed request gets its answer as a send submitted in the same `io_uring_enter` that
//! waits for the next completion, and the socket's next receive follows the send's completion.

use std::io;
use std::net::TcpStream;
use std::os::fd::AsRawFd;

use io_uring::{opcode, squeue, types, IoUring};

use super::{complete_requests, ANSWER};

/// Bytes one receive may take.
const RECEIVE: usize = 4096;
/// The most answers one send carries (clients keep one request in flight, so one is the rule).
const MAX_ANSWERS: usize = 16;

/// What a completion was for: bit 0 says send, the rest is the socket's index.
fn tag(index: usize, send: bool) -> u64 {
    (index as u64) << 1 | u64::from(send)
}

/// Serves `streams` until every client has closed its socket.
pub fn respond(streams: Vec<TcpStream>) -> io::Result<()> {
    for s in &streams {
        s.set_nodelay(true)?;
    }
    // Leaked, so that no operation the kernel still holds can outlive them, whatever happens.
    let buffers: &'static mut [Vec<u8>] = Vec::leak(vec![vec![0u8; RECEIVE]; streams.len()]);
    let answers: &'static [u8] = Vec::leak(vec![2u8; ANSWER * MAX_ANSWERS]);
    let entries = (2 * streams.len()).next_power_of_two().max(8) as u32;
    let mut ring: IoUring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries)?;
    let (mut pending, mut unsent) = (vec![0usize; streams.len()], vec![0usize; streams.len()]);
    for (i, s) in streams.iter().enumerate() {
        push(&mut ring, receive(s, &mut buffers[i], i))?;
    }
    let mut open = streams.len();
    let mut done = Vec::with_capacity(streams.len());
    while open > 0 {
        ring.submit_and_wait(1)?;
        done.extend(ring.completion().map(|c| (c.user_data(), c.result())));
        for (data, result) in done.drain(..) {
            let (i, sent) = ((data >> 1) as usize, data & 1 == 1);
            let n = match usize::try_from(result) {
                Ok(n) if n > 0 => n,
                _ => {
                    open -= 1;
                    continue;
                }
            };
            if !sent {
                unsent[i] = complete_requests(&mut pending[i], n).min(MAX_ANSWERS) * ANSWER;
            } else {
                unsent[i] = unsent[i].saturating_sub(n);
            }
            let next = match unsent[i] {
                0 => receive(&streams[i], &mut buffers[i], i),
                left => send(&streams[i], &answers[..left], i),
            };
            push(&mut ring, next)?;
        }
    }
    Ok(())
}

fn receive(stream: &TcpStream, buffer: &mut [u8], index: usize) -> squeue::Entry {
    opcode::Recv::new(types::Fd(stream.as_raw_fd()), buffer.as_mut_ptr(), buffer.len() as u32)
        .build()
        .user_data(tag(index, false))
}

fn send(stream: &TcpStream, bytes: &[u8], index: usize) -> squeue::Entry {
    opcode::Send::new(types::Fd(stream.as_raw_fd()), bytes.as_ptr(), bytes.len() as u32)
        .build()
        .user_data(tag(index, true))
}

/// Queues `entry`; the ring holds two entries per socket and each socket has at most one
/// operation posted, so it always has room.
fn push(ring: &mut IoUring, entry: squeue::Entry) -> io::Result<()> {
    // SAFETY: the buffers the entry points into are leaked (`respond`), so they outlive any
    // operation; a buffer is only posted once its previous operation has completed.
    unsafe { ring.submission().push(&entry) }.map_err(|_| io::Error::other("the submission queue is full"))
}
