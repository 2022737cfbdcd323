//! The shard functions against a real MariaDB: for hundreds of keys, the SQL formula the README
//! documents for each function gives the shard `ShardFunction::shard_of` computes, and strings
//! Tessera reads as integers are stored as the same integers by MariaDB.

use std::ops::Bound;
use tessera_proxy::route::shard_fn::{DateUnit, KeyType, KeyValue, ListFunction, ShardFunction};
use tessera_sandbox::{Sandbox, SandboxOptions, Server};

/// Shard counts every formula is checked with.
const COUNTS: [usize; 4] = [3, 4, 7, 16];

fn sandbox() -> Sandbox {
    Sandbox::start(SandboxOptions::default()).expect("sandbox starts")
}

/// Runs `sql` (after `SET NAMES utf8mb4`) and splits the output into rows of columns.
fn rows(server: &Server, sql: &str) -> Vec<Vec<String>> {
    let out = server.sql(&format!("SET NAMES utf8mb4;\n{sql}")).expect("sql runs");
    out.lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// A deterministic spread of integers: small ones, negatives, powers of two and their
/// neighbours, the BIGINT extremes and pseudo-random values of every magnitude.
fn integers() -> Vec<i128> {
    let mut v: Vec<i128> = (-40..=60).collect();
    for p in 0..64 {
        let x = 1i128 << p;
        v.extend([x - 1, x + 1, -x, -x - 1]);
    }
    v.extend([
        i64::MIN.into(),
        i64::MAX.into(),
        u64::MAX.into(),
        u64::MAX as i128 - 1,
        (1i128 << 63) + 5,
    ]);
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..120 {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let x = (seed >> (i % 60)) as i128;
        v.push(if i % 2 == 0 { x } else { -x });
    }
    v.retain(|k| (i128::from(i64::MIN)..=i128::from(u64::MAX)).contains(k));
    v.sort_unstable();
    v.dedup();
    v
}

/// `SELECT k, <formula(k, n)> for each n` as one UNION of literal keys.
fn formula_query(keys: &[String], formula: impl Fn(&str, usize) -> String) -> String {
    keys.iter()
        .map(|k| {
            let columns: Vec<String> = COUNTS.iter().map(|&n| formula(k, n)).collect();
            format!("SELECT {k}, {}", columns.join(", "))
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL ")
}

/// Checks every row: column 0 is the key, then one shard per entry of [`COUNTS`].
fn assert_shards(rows: &[Vec<String>], key: impl Fn(&str) -> KeyValue, f: &ShardFunction, what: &str) {
    for row in rows {
        let k = key(&row[0]);
        for (i, &n) in COUNTS.iter().enumerate() {
            let expected: usize = row[i + 1].parse().expect("a shard number");
            assert_eq!(
                f.shard_of(&k, n),
                Ok(expected),
                "{what}: key {} with {n} shards",
                row[0]
            );
        }
    }
}

fn int_key(text: &str) -> KeyValue {
    KeyValue::Int(text.parse().expect("an integer"))
}

fn check_integer_functions(server: &Server) {
    let keys: Vec<String> = integers().iter().map(i128::to_string).collect();
    let hash = rows(server, &formula_query(&keys, |k, n| format!("CRC32({k}) % {n}")));
    assert_eq!(hash.len(), keys.len());
    let hash_fn = ShardFunction::Hash { key_type: KeyType::Int };
    assert_shards(&hash, int_key, &hash_fn, "hash");
    // A string '42' and a bound parameter 42 are the same key as the literal.
    assert_shards(&hash, |t| KeyValue::Str(format!(" {t} ")), &hash_fn, "hash of text");
    let modulo = rows(
        server,
        &formula_query(&keys, |k, n| format!("MOD(MOD({k}, {n}) + {n}, {n})")),
    );
    assert_shards(&modulo, int_key, &ShardFunction::Mod, "mod");
}

/// Strings in many scripts (none with upper-case letters MariaDB's utf8mb4_general_ci does
/// not case-map), with trailing spaces and mixed case.
fn strings() -> Vec<String> {
    let mut v: Vec<String> = [
        "",
        " ",
        "Ärger",
        "ärger ",
        "ÄRGER  ",
        "arger",
        "straße",
        "STRASSE",
        "İstanbul",
        "ıi",
        "ΣΑΣ",
        "σας",
        "Ωmega",
        "Москва",
        "МОСКВА",
        "東京",
        "😀",
        "a😀B ",
        "Ǆemal",
        "ǅ",
        "K",
        "Ω",
        "42",
        "042",
        " 42",
        "42 ",
        "O'Reilly",
        "back\\slash",
        "tab\there",
        "ÅÉÎÕÜ",
        "Ĳssel",
        "ℌ",
        "Ⅻ",
        "ⓐⒶ",
        "Ｆｕｌｌ",
        "ǈ",
        "ῼ",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let alphabet: Vec<char> = "aAzZäÄßéÉøØλΛжЖ中文😀 0123456789-_".chars().collect();
    let mut seed: u64 = 7;
    for len in 0..200 {
        let s: String = (0..(len % 13))
            .map(|_| {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                alphabet[(seed >> 33) as usize % alphabet.len()]
            })
            .collect();
        v.push(s);
    }
    v
}

fn check_string_hash(server: &Server) {
    let values = strings();
    let inserts: Vec<String> = values.iter().map(|s| format!("(X'{}')", hex(s.as_bytes()))).collect();
    let columns: Vec<String> = COUNTS
        .iter()
        .map(|n| format!("CRC32(LOWER(TRIM(TRAILING ' ' FROM v))) % {n}"))
        .collect();
    let sql = format!(
        "CREATE TABLE test.s (i INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci);\n\
         INSERT INTO test.s (v) VALUES {};\nSELECT HEX(v), {} FROM test.s ORDER BY i",
        inserts.join(", "),
        columns.join(", ")
    );
    let found = rows(server, &sql);
    assert_eq!(found.len(), values.len());
    let from_hex = |h: &str| KeyValue::Str(String::from_utf8(unhex(h)).expect("utf-8"));
    let f = ShardFunction::Hash {
        key_type: KeyType::String,
    };
    assert_shards(&found, from_hex, &f, "string hash");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

fn unhex(h: &str) -> Vec<u8> {
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).expect("hex"))
        .collect()
}

/// Dates over the whole DATE range (years 0 to 9999), month ends, leap days and text forms.
fn dates() -> Vec<String> {
    let mut v: Vec<String> = [
        "0000-01-01",
        "0000-02-28",
        "0000-03-01",
        "0000-12-31",
        "0001-01-01",
        "0004-02-29",
        "0100-03-01",
        "0400-02-29",
        "1582-10-10",
        "1900-02-28",
        "1900-03-01",
        "1970-01-01",
        "1999-12-31 23:59:59",
        "2000-02-29",
        "2024-3-5",
        "2024-03-05T10:00:00",
        "2024-03-05 1:2:3",
        "2024-12-31 23:59:59.999999",
        "9999-12-31",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut seed: u64 = 11;
    for _ in 0..250 {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let (y, m, d) = ((seed >> 20) % 10_000, (seed >> 40) % 12 + 1, (seed >> 50) % 28 + 1);
        v.push(format!("{y:04}-{m:02}-{d:02}"));
    }
    v
}

fn check_dates(server: &Server) {
    let keys: Vec<String> = dates().iter().map(|d| format!("'{d}'")).collect();
    let unquote = |t: &str| KeyValue::Str(t.to_string());
    let cases = [
        (DateUnit::Year, "YEAR({k}) % {n}"),
        (DateUnit::Month, "(YEAR({k}) * 12 + MONTH({k}) - 1) % {n}"),
        (DateUnit::Day, "TO_DAYS({k}) % {n}"),
    ];
    for (unit, formula) in cases {
        let sql = formula_query(&keys, |k, n| formula.replace("{k}", k).replace("{n}", &n.to_string()));
        let found = rows(server, &sql);
        assert_eq!(found.len(), keys.len());
        assert_shards(
            &found,
            unquote,
            &ShardFunction::Date { unit },
            &format!("date {unit:?}"),
        );
    }
}

/// Strings Tessera reads as integers are stored as those integers in a BIGINT column (strict
/// mode); strings it refuses MariaDB refuses too, except those MariaDB would round.
fn check_integer_reading(server: &Server) {
    server.sql("CREATE TABLE test.i (v BIGINT)").expect("table");
    let f = ShardFunction::Mod;
    let n = 1usize << 40;
    for text in [
        "042",
        " +42",
        "\t42\n",
        "42 ",
        "-0",
        ".0",
        "4.",
        "4e2",
        "4.20E1",
        "-1.5e1",
        "-9223372036854775808",
    ] {
        let stored = server
            .sql(&format!(
                "DELETE FROM test.i; INSERT INTO test.i VALUES ('{text}'); SELECT v FROM test.i"
            ))
            .expect("MariaDB stores it");
        let k: i128 = stored.trim().parse().expect("an integer");
        let ours = f.shard_of(&KeyValue::Str(text.into()), n);
        assert_eq!(ours, f.shard_of(&KeyValue::Int(k), n), "{text:?} is stored as {k}");
    }
    for text in ["42abc", "0x10", "", "+ 4", "4 2"] {
        let refused = server.sql(&format!("INSERT INTO test.i VALUES ('{text}')"));
        assert!(refused.is_err(), "MariaDB refuses {text:?}");
        assert!(
            f.shard_of(&KeyValue::Str(text.into()), n).is_err(),
            "Tessera refuses {text:?}"
        );
    }
    assert!(
        f.shard_of(&KeyValue::Str("4.5".into()), n).is_err(),
        "MariaDB rounds, Tessera refuses"
    );
}

/// `range` and `list` shards are the ones their documented conditions select.
fn check_range_and_list(server: &Server) {
    let range = ShardFunction::Range {
        bounds: vec![-100, 0, 1000],
    };
    let list = ListFunction::new(
        KeyType::Int,
        &[vec![KeyValue::Int(1)], vec![KeyValue::Int(-5), KeyValue::Int(7)]],
    )
    .expect("lists");
    let list = ShardFunction::List(list);
    let sql = "SELECT k, CASE WHEN k < -100 THEN 0 WHEN k < 0 THEN 1 WHEN k < 1000 THEN 2 ELSE 3 END, \
               CASE WHEN k IN (1) THEN 0 WHEN k IN (-5, 7) THEN 1 ELSE -1 END \
               FROM (SELECT -101 AS k UNION ALL SELECT -100 UNION ALL SELECT -5 UNION ALL SELECT 0 \
               UNION ALL SELECT 1 UNION ALL SELECT 7 UNION ALL SELECT 999 UNION ALL SELECT 1000) AS keys_";
    for row in rows(server, sql) {
        let k = int_key(&row[0]);
        assert_eq!(
            range.shard_of(&k, 4).map(|s| s.to_string()),
            Ok(row[1].clone()),
            "range {k:?}"
        );
        let listed = list
            .shard_of(&k, 2)
            .map(|s| s.to_string())
            .unwrap_or_else(|_| "-1".into());
        assert_eq!(listed, row[2], "list {k:?}");
    }
    let (lo, hi) = (KeyValue::Int(-5), KeyValue::Int(999));
    assert_eq!(
        range.shards_for_range(Bound::Included(&lo), Bound::Included(&hi), 4),
        Some(vec![1, 2])
    );
}

#[test]
fn shard_functions_match_their_sql_formulas_in_mariadb() {
    let sandbox = sandbox();
    let server = sandbox.server(0);
    check_integer_functions(server);
    check_string_hash(server);
    check_dates(server);
    check_integer_reading(server);
    check_range_and_list(server);
}
