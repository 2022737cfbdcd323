//! Dump and restore as users do it: a plain database of 10,500 rows (utf8mb4 text with quotes,
//! backslashes and emoji, NULLs, DECIMAL, DATETIME(6), BLOB, AUTO_INCREMENT) dumped with
//! `mariadb-dump` straight from MariaDB, restored with the `mariadb` CLI through Tessera into a
//! logical schema of four shards, then dumped with `mariadb-dump` through Tessera and that dump
//! restored into a plain database again: every table must hold the same rows all the way.
//! The dumps use `--hex-blob`: a raw binary string on a sharded schema is refused (see the
//! README), and one such statement is checked to be refused, not stored changed.

use crate::common::shards::ShardedEnv;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `shop`'s rules beyond the sharded test environment's (`orders` by `customer_id` and
/// `products` broadcast are its own).
const CUSTOMERS_RULE: &str = r#"
[[schemas.tables]]
name = "customers"
shard_key = "id"
"#;

/// The plain database `plain` on server 0, generated there.
const GENERATE: &str = r#"
CREATE DATABASE plain CHARACTER SET utf8mb4;
USE plain;
CREATE TABLE customers (
  id INT AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(100) NOT NULL,
  note TEXT NULL,
  balance DECIMAL(12,4) NOT NULL,
  created DATETIME(6) NOT NULL,
  avatar BLOB NULL
) DEFAULT CHARSET=utf8mb4;
INSERT INTO customers (name, note, balance, created, avatar)
  SELECT CONCAT('it''s "', seq, '" \\ back \\\\ ', CONVERT(_binary X'F09F9880' USING utf8mb4)),
         IF(seq % 7 = 0, NULL, CONCAT('line\nbreak\ttab ', seq, ' 漢字')),
         seq * 1.2345 - 1000,
         TIMESTAMP('2020-01-01 00:00:00') + INTERVAL seq * 61 SECOND + INTERVAL seq MICROSECOND,
         IF(seq % 5 = 0, NULL, UNHEX(CONCAT(MD5(seq), '00275C0A')))
  FROM seq_1_to_4000;
CREATE TABLE orders (
  id INT AUTO_INCREMENT PRIMARY KEY,
  customer_id INT NOT NULL,
  amount DECIMAL(10,2) NULL,
  placed DATETIME(6) NOT NULL,
  memo VARCHAR(200) NULL,
  KEY (customer_id)
) DEFAULT CHARSET=utf8mb4;
INSERT INTO orders (customer_id, amount, placed, memo)
  SELECT seq % 4000 + 1, IF(seq % 11 = 0, NULL, seq / 7),
         TIMESTAMP('2021-06-01 12:00:00') + INTERVAL seq MINUTE,
         IF(seq % 3 = 0, NULL, CONCAT('memo ', seq, ' ''quoted'' ', CONVERT(_binary X'F09FA684' USING utf8mb4)))
  FROM seq_1_to_6000;
CREATE TABLE products (
  id INT PRIMARY KEY,
  title VARCHAR(100) NOT NULL,
  price DECIMAL(8,2) NOT NULL,
  data BLOB NULL
) DEFAULT CHARSET=utf8mb4;
INSERT INTO products SELECT seq, CONCAT('product \\', seq), seq + 0.99, IF(seq % 2 = 0, NULL, UNHEX(SHA1(seq)))
  FROM seq_1_to_500;
"#;

/// Every row of each table, in key order, as the CLI prints them (BLOBs in hex).
const TABLES: [(&str, &str); 3] = [
    ("customers", "id, name, note, balance, created, HEX(avatar)"),
    ("orders", "id, customer_id, amount, placed, memo"),
    ("products", "id, title, price, HEX(data)"),
];

struct Target<'a> {
    port: u16,
    user: &'a str,
    password: &'a str,
}

fn client_args(t: &Target<'_>) -> Vec<String> {
    vec![
        "--protocol=tcp".into(),
        "-h127.0.0.1".into(),
        format!("-P{}", t.port),
        format!("-u{}", t.user),
        format!("-p{}", t.password),
    ]
}

/// Runs a client program, `input` on its stdin and stdout to `out` (or captured); panics with
/// its stderr unless it exits 0.
fn run(program: &str, args: &[String], input: Option<&Path>, out: Option<&Path>) -> String {
    let mut cmd = Command::new(program);
    cmd.args(args).stderr(Stdio::piped());
    if let Some(p) = input {
        cmd.stdin(std::fs::File::open(p).expect("input"));
    }
    match out {
        Some(p) => cmd.stdout(std::fs::File::create(p).expect("output")),
        None => cmd.stdout(Stdio::piped()),
    };
    let done = cmd.output().expect("client program runs");
    assert!(
        done.status.success(),
        "{program} {args:?} exited with {}: {}",
        done.status,
        String::from_utf8_lossy(&done.stderr)
    );
    String::from_utf8_lossy(&done.stdout).into_owned()
}

/// The rows of every table of `db` as seen through `t`.
fn rows(t: &Target<'_>, db: &str) -> Vec<String> {
    TABLES
        .iter()
        .map(|(table, columns)| {
            let mut args = client_args(t);
            args.extend(["-N".into(), "-B".into(), db.into(), "-e".into()]);
            args.push(format!("SELECT {columns} FROM {table} ORDER BY id"));
            run("mariadb", &args, None, None)
        })
        .collect()
}

/// Asserts equal tables, naming the first row that differs.
fn same_rows(got: &[String], want: &[String], what: &str) {
    for ((table, _), (g, w)) in TABLES.iter().zip(got.iter().zip(want)) {
        let differs = g.lines().zip(w.lines()).find(|(a, b)| a != b);
        assert!(differs.is_none(), "{what}, {table}: first difference {differs:?}");
        assert_eq!(g.lines().count(), w.lines().count(), "{what}, {table}: row count");
    }
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tessera-dump-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mariadb_dump_restores_into_shards_and_dumps_back_with_the_same_rows() {
    let env = ShardedEnv::start_with_tables("", CUSTOMERS_RULE).await;
    let (sandbox, proxy) = (&env.sandbox, &env.proxy);
    sandbox.server(0).sql(GENERATE).expect("generate the plain database");
    let direct = Target {
        port: sandbox.server(0).port(),
        user: "tessera",
        password: "tessera",
    };
    let through = Target {
        port: proxy.addr.port(),
        user: "app",
        password: "app",
    };
    let want = rows(&direct, "plain");
    assert_eq!(want.iter().map(|t| t.lines().count()).sum::<usize>(), 10_500);
    let dir = scratch();
    let dump = dir.join("plain.sql");
    let mut args = client_args(&direct);
    // BLOBs as hex literals: Tessera refuses raw binary strings on a sharded schema (its
    // planner reads text), where they would otherwise reach the shards changed.
    args.extend(["--hex-blob".into(), "plain".into()]);
    let out = tokio::task::spawn_blocking({
        let dump = dump.clone();
        move || run("mariadb-dump", &args, None, Some(&dump))
    });
    out.await.expect("dump");

    let restore = |db: &'static str, file: PathBuf, t_args: Vec<String>| {
        tokio::task::spawn_blocking(move || {
            let mut args = t_args;
            args.push(db.into());
            run("mariadb", &args, Some(&file), None)
        })
    };
    let mut create = client_args(&through);
    create.extend(["-e".into(), "CREATE DATABASE shop".into()]);
    run("mariadb", &create, None, None);
    restore("shop", dump.clone(), client_args(&through))
        .await
        .expect("restore through Tessera");
    same_rows(&rows(&through, "shop"), &want, "restored through Tessera");
    // Again, over the tables just restored: the dump's DROP TABLE runs on every shard.
    restore("shop", dump.clone(), client_args(&through))
        .await
        .expect("restore through Tessera over existing tables");
    same_rows(&rows(&through, "shop"), &want, "restored again through Tessera");
    for shard in 0..4 {
        let server = sandbox.server(shard / 2);
        let count = server
            .sql(&format!("SELECT COUNT(*) FROM shop_{shard}.customers"))
            .expect("count");
        let count: usize = count.trim().parse().expect("number");
        assert!((500..1500).contains(&count), "shard {shard} holds its part: {count}");
    }

    let raw = dir.join("raw.sql");
    std::fs::write(
        &raw,
        b"INSERT INTO products VALUES (9999, 'raw', 1.00, _binary '\xff\xfe')",
    )
    .expect("raw");
    let mut refused = Command::new("mariadb");
    refused
        .args(client_args(&through))
        .arg("shop")
        .stdin(std::fs::File::open(&raw).expect("raw"));
    let refused = refused.output().expect("mariadb runs");
    assert!(!refused.status.success(), "a raw binary string is refused");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not valid UTF-8"));

    let back = dir.join("shop.sql");
    let mut args = client_args(&through);
    args.extend(["--hex-blob".into(), "shop".into()]);
    tokio::task::spawn_blocking({
        let back = back.clone();
        move || run("mariadb-dump", &args, None, Some(&back))
    })
    .await
    .expect("dump through Tessera");
    sandbox.server(0).sql("CREATE DATABASE copy").expect("copy database");
    restore("copy", back, client_args(&direct))
        .await
        .expect("restore directly");
    same_rows(&rows(&direct, "copy"), &want, "dumped through Tessera");
    let _ = std::fs::remove_dir_all(dir);
}
