//! A closed-loop text-query load from clients that ask for `CLIENT_DEPRECATE_EOF` (or not),
//! as Oracle MySQL drivers do, where sysbench's libmariadb does not. Each of THREADS clients
//! runs sysbench's point select and range read against `sbtest1` by turns for EVENTS rounds;
//! prints the queries run. Used to compare builds by instructions per query (callgrind):
//! `cargo run --release --example query_load -- PORT USER PASSWORD THREADS EVENTS [classic]`

#[path = "support/login.rs"]
mod support;

use tessera_protocol::flags::{CLIENT_DEPRECATE_EOF, CLIENT_TRANSACTIONS};
use tessera_protocol::PacketStream;
use tokio::net::TcpStream;

type Stream = PacketStream<TcpStream>;

/// Runs one text query and reads its answer to the end; returns the rows.
async fn run(io: &mut Stream, sql: &str, deprecate_eof: bool) -> Result<u64, String> {
    io.reset_seq();
    io.send(&[&[3u8][..], sql.as_bytes()].concat())
        .await
        .map_err(|e| e.to_string())?;
    let first = io.read_packet().await.map_err(|e| e.to_string())?;
    match first.first() {
        Some(0x00) => return Ok(0),
        Some(0xff) | None => return Err(format!("{sql}: {:?}", String::from_utf8_lossy(&first))),
        Some(&columns) => {
            for _ in 0..columns + u8::from(!deprecate_eof) {
                io.read_packet().await.map_err(|e| e.to_string())?;
            }
        }
    }
    let mut rows = 0;
    loop {
        let p = io.read_packet().await.map_err(|e| e.to_string())?;
        match p.first() {
            Some(0xfe) if p.len() < 9 || deprecate_eof => return Ok(rows),
            Some(0xff) => return Err(format!("{sql}: {:?}", String::from_utf8_lossy(&p))),
            _ => rows += 1,
        }
    }
}

async fn client(port: u16, user: String, password: String, events: u64, deprecate_eof: bool) -> Result<u64, String> {
    let caps = if deprecate_eof { CLIENT_DEPRECATE_EOF } else { 0 };
    let mut io = support::login(port, (&user, &password), Some("sbtest"), CLIENT_TRANSACTIONS | caps).await?;
    let mut queries = 0;
    for i in 0..events {
        let id = (i * 7919) % 99_000 + 1;
        run(&mut io, &format!("SELECT c FROM sbtest1 WHERE id={id}"), deprecate_eof).await?;
        let range = format!("SELECT c FROM sbtest1 WHERE id BETWEEN {id} AND {}", id + 99);
        run(&mut io, &range, deprecate_eof).await?;
        queries += 2;
    }
    Ok(queries)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 6 {
        eprintln!("usage: query_load PORT USER PASSWORD THREADS EVENTS [classic]");
        std::process::exit(2);
    }
    let port: u16 = args[1].parse().expect("port");
    let threads: usize = args[4].parse().expect("threads");
    let events: u64 = args[5].parse().expect("events");
    let deprecate_eof = args.get(6).map(String::as_str) != Some("classic");
    let tasks: Vec<_> = (0..threads)
        .map(|_| tokio::spawn(client(port, args[2].clone(), args[3].clone(), events, deprecate_eof)))
        .collect();
    let mut total = 0;
    for t in tasks {
        match t.await.expect("task") {
            Ok(n) => total += n,
            Err(e) => {
                eprintln!("client failed: {e}");
                std::process::exit(1);
            }
        }
    }
    println!("queries: {total}");
}
