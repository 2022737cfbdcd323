//! MariaDB's cached metadata (`MARIADB_CLIENT_CACHE_METADATA`) through Tessera against a real
//! sandbox MariaDB: a client that negotiated it gets every answer frame for frame as the server
//! itself answers it (the "metadata follows" byte on every column count, a prepared statement's
//! unchanged definitions left out, sent again once a table change altered them), on every road
//! a result takes (a pipelined lane, a held connection, a result too large to pass whole), with
//! and without `CLIENT_DEPRECATE_EOF`.

use crate::common;

use common::{Client, Env};
use tessera_protocol::codec::Reader;
use tessera_protocol::flags::{
    CLIENT_DEPRECATE_EOF, MARIADB_CLIENT_CACHE_METADATA, SERVER_MORE_RESULTS_EXISTS, SERVER_STATUS_CURSOR_EXISTS,
};

type Frames = Vec<(u8, Vec<u8>)>;

/// Every frame (sequence id, payload) of the answer to one command, for a client with cached
/// metadata: all its results, up to the last one's end.
async fn answer(c: &mut Client, command: &[u8], deprecate_eof: bool) -> Frames {
    c.io.reset_seq();
    c.io.send(command).await.expect("send");
    let mut frames = Vec::new();
    loop {
        let first = next(c, &mut frames).await;
        let status = match first[0] {
            0xff => return frames,
            0x00 => ok_status(&first),
            _ => result_set(c, &mut frames, &first, deprecate_eof).await,
        };
        if status & SERVER_MORE_RESULTS_EXISTS == 0 {
            return frames;
        }
    }
}

/// Every frame of the answer to a COM_STMT_FETCH: rows up to the EOF (or an error).
async fn fetched(c: &mut Client, command: &[u8]) -> Frames {
    c.io.reset_seq();
    c.io.send(command).await.expect("send");
    let mut frames = Vec::new();
    loop {
        let p = next(c, &mut frames).await;
        if p[0] == 0xff || (p[0] == 0xfe && p.len() < 9) {
            return frames;
        }
    }
}

async fn next(c: &mut Client, frames: &mut Frames) -> Vec<u8> {
    let (seq, p) = c.io.read_packet_with_seq().await.expect("frame");
    frames.push((seq, p.to_vec()));
    p.to_vec()
}

/// The rest of a result set after its column count; returns the status of its end.
async fn result_set(c: &mut Client, frames: &mut Frames, first: &[u8], deprecate_eof: bool) -> u16 {
    let mut r = Reader::new(first);
    let columns = r.lenenc_int().expect("column count");
    let follows = r.u8().expect("the metadata follows byte");
    assert!(follows <= 1, "{first:?}");
    if follows == 1 {
        for _ in 0..columns {
            next(c, frames).await;
        }
    }
    if !deprecate_eof {
        let eof = next(c, frames).await;
        assert_eq!(eof[0], 0xfe, "EOF after the definitions");
        let status = u16::from_le_bytes([eof[3], eof[4]]);
        if status & SERVER_STATUS_CURSOR_EXISTS != 0 {
            // A cursor: the rows come with COM_STMT_FETCH.
            return status;
        }
    }
    loop {
        let p = next(c, frames).await;
        match p[0] {
            0xff => return 0,
            0xfe if p.len() < 9 => return u16::from_le_bytes([p[3], p[4]]),
            0xfe if deprecate_eof => return ok_status(&p),
            _ => {}
        }
    }
}

fn ok_status(p: &[u8]) -> u16 {
    let mut r = Reader::new(&p[1..]);
    r.lenenc_int().expect("affected rows");
    r.lenenc_int().expect("insert id");
    r.u16().expect("status")
}

fn query(sql: &str) -> Vec<u8> {
    [&[3u8][..], sql.as_bytes()].concat()
}

/// Prepares `sql`; returns the statement id (its PREPARE answer is read and dropped).
async fn prepare(c: &mut Client, sql: &str, deprecate_eof: bool) -> u32 {
    c.io.reset_seq();
    c.io.send(&[&[0x16u8][..], sql.as_bytes()].concat())
        .await
        .expect("prepare");
    let ok = c.io.read_packet().await.expect("prepare ok");
    assert_eq!(ok[0], 0, "prepared: {ok:?}");
    let columns = u16::from_le_bytes([ok[5], ok[6]]);
    let params = u16::from_le_bytes([ok[7], ok[8]]);
    for (n, _) in [(params, "params"), (columns, "columns")] {
        for _ in 0..n {
            c.io.read_packet().await.expect("definition");
        }
        if n > 0 && !deprecate_eof {
            c.io.read_packet().await.expect("EOF");
        }
    }
    u32::from_le_bytes([ok[1], ok[2], ok[3], ok[4]])
}

/// COM_STMT_EXECUTE of `id` with one INT parameter, or none.
fn execute(id: u32, param: Option<i32>) -> Vec<u8> {
    let mut p = vec![0x17u8];
    p.extend_from_slice(&id.to_le_bytes());
    p.extend_from_slice(&[0, 1, 0, 0, 0]);
    if let Some(v) = param {
        p.extend_from_slice(&[0, 1, 3, 0]);
        p.extend_from_slice(&v.to_le_bytes());
    }
    p
}

struct Pair {
    direct: Client,
    proxied: Client,
    deprecate_eof: bool,
}

impl Pair {
    async fn new(env: &Env, deprecate_eof: bool) -> Pair {
        let extra = if deprecate_eof { CLIENT_DEPRECATE_EOF } else { 0 };
        let server = env.sandbox.servers()[0].port();
        let cached = MARIADB_CLIENT_CACHE_METADATA;
        Pair {
            direct: Client::connect_capable(server, ("tessera", "tessera"), Some("test"), extra, cached).await,
            proxied: Client::connect_capable(env.port(), ("app", "app"), Some("test"), extra, cached).await,
            deprecate_eof,
        }
    }

    /// Sends `command` (built per client by `build`) to both; asserts the same answer.
    async fn same(&mut self, what: &str, build: impl Fn(bool) -> Vec<u8>) -> Frames {
        let want = answer(&mut self.direct, &build(false), self.deprecate_eof).await;
        let got = answer(&mut self.proxied, &build(true), self.deprecate_eof).await;
        assert_eq!(got, want, "{what} (DEPRECATE_EOF: {})", self.deprecate_eof);
        got
    }

    /// [`Pair::same`] for a COM_STMT_FETCH.
    async fn same_fetch(&mut self, build: impl Fn(bool) -> Vec<u8>) {
        let want = fetched(&mut self.direct, &build(false)).await;
        let got = fetched(&mut self.proxied, &build(true)).await;
        assert_eq!(got, want, "fetch");
    }

    async fn prepare(&mut self, sql: &str) -> (u32, u32) {
        let d = prepare(&mut self.direct, sql, self.deprecate_eof).await;
        let p = prepare(&mut self.proxied, sql, self.deprecate_eof).await;
        (d, p)
    }
}

/// Whether the first result of an answer carried its definitions.
fn metadata_followed(frames: &Frames) -> bool {
    frames[0].1.last() == Some(&1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_with_cached_metadata_gets_the_servers_own_answers() {
    let env = Env::start("", "").await;
    let mut setup = env.client_in_test().await;
    for deprecate_eof in [false, true] {
        // A table of its own per round: a PREPARE answered from a backend connection's statement
        // cache describes the table as it was when that connection prepared it (left alone, see
        // docs/architecture.md), and the ALTER below changes it.
        let t = if deprecate_eof { "cm_no_eof" } else { "cm" };
        setup.create_value_table(t, 300, "value ").await;
        setup
            .query(&format!(
                "CREATE PROCEDURE {t}_two(n INT) BEGIN SELECT id FROM {t} WHERE id <= n; SELECT v, id FROM {t} WHERE id = n; END"
            ))
            .await
            .expect("procedure");
        let mut pair = Pair::new(&env, deprecate_eof).await;
        // Text results: the byte on every column count, the definitions always.
        for sql in [
            format!("SELECT id, v FROM {t} ORDER BY id"),
            format!("SELECT id, REPEAT(v, 30) FROM {t} ORDER BY id"),
            format!("SELECT v FROM {t} WHERE id = 7"),
            format!("SELECT v FROM {t} WHERE id > 1000"),
            format!("SELECT CAST('1x' AS INT) FROM {t} WHERE id = 1"),
            "SELECT 1; SELECT 'two', 2".to_string(),
        ] {
            pair.same(&sql, |_| query(&sql)).await;
        }
        // A prepared point read: definitions left out from the first execution on (they equal
        // PREPARE's), through a lane in autocommit and on the held connection in a transaction.
        let point = format!("SELECT id, v FROM {t} WHERE id = ?");
        let (d, p) = pair.prepare(&point).await;
        let ids = |proxied: bool| if proxied { p } else { d };
        for in_transaction in [false, true] {
            if in_transaction {
                pair.same("BEGIN", |_| query("BEGIN")).await;
            }
            for i in 1..=3 {
                let frames = pair.same(&point, |proxied| execute(ids(proxied), Some(i))).await;
                assert!(!metadata_followed(&frames), "unchanged definitions are left out");
            }
        }
        pair.same("COMMIT", |_| query("COMMIT")).await;
        if !deprecate_eof {
            // A cursor: the definitions with its opening, decided alike; rows with FETCH.
            let cursor = |id: u32| {
                let mut p = execute(id, Some(2));
                p[5] = 1; // CURSOR_TYPE_READ_ONLY
                p
            };
            let fetch = |id: u32| [&[0x1cu8][..], &id.to_le_bytes(), &10u32.to_le_bytes()].concat();
            for _ in 0..2 {
                pair.same("open a cursor", |proxied| cursor(ids(proxied))).await;
                pair.same_fetch(|proxied| fetch(ids(proxied))).await;
            }
        }
        // A result too large to pass whole goes packet by packet, with the same decision.
        let large = format!("SELECT id, REPEAT(v, 30) FROM {t} WHERE id <= ? ORDER BY id");
        let (dl, pl) = pair.prepare(&large).await;
        let large_ids = |proxied: bool| if proxied { pl } else { dl };
        for n in [300, 5] {
            pair.same(&large, |proxied| execute(large_ids(proxied), Some(n))).await;
        }
        // A table change alters the definitions: they are sent once, then left out again.
        setup
            .query(&format!("ALTER TABLE {t} MODIFY v VARCHAR(40)"))
            .await
            .expect("alter");
        let changed = pair.same(&point, |proxied| execute(ids(proxied), Some(4))).await;
        assert!(metadata_followed(&changed), "changed definitions are sent");
        let again = pair.same(&point, |proxied| execute(ids(proxied), Some(5))).await;
        assert!(!metadata_followed(&again), "and left out after that");
        for n in [300, 6] {
            pair.same(&large, |proxied| execute(large_ids(proxied), Some(n))).await;
        }
        // 300 columns: a three-byte column count, and definitions whose sequence ids wrap.
        let wide = format!(
            "SELECT {} FROM {t} WHERE id = ?",
            (0..300)
                .map(|i| format!("id + {i} AS c{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let (dw, pw) = pair.prepare(&wide).await;
        for n in [1, 2] {
            let frames = pair
                .same("300 columns", |proxied| execute(if proxied { pw } else { dw }, Some(n)))
                .await;
            assert!(!metadata_followed(&frames), "unchanged definitions are left out");
        }
        // A procedure's results.
        let (dc, pc) = pair.prepare(&format!("CALL {t}_two(?)")).await;
        for n in [3, 4] {
            pair.same("CALL", |proxied| execute(if proxied { pc } else { dc }, Some(n)))
                .await;
        }
    }
    let pipelined = env.metric_sum("tessera_pipelined_total");
    assert!(pipelined > 0, "the lane road was taken");
}
