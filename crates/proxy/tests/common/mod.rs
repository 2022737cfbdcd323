//! Test support: a sandbox MariaDB + an in-process Tessera, and a tiny MySQL client built on
//! Tessera's own protocol crate (so tests can also send malformed packets on purpose).

#![allow(dead_code)]

use bytes::BytesMut;
use std::time::Duration;
use tessera_protocol::auth;
use tessera_protocol::codec::Reader;
use tessera_protocol::flags::*;
use tessera_protocol::handshake::{HandshakeResponse, HandshakeV10};
use tessera_protocol::response::{is_eof, is_err, ErrPacket};
use tessera_protocol::resultset::parse_text_row;
use tessera_protocol::PacketStream;
use tessera_proxy::server::{start, Running};
use tessera_sandbox::{Sandbox, SandboxOptions};
use tokio::net::TcpStream;

/// A sandbox server and Tessera in front of it.
pub struct Env {
    pub sandbox: Sandbox,
    pub proxy: Option<Running>,
}

pub fn sandbox() -> Sandbox {
    Sandbox::start(SandboxOptions::default()).expect("sandbox starts")
}

/// Configuration text for one group on `backend_port`; `extra` is appended to [server]/[pool].
pub fn config(backend_port: u16, server_extra: &str, pool_extra: &str) -> tessera_config::Config {
    let text = format!(
        r#"
[server]
listen = "127.0.0.1:0"
{server_extra}
[pool]
{pool_extra}
[[users]]
name = "app"
password = "app"
[[users]]
name = "other"
password = "other"
[[groups]]
name = "main"
user = "tessera"
password = "tessera"
primary = {{ address = "127.0.0.1:{backend_port}" }}
"#
    );
    tessera_config::parse_str(&text, "test").expect("valid test config")
}

impl Env {
    pub async fn start(server_extra: &str, pool_extra: &str) -> Env {
        let sandbox = tokio::task::spawn_blocking(sandbox)
            .await
            .expect("sandbox thread");
        let port = sandbox.servers()[0].port();
        let proxy = start(config(port, server_extra, pool_extra))
            .await
            .expect("proxy starts");
        Env {
            sandbox,
            proxy: Some(proxy),
        }
    }

    pub fn port(&self) -> u16 {
        self.proxy.as_ref().expect("running").addr.port()
    }

    pub async fn client(&self) -> Client {
        Client::connect(self.port(), "app", "app", None)
            .await
            .expect("login")
    }

    /// A client logged in with default schema `test`.
    pub async fn client_in_test(&self) -> Client {
        Client::connect(self.port(), "app", "app", Some("test"))
            .await
            .expect("login")
    }

    /// SQL run directly on the backend as root.
    pub fn backend_sql(&self, sql: &str) -> String {
        self.sandbox.servers()[0].sql(sql).expect("backend sql")
    }
}

/// A minimal MySQL client (text protocol, mysql_native_password).
#[derive(Debug)]
pub struct Client {
    pub io: PacketStream<TcpStream>,
    pub connection_id: u32,
}

pub type Rows = Vec<Vec<Option<String>>>;

impl Client {
    pub async fn connect(
        port: u16,
        user: &str,
        password: &str,
        db: Option<&str>,
    ) -> Result<Client, ErrPacket> {
        let tcp = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("tcp connect");
        let mut io = PacketStream::new(tcp);
        let greeting = io.read_packet().await.expect("greeting");
        if is_err(&greeting) {
            return Err(ErrPacket::parse(&greeting).expect("err"));
        }
        let hs = HandshakeV10::parse(&greeting).expect("handshake");
        let mut caps = CLIENT_PROTOCOL_41
            | CLIENT_SECURE_CONNECTION
            | CLIENT_PLUGIN_AUTH
            | CLIENT_MULTI_STATEMENTS
            | CLIENT_MULTI_RESULTS
            | CLIENT_TRANSACTIONS
            | CLIENT_LONG_PASSWORD;
        if db.is_some() {
            caps |= CLIENT_CONNECT_WITH_DB;
        }
        let resp = HandshakeResponse {
            capabilities: caps,
            max_packet: 1 << 24,
            charset: 45,
            username: user.into(),
            auth_response: auth::native_scramble(password.as_bytes(), &hs.scramble),
            database: db.map(String::from),
            auth_plugin: Some(auth::NATIVE_PASSWORD.into()),
            attributes: vec![],
        };
        let mut b = BytesMut::new();
        resp.encode(&mut b);
        io.send(&b).await.expect("send response");
        let answer = io.read_packet().await.expect("auth answer");
        if is_err(&answer) {
            return Err(ErrPacket::parse(&answer).expect("err"));
        }
        Ok(Client {
            io,
            connection_id: hs.connection_id,
        })
    }

    /// Runs a query; returns the rows of the last result set (empty for OK).
    pub async fn query(&mut self, sql: &str) -> Result<Rows, ErrPacket> {
        self.io.reset_seq();
        let mut p = vec![3u8];
        p.extend_from_slice(sql.as_bytes());
        self.io.send(&p).await.expect("send query");
        self.read_results().await
    }

    pub async fn read_results(&mut self) -> Result<Rows, ErrPacket> {
        let mut last;
        loop {
            let first = self.io.read_packet().await.expect("response");
            if is_err(&first) {
                return Err(ErrPacket::parse(&first).expect("err"));
            }
            let status;
            if first[0] == 0 {
                let ok = tessera_protocol::response::OkPacket::parse(&first, 0).expect("ok");
                status = ok.status;
                last = Vec::new();
            } else {
                let n = Reader::new(&first).lenenc_int().expect("count") as usize;
                for _ in 0..=n {
                    self.io.read_packet().await.expect("column def / eof");
                }
                let mut rows = Vec::new();
                loop {
                    let p = self.io.read_packet().await.expect("row");
                    if is_eof(&p) {
                        status = tessera_protocol::response::parse_eof(&p, 0).expect("eof").1;
                        break;
                    }
                    if is_err(&p) {
                        return Err(ErrPacket::parse(&p).expect("err"));
                    }
                    let row = parse_text_row(&p, n).expect("row decodes");
                    rows.push(
                        row.into_iter()
                            .map(|v| v.map(|b| String::from_utf8_lossy(&b).into_owned()))
                            .collect(),
                    );
                }
                last = rows;
            }
            if status & SERVER_MORE_RESULTS_EXISTS == 0 {
                return Ok(last);
            }
        }
    }

    /// The single value of a one-row, one-column query.
    pub async fn value(&mut self, sql: &str) -> Option<String> {
        let rows = self
            .query(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        rows.into_iter()
            .next()
            .and_then(|r| r.into_iter().next())
            .flatten()
    }

    /// Retries `sql` until it succeeds or `secs` pass.
    pub async fn query_until_ok(&mut self, sql: &str, secs: u64) -> Option<Rows> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            if let Ok(rows) = self.query(sql).await {
                return Some(rows);
            }
            if tokio::time::Instant::now() > deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// True once the server has closed this connection.
    pub async fn is_closed(&mut self) -> bool {
        matches!(
            tokio::time::timeout(Duration::from_secs(10), self.io.read_packet()).await,
            Ok(Err(_))
        )
    }
}
