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
[admin]
http_listen = "127.0.0.1:0"
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
        let sandbox = tokio::task::spawn_blocking(sandbox).await.expect("sandbox thread");
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
        Client::connect(self.port(), "app", "app", None).await.expect("login")
    }

    /// A client logged in with default schema `test`.
    pub async fn client_in_test(&self) -> Client {
        Client::connect(self.port(), "app", "app", Some("test"))
            .await
            .expect("login")
    }

    /// The sum of the proxy's metric samples whose line starts with `prefix` (a name, or a
    /// name and the start of its labels).
    pub fn metric_sum(&self, prefix: &str) -> u64 {
        let admin = self
            .proxy
            .as_ref()
            .and_then(|p| p.admin_addr)
            .expect("admin")
            .to_string();
        let metrics = tessera_proxy::admin::fetch(&admin, "/metrics").expect("metrics");
        metrics
            .lines()
            .filter(|l| l.starts_with(prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    }

    /// SQL run directly on the backend as root.
    pub fn backend_sql(&self, sql: &str) -> String {
        self.sandbox.servers()[0].sql(sql).expect("backend sql")
    }

    /// Waits until the backend is executing a statement that starts with `prefix` (so a test acts
    /// on a running statement, not one still on its way). Panics after 30 s.
    pub async fn wait_until_backend_runs(&self, prefix: &str) {
        let probe = format!(
            "SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE '{}%'",
            prefix.replace('\'', "''")
        );
        for _ in 0..600 {
            if self.backend_sql(&probe).trim() != "0" {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the backend never ran `{prefix}`");
    }
}

/// Why a statement (or a login) got no answer: the server's error packet, or the connection
/// failed (refused, reset, closed).
#[derive(Debug)]
pub enum Failure {
    Server(ErrPacket),
    Io(String),
}

impl Failure {
    /// A `map_err` adapter naming the step whose I/O failed.
    fn io<E: std::fmt::Display>(step: &'static str) -> impl FnOnce(E) -> Failure {
        move |e| Failure::Io(format!("{step}: {e}"))
    }

    /// The server's error; panics on an I/O failure (for tests whose server stays up).
    fn or_panic(self) -> ErrPacket {
        match self {
            Failure::Server(e) => e,
            Failure::Io(m) => panic!("{m}"),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Server(e) => write!(f, "{e}"),
            Failure::Io(m) => write!(f, "connection failed: {m}"),
        }
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
    pub async fn connect(port: u16, user: &str, password: &str, db: Option<&str>) -> Result<Client, ErrPacket> {
        Client::connect_with(port, user, password, db, 0).await
    }

    /// [`Client::connect`] asking for `extra_capabilities` too (e.g. CLIENT_SESSION_TRACK).
    pub async fn connect_with(
        port: u16,
        user: &str,
        password: &str,
        db: Option<&str>,
        extra_capabilities: u32,
    ) -> Result<Client, ErrPacket> {
        Client::try_connect_with(port, user, password, db, (extra_capabilities, 0))
            .await
            .map_err(Failure::or_panic)
    }

    /// [`Client::connect`] asking for MariaDB extended capabilities (e.g. extended metadata).
    pub async fn connect_extended(port: u16, user: &str, password: &str, extended: u32) -> Client {
        Client::try_connect_with(port, user, password, None, (0, extended))
            .await
            .map_err(Failure::or_panic)
            .expect("login")
    }

    /// [`Client::connect`] with extra capabilities and MariaDB extended capabilities.
    pub async fn connect_capable(
        port: u16,
        (user, password): (&str, &str),
        db: Option<&str>,
        extra_capabilities: u32,
        extended_capabilities: u32,
    ) -> Client {
        Client::try_connect_with(port, user, password, db, (extra_capabilities, extended_capabilities))
            .await
            .map_err(Failure::or_panic)
            .expect("login")
    }

    /// [`Client::connect`] that reports a failed connection as [`Failure::Io`] instead of
    /// panicking (for tests whose servers come and go).
    pub async fn try_connect(port: u16, user: &str, password: &str, db: Option<&str>) -> Result<Client, Failure> {
        Client::try_connect_with(port, user, password, db, (0, 0)).await
    }

    async fn try_connect_with(
        port: u16,
        user: &str,
        password: &str,
        db: Option<&str>,
        (extra_capabilities, extended_capabilities): (u32, u32),
    ) -> Result<Client, Failure> {
        let tcp = TcpStream::connect(("127.0.0.1", port))
            .await
            .map_err(|e| Failure::Io(format!("tcp connect: {e}")))?;
        tcp.set_nodelay(true)
            .map_err(|e| Failure::Io(format!("nodelay: {e}")))?;
        let mut io = PacketStream::new(tcp);
        let greeting = io.read_packet().await.map_err(Failure::io("greeting"))?;
        if is_err(&greeting) {
            return Err(Failure::Server(ErrPacket::parse(&greeting).expect("err")));
        }
        let hs = HandshakeV10::parse(&greeting).expect("handshake");
        let mut caps = CLIENT_PROTOCOL_41
            | CLIENT_SECURE_CONNECTION
            | CLIENT_PLUGIN_AUTH
            | CLIENT_MULTI_STATEMENTS
            | CLIENT_MULTI_RESULTS
            | CLIENT_TRANSACTIONS
            | CLIENT_LONG_PASSWORD
            | extra_capabilities;
        if db.is_some() {
            caps |= CLIENT_CONNECT_WITH_DB;
        }
        if extended_capabilities != 0 {
            // MariaDB reads extended capabilities only from a client without CLIENT_MYSQL (bit 0).
            caps &= !CLIENT_LONG_PASSWORD;
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
            extended_capabilities,
        };
        let mut b = BytesMut::new();
        resp.encode(&mut b);
        io.send(&b).await.map_err(Failure::io("send response"))?;
        let answer = io.read_packet().await.map_err(Failure::io("auth answer"))?;
        if is_err(&answer) {
            return Err(Failure::Server(ErrPacket::parse(&answer).expect("err")));
        }
        Ok(Client {
            io,
            connection_id: hs.connection_id,
        })
    }

    /// Creates `table (id INT PRIMARY KEY, v VARCHAR(20))` holding ids 1..=rows, each with
    /// v = '<prefix><id>'.
    pub async fn create_value_table(&mut self, table: &str, rows: usize, prefix: &str) {
        self.query(&format!("CREATE TABLE {table} (id INT PRIMARY KEY, v VARCHAR(20))"))
            .await
            .expect("create");
        let values: Vec<String> = (1..=rows).map(|i| format!("({i}, '{prefix}{i}')")).collect();
        self.query(&format!("INSERT INTO {table} VALUES {}", values.join(", ")))
            .await
            .expect("rows");
    }

    /// Runs a query; returns the rows of the last result set (empty for OK).
    pub async fn query(&mut self, sql: &str) -> Result<Rows, ErrPacket> {
        self.try_query(sql).await.map_err(Failure::or_panic)
    }

    /// [`Client::query`] that reports a lost connection as [`Failure::Io`] instead of panicking.
    pub async fn try_query(&mut self, sql: &str) -> Result<Rows, Failure> {
        self.io.reset_seq();
        let mut p = vec![3u8];
        p.extend_from_slice(sql.as_bytes());
        self.io.send(&p).await.map_err(Failure::io("send query"))?;
        self.try_read_results().await
    }

    pub async fn read_results(&mut self) -> Result<Rows, ErrPacket> {
        self.try_read_results().await.map_err(Failure::or_panic)
    }

    async fn try_read_results(&mut self) -> Result<Rows, Failure> {
        let mut last;
        loop {
            let first = self.io.read_packet().await.map_err(Failure::io("response"))?;
            if is_err(&first) {
                return Err(Failure::Server(ErrPacket::parse(&first).expect("err")));
            }
            let status;
            if first[0] == 0 {
                let ok = tessera_protocol::response::OkPacket::parse(&first, 0).expect("ok");
                status = ok.status;
                last = Vec::new();
            } else {
                let n = self.try_skip_metadata(&first).await?;
                let mut rows = Vec::new();
                loop {
                    let p = self.io.read_packet().await.map_err(Failure::io("row"))?;
                    if is_eof(&p) {
                        status = tessera_protocol::response::parse_eof(&p, 0).expect("eof").1;
                        break;
                    }
                    if is_err(&p) {
                        return Err(Failure::Server(ErrPacket::parse(&p).expect("err")));
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
        let rows = self.query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        rows.into_iter().next().and_then(|r| r.into_iter().next()).flatten()
    }

    /// Sends one raw command packet (sequence 0) and returns the first response packet.
    pub async fn raw(&mut self, payload: &[u8]) -> bytes::Bytes {
        self.io.reset_seq();
        self.io.send(payload).await.expect("send");
        self.io.read_packet().await.expect("response")
    }

    /// COM_STMT_PREPARE; returns (statement id, params, columns) after reading the metadata.
    pub async fn prepare(&mut self, sql: &str) -> Result<(u32, u16, u16), ErrPacket> {
        let mut p = vec![0x16u8];
        p.extend_from_slice(sql.as_bytes());
        let first = self.raw(&p).await;
        if is_err(&first) {
            return Err(ErrPacket::parse(&first).expect("err"));
        }
        let ok = tessera_protocol::stmt::PrepareOk::parse(&first).expect("prepare ok");
        for n in [ok.num_params, ok.num_columns] {
            if n > 0 {
                self.skip_definitions(usize::from(n)).await;
            }
        }
        Ok((ok.stmt_id, ok.num_params, ok.num_columns))
    }

    /// COM_STMT_EXECUTE with string parameters (NULL for None); returns the rows' string
    /// columns decoded from the binary protocol (all result columns must be strings).
    pub async fn execute(&mut self, id: u32, params: &[Option<&str>]) -> Result<Rows, ErrPacket> {
        let mut p = vec![0x17u8];
        p.extend_from_slice(&id.to_le_bytes());
        p.push(0);
        p.extend_from_slice(&1u32.to_le_bytes());
        if !params.is_empty() {
            let mut bitmap = vec![0u8; params.len().div_ceil(8)];
            for (i, v) in params.iter().enumerate() {
                if v.is_none() {
                    bitmap[i / 8] |= 1 << (i % 8);
                }
            }
            p.extend_from_slice(&bitmap);
            p.push(1);
            for _ in params {
                p.extend_from_slice(&[0xfd, 0]);
            }
            for v in params.iter().flatten() {
                let mut b = BytesMut::new();
                tessera_protocol::codec::put_lenenc_bytes(&mut b, v.as_bytes());
                p.extend_from_slice(&b);
            }
        }
        let first = self.raw(&p).await;
        self.binary_rows(first).await
    }

    async fn binary_rows(&mut self, first: bytes::Bytes) -> Result<Rows, ErrPacket> {
        if is_err(&first) {
            return Err(ErrPacket::parse(&first).expect("err"));
        }
        if first[0] == 0 {
            return Ok(Vec::new());
        }
        let n = self.skip_metadata(&first).await;
        let mut rows = Vec::new();
        loop {
            let p = self.io.read_packet().await.expect("row");
            if is_eof(&p) {
                return Ok(rows);
            }
            if is_err(&p) {
                return Err(ErrPacket::parse(&p).expect("err"));
            }
            let bitmap_len = (n + 7 + 2) / 8;
            let bitmap = &p[1..1 + bitmap_len];
            let mut r = Reader::new(&p[1 + bitmap_len..]);
            let mut row = Vec::new();
            for i in 0..n {
                let bit = i + 2;
                if bitmap[bit / 8] & (1 << (bit % 8)) != 0 {
                    row.push(None);
                } else {
                    row.push(Some(
                        String::from_utf8_lossy(r.lenenc_bytes().expect("string")).into_owned(),
                    ));
                }
            }
            rows.push(row);
        }
    }

    /// Reads past the column definitions announced by a column-count packet; returns the count.
    async fn skip_metadata(&mut self, column_count: &[u8]) -> usize {
        self.try_skip_metadata(column_count)
            .await
            .unwrap_or_else(|f| panic!("{f}"))
    }

    async fn try_skip_metadata(&mut self, column_count: &[u8]) -> Result<usize, Failure> {
        let n = Reader::new(column_count).lenenc_int().expect("count") as usize;
        self.try_skip_definitions(n).await?;
        Ok(n)
    }

    /// Reads `n` definitions and the EOF after them.
    async fn skip_definitions(&mut self, n: usize) {
        self.try_skip_definitions(n).await.unwrap_or_else(|f| panic!("{f}"))
    }

    async fn try_skip_definitions(&mut self, n: usize) -> Result<(), Failure> {
        for _ in 0..=n {
            self.io.read_packet().await.map_err(Failure::io("definition / eof"))?;
        }
        Ok(())
    }

    /// COM_STMT_CLOSE (no response).
    pub async fn close_stmt(&mut self, id: u32) {
        let mut p = vec![0x19u8];
        p.extend_from_slice(&id.to_le_bytes());
        self.io.reset_seq();
        self.io.send(&p).await.expect("send");
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
pub mod process;
pub mod shards;
pub mod stmt;

/// Polls `done` every 50 ms until it holds; panics after 30 s naming `what` (a wait on
/// progress, not a timing claim).
pub async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..600 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never: {what}");
}
