//! Checks that classifying common statements does not touch the heap.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use tessera_sql::classify;

struct CountingAlloc;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn allocations_during(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn common_statements_do_not_allocate() {
    let statements = [
        "SELECT c FROM sbtest1 WHERE id=?",
        "SELECT c FROM sbtest1 WHERE id BETWEEN 5 AND 104 ORDER BY c",
        "UPDATE sbtest1 SET k=k+1 WHERE id=?",
        "DELETE FROM sbtest1 WHERE id=?",
        "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)",
        "BEGIN",
        "START TRANSACTION READ ONLY",
        "COMMIT",
        "ROLLBACK",
        "SET autocommit=0",
        "SET NAMES utf8mb4",
        "/*!40101 SET @a = @@character_set_client */",
        "SELECT d_tax FROM district WHERE d_id = ? FOR UPDATE",
        "/*+ tessera:replica */ SELECT GET_LOCK('x', 1), LAST_INSERT_ID()",
        "WITH c AS (SELECT 1) SELECT * FROM c",
        "SELECT a INTO @x FROM t; SELECT 2",
        "SHOW TABLES",
        "KILL QUERY 42",
    ];
    for sql in statements {
        let n = allocations_during(|| {
            std::hint::black_box(classify(std::hint::black_box(sql)));
        });
        assert_eq!(n, 0, "{sql}");
    }
}
