//! A sharded test environment: two sandbox MariaDB servers as groups g0 and g1 holding the
//! four shards of `shop` (`orders` by `customer_id` and `items` by `id` with the default hash,
//! `items` with Tessera's AUTO_INCREMENT keys, `labels` by the string `label`, `products`
//! broadcast), an in-process Tessera in front; helpers to read a shard's rows directly.

use super::Client;
use tessera_proxy::server::{start, Running};
use tessera_sandbox::{Sandbox, SandboxOptions};

pub struct ShardedEnv {
    pub sandbox: Sandbox,
    pub proxy: Running,
}

fn config(p0: u16, p1: u16, server_extra: &str, tables_extra: &str) -> tessera_config::Config {
    let text = format!(
        r#"
[server]
listen = "127.0.0.1:0"
{server_extra}
[[users]]
name = "app"
password = "app"
[[groups]]
name = "g0"
user = "tessera"
password = "tessera"
primary = {{ address = "127.0.0.1:{p0}" }}
[[groups]]
name = "g1"
user = "tessera"
password = "tessera"
primary = {{ address = "127.0.0.1:{p1}" }}
[[schemas]]
name = "shop"
shards = ["g0:shop_0", "g0:shop_1", "g1:shop_2", "g1:shop_3"]
[[schemas.tables]]
name = "orders"
shard_key = "customer_id"
[[schemas.tables]]
name = "products"
kind = "broadcast"
[[schemas.tables]]
name = "items"
shard_key = "id"
auto_increment = true
[[schemas.tables]]
name = "labels"
shard_key = "label"
key_type = "string"
{tables_extra}
"#
    );
    tessera_config::parse_str(&text, "test").expect("valid sharded config")
}

impl ShardedEnv {
    /// Starts the servers and Tessera; `server_extra` is appended to `[server]`.
    pub async fn start(server_extra: &str) -> ShardedEnv {
        ShardedEnv::start_with_tables(server_extra, "").await
    }

    /// [`ShardedEnv::start`] with more `[[schemas.tables]]` rules of `shop` (TOML text).
    pub async fn start_with_tables(server_extra: &str, tables_extra: &str) -> ShardedEnv {
        let sandbox = tokio::task::spawn_blocking(|| {
            Sandbox::start(SandboxOptions {
                servers: 2,
                ..Default::default()
            })
        })
        .await
        .expect("thread")
        .expect("sandbox");
        let cfg = config(
            sandbox.server(0).port(),
            sandbox.server(1).port(),
            server_extra,
            tables_extra,
        );
        let proxy = start(cfg).await.expect("proxy starts");
        ShardedEnv { sandbox, proxy }
    }

    pub async fn client(&self) -> Client {
        Client::connect(self.proxy.addr.port(), "app", "app", Some("shop"))
            .await
            .expect("login")
    }

    /// `sql` run directly on shard `i`'s database (shards 0, 1 on server 0; 2, 3 on server 1).
    pub fn on_shard(&self, i: usize, sql: &str) -> String {
        self.sandbox
            .server(i / 2)
            .sql(&format!("USE shop_{i}; {sql}"))
            .expect("shard query")
            .trim()
            .to_string()
    }

    /// Rows of `table` on shard `i`.
    pub fn count_on(&self, i: usize, table: &str) -> u64 {
        self.on_shard(i, &format!("SELECT COUNT(*) FROM {table}"))
            .parse()
            .expect("count")
    }

    /// `sql` run directly on server `i`.
    pub fn on_server(&self, i: usize, sql: &str) -> String {
        self.sandbox
            .server(i)
            .sql(sql)
            .expect("server query")
            .trim()
            .to_string()
    }
}

/// The shard of a key under the documented hash: CRC32 of the decimal text, modulo 4.
pub fn crc32_shard(k: i64) -> usize {
    crc32_text_shard(&k.to_string())
}

/// The shard of a string key (lower-case ASCII, which the key's folding keeps as it is): CRC32
/// of its bytes, modulo 4.
pub fn crc32_text_shard(text: &str) -> usize {
    let mut crc = 0xffff_ffffu32;
    for b in text.bytes() {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    (!crc % 4) as usize
}

/// The first key from `from` on whose shard `pred` holds.
pub fn key_where(from: i64, pred: impl Fn(usize) -> bool) -> i64 {
    (from..).find(|k| pred(crc32_shard(*k))).expect("a key")
}
