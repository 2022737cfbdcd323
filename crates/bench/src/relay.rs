//! The floor: a zero-logic TCP relay (`tessera-bench relay LISTEN BACKEND`) that the kit starts in
//! front of the direct server, the least any proxy owning a client and a backend connection costs.
//!
//! One tokio current_thread runtime (like Tessera's benchmark setting, `worker_threads = 1`), one
//! backend connection per client, TCP_NODELAY on both, bytes copied both ways and nothing parsed.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::copy_bidirectional;
use tokio::net::{TcpListener, TcpStream};

use crate::child::{on_free_port, ServerProcess};
use crate::error::{BenchError, Result};
use crate::sysbench::Endpoint;

/// The relay's target name in records and reports.
pub const RELAY_TARGET: &str = "relay";
const READY_TIMEOUT: Duration = Duration::from_secs(15);

/// `tessera-bench relay LISTEN_ADDR BACKEND_ADDR`: relays until killed.
pub fn main(args: &[String]) -> Result<()> {
    let [listen, backend] = args else {
        return Err(BenchError::Usage(
            "usage: tessera-bench relay LISTEN_ADDR BACKEND_ADDR".into(),
        ));
    };
    run(listen, backend, |local| {
        eprintln!("{}", announcement(&local.to_string(), backend))
    })
}

/// The line the relay prints once it listens (the kit waits for it).
fn announcement(listen: &str, backend: &str) -> String {
    format!("relaying {listen} -> {backend}")
}

/// Listens on `listen` and relays every client to `backend`, on one current_thread runtime;
/// `bound` is told the listening address first. Returns only when accepting fails for good.
pub fn run(listen: &str, backend: &str, bound: impl FnOnce(SocketAddr)) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map_err(|e| BenchError::io("starting the relay's runtime", e))?;
    runtime.block_on(async {
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|e| BenchError::io(format!("binding {listen}"), e))?;
        let local = listener
            .local_addr()
            .map_err(|e| BenchError::io("the relay's address", e))?;
        bound(local);
        serve(listener, backend.into())
            .await
            .map_err(|e| BenchError::io(format!("accepting on {local}"), e))
    })
}

/// Accepts clients for ever, each relayed by a task of its own.
async fn serve(listener: TcpListener, backend: Arc<str>) -> std::io::Result<()> {
    loop {
        match listener.accept().await {
            Ok((client, _)) => drop(tokio::spawn(relay_one(client, Arc::clone(&backend)))),
            Err(e) if lost_before_accept(&e) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Errors of one connection that went away while it was being accepted (the next can follow).
fn lost_before_accept(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionReset, Interrupted};
    matches!(e.kind(), ConnectionAborted | ConnectionReset | Interrupted)
}

/// One client: a backend connection of its own, bytes copied both ways until both sides close.
async fn relay_one(mut client: TcpStream, backend: Arc<str>) {
    let mut server = match TcpStream::connect(&*backend).await {
        Ok(server) => server,
        Err(e) => {
            eprintln!("relay: connecting to {backend}: {e}");
            return;
        }
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let _ = copy_bidirectional(&mut client, &mut server).await;
}

/// A relay started by the kit as a child process (`<program> relay 127.0.0.1:<free port>
/// <direct>`); killed and reaped when dropped.
pub struct RelayProcess {
    process: ServerProcess,
    /// Where clients connect: the relay's address with the direct server's account.
    pub endpoint: Endpoint,
}

impl RelayProcess {
    /// Starts `program relay` in front of `direct` with its log in `dir` (`relay-<label>.log`),
    /// and waits until it accepts connections.
    pub fn start(program: &Path, direct: &Endpoint, dir: &Path, label: &str) -> Result<RelayProcess> {
        on_free_port(|| Self::start_on_free_port(program, direct, dir, label))
    }

    fn start_on_free_port(program: &Path, direct: &Endpoint, dir: &Path, label: &str) -> Result<RelayProcess> {
        let port = tessera_sandbox::free_port()?;
        let listen = format!("127.0.0.1:{port}");
        let backend = format!("{}:{}", direct.host, direct.port);
        let log_path = dir.join(format!("relay-{label}.log"));
        let mut cmd = Command::new(program);
        cmd.args(["relay", &listen, &backend]);
        let mut process = ServerProcess::spawn(&mut cmd, &log_path)?;
        process
            .wait_ready(&listen, &announcement(&listen, &backend), READY_TIMEOUT)
            .map_err(BenchError::Relay)?;
        Ok(RelayProcess {
            process,
            endpoint: Endpoint {
                host: "127.0.0.1".into(),
                port,
                ..direct.clone()
            },
        })
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener as StdListener, TcpStream as StdStream};
    use std::sync::mpsc;
    use std::thread::JoinHandle;

    const WAIT: Duration = Duration::from_secs(10);

    /// An echo server for `clients` connections; returns its address and, when joined, the bytes
    /// each connection echoed.
    fn echo_server(clients: usize) -> (SocketAddr, JoinHandle<Vec<u64>>) {
        let listener = StdListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("address");
        let handle = std::thread::spawn(move || {
            let echoes: Vec<JoinHandle<u64>> = (0..clients)
                .map(|_| {
                    let (stream, _) = listener.accept().expect("accept");
                    std::thread::spawn(move || echo(stream))
                })
                .collect();
            echoes.into_iter().map(|h| h.join().expect("echo thread")).collect()
        });
        (addr, handle)
    }

    /// Writes back what it reads until the peer closes its side, then closes its own.
    fn echo(stream: StdStream) -> u64 {
        let mut reader = stream.try_clone().expect("clone");
        let mut writer = stream;
        let n = std::io::copy(&mut reader, &mut writer).expect("echo");
        writer.shutdown(Shutdown::Write).expect("shutdown");
        n
    }

    /// Runs the relay on a thread of its own (on a free port); returns the port it listens on.
    fn relay_to(backend: SocketAddr) -> SocketAddr {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            run("127.0.0.1:0", &backend.to_string(), |local| {
                tx.send(local).expect("send")
            })
        });
        rx.recv_timeout(WAIT).expect("the relay listens")
    }

    /// Sends `payload` and half-closes (on a thread, so that neither side waits on full socket
    /// buffers), reads until the backend's close comes through, and checks that all came back.
    fn round_trip(relay: SocketAddr, payload: Vec<u8>) {
        let mut client = StdStream::connect(relay).expect("connect to the relay");
        client.set_read_timeout(Some(WAIT)).expect("timeout");
        let mut writer = client.try_clone().expect("clone");
        let sent = payload.clone();
        let sending = std::thread::spawn(move || {
            writer.write_all(&sent).expect("write");
            writer.shutdown(Shutdown::Write).expect("half-close");
        });
        let mut back = Vec::new();
        client
            .read_to_end(&mut back)
            .expect("the echo and then the backend's close come through the relay");
        sending.join().expect("sender");
        assert!(back == payload, "{} bytes back of {}", back.len(), payload.len());
    }

    #[test]
    fn bytes_go_both_ways_with_one_backend_connection_per_client() {
        let (backend, echoes) = echo_server(2);
        let relay = relay_to(backend);
        let big: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        round_trip(relay, b"SELECT 1".to_vec());
        round_trip(relay, big.clone());
        // Two clients, two backend connections, each echoing exactly what its client sent.
        assert_eq!(echoes.join().expect("echo server"), [8, big.len() as u64]);
    }

    #[test]
    fn the_subcommand_wants_two_addresses() {
        for args in [vec![], vec!["127.0.0.1:1".to_string()]] {
            let err = main(&args).unwrap_err();
            assert!(err.to_string().contains("LISTEN_ADDR BACKEND_ADDR"), "{err}");
        }
        let taken = StdListener::bind("127.0.0.1:0").expect("bind");
        let addr = taken.local_addr().expect("address").to_string();
        let err = run(&addr, "127.0.0.1:1", |_| {}).unwrap_err();
        assert!(err.to_string().contains("Address already in use"), "{err}");
    }
}
