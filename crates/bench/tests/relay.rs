//! `tessera-bench relay` as the kit starts it: a child process in front of a server (here a tiny
//! echo server), ready when it accepts, bytes both ways, gone once its guard is dropped.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::time::Duration;

use tessera_bench::relay::RelayProcess;
use tessera_bench::sysbench::Endpoint;

/// Echoes `clients` connections, each until its peer half-closes; joined, the bytes of each
/// (smallest first).
fn echo_server(listener: TcpListener, clients: usize) -> std::thread::JoinHandle<Vec<u64>> {
    std::thread::spawn(move || {
        let echoes: Vec<_> = (0..clients)
            .map(|_| {
                let (stream, _) = listener.accept().expect("accept");
                std::thread::spawn(move || {
                    let mut reader = stream.try_clone().expect("clone");
                    let mut writer = stream;
                    let n = std::io::copy(&mut reader, &mut writer).expect("echo");
                    writer.shutdown(Shutdown::Write).expect("shutdown");
                    n
                })
            })
            .collect();
        let mut bytes: Vec<u64> = echoes.into_iter().map(|e| e.join().expect("echo")).collect();
        bytes.sort_unstable();
        bytes
    })
}

#[test]
fn the_relay_subcommand_relays_both_ways_and_stops_with_its_guard() {
    let server = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = server.local_addr().expect("address").port();
    let dir = std::env::temp_dir().join(format!("tessera-bench-relay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let direct = Endpoint {
        host: "127.0.0.1".into(),
        port,
        user: "u".into(),
        password: "p".into(),
    };
    let program = Path::new(env!("CARGO_BIN_EXE_tessera-bench"));
    let relay = RelayProcess::start(program, &direct, &dir, "test").expect("the relay starts");
    // Two backend connections: the readiness check's connect (no bytes) and the client's.
    let echo = echo_server(server, 2);

    assert_eq!(
        (relay.endpoint.user.as_str(), relay.endpoint.password.as_str()),
        ("u", "p")
    );
    let addr = format!("{}:{}", relay.endpoint.host, relay.endpoint.port);
    let mut client = TcpStream::connect(&addr).expect("connect to the relay");
    client.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    client.write_all(b"ping through the relay").unwrap();
    client.shutdown(Shutdown::Write).unwrap();
    let mut back = String::new();
    client
        .read_to_string(&mut back)
        .expect("the echo and the close come back");
    assert_eq!(back, "ping through the relay");
    assert_eq!(echo.join().expect("echo server"), [0, 22]);

    let log = std::fs::read_to_string(dir.join("relay-test.log")).unwrap();
    assert!(log.contains(&format!("relaying {addr} -> 127.0.0.1:{port}")), "{log}");
    let pid = relay.pid();
    drop(relay);
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the relay was killed and reaped"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
