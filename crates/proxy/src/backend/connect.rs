//! Opening a backend connection: TCP (+TLS), the handshake as a client, mysql_native_password
//! and caching_sha2_password, then switching on session tracking.

use super::{BackendConn, ServerRef};
use crate::charset::BACKEND_COLLATION_ID;
use crate::error::ProxyError;
use crate::net::Stream;
use bytes::BytesMut;
use std::time::Duration;
use tessera_protocol::auth::{self, CACHING_SHA2_PASSWORD, NATIVE_PASSWORD};
use tessera_protocol::flags::*;
use tessera_protocol::handshake::{parse_auth_switch, HandshakeResponse, HandshakeV10};
use tessera_protocol::response::{is_err, is_ok, ErrPacket};
use tessera_protocol::PacketStream;
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::TlsConnector;

/// What every backend connection asks for (FOUND_ROWS and SSL are added per pool).
const BACKEND_CAPABILITIES: u32 = CLIENT_LONG_PASSWORD
    | CLIENT_LONG_FLAG
    | CLIENT_PROTOCOL_41
    | CLIENT_TRANSACTIONS
    | CLIENT_SECURE_CONNECTION
    | CLIENT_MULTI_STATEMENTS
    | CLIENT_MULTI_RESULTS
    | CLIENT_PS_MULTI_RESULTS
    | CLIENT_PLUGIN_AUTH
    | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
    | CLIENT_SESSION_TRACK
    | CLIENT_LOCAL_FILES;

/// Session tracking switched on for every backend connection, so the server reports changes.
pub const INIT_SQL: &str =
    "SET session_track_system_variables='*', session_track_schema=ON, session_track_state_change=ON";

/// How to open connections to one server.
#[derive(Clone)]
pub struct ConnectOptions {
    pub found_rows: bool,
    /// Ask a MariaDB server for extended column metadata.
    pub extended_metadata: bool,
    pub timeout: Duration,
    pub stmt_cache_size: usize,
    pub tls: Option<TlsConnector>,
    /// Send through this io_uring (`server.io` = "auto" where the kernel allows io_uring, or "uring").
    pub ring: Option<std::sync::Arc<crate::uring::Ring>>,
    /// The process's count of schema changes, shared with every connection opened.
    pub schema_changes: std::sync::Arc<super::stmt_cache::SchemaChanges>,
    /// Where the server's defaults for new sessions' tracking are recorded.
    pub tracking_defaults: std::sync::Arc<crate::tracking::TrackingDefaults>,
}

/// Opens and authenticates a connection, within `opts.timeout`.
pub async fn connect(server: &ServerRef, opts: &ConnectOptions) -> Result<BackendConn, ProxyError> {
    let unavailable = |reason: String| ProxyError::BackendUnavailable {
        server: server.name.clone(),
        reason,
    };
    match tokio::time::timeout(opts.timeout, connect_inner(server, opts)).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e @ ProxyError::BackendUnavailable { .. })) => Err(e),
        Ok(Err(e)) => Err(unavailable(e.to_string())),
        Err(_) => Err(unavailable(format!(
            "connect timed out after {} ms",
            opts.timeout.as_millis()
        ))),
    }
}

async fn connect_inner(server: &ServerRef, opts: &ConnectOptions) -> Result<BackendConn, ProxyError> {
    let io_err = |e: std::io::Error| ProxyError::BackendUnavailable {
        server: server.name.clone(),
        reason: format!("{} ({})", e, server.address),
    };
    let stream = match server.address.strip_prefix("unix:") {
        Some(path) => Stream::Unix(UnixStream::connect(path).await.map_err(io_err)?),
        None => {
            let tcp = TcpStream::connect(&server.address).await.map_err(io_err)?;
            tcp.set_nodelay(true).map_err(io_err)?;
            Stream::tcp(tcp, opts.ring.as_ref())
        }
    };
    let mut io = PacketStream::new(stream);
    let greeting = io.read_packet().await.map_err(|e| lost(server, e))?;
    if is_err(&greeting) {
        return Err(ProxyError::Backend(ErrPacket::parse(&greeting)?));
    }
    let hs = HandshakeV10::parse(&greeting)?;
    let mut caps = BACKEND_CAPABILITIES & hs.capabilities;
    if opts.found_rows {
        caps |= CLIENT_FOUND_ROWS;
    }
    if opts.tls.is_some() {
        caps |= CLIENT_SSL;
    }
    let mut response = HandshakeResponse {
        capabilities: caps,
        max_packet: 1 << 30,
        charset: BACKEND_COLLATION_ID,
        username: server.user.clone(),
        auth_plugin: Some(hs.auth_plugin.clone()),
        ..Default::default()
    };
    let is_mariadb = hs.capabilities & CLIENT_LONG_PASSWORD == 0;
    let extended_metadata =
        opts.extended_metadata && is_mariadb && hs.extended_capabilities & MARIADB_CLIENT_EXTENDED_METADATA != 0;
    if extended_metadata {
        response.extended_capabilities = MARIADB_CLIENT_EXTENDED_METADATA;
    }
    if let Some(connector) = &opts.tls {
        io = upgrade_tls(io, connector, &response, server).await?;
    }
    response.auth_response = scramble_for(&hs.auth_plugin, server.password.as_bytes(), &hs.scramble);
    let mut buf = BytesMut::new();
    response.encode(&mut buf);
    io.send(&buf).await.map_err(|e| lost(server, e))?;
    authenticate(&mut io, server).await?;
    let mut conn = BackendConn::new(
        io,
        server.clone(),
        hs.connection_id,
        caps,
        hs.server_version,
        opts.stmt_cache_size,
    );
    conn.extended_metadata = extended_metadata;
    conn.schema_changes = opts.schema_changes.clone();
    conn.server_extended_capabilities = if is_mariadb { hs.extended_capabilities } else { 0 };
    // Before Tessera's own tracking is set, the connection still has the server's defaults.
    if let Ok((_, rows)) = conn.query_rows(crate::tracking::GLOBAL_TRACKING_READ).await {
        if let Some(row) = rows.first() {
            opts.tracking_defaults.learn(row);
        }
    }
    conn.simple_command(INIT_SQL).await?;
    Ok(conn)
}

async fn upgrade_tls(
    mut io: PacketStream<Stream>,
    connector: &TlsConnector,
    response: &HandshakeResponse,
    server: &ServerRef,
) -> Result<PacketStream<Stream>, ProxyError> {
    let mut buf = BytesMut::new();
    response.encode_ssl_request(&mut buf);
    io.send(&buf).await.map_err(|e| lost(server, e))?;
    let seq = io.seq();
    let (stream, _) = io.into_parts();
    let Some(tcp) = stream.into_plain_tcp().await else {
        return Err(ProxyError::Config("backend stream already encrypted".into()));
    };
    let name = rustls::pki_types::ServerName::try_from("tessera-backend")
        .map_err(|e| ProxyError::Config(e.to_string()))?
        .to_owned();
    let tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| ProxyError::BackendUnavailable {
            server: server.name.clone(),
            reason: format!("TLS handshake failed: {e}"),
        })?;
    let mut io = PacketStream::new(Stream::ClientTls(Box::new(tls)));
    io.set_seq(seq);
    Ok(io)
}

fn scramble_for(plugin: &str, password: &[u8], scramble: &[u8]) -> Vec<u8> {
    match plugin {
        CACHING_SHA2_PASSWORD => auth::sha2_scramble(password, scramble),
        NATIVE_PASSWORD => auth::native_scramble(password, scramble),
        _ => Vec::new(),
    }
}

/// Follows the server through auth switches and caching_sha2 exchanges until OK or ERR.
async fn authenticate(io: &mut PacketStream<Stream>, server: &ServerRef) -> Result<(), ProxyError> {
    for _ in 0..5 {
        let packet = io.read_packet().await.map_err(|e| lost(server, e))?;
        match packet.first() {
            _ if is_ok(&packet) => return Ok(()),
            _ if is_err(&packet) => return Err(ProxyError::Backend(ErrPacket::parse(&packet)?)),
            Some(0xfe) => {
                let (plugin, data) = parse_auth_switch(&packet)?;
                let answer = scramble_for(&plugin, server.password.as_bytes(), &data);
                io.send(&answer).await.map_err(|e| lost(server, e))?;
            }
            Some(0x01) if packet.get(1) == Some(&auth::SHA2_FAST_AUTH_OK) => {}
            Some(0x01) if packet.get(1) == Some(&auth::SHA2_PERFORM_FULL_AUTH) => {
                if !io.get_ref().is_secure() {
                    return Err(ProxyError::BackendUnavailable {
                        server: server.name.clone(),
                        reason: "caching_sha2_password full authentication needs TLS: set tls = true on the group"
                            .into(),
                    });
                }
                let mut pw = server.password.as_bytes().to_vec();
                pw.push(0);
                io.send(&pw).await.map_err(|e| lost(server, e))?;
            }
            _ => {
                return Err(ProxyError::Client(tessera_protocol::ProtocolError::Malformed(
                    "unexpected auth packet",
                )))
            }
        }
    }
    Err(ProxyError::BackendUnavailable {
        server: server.name.clone(),
        reason: "authentication did not finish".into(),
    })
}

/// The error for a backend connection that broke.
pub fn lost(server: &ServerRef, source: tessera_protocol::ProtocolError) -> ProxyError {
    ProxyError::LostBackend {
        server: server.name.clone(),
        source,
    }
}
