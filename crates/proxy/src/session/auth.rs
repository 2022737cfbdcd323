//! The connection phase with a client: greeting, optional TLS upgrade, handshake response and
//! password verification (mysql_native_password, caching_sha2_password fast path and full
//! authentication over TLS), auth switch when the client's plugin does not fit the account.

use crate::context::Context;
use crate::error::ProxyError;
use crate::generation::{Credentials, Generation};
use crate::net::Stream;
use bytes::BytesMut;
use tessera_protocol::auth::{self, CACHING_SHA2_PASSWORD, NATIVE_PASSWORD};
use tessera_protocol::flags::*;
use tessera_protocol::handshake::{
    encode_auth_more_data, encode_auth_switch, is_ssl_request, HandshakeResponse, HandshakeV10,
};
use tessera_protocol::PacketStream;
use tokio::net::TcpStream;

/// Client commands are small; a small read chunk keeps 10,000 idle clients cheap.
const CLIENT_READ_CHUNK: usize = 1024;

/// A client that passed authentication.
pub struct Authenticated {
    pub client: PacketStream<Stream>,
    pub capabilities: u32,
    pub user: String,
    pub database: Option<String>,
    pub charset: u8,
    pub extended_metadata: bool,
    /// MariaDB's MARIADB_CLIENT_CACHE_METADATA was negotiated.
    pub cache_metadata: bool,
    /// The greeting's scramble: COM_CHANGE_USER's auth switch sends it again, as MariaDB does
    /// (MariaDB Connector/C answers with a response computed from it).
    pub scramble: Vec<u8>,
}

/// A failed connection phase: the error, and the stream to report it on when there is one.
pub struct Refused {
    pub error: ProxyError,
    pub client: Option<PacketStream<Stream>>,
}

/// Runs the connection phase up to (not including) the final OK.
pub async fn accept(
    ctx: &Context,
    gen: &Generation,
    tcp: TcpStream,
    id: u32,
    host: &str,
) -> Result<Authenticated, Refused> {
    let scramble = auth::new_scramble();
    let mut offered = PROXY_CAPABILITIES;
    if ctx.tls.is_some() {
        offered |= CLIENT_SSL;
    }
    // Behind a MariaDB that offers extended metadata or cached metadata, present as MariaDB
    // does (no CLIENT_MYSQL bit) and offer them too, so drivers see JSON and other extended
    // types, and skip a prepared statement's unchanged metadata, as they would directly.
    let extended = gen.default_pool().server_extended_capabilities()
        & (MARIADB_CLIENT_EXTENDED_METADATA | MARIADB_CLIENT_CACHE_METADATA);
    if extended != 0 {
        offered &= !CLIENT_LONG_PASSWORD;
    }
    let greeting = HandshakeV10 {
        server_version: gen.server_version(),
        connection_id: id,
        scramble: scramble.to_vec(),
        capabilities: offered,
        charset: 45,
        status: SERVER_STATUS_AUTOCOMMIT,
        auth_plugin: gen.config.server.default_auth_plugin.clone(),
        extended_capabilities: extended,
    };
    let mut client = PacketStream::new(Stream::tcp(tcp, ctx.ring.as_ref()));
    client.set_max_packet(gen.config.server.max_allowed_packet);
    client.set_read_chunk(CLIENT_READ_CHUNK);
    client.write_with(|b| greeting.encode(b));
    let refused = |error: ProxyError| Refused { error, client: None };
    client.flush().await.map_err(|e| refused(e.into()))?;
    let mut payload = client.read_packet().await.map_err(|e| refused(e.into()))?;
    if is_ssl_request(&payload) {
        client = upgrade(ctx, gen, client).await.map_err(refused)?;
        payload = client.read_packet().await.map_err(|e| refused(e.into()))?;
    }
    match authenticate(gen, &mut client, &payload, &scramble, host).await {
        Ok(resp) => Ok(Authenticated {
            client,
            capabilities: resp.capabilities & offered,
            user: resp.username,
            database: resp.database,
            charset: resp.charset,
            extended_metadata: resp.extended_capabilities & extended & MARIADB_CLIENT_EXTENDED_METADATA != 0,
            cache_metadata: resp.extended_capabilities & extended & MARIADB_CLIENT_CACHE_METADATA != 0,
            scramble: scramble.to_vec(),
        }),
        Err(error) => Err(Refused {
            error,
            client: Some(client),
        }),
    }
}

async fn authenticate(
    gen: &Generation,
    client: &mut PacketStream<Stream>,
    payload: &[u8],
    scramble: &[u8],
    host: &str,
) -> Result<HandshakeResponse, ProxyError> {
    let is_tls = client.get_ref().is_tls();
    let resp = HandshakeResponse::parse(payload)?;
    if gen.config.server.require_tls && !is_tls {
        return Err(ProxyError::AccessDenied {
            user: resp.username,
            host: host.into(),
            using_password: true,
        });
    }
    let plugin = resp.auth_plugin.clone().unwrap_or_else(|| NATIVE_PASSWORD.to_string());
    let creds = gen.users.get(&resp.username);
    let login = Login {
        user: &resp.username,
        host,
        scramble,
        is_tls,
    };
    verify(client, creds, &login, &plugin, resp.auth_response.clone()).await?;
    Ok(resp)
}

async fn upgrade(
    ctx: &Context,
    gen: &Generation,
    client: PacketStream<Stream>,
) -> Result<PacketStream<Stream>, ProxyError> {
    let acceptor = ctx.tls.as_ref().ok_or(ProxyError::BadHandshake)?;
    let seq = client.seq();
    let (stream, _) = client.into_parts();
    let Some(tcp) = stream.into_plain_tcp().await else {
        return Err(ProxyError::BadHandshake);
    };
    let tls = acceptor.accept(tcp).await.map_err(|e| ProxyError::Client(e.into()))?;
    let mut client = PacketStream::new(Stream::ServerTls(Box::new(tls)));
    client.set_max_packet(gen.config.server.max_allowed_packet);
    client.set_read_chunk(CLIENT_READ_CHUNK);
    client.set_seq(seq);
    Ok(client)
}

/// Who is logging in, against which challenge.
pub struct Login<'a> {
    pub user: &'a str,
    pub host: &'a str,
    pub scramble: &'a [u8],
    pub is_tls: bool,
}

impl Login<'_> {
    fn denied(&self, using_password: bool) -> ProxyError {
        ProxyError::AccessDenied {
            user: self.user.to_string(),
            host: self.host.to_string(),
            using_password,
        }
    }
}

/// Checks the client's answer for `plugin`; switches the client to another plugin if needed.
pub async fn verify(
    client: &mut PacketStream<Stream>,
    creds: Option<&Credentials>,
    login: &Login<'_>,
    plugin: &str,
    response: Vec<u8>,
) -> Result<(), ProxyError> {
    let using_password = !response.is_empty();
    let Some(creds) = creds else {
        return Err(login.denied(using_password));
    };
    match (plugin, &creds.password) {
        (CACHING_SHA2_PASSWORD, Some(pw)) => verify_sha2(client, pw, login, &response).await,
        (NATIVE_PASSWORD, _) => check_native(creds, login, &response),
        _ => {
            client.write_with(|b| encode_auth_switch(b, NATIVE_PASSWORD, login.scramble));
            client.flush().await?;
            let answer = client.read_packet().await?;
            check_native(creds, login, &answer)
        }
    }
}

fn check_native(creds: &Credentials, login: &Login<'_>, response: &[u8]) -> Result<(), ProxyError> {
    let ok = match &creds.password {
        Some(pw) if pw.is_empty() => response.is_empty(),
        _ => auth::verify_native(&creds.native_hash, login.scramble, response),
    };
    ok.then_some(()).ok_or_else(|| login.denied(!response.is_empty()))
}

async fn verify_sha2(
    client: &mut PacketStream<Stream>,
    password: &[u8],
    login: &Login<'_>,
    response: &[u8],
) -> Result<(), ProxyError> {
    if auth::verify_sha2(password, login.scramble, response) {
        client.write_with(|b| encode_auth_more_data(b, &[auth::SHA2_FAST_AUTH_OK]));
        return Ok(());
    }
    if !login.is_tls || response.is_empty() {
        return Err(login.denied(!response.is_empty()));
    }
    client.write_with(|b| encode_auth_more_data(b, &[auth::SHA2_PERFORM_FULL_AUTH]));
    client.flush().await?;
    let clear = client.read_packet().await?;
    let clear = clear.strip_suffix(&[0]).unwrap_or(&clear);
    if auth::constant_time_eq(clear, password) {
        Ok(())
    } else {
        Err(login.denied(true))
    }
}

/// Encodes the OK that ends a successful connection phase.
pub fn encode_login_ok(out: &mut BytesMut, capabilities: u32) {
    let ok = tessera_protocol::response::OkPacket {
        status: SERVER_STATUS_AUTOCOMMIT,
        ..Default::default()
    };
    ok.encode(out, capabilities);
}
