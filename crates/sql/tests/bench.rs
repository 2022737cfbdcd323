//! Tiny timing benchmark, ignored by default. Run with:
//! `cargo test -p tessera-sql --release --test bench -- --ignored --nocapture`

use std::hint::black_box;
use std::time::Instant;

use tessera_sql::classify;

fn ns_per_op(sql: &str, iterations: u32) -> f64 {
    for _ in 0..iterations / 10 {
        black_box(classify(black_box(sql)));
    }
    let start = Instant::now();
    for _ in 0..iterations {
        black_box(classify(black_box(sql)));
    }
    start.elapsed().as_nanos() as f64 / f64::from(iterations)
}

#[test]
#[ignore]
fn bench_classify() {
    let cases = [
        "SELECT c FROM sbtest1 WHERE id=?",
        "SELECT c FROM sbtest1 WHERE id=5017",
        "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
        "UPDATE sbtest1 SET k=k+1 WHERE id=?",
        "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)",
        "COMMIT",
        "SET NAMES utf8mb4",
        "/*+ tessera:primary */ SELECT d_tax FROM district WHERE d_id = ? FOR UPDATE",
    ];
    for sql in cases {
        println!("{:>8.1} ns/op  {sql}", ns_per_op(sql, 1_000_000));
    }
}
