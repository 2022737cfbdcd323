//! The floor of one socket leg (`tessera-bench leg-floor [THREADS] [SECONDS]`): what a server
//! that answers every request from memory, with one read and one write, spends per request
//! over loopback TCP. Any proxy pays this on its client leg alone, before its backend leg and
//! before any logic of its own.
//!
//! The responder is one thread, TCP_NODELAY, driven by one of three engines ([`Engine`]): a tokio
//! current_thread runtime over epoll (like Tessera's `worker_threads = 1`), io_uring, or busy
//! polling that falls back to epoll when idle. The clients are blocking threads, each writing a
//! request the size of a point select's COM_STMT_EXECUTE and reading an answer the size of its
//! result set, like sysbench. The responder thread's CPU comes from `/proc/self/task/<tid>/stat`.
//!
//! The kit's `--leg-floor` takes two readings of it around its sysbench matrix ([`kit_reading`])
//! for the report's notes.

mod hybrid;
mod spin;
mod uring;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream as StdStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::cpu::{parse_stat_ticks, ticks_per_sec};
use crate::error::{BenchError, Result};

/// Bytes of a request: a COM_STMT_EXECUTE of sysbench's point select (one integer parameter).
const REQUEST: usize = 34;
/// Bytes of an answer: the binary result set of one point select row (column count, one
/// definition, EOF, the row, EOF).
const ANSWER: usize = 180;

/// What one probe measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LegFloor {
    /// Requests answered in the measured window.
    pub requests: u64,
    pub requests_per_sec: f64,
    /// The responder thread's CPU (user + system) per request, in microseconds.
    pub us_per_request: f64,
}

const USAGE: &str =
    "usage: tessera-bench leg-floor [THREADS] [SECONDS] [ENGINES: epoll,uring,hybrid,hybrid-sends,spin]";

/// How the responder waits for its sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// A tokio current_thread runtime: epoll, one read and one write per request.
    Epoll,
    /// io_uring (single issuer, deferred task running): a receive kept posted on every socket,
    /// every completion's answer submitted in the same system call that waits for the next.
    Uring,
    /// A tokio current_thread runtime whose tasks read and write through one io_uring, its fd
    /// in tokio's epoll: the shape io_uring would take inside Tessera.
    Hybrid,
    /// The same, with only the writes through io_uring: reads wait on tokio's epoll readiness.
    HybridSends,
    /// Busy polling: non-blocking reads over every socket, blocking in epoll only after a
    /// stretch with nothing to read.
    Spin,
}

impl Engine {
    fn parse(name: &str) -> Result<Engine> {
        match name {
            "epoll" => Ok(Engine::Epoll),
            "uring" => Ok(Engine::Uring),
            "spin" => Ok(Engine::Spin),
            "hybrid" => Ok(Engine::Hybrid),
            "hybrid-sends" => Ok(Engine::HybridSends),
            _ => Err(BenchError::Usage(USAGE.into())),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Engine::Epoll => "epoll",
            Engine::Uring => "uring",
            Engine::Spin => "spin",
            Engine::Hybrid => "hybrid",
            Engine::HybridSends => "hybrid-sends",
        }
    }
}

/// `tessera-bench leg-floor [THREADS] [SECONDS] [ENGINES]`: prints requests per second and the
/// responder's CPU per request, one line per engine, the engines run one after the other.
pub fn main(args: &[String]) -> Result<()> {
    let number = |i: usize, default: u64| -> Result<u64> {
        args.get(i)
            .map_or(Ok(default), |a| a.parse().map_err(|_| BenchError::Usage(USAGE.into())))
    };
    let (threads, secs) = (number(0, 16)?, number(1, 10)?);
    let engines = args
        .get(2)
        .map_or("epoll", String::as_str)
        .split(',')
        .map(Engine::parse)
        .collect::<Result<Vec<_>>>()?;
    for engine in engines {
        let floor = measure(engine, threads as usize, Duration::from_secs(secs))?;
        println!(
            "leg floor, {}, {threads} clients, {secs} s: {:.0} requests/s, responder CPU {:.2} us/request",
            engine.name(),
            floor.requests_per_sec,
            floor.us_per_request
        );
    }
    Ok(())
}

/// Runs `threads` clients against a fresh responder for `time` and measures it.
pub fn measure(engine: Engine, threads: usize, time: Duration) -> Result<LegFloor> {
    let (addr, tid) = match engine {
        Engine::Epoll => start_responder()?,
        Engine::Uring => start_blocking_responder(threads, uring::respond)?,
        Engine::Spin => start_blocking_responder(threads, spin::respond)?,
        Engine::Hybrid => start_blocking_responder(threads, hybrid::respond)?,
        Engine::HybridSends => start_blocking_responder(threads, hybrid::respond_sends_only)?,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..threads)
        .map(|_| {
            let stream = StdStream::connect(addr).map_err(|e| BenchError::io("connecting to the responder", e))?;
            let (stop, done) = (Arc::clone(&stop), Arc::clone(&done));
            Ok(std::thread::spawn(move || client(stream, &stop, &done)))
        })
        .collect::<Result<_>>()?;
    let (ticks0, done0, start) = (thread_ticks(tid)?, done.load(Ordering::Relaxed), Instant::now());
    std::thread::sleep(time);
    let (ticks1, done1, elapsed) = (thread_ticks(tid)?, done.load(Ordering::Relaxed), start.elapsed());
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join()
            .map_err(|_| BenchError::Usage("a leg-floor client panicked".into()))??;
    }
    let requests = done1 - done0;
    let per_request = requests.max(1) as f64;
    Ok(LegFloor {
        requests,
        requests_per_sec: requests as f64 / elapsed.as_secs_f64(),
        us_per_request: (ticks1 - ticks0) as f64 / ticks_per_sec() * 1e6 / per_request,
    })
}

/// What `tessera-bench --leg-floor` measures: tokio's epoll, and sends through io_uring with
/// reads on readiness (the shape of Tessera's own sockets), each with 16 clients for 5 s.
const KIT_ENGINES: [Engine; 2] = [Engine::Epoll, Engine::HybridSends];
const KIT_CLIENTS: usize = 16;
const KIT_TIME: Duration = Duration::from_secs(5);

/// `--leg-floor`: one reading of the machine's floor for the report's notes, `when` saying at
/// which point of the benchmark it was taken. A probe that fails says so in the note.
pub fn kit_reading(when: &str) -> String {
    let readings: Vec<(Engine, Result<LegFloor>)> = KIT_ENGINES
        .iter()
        .map(|&engine| (engine, measure(engine, KIT_CLIENTS, KIT_TIME)))
        .collect();
    reading_note(when, &readings)
}

/// The note line of one `--leg-floor` reading.
fn reading_note(when: &str, readings: &[(Engine, Result<LegFloor>)]) -> String {
    let parts: Vec<String> = readings
        .iter()
        .map(|(engine, floor)| match floor {
            Ok(f) => format!(
                "{} {:.2} us/request ({:.0} requests/s)",
                engine.name(),
                f.us_per_request,
                f.requests_per_sec
            ),
            Err(e) => format!("{} not measured ({e})", engine.name()),
        })
        .collect();
    format!(
        "leg floor {when} (`tessera-bench leg-floor {KIT_CLIENTS} {}`: one socket leg answered from memory, \
         responder CPU per request): {}",
        KIT_TIME.as_secs(),
        parts.join(", ")
    )
}

/// One client: request, answer, again, until told to stop.
fn client(mut stream: StdStream, stop: &AtomicBool, done: &AtomicU64) -> Result<()> {
    let io = |e| BenchError::io("a leg-floor client", e);
    stream.set_nodelay(true).map_err(io)?;
    let (request, mut answer) = ([1u8; REQUEST], [0u8; ANSWER]);
    while !stop.load(Ordering::Relaxed) {
        stream.write_all(&request).map_err(io)?;
        stream.read_exact(&mut answer).map_err(io)?;
        done.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// Starts the responder's thread; returns where it listens and its thread id.
fn start_responder() -> Result<(SocketAddr, i32)> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // SAFETY: gettid(2) has no preconditions.
        let tid = unsafe { libc::gettid() };
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_io().build() {
            Ok(runtime) => runtime,
            Err(e) => return drop(tx.send(Err(BenchError::io("the responder's runtime", e)))),
        };
        runtime.block_on(async move {
            let listener = match TcpListener::bind("127.0.0.1:0")
                .await
                .and_then(|l| Ok((l.local_addr()?, l)))
            {
                Ok((addr, listener)) => {
                    let _ = tx.send(Ok((addr, tid)));
                    listener
                }
                Err(e) => return drop(tx.send(Err(BenchError::io("binding the responder", e)))),
            };
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(respond(stream));
            }
        });
    });
    rx.recv()
        .map_err(|_| BenchError::Usage("the responder did not start".into()))?
}

/// Starts a responder thread that accepts `clients` connections, then serves them all with
/// `serve` until every one has gone; returns where it listens and its thread id.
fn start_blocking_responder(
    clients: usize,
    serve: fn(Vec<StdStream>) -> std::io::Result<()>,
) -> Result<(SocketAddr, i32)> {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| BenchError::io("binding the responder", e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| BenchError::io("binding the responder", e))?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // SAFETY: gettid(2) has no preconditions.
        let _ = tx.send(unsafe { libc::gettid() });
        let streams = (0..clients)
            .map(|_| listener.accept().map(|(s, _)| s))
            .collect::<std::io::Result<Vec<_>>>();
        if let Err(e) = streams.and_then(serve) {
            eprintln!("leg-floor responder: {e}");
        }
    });
    let tid = rx
        .recv()
        .map_err(|_| BenchError::Usage("the responder did not start".into()))?;
    Ok((addr, tid))
}

/// How many whole requests `received` more bytes complete, given the `pending` bytes of a
/// partial request before them (updated).
fn complete_requests(pending: &mut usize, received: usize) -> usize {
    *pending += received;
    let requests = *pending / REQUEST;
    *pending %= REQUEST;
    requests
}

/// Answers every complete request on `stream` with one write, until the client goes.
async fn respond(mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let (mut buf, answer) = (vec![0u8; 4096], [2u8; ANSWER]);
    let mut pending = 0;
    loop {
        let requests = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => complete_requests(&mut pending, n),
        };
        for _ in 0..requests {
            if stream.write_all(&answer).await.is_err() {
                return;
            }
        }
    }
}

/// CPU ticks (user + system) the thread `tid` of this process has used.
fn thread_ticks(tid: i32) -> Result<u64> {
    let path = format!("/proc/self/task/{tid}/stat");
    let stat = std::fs::read_to_string(&path).map_err(|e| BenchError::io(format!("reading {path}"), e))?;
    parse_stat_ticks(&stat).ok_or_else(|| BenchError::Usage(format!("unreadable {path}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_answers_every_client_and_the_responder_is_charged() {
        for engine in [
            Engine::Epoll,
            Engine::Uring,
            Engine::Hybrid,
            Engine::HybridSends,
            Engine::Spin,
        ] {
            let floor = measure(engine, 2, Duration::from_millis(300)).expect("probe");
            assert!(floor.requests > 0, "{engine:?}: {floor:?}");
            assert!(
                floor.us_per_request.is_finite() && floor.us_per_request >= 0.0,
                "{engine:?}: {floor:?}"
            );
        }
    }

    #[test]
    fn the_arguments_are_numbers_and_known_engines() {
        let err = main(&["many".to_string()]).unwrap_err();
        assert!(err.to_string().contains("leg-floor [THREADS] [SECONDS]"), "{err}");
        let err = main(&["1".into(), "1".into(), "epoll,kqueue".into()]).unwrap_err();
        assert!(err.to_string().contains("ENGINES"), "{err}");
    }

    #[test]
    fn a_kit_reading_names_each_engine_with_its_figures_or_why_it_has_none() {
        let floor = LegFloor {
            requests: 500_000,
            requests_per_sec: 100_000.0,
            us_per_request: 7.456,
        };
        let failed = Err(BenchError::Usage("no io_uring".into()));
        let note = reading_note(
            "before the matrix",
            &[(Engine::Epoll, Ok(floor)), (Engine::HybridSends, failed)],
        );
        assert!(
            note.starts_with("leg floor before the matrix (`tessera-bench leg-floor 16 5`"),
            "{note}"
        );
        assert!(note.contains("epoll 7.46 us/request (100000 requests/s)"), "{note}");
        assert!(
            note.contains("hybrid-sends not measured (") && note.contains("no io_uring"),
            "{note}"
        );
    }

    #[test]
    fn requests_split_over_reads_are_counted_once_whole() {
        let mut pending = 0;
        assert_eq!(complete_requests(&mut pending, REQUEST - 1), 0);
        assert_eq!(complete_requests(&mut pending, 1), 1);
        assert_eq!(complete_requests(&mut pending, 2 * REQUEST + 3), 2);
        assert_eq!(pending, 3);
    }
}
