//! The examples' client login: the handshake with a native password, on Tessera's own
//! protocol crate.

use bytes::BytesMut;
use tessera_protocol::auth;
use tessera_protocol::flags::*;
use tessera_protocol::handshake::{HandshakeResponse, HandshakeV10};
use tessera_protocol::response::is_ok;
use tessera_protocol::PacketStream;
use tokio::net::TcpStream;

/// Connects to 127.0.0.1:`port` and logs in as `user` (into `database`, if any), asking for
/// `capabilities` beside the protocol's basics.
pub async fn login(
    port: u16,
    (user, password): (&str, &str),
    database: Option<&str>,
    capabilities: u32,
) -> Result<PacketStream<TcpStream>, String> {
    let tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    let mut io = PacketStream::new(tcp);
    let greeting = io.read_packet().await.map_err(|e| e.to_string())?;
    let hs = HandshakeV10::parse(&greeting).map_err(|e| e.to_string())?;
    let with_db = if database.is_some() { CLIENT_CONNECT_WITH_DB } else { 0 };
    let resp = HandshakeResponse {
        capabilities: CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH | with_db | capabilities,
        max_packet: 1 << 24,
        charset: 45,
        username: user.into(),
        auth_response: auth::native_scramble(password.as_bytes(), &hs.scramble),
        database: database.map(String::from),
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
