//! The busy-polling responder of the leg-floor probe: non-blocking reads over every socket in
//! turn, answering what arrived; only after [`SPIN`] with nothing to read does it block in
//! epoll (level-triggered, every socket registered once) until a socket is readable.

use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use super::{complete_requests, ANSWER};

/// How long the responder keeps polling with nothing to read before it sleeps in epoll.
const SPIN: Duration = Duration::from_micros(50);

/// Serves `streams` until every client has closed its socket.
pub fn respond(mut streams: Vec<TcpStream>) -> io::Result<()> {
    let epoll = Epoll::watching(&streams)?;
    let (mut buf, answer) = ([0u8; 4096], [2u8; ANSWER]);
    let mut pending = vec![0usize; streams.len()];
    let mut open = vec![true; streams.len()];
    let mut idle_since = Instant::now();
    while open.iter().any(|o| *o) {
        let mut served = false;
        for (i, stream) in streams.iter_mut().enumerate() {
            if !open[i] {
                continue;
            }
            match stream.read(&mut buf) {
                Ok(0) => open[i] = false,
                Ok(n) => {
                    served = true;
                    for _ in 0..complete_requests(&mut pending[i], n) {
                        stream.write_all(&answer)?;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(_) => open[i] = false,
            }
        }
        if served {
            idle_since = Instant::now();
        } else if idle_since.elapsed() >= SPIN {
            epoll.wait()?;
            idle_since = Instant::now();
        }
    }
    Ok(())
}

/// An epoll instance with every socket registered for readability, level-triggered.
struct Epoll(std::os::fd::OwnedFd);

impl Epoll {
    fn watching(streams: &[TcpStream]) -> io::Result<Epoll> {
        // SAFETY: epoll_create1 has no preconditions; a non-negative result is an fd we own.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let epoll = Epoll(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) });
        for s in streams {
            s.set_nodelay(true)?;
            s.set_nonblocking(true)?;
            let mut event = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: 0,
            };
            // SAFETY: both fds are open and `event` is a valid epoll_event.
            if unsafe { libc::epoll_ctl(fd, libc::EPOLL_CTL_ADD, s.as_raw_fd(), &mut event) } < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(epoll)
    }

    /// Blocks until some socket is readable (or has closed).
    fn wait(&self) -> io::Result<()> {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 1];
        // SAFETY: the epoll fd is open and `events` has room for the one event asked for.
        let n = unsafe { libc::epoll_wait(self.0.as_raw_fd(), events.as_mut_ptr(), 1, -1) };
        if n < 0 && io::Error::last_os_error().kind() != ErrorKind::Interrupted {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}
