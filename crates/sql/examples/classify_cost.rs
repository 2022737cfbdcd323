//! Instructions per classification of typical text queries: run under
//! `valgrind --tool=callgrind` (or time it) to compare classifier builds.
//! `cargo run --release -p tessera-sql --example classify_cost -- [ROUNDS]`

const QUERIES: [&str; 6] = [
    "SELECT c FROM sbtest1 WHERE id=50123",
    "SELECT c FROM sbtest1 WHERE id BETWEEN 50123 AND 50222",
    "SELECT SUM(k) FROM sbtest3 WHERE id BETWEEN 1 AND 100",
    "SELECT `users`.* FROM `users` WHERE `users`.`id` = 42 LIMIT 1",
    "UPDATE sbtest2 SET k=k+1 WHERE id=4711",
    "INSERT INTO orders (customer_id, total, note) VALUES (7, 19.99, 'two \\'red\\' mugs')",
];

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let mut pure = 0usize;
    let start = std::time::Instant::now();
    for _ in 0..rounds {
        for q in QUERIES {
            pure += usize::from(std::hint::black_box(tessera_sql::classify(std::hint::black_box(q))).pure_select);
        }
    }
    let per = start.elapsed().as_nanos() as f64 / (rounds * QUERIES.len()) as f64;
    println!(
        "{} classifications, {per:.1} ns each, {pure} pure",
        rounds * QUERIES.len()
    );
}
