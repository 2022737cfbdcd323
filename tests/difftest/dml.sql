-- Tessera sharding differential test: writes (format: README.md).
-- Each write runs once per side (binary protocol when marked prepared), on Tessera first: a
-- refused write is not applied to the reference. Affected rows are compared, then the touched
-- tables: the union of the shards must equal the reference, every row on its own shard, every
-- shard's copy of a broadcast table equal to the reference's.
-- Keys are chosen so that a duplicate is always found on one shard: unique keys that do not
-- contain the shard key (orders.id, tags.id) are only unique per shard (see README.md).
-- Runs after corpus.sql and the random reads, in file order (later statements rely on earlier).

-- ===== Single-row INSERT =====
INSERT INTO customers (id, name, city, tier, balance, score, born, created) VALUES (10001, 'New One', 'Oslo', 1, 10.50, 2.5, '1990-01-01', '2024-01-01 10:00:00'); -- prepared
INSERT INTO customers (id, name, city, tier, balance, score, born, created) VALUES (10002, 'Ärger', NULL, NULL, NULL, NULL, NULL, '2024-01-02 00:00:00');
INSERT INTO customers (id, name, created) VALUES (-9223372036854775807, 'min plus one', '2024-01-01'); -- prepared
INSERT INTO orders (id, customer_id, product_id, qty, amount, discount, status, note, ordered_at, ship_date) VALUES (5001, 10001, 3, 2, 99.99, 0.5, 'new', NULL, '2024-02-01 12:00:00', NULL); -- prepared
INSERT INTO orders (id, customer_id, product_id, qty, amount, discount, status, note) VALUES (5002, NULL, 4, 1, 5.00, NULL, 'new', 'null key');
INSERT INTO orders (id, customer_id, qty, status) VALUES (5003, -9223372036854775808, 1, 'paid');
INSERT INTO orders (id, customer_id, qty, status) VALUES (5004, 9223372036854775807, 1, 'paid'); -- prepared
INSERT INTO tags (id, name, customer_id, weight, label) VALUES (1001, 'Brand New', 10001, 1, 'hot');
INSERT INTO tags (id, name, customer_id) VALUES (1002, NULL, NULL); -- prepared
INSERT INTO tags (id, name) VALUES (1008, 'BRAND NEW  ');
INSERT INTO events (id, kind, customer_id, value, amount, at, day) VALUES (500, 'buy', 10001, 1.5, 2.50, NULL, NULL);
INSERT INTO events (id, kind, customer_id) VALUES (-500, 'view', NULL); -- prepared
INSERT INTO events (id, kind) VALUES (-9223372036854775807, 'low');
INSERT INTO settings VALUES ('new key', 'x', 1);
INSERT INTO customers VALUES (10060, 'no column list', NULL, NULL, NULL, NULL, NULL, '2024-01-02 00:00:00'); -- refuse: INSERT into a sharded table without a column list
INSERT INTO orders VALUES (5090, 7, 1, 1, 1.00, NULL, 'new', NULL, NULL, NULL); -- refuse: INSERT into a sharded table without a column list

-- ===== Multi-row INSERT spanning shards =====
INSERT INTO customers (id, name, created) VALUES (10003, 'a', '2024-01-01'), (10004, 'b', '2024-01-01'), (10005, 'c', '2024-01-01'), (10006, 'd', '2024-01-01'), (10007, 'e', '2024-01-01'); -- prepared
INSERT INTO orders (id, customer_id, qty, status) VALUES (5010, 10003, 1, 'new'), (5011, 10004, 2, 'new'), (5012, 10005, 3, 'new'), (5013, NULL, 4, 'new'), (5014, 10006, 5, 'new');
INSERT INTO events (id, kind) VALUES (501, 'a'), (-501, 'b'), (150000, 'c'), (-21, 'd'); -- prepared
INSERT INTO tags (id, name) VALUES (1003, 'abc'), (1004, 'ABC '), (1005, 'zzz'), (1006, '日本'), (1007, 'Red');
INSERT INTO products VALUES (121, 'New product', 'tools', 1.00, NULL, NULL), (122, 'p122', 'toys', 2.00, 0.5, '2024-01-01');

-- ===== Multi-row INSERT whose last row is a duplicate: no row may stay on any shard =====
INSERT INTO customers (id, name, created) VALUES (10010, 'x1', '2024-01-01'), (10011, 'x2', '2024-01-01'), (10012, 'x3', '2024-01-01'), (7, 'dup', '2024-01-01'); -- error
INSERT INTO customers (id, name, created) VALUES (10013, 'y1', '2024-01-01'), (10014, 'y2', '2024-01-01'), (10015, 'y3', '2024-01-01'), (10016, 'y4', '2024-01-01'), (10001, 'dup', '2024-01-01'); -- error prepared
INSERT INTO orders (id, customer_id, qty, status) VALUES (5020, 11, 1, 'new'), (5021, 12, 1, 'new'), (5022, 13, 1, 'new'), (5023, NULL, 1, 'new'), (5001, 10001, 1, 'dup'); -- error
INSERT INTO events (id, kind) VALUES (502, 'x'), (-502, 'y'), (250, 'z'), (100, 'dup'); -- error
INSERT INTO tags (id, name) VALUES (1010, 'q1'), (1011, 'q2'), (1012, 'q3'), (1003, 'ABC'); -- error
INSERT INTO products VALUES (123, 'New product', 'tools', 1.00, NULL, NULL), (5, 'dup', NULL, 1.00, NULL, NULL); -- error
INSERT INTO customers (id, name, created) VALUES (10017, 'z1', '2024-01-01'), (10018, NULL, '2024-01-01'); -- error

-- ===== INSERT IGNORE =====
INSERT IGNORE INTO customers (id, name, created) VALUES (10020, 'i1', '2024-01-01'), (7, 'ignored', '2024-01-01'), (10021, 'i2', '2024-01-01'); -- prepared
INSERT IGNORE INTO orders (id, customer_id, qty, status) VALUES (5001, 10001, 9, 'ignored'), (5030, 21, 1, 'new');
INSERT IGNORE INTO products VALUES (5, 'ignored', NULL, 1.00, NULL, NULL), (124, 'p124', 'toys', 2.00, NULL, NULL);
INSERT IGNORE INTO events (id, kind) VALUES (100, 'ignored'), (200, 'ignored'), (503, 'kept');
INSERT IGNORE INTO customers (id, name, created) VALUES (10001, 'all ignored', '2024-01-01');

-- ===== REPLACE =====
REPLACE INTO customers (id, name, created) VALUES (10001, 'Replaced', '2024-03-03');
REPLACE INTO customers (id, name, created) VALUES (10030, 'r1', '2024-01-01'), (10002, 'r2', '2024-01-01'), (9, 'r3', '2024-01-01'); -- prepared
REPLACE INTO products VALUES (122, 'p122 replaced', 'toys', 3.00, NULL, NULL);
REPLACE INTO events (id, kind) VALUES (500, 'replaced'), (504, 'new');
REPLACE INTO tags (id, name, weight) VALUES (1005, 'zzz', 5);

-- ===== INSERT ... ON DUPLICATE KEY UPDATE =====
INSERT INTO customers (id, name, created) VALUES (10001, 'x', '2024-01-01') ON DUPLICATE KEY UPDATE tier = 5, balance = 1.25; -- prepared
INSERT INTO customers (id, name, created) VALUES (10040, 'y', '2024-01-01'), (10003, 'z', '2024-01-01') ON DUPLICATE KEY UPDATE name = VALUES(name);
INSERT INTO orders (id, customer_id, qty, status) VALUES (5001, 10001, 1, 'x') ON DUPLICATE KEY UPDATE qty = qty + 1;
INSERT INTO products (id, name, price) VALUES (1, 'x', 1.00) ON DUPLICATE KEY UPDATE price = price + 1; -- prepared
INSERT INTO tags (id, name) VALUES (1003, 'abc') ON DUPLICATE KEY UPDATE weight = 42;
INSERT INTO customers (id, name, created) VALUES (10001, 'x', '2024-01-01') ON DUPLICATE KEY UPDATE name = name;
INSERT INTO events (id, kind, value) VALUES (150, 'upsert', 1), (505, 'upsert', 2) ON DUPLICATE KEY UPDATE value = value + 100;
INSERT INTO settings VALUES ('theme', 'dark', 7) ON DUPLICATE KEY UPDATE v = VALUES(v);

-- ===== UPDATE and DELETE by shard key =====
UPDATE customers SET city = 'Updated' WHERE id = 10001; -- prepared
UPDATE customers SET balance = balance * 2 WHERE id IN (1, 2, 3, 10004); -- prepared
UPDATE orders SET qty = qty + 1 WHERE customer_id = 7; -- prepared
UPDATE orders SET note = 'none' WHERE customer_id IS NULL AND qty > 15;
UPDATE tags SET weight = 0 WHERE name = 'abc';
UPDATE events SET value = 0 WHERE id BETWEEN 95 AND 105; -- prepared
UPDATE events SET kind = 'late' WHERE id = 9223372036854775807;
UPDATE customers SET tier = tier WHERE id = 5;
UPDATE customers SET name = 'nobody' WHERE id = 123456789;
DELETE FROM customers WHERE id = 10007; -- prepared
DELETE FROM orders WHERE customer_id = 10003;
DELETE FROM events WHERE id = -500; -- prepared
DELETE FROM tags WHERE name = 'zzz';
DELETE FROM customers WHERE id IN (10005, 10006, 123456789);
DELETE FROM orders WHERE customer_id IS NULL AND qty = 4;
DELETE FROM settings WHERE k = 'new key';

-- ===== UPDATE and DELETE on all shards =====
UPDATE orders SET status = 'archived' WHERE ordered_at < '1960-01-01';
UPDATE customers SET score = score + 0.5 WHERE score IS NOT NULL AND tier = 3; -- prepared
UPDATE orders SET discount = NULL WHERE discount > 45;
UPDATE events SET amount = 0 WHERE id > 250;
UPDATE customers SET tier = NULL WHERE 1 = 0;
UPDATE tags SET label = 'renamed' WHERE label = 'HOT';
UPDATE settings SET n = n + 1;
DELETE FROM orders WHERE qty = -2;
DELETE FROM events WHERE kind = 'refund' AND value < 0; -- prepared
DELETE FROM tags WHERE weight < -5;
DELETE FROM orders WHERE note = 'O''Brien';

-- ===== UPDATE / DELETE ... ORDER BY ... LIMIT =====
UPDATE orders SET qty = 100 WHERE customer_id = 7 ORDER BY id LIMIT 2; -- prepared
DELETE FROM orders WHERE customer_id = 5 ORDER BY id DESC LIMIT 1;
UPDATE events SET value = -1 WHERE id BETWEEN 100 AND 199 ORDER BY id DESC LIMIT 3;
UPDATE orders SET qty = 101 ORDER BY id LIMIT 3; -- refuse: UPDATE with ORDER BY and LIMIT across shards
DELETE FROM events ORDER BY id DESC LIMIT 2; -- refuse: DELETE with ORDER BY and LIMIT across shards
UPDATE products SET weight = 9.5 ORDER BY id LIMIT 2;

-- ===== Writes to the broadcast table =====
INSERT INTO products VALUES (125, 'Broadcast', 'garden', 12.34, 1.5, '2024-01-01'); -- prepared
UPDATE products SET price = price + 1 WHERE category = 'tools';
UPDATE products SET weight = NULL WHERE id = 125; -- prepared
DELETE FROM products WHERE id = 125;
DELETE FROM products WHERE id > 120;

-- ===== Changing a shard key =====
UPDATE customers SET id = 20001 WHERE id = 10004; -- refuse: changing a shard key value moves the row
UPDATE orders SET customer_id = 8 WHERE id = 5001; -- refuse: changing a shard key value moves the row
UPDATE events SET id = id + 1000 WHERE id = 501; -- refuse: changing a shard key value moves the row

-- ===== INSERT ... SELECT =====
INSERT INTO customers (id, name, created) SELECT 10050, 'from select', '2024-01-01';
INSERT INTO products (id, name, price) SELECT id + 200, name, price FROM products WHERE id <= 3;
INSERT INTO orders (id, customer_id, qty, status) SELECT id + 100000, customer_id, qty, status FROM orders WHERE customer_id = 7; -- refuse: INSERT ... SELECT from sharded tables
INSERT INTO events (id, kind) SELECT id + 1000, kind FROM events WHERE id BETWEEN 0 AND 10; -- refuse: INSERT ... SELECT moving rows across shards
INSERT INTO customers (id, name, created) SELECT id + 30000, name, '2024-01-01' FROM customers WHERE id BETWEEN 1 AND 20; -- refuse: INSERT ... SELECT moving rows across shards
INSERT INTO orders (id, customer_id, qty, status) SELECT id + 200000, id, 1, 'from customers' FROM customers WHERE id BETWEEN 1 AND 10; -- refuse: INSERT ... SELECT from sharded tables
INSERT INTO settings (k, v, n) SELECT CONCAT('copy of ', k), v, n FROM settings WHERE n > 10;

-- ===== Reads after the writes =====
SELECT COUNT(*), SUM(qty), SUM(amount) FROM orders; -- prepared
SELECT customer_id, COUNT(*) FROM orders GROUP BY customer_id ORDER BY customer_id; -- ordered
SELECT * FROM customers WHERE id >= 10000 ORDER BY id; -- ordered
SELECT * FROM events ORDER BY id LIMIT 20; -- ordered
SELECT name, COUNT(*), SUM(weight) FROM tags GROUP BY name ORDER BY name; -- ordered ci
SELECT * FROM products ORDER BY id; -- ordered
SELECT * FROM settings ORDER BY k; -- ordered
