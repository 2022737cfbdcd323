//! Opens N client connections to Tessera, logs each in, keeps them idle, and prints the proxy's
//! resident memory (pass its pid). Used to measure per-connection memory:
//! `cargo run --release --example idle_clients -- PORT COUNT PID`

use bytes::BytesMut;
use tessera_protocol::auth;
use tessera_protocol::flags::*;
use tessera_protocol::handshake::{HandshakeResponse, HandshakeV10};
use tessera_protocol::response::is_ok;
use tessera_protocol::PacketStream;
use tokio::net::TcpStream;

async fn login(port: u16) -> Result<PacketStream<TcpStream>, String> {
    let tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    let mut io = PacketStream::new(tcp);
    let greeting = io.read_packet().await.map_err(|e| e.to_string())?;
    let hs = HandshakeV10::parse(&greeting).map_err(|e| e.to_string())?;
    let resp = HandshakeResponse {
        capabilities: CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH,
        max_packet: 1 << 24,
        charset: 45,
        username: "app".into(),
        auth_response: auth::native_scramble(b"app", &hs.scramble),
        auth_plugin: Some(auth::NATIVE_PASSWORD.into()),
        ..Default::default()
    };
    let mut b = BytesMut::new();
    resp.encode(&mut b);
    io.send(&b).await.map_err(|e| e.to_string())?;
    let ok = io.read_packet().await.map_err(|e| e.to_string())?;
    if !is_ok(&ok) {
        return Err(format!("login refused: {:?}", String::from_utf8_lossy(&ok)));
    }
    Ok(io)
}

fn rss_kb(pid: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(port), Some(count), Some(pid)) = (args.get(1), args.get(2), args.get(3)) else {
        eprintln!("usage: idle_clients PORT COUNT PROXY_PID");
        std::process::exit(2);
    };
    let port: u16 = port.parse().expect("port");
    let count: usize = count.parse().expect("count");
    let before = rss_kb(pid);
    let mut held = Vec::with_capacity(count);
    for i in 0..count {
        match login(port).await {
            Ok(io) => held.push(io),
            Err(e) => {
                eprintln!("connection {i}: {e}");
                break;
            }
        }
    }
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let after = rss_kb(pid);
    println!(
        "clients={} proxy_rss_before_kb={before} proxy_rss_after_kb={after} per_client_bytes={}",
        held.len(),
        (after.saturating_sub(before) * 1024) / held.len().max(1) as u64
    );
}
