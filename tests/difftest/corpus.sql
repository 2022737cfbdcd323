-- Tessera sharding differential test: the curated corpus of reads (format: README.md).
-- Every statement runs on the reference MariaDB and through Tessera; the answers must match.
-- Markers after the `;`: ordered (ORDER BY is total), prepared (also binary protocol),
-- ci (strings compared case/accent-folded), error (the reference fails), refuse: <reason>.
--
-- Tables: customers (hash on id), orders (hash on customer_id, co-located with customers),
-- tags (hash on the string name, collation utf8mb4_uca1400_as_ci), events (range on id:
-- <100, <200, <300, rest), products (broadcast), settings (not configured: default shard 0).

-- ===== No table, session =====
SELECT 1; -- ordered prepared
SELECT 1 + 1 AS two, 'x' AS s, NULL AS n, 2.50 AS d, -7 AS neg; -- ordered prepared
SELECT DATABASE(); -- ordered
SELECT 'Ärger' = 'arger', 'abc' = 'ABC ', 'a' < 'B', 'a' = 'a '; -- ordered prepared
SELECT CONCAT('a', 'b'), LENGTH('日本'), CHAR_LENGTH('日本'), UPPER('straße'); -- ordered prepared
SELECT CAST(9223372036854775807 AS DECIMAL(30,0)) + 1, -9223372036854775808; -- ordered
SELECT 1 / 3, 10 DIV 3, 10 % 3, 1e3, 0.1 + 0.2; -- ordered prepared
SELECT @@collation_connection, @@character_set_client; -- ordered
SELECT 1 UNION SELECT 2 UNION SELECT 1;
SELECT NULL IS NULL, COALESCE(NULL, 'x'), IFNULL(NULL, 3); -- ordered prepared

-- ===== Point selects: customers by id (hash on an integer key) =====
SELECT * FROM customers WHERE id = 7; -- prepared
SELECT * FROM customers WHERE id = -9223372036854775808; -- prepared
SELECT * FROM customers WHERE id = 9223372036854775807; -- prepared
SELECT * FROM customers WHERE id = 0; -- prepared
SELECT * FROM customers WHERE id = -1; -- prepared
SELECT * FROM customers WHERE id = 4294967296; -- prepared
SELECT name, city FROM customers WHERE id = 123456; -- prepared
SELECT * FROM customers WHERE id IN (1, 2, 3, -1, 0); -- prepared
SELECT id, name FROM customers WHERE id IN (5, 500, 9223372036854775807) ORDER BY id; -- ordered prepared
SELECT * FROM customers WHERE id = 5 OR id = 6 OR id = -2; -- prepared
SELECT id FROM customers WHERE (id = 5 OR id = 6) AND tier IS NOT NULL; -- prepared
SELECT id, name FROM customers WHERE id = 7 AND name = 'nobody';
SELECT id FROM customers WHERE id IN (7) AND id IN (7, 8); -- prepared
SELECT id FROM customers WHERE id = 7 AND id = 8;
SELECT id FROM customers WHERE id = '7'; -- prepared
SELECT id FROM customers WHERE id = 7.0; -- prepared
SELECT id FROM customers WHERE 7 = id; -- prepared
SELECT `id`, `name` FROM `customers` WHERE `id` = 3;
SELECT * FROM shop.customers WHERE id = 7;
SELECT c.* FROM shop.customers AS c WHERE c.id IN (1, 2) ORDER BY c.id; -- ordered
SELECT id FROM customers WHERE id BETWEEN 10 AND 20 ORDER BY id; -- ordered prepared
SELECT id FROM customers WHERE id < 0 ORDER BY id; -- ordered
SELECT id FROM customers WHERE id = 7 FOR UPDATE;
SELECT id FROM customers WHERE id = 7 LOCK IN SHARE MODE;

-- ===== Point selects: orders by customer_id (NULL keys live on shard 0) =====
SELECT * FROM orders WHERE customer_id = 7 ORDER BY id; -- ordered prepared
SELECT * FROM orders WHERE customer_id IS NULL ORDER BY id; -- ordered
SELECT COUNT(*) FROM orders WHERE customer_id IS NULL;
SELECT * FROM orders WHERE customer_id <=> NULL ORDER BY id; -- ordered
SELECT * FROM orders WHERE customer_id IN (1, 2, 3) ORDER BY id; -- ordered prepared
SELECT id, amount FROM orders WHERE customer_id = 7 AND status = 'paid'; -- prepared
SELECT id FROM orders WHERE customer_id = 7 OR customer_id IS NULL ORDER BY id; -- ordered
SELECT id FROM orders WHERE customer_id = -9223372036854775807 ORDER BY id; -- ordered prepared
SELECT id FROM orders WHERE customer_id = -9223372036854775808 ORDER BY id; -- ordered prepared
SELECT id FROM orders WHERE customer_id = 9223372036854775807 ORDER BY id; -- ordered prepared
SELECT id FROM orders WHERE customer_id = 5000 ORDER BY id; -- ordered
SELECT * FROM orders WHERE id = 17; -- prepared
SELECT id FROM orders WHERE customer_id IN (5) AND customer_id IN (5, 6) ORDER BY id; -- ordered
SELECT id FROM orders WHERE NOT (customer_id = 5) ORDER BY id LIMIT 10; -- ordered
SELECT id FROM orders WHERE customer_id = 7 AND (status = 'paid' OR qty > 10) ORDER BY id; -- ordered prepared
SELECT id FROM orders WHERE (customer_id = 7 OR customer_id = 8) AND qty BETWEEN 1 AND 5 ORDER BY id; -- ordered prepared
SELECT id FROM orders WHERE customer_id = 7 OR qty = 3 ORDER BY id; -- ordered
SELECT id, CASE WHEN amount IS NULL THEN 'none' WHEN amount > 1000 THEN 'big' ELSE 'small' END AS size FROM orders WHERE customer_id = 7 ORDER BY id; -- ordered prepared

-- ===== Point selects: tags by name (hash on a string key, case-insensitive collation) =====
SELECT * FROM tags WHERE name = 'abc' ORDER BY id; -- ordered prepared
SELECT * FROM tags WHERE name = 'ABC   ' ORDER BY id; -- ordered prepared
SELECT * FROM tags WHERE name = 'red' ORDER BY id; -- ordered prepared
SELECT * FROM tags WHERE name IN ('vip', 'SALE', 'x') ORDER BY id; -- ordered prepared
SELECT * FROM tags WHERE name = 'vip' OR name = 'New' ORDER BY id; -- ordered prepared
SELECT * FROM tags WHERE name = '' ORDER BY id; -- ordered prepared
SELECT * FROM tags WHERE name = '日本' ORDER BY id; -- ordered prepared
SELECT * FROM tags WHERE name = 'o''brien' ORDER BY id; -- ordered prepared
SELECT * FROM tags WHERE name = 'back\\slash' ORDER BY id; -- ordered prepared
SELECT * FROM tags WHERE name = 'LONG TAG NAME' ORDER BY id; -- ordered
SELECT * FROM tags WHERE name IS NULL ORDER BY id; -- ordered
SELECT * FROM tags WHERE name LIKE 'ab%' ORDER BY id; -- ordered
SELECT id FROM tags WHERE name = 'nothing here'; -- prepared
-- The key column's collation is accent-sensitive (utf8mb4_uca1400_as_ci, as the README asks of
-- string keys): 'arger' and 'Ärger' are distinct keys, 'Ärger' and 'ärger' one key.
SELECT * FROM tags WHERE name = 'arger' ORDER BY id; -- ordered
SELECT * FROM tags WHERE name = 'Ärger' ORDER BY id; -- ordered prepared
SELECT * FROM tags WHERE name IN ('ärger', 'ZOË', 'zoe') ORDER BY id; -- ordered prepared
SELECT COUNT(*) FROM tags WHERE name = 'ARGER';
SELECT name, COUNT(*) FROM tags WHERE name LIKE '%rger' GROUP BY name ORDER BY name; -- ordered ci
SELECT COUNT(*) FROM tags WHERE name = 'arger' COLLATE utf8mb4_general_ci;

-- ===== Point and range selects: events (range on id: bounds 100, 200, 300) =====
SELECT * FROM events WHERE id = 100; -- prepared
SELECT * FROM events WHERE id = 99; -- prepared
SELECT * FROM events WHERE id = 300; -- prepared
SELECT * FROM events WHERE id = -9223372036854775808; -- prepared
SELECT * FROM events WHERE id = 9223372036854775807; -- prepared
SELECT * FROM events WHERE id BETWEEN 95 AND 105 ORDER BY id; -- ordered prepared
SELECT * FROM events WHERE id BETWEEN 150 AND 250 ORDER BY id; -- ordered prepared
SELECT id FROM events WHERE id < 100 ORDER BY id; -- ordered prepared
SELECT id FROM events WHERE id <= 100 ORDER BY id DESC; -- ordered prepared
SELECT id FROM events WHERE id > 299 ORDER BY id; -- ordered prepared
SELECT id FROM events WHERE id >= 300 AND id < 305 ORDER BY id; -- ordered prepared
SELECT id FROM events WHERE id > 199 AND id < 201; -- prepared
SELECT id FROM events WHERE id BETWEEN 300 AND 200;
SELECT COUNT(*) FROM events WHERE id < 0;
SELECT id, kind FROM events WHERE id IN (-1000, 0, 100, 200, 300, 1000000) ORDER BY id; -- ordered prepared
SELECT id FROM events WHERE id BETWEEN -5 AND 5 OR id BETWEEN 295 AND 305 ORDER BY id; -- ordered
SELECT id FROM events WHERE NOT (id < 200) ORDER BY id LIMIT 5; -- ordered
SELECT id FROM events WHERE id <> 100 AND id < 102 ORDER BY id DESC LIMIT 3; -- ordered prepared
SELECT id FROM events WHERE id = 150 OR id = 250 OR id = 350 ORDER BY id; -- ordered prepared
SELECT id FROM events WHERE id > 1000 ORDER BY id; -- ordered

-- ===== Full scans and non-key filters =====
SELECT * FROM customers;
SELECT * FROM orders;
SELECT * FROM tags;
SELECT * FROM events;
SELECT * FROM products;
SELECT * FROM settings;
SELECT id, name FROM customers WHERE city = 'berlin';
SELECT COUNT(*) FROM orders WHERE status = 'PAID'; -- prepared
SELECT id FROM orders WHERE note LIKE '%ö%'; -- prepared
SELECT id, score FROM customers WHERE score > 100.5 AND score < 2000; -- prepared
SELECT id FROM customers WHERE born BETWEEN '1980-01-01' AND '1989-12-31'; -- prepared
SELECT id FROM orders WHERE ordered_at >= '2020-01-01 00:00:00'; -- prepared
SELECT id, name FROM customers WHERE name = 'ärger' ORDER BY id; -- ordered prepared
SELECT id FROM customers WHERE name = 'abc' ORDER BY id; -- ordered prepared
SELECT COUNT(*) FROM customers WHERE name = 'arger';
SELECT id FROM customers WHERE name LIKE 'z%' ORDER BY id; -- ordered prepared
SELECT id FROM customers WHERE city IS NULL AND tier IS NULL ORDER BY id; -- ordered
SELECT id, balance + 0.001, score * 2, DATE_ADD(born, INTERVAL 1 DAY) FROM customers WHERE id IN (1, 2, 3); -- prepared
SELECT id, IF(score > 0, 'pos', 'neg') AS sign FROM customers WHERE id < 10 ORDER BY id; -- ordered
SELECT CAST(balance AS CHAR), CAST(score AS DECIMAL(12,3)) FROM customers WHERE id = 1; -- ordered
SELECT id, qty * amount AS total FROM orders WHERE qty * amount > 10000 ORDER BY id; -- ordered
SELECT id FROM orders WHERE discount = 12.5 OR discount IS NULL AND qty = 0 ORDER BY id; -- ordered prepared
SELECT id FROM events WHERE kind = 'click' AND value < 0 ORDER BY id; -- ordered prepared
SELECT k, v, n FROM settings WHERE k = 'theme'; -- prepared
SELECT k FROM settings WHERE n > 10 ORDER BY k; -- ordered

-- ===== ORDER BY: several keys, directions, NULLs, expressions, aliases, positions =====
SELECT id, name FROM customers ORDER BY id; -- ordered
SELECT id, name FROM customers ORDER BY id DESC; -- ordered
SELECT id, name, city FROM customers ORDER BY city, id; -- ordered
SELECT id, name, city FROM customers ORDER BY city DESC, id DESC; -- ordered
SELECT id, name FROM customers ORDER BY name, id; -- ordered
SELECT id, name FROM customers ORDER BY name DESC, id; -- ordered
SELECT name FROM customers ORDER BY name;
SELECT id, balance FROM customers ORDER BY balance, id; -- ordered
SELECT id, balance FROM customers ORDER BY balance DESC, id DESC; -- ordered
SELECT id, score FROM customers ORDER BY score, id; -- ordered
SELECT id, tier, score FROM customers ORDER BY tier DESC, score, id; -- ordered
SELECT id, born FROM customers ORDER BY born, id; -- ordered
SELECT id, created FROM customers ORDER BY created DESC, id; -- ordered
SELECT id, amount, qty FROM orders ORDER BY amount * qty DESC, id; -- ordered
SELECT id, amount * qty AS total FROM orders ORDER BY total, id; -- ordered
SELECT id, customer_id, amount FROM orders ORDER BY 3 DESC, 1; -- ordered
SELECT id, status FROM orders ORDER BY status, id; -- ordered
SELECT id, status FROM orders ORDER BY UPPER(status), id DESC; -- ordered
SELECT id, note FROM orders ORDER BY note IS NULL, note, id; -- ordered
SELECT id, discount FROM orders ORDER BY COALESCE(discount, -1), id; -- ordered
SELECT customer_id, id FROM orders ORDER BY customer_id, id; -- ordered
SELECT customer_id, id FROM orders ORDER BY customer_id DESC, id DESC; -- ordered
SELECT id, name FROM tags ORDER BY name, id; -- ordered
SELECT id, name FROM tags ORDER BY name DESC, id; -- ordered
SELECT id, kind, value FROM events ORDER BY kind, value DESC, id; -- ordered
SELECT id, name FROM products ORDER BY name, id; -- ordered
SELECT id, price FROM products ORDER BY price DESC, id; -- ordered
SELECT name, id FROM customers ORDER BY name COLLATE utf8mb4_bin, id; -- ordered
SELECT id, LENGTH(name) AS len FROM customers ORDER BY len DESC, id; -- ordered
SELECT id, name FROM customers ORDER BY CHAR_LENGTH(name), name, id; -- ordered
SELECT id, ship_date FROM orders ORDER BY ship_date DESC, id; -- ordered
SELECT id, ordered_at FROM orders WHERE customer_id IN (1, 2, 3, 4, 5) ORDER BY ordered_at, id; -- ordered prepared
SELECT id AS i, name AS n FROM customers ORDER BY n, i; -- ordered
SELECT id, -id AS neg FROM events ORDER BY neg LIMIT 10; -- ordered error
SELECT id, 0 - amount AS neg FROM events ORDER BY 2, 1; -- ordered
SELECT k, n FROM settings ORDER BY n DESC, k; -- ordered

-- ===== LIMIT n and LIMIT offset, count =====
SELECT id, name FROM customers ORDER BY id LIMIT 10; -- ordered prepared
SELECT id, name FROM customers ORDER BY id DESC LIMIT 5; -- ordered prepared
SELECT id, name FROM customers ORDER BY id LIMIT 10, 5; -- ordered prepared
SELECT id, name FROM customers ORDER BY id LIMIT 5 OFFSET 295; -- ordered prepared
SELECT id, name FROM customers ORDER BY id LIMIT 0; -- ordered prepared
SELECT id, name FROM customers ORDER BY id LIMIT 1000, 10; -- ordered prepared
SELECT id, name FROM customers ORDER BY id LIMIT 595, 100; -- ordered prepared
SELECT id, amount FROM orders ORDER BY amount DESC, id LIMIT 20; -- ordered prepared
SELECT id, amount FROM orders WHERE amount IS NOT NULL ORDER BY amount, id LIMIT 50, 10; -- ordered prepared
SELECT id, name FROM customers ORDER BY name, id LIMIT 25; -- ordered
SELECT id, city FROM customers ORDER BY city DESC, id LIMIT 7, 7; -- ordered
SELECT id FROM orders WHERE customer_id = 7 ORDER BY id LIMIT 3; -- ordered prepared
SELECT id FROM orders WHERE customer_id = 7 ORDER BY id LIMIT 2, 2; -- ordered prepared
SELECT id, name FROM tags ORDER BY name DESC, id DESC LIMIT 12; -- ordered
SELECT id, value FROM events ORDER BY value, id LIMIT 10; -- ordered
SELECT id FROM events WHERE id >= 100 ORDER BY id LIMIT 5; -- ordered prepared
SELECT id FROM events WHERE id >= 150 ORDER BY id LIMIT 60, 5; -- ordered prepared
SELECT id, price FROM products ORDER BY price, id LIMIT 3; -- ordered prepared
SELECT id, score FROM customers WHERE score IS NOT NULL ORDER BY score DESC, id LIMIT 1; -- ordered
SELECT id, born FROM customers ORDER BY born, id LIMIT 3; -- ordered
SELECT COUNT(*) FROM customers LIMIT 5; -- ordered
SELECT id, name FROM customers ORDER BY id LIMIT 18446744073709551615; -- ordered

-- ===== Aggregates without GROUP BY (int, decimal, double; empty inputs) =====
SELECT COUNT(*) FROM customers; -- prepared
SELECT COUNT(*) FROM orders; -- prepared
SELECT COUNT(*), COUNT(customer_id), COUNT(amount), COUNT(discount), COUNT(note) FROM orders; -- prepared
SELECT SUM(qty), MIN(qty), MAX(qty), AVG(qty) FROM orders; -- prepared
SELECT SUM(amount), MIN(amount), MAX(amount), AVG(amount) FROM orders; -- prepared
SELECT SUM(discount), MIN(discount), MAX(discount), AVG(discount) FROM orders; -- prepared
SELECT SUM(balance), AVG(balance), MIN(balance), MAX(balance) FROM customers; -- prepared
SELECT SUM(score), AVG(score), MIN(score), MAX(score) FROM customers; -- prepared
SELECT SUM(id), AVG(id), MIN(id), MAX(id) FROM customers; -- prepared
SELECT SUM(tier), AVG(tier), COUNT(tier) FROM customers; -- prepared
SELECT MIN(name), MAX(name) FROM customers; -- ci
SELECT MIN(born), MAX(born), MIN(created), MAX(created) FROM customers; -- prepared
SELECT COUNT(*), SUM(amount), AVG(amount), MIN(amount), MAX(amount) FROM orders WHERE customer_id = 7; -- prepared
SELECT COUNT(*), SUM(amount), AVG(amount), MIN(status) FROM orders WHERE customer_id = 123456789; -- prepared
SELECT COUNT(*), SUM(qty), AVG(discount), MIN(status), MAX(note) FROM orders WHERE qty > 1000; -- prepared
SELECT COUNT(*), SUM(value), AVG(value), COUNT(value) FROM events; -- prepared
SELECT SUM(value), AVG(amount), MIN(at), MAX(day) FROM events WHERE id BETWEEN 100 AND 199; -- prepared
SELECT AVG(price), SUM(price), COUNT(*), MAX(weight) FROM products; -- prepared
SELECT COUNT(*), SUM(n), AVG(n) FROM settings; -- prepared
SELECT COUNT(DISTINCT status) FROM orders; -- prepared
SELECT COUNT(DISTINCT customer_id) FROM orders; -- prepared
SELECT COUNT(DISTINCT city) FROM customers;
SELECT COUNT(DISTINCT name) FROM tags;
SELECT COUNT(DISTINCT name) FROM customers;
SELECT COUNT(DISTINCT qty, status) FROM orders;
SELECT SUM(DISTINCT qty), AVG(DISTINCT qty), COUNT(DISTINCT qty) FROM orders; -- prepared
SELECT SUM(DISTINCT amount) FROM orders;
SELECT SUM(DISTINCT discount), AVG(DISTINCT discount) FROM orders;
SELECT SUM(DISTINCT customer_id) FROM orders;
SELECT COUNT(*) + 1, SUM(qty) * 2, MAX(qty) - MIN(qty) FROM orders; -- prepared
SELECT ROUND(AVG(amount), 1), ROUND(SUM(discount)) FROM orders; -- refuse: functions of aggregates over shards (arithmetic is merged)
SELECT SUM(qty) / COUNT(*) FROM orders;
SELECT COUNT(*) AS n FROM orders HAVING n > 10;
SELECT COUNT(*) AS n FROM orders HAVING n > 100000;
SELECT MAX(id) FROM orders WHERE customer_id IN (1, 2, 3); -- prepared
SELECT COUNT(*) FROM orders WHERE customer_id = 7 AND qty > 5; -- prepared
SELECT STDDEV(qty), VARIANCE(amount) FROM orders; -- refuse: variance aggregates over shards
SELECT BIT_OR(qty), BIT_AND(qty) FROM orders; -- refuse: bit aggregates over shards

-- ===== GROUP BY =====
SELECT status, COUNT(*) FROM orders GROUP BY status; -- ci
SELECT status, COUNT(*), SUM(amount), AVG(amount) FROM orders GROUP BY status ORDER BY status; -- ordered ci
SELECT customer_id, COUNT(*), SUM(qty) FROM orders GROUP BY customer_id;
SELECT customer_id, COUNT(*), SUM(amount), AVG(discount) FROM orders GROUP BY customer_id ORDER BY customer_id; -- ordered
SELECT city, COUNT(*), AVG(score), MIN(balance), MAX(balance) FROM customers GROUP BY city ORDER BY city; -- ordered ci
SELECT tier, COUNT(*), SUM(balance) FROM customers GROUP BY tier ORDER BY tier DESC; -- ordered
SELECT tier, city, COUNT(*) FROM customers GROUP BY tier, city ORDER BY tier, city; -- ordered ci
SELECT YEAR(born) AS y, COUNT(*) FROM customers GROUP BY y ORDER BY y; -- ordered
SELECT qty % 3 AS bucket, COUNT(*), SUM(qty) FROM orders GROUP BY bucket ORDER BY bucket; -- ordered
SELECT name, COUNT(*) FROM tags GROUP BY name ORDER BY name; -- ordered ci
SELECT kind, COUNT(*), SUM(value), AVG(value), MIN(at), MAX(day) FROM events GROUP BY kind ORDER BY kind; -- ordered ci
SELECT category, COUNT(*), AVG(price), SUM(weight) FROM products GROUP BY category ORDER BY category; -- ordered ci
SELECT status, COUNT(*) FROM orders GROUP BY 1 ORDER BY 1; -- ordered ci
SELECT status AS s, COUNT(*) AS n FROM orders GROUP BY s ORDER BY n DESC, s; -- ordered ci
SELECT status, COUNT(*) FROM orders WHERE customer_id = 7 GROUP BY status ORDER BY status; -- ordered ci prepared
SELECT customer_id, COUNT(*) FROM orders WHERE customer_id IN (1, 2, 3, 4, 5) GROUP BY customer_id ORDER BY customer_id; -- ordered prepared
SELECT status, COUNT(*) FROM orders WHERE qty > 1000 GROUP BY status; -- prepared
SELECT ship_date IS NULL AS no_ship, COUNT(*) FROM orders GROUP BY no_ship ORDER BY no_ship; -- ordered
SELECT status, COUNT(DISTINCT customer_id), SUM(DISTINCT qty) FROM orders GROUP BY status ORDER BY status; -- ordered ci
SELECT product_id, SUM(qty), MIN(amount), MAX(discount) FROM orders GROUP BY product_id ORDER BY product_id; -- ordered
SELECT customer_id, status, COUNT(*) FROM orders WHERE customer_id BETWEEN 1 AND 10 GROUP BY customer_id, status ORDER BY customer_id, status; -- ordered ci
SELECT DATE(ordered_at) AS d, COUNT(*) FROM orders GROUP BY d ORDER BY d LIMIT 10; -- ordered
SELECT id DIV 100 AS block, COUNT(*), MIN(kind), MAX(value) FROM events GROUP BY block ORDER BY block; -- ordered ci
SELECT n, COUNT(*) FROM settings GROUP BY n ORDER BY n; -- ordered
SELECT label, COUNT(*), SUM(weight) FROM tags GROUP BY label ORDER BY label; -- ordered ci
SELECT tier, AVG(balance), AVG(score), AVG(tier) FROM customers GROUP BY tier ORDER BY tier; -- ordered

-- ===== HAVING (on aggregates, aliases, aggregates not selected) =====
SELECT customer_id, COUNT(*) FROM orders GROUP BY customer_id HAVING COUNT(*) > 20 ORDER BY customer_id; -- ordered prepared
SELECT customer_id, COUNT(*) AS n FROM orders GROUP BY customer_id HAVING n > 20 ORDER BY customer_id; -- ordered
SELECT customer_id FROM orders GROUP BY customer_id HAVING SUM(amount) > 100000 ORDER BY customer_id; -- ordered prepared
SELECT status, COUNT(*) FROM orders GROUP BY status HAVING MAX(qty) >= 20 AND MIN(qty) < 0 ORDER BY status; -- ordered ci
SELECT city, AVG(balance) AS a FROM customers GROUP BY city HAVING a > 50000 ORDER BY city; -- ordered ci
SELECT city FROM customers GROUP BY city HAVING COUNT(*) BETWEEN 40 AND 60 ORDER BY city; -- ordered ci
SELECT kind, SUM(value) FROM events GROUP BY kind HAVING SUM(value) < 0 ORDER BY kind; -- ordered ci
SELECT name, COUNT(*) FROM tags GROUP BY name HAVING COUNT(*) > 12 ORDER BY name; -- ordered ci
SELECT status FROM orders GROUP BY status HAVING status LIKE 'p%'; -- ci
SELECT tier, COUNT(*) c FROM customers GROUP BY tier HAVING c > 5 AND tier IS NOT NULL ORDER BY c DESC, tier; -- ordered
SELECT customer_id, AVG(qty) FROM orders GROUP BY customer_id HAVING AVG(qty) > 12 ORDER BY customer_id; -- ordered
SELECT product_id FROM orders GROUP BY product_id HAVING COUNT(DISTINCT customer_id) > 25 ORDER BY product_id; -- ordered
SELECT customer_id, COUNT(*) FROM orders GROUP BY customer_id HAVING COUNT(*) > 100000;
SELECT status, SUM(qty) AS s FROM orders GROUP BY status HAVING s > 0 AND COUNT(*) > 100 ORDER BY s DESC, status; -- ordered ci

-- ===== ORDER BY an aggregate DESC with LIMIT =====
SELECT customer_id, COUNT(*) AS n FROM orders GROUP BY customer_id ORDER BY n DESC, customer_id LIMIT 5; -- ordered prepared
SELECT customer_id, SUM(amount) AS total FROM orders GROUP BY customer_id ORDER BY total DESC, customer_id LIMIT 10; -- ordered prepared
SELECT customer_id, SUM(amount) FROM orders GROUP BY customer_id ORDER BY SUM(amount) DESC, customer_id LIMIT 3, 3; -- ordered prepared
SELECT city, COUNT(*) FROM customers GROUP BY city ORDER BY COUNT(*) DESC, city LIMIT 3; -- ordered ci
SELECT product_id, SUM(qty) s FROM orders GROUP BY product_id ORDER BY s DESC, product_id LIMIT 10; -- ordered
SELECT name, COUNT(*) FROM tags GROUP BY name ORDER BY 2 DESC, 1 LIMIT 5; -- ordered ci
SELECT customer_id, AVG(qty) FROM orders GROUP BY customer_id ORDER BY AVG(qty), customer_id LIMIT 5; -- ordered
SELECT customer_id, MAX(ordered_at) m FROM orders GROUP BY customer_id ORDER BY m DESC, customer_id LIMIT 5; -- ordered
SELECT kind, AVG(value) a FROM events GROUP BY kind ORDER BY a DESC, kind LIMIT 2; -- ordered ci
SELECT status, COUNT(*) FROM orders GROUP BY status ORDER BY COUNT(*) DESC, status LIMIT 1; -- ordered ci

-- ===== DISTINCT =====
SELECT DISTINCT status FROM orders; -- ci
SELECT DISTINCT status FROM orders ORDER BY status; -- ordered ci
SELECT DISTINCT customer_id FROM orders ORDER BY customer_id; -- ordered
SELECT DISTINCT customer_id FROM orders ORDER BY customer_id LIMIT 10; -- ordered prepared
SELECT DISTINCT city FROM customers ORDER BY city DESC LIMIT 3; -- ordered ci
SELECT DISTINCT tier, city FROM customers ORDER BY tier, city; -- ordered ci
SELECT DISTINCT name FROM tags ORDER BY name; -- ordered ci
SELECT DISTINCT qty FROM orders WHERE customer_id = 7 ORDER BY qty; -- ordered prepared
SELECT DISTINCT kind FROM events WHERE id BETWEEN 100 AND 299 ORDER BY kind; -- ordered ci prepared
SELECT DISTINCT category FROM products ORDER BY category; -- ordered ci
SELECT DISTINCT qty % 5 FROM orders ORDER BY 1; -- ordered
SELECT DISTINCT discount FROM orders ORDER BY discount DESC LIMIT 4; -- ordered
SELECT DISTINCT YEAR(born) FROM customers ORDER BY 1 LIMIT 5; -- ordered
SELECT DISTINCT status, qty FROM orders WHERE qty > 18 ORDER BY status, qty; -- ordered ci

-- ===== GROUP_CONCAT (separator, ORDER BY inside, DISTINCT) =====
SELECT GROUP_CONCAT(id ORDER BY id) FROM customers WHERE id BETWEEN 1 AND 20; -- prepared
SELECT customer_id, GROUP_CONCAT(id ORDER BY id) FROM orders WHERE customer_id IN (1, 2, 3) GROUP BY customer_id ORDER BY customer_id; -- ordered prepared
SELECT customer_id, GROUP_CONCAT(status ORDER BY status, id SEPARATOR '; ') FROM orders WHERE customer_id BETWEEN 1 AND 10 GROUP BY customer_id ORDER BY customer_id; -- ordered
SELECT status, GROUP_CONCAT(DISTINCT qty ORDER BY qty DESC) FROM orders GROUP BY status ORDER BY status; -- ordered ci
SELECT GROUP_CONCAT(DISTINCT status ORDER BY status) FROM orders; -- ci
SELECT GROUP_CONCAT(name ORDER BY id SEPARATOR '') FROM tags WHERE id <= 30;
SELECT city, GROUP_CONCAT(id ORDER BY id DESC SEPARATOR ',') FROM customers GROUP BY city ORDER BY city; -- ordered ci
SELECT GROUP_CONCAT(id ORDER BY id) FROM orders;
SELECT LENGTH(GROUP_CONCAT(id ORDER BY id)) FROM orders; -- refuse: functions of aggregates over shards (arithmetic is merged)
SELECT kind, GROUP_CONCAT(id ORDER BY value, id) FROM events WHERE id < 50 GROUP BY kind ORDER BY kind; -- ordered ci
SELECT GROUP_CONCAT(k ORDER BY k SEPARATOR '|') FROM settings;
SELECT product_id, GROUP_CONCAT(DISTINCT customer_id ORDER BY customer_id) FROM orders WHERE product_id < 5 GROUP BY product_id ORDER BY product_id; -- ordered

-- ===== UNION and UNION ALL =====
SELECT id FROM customers WHERE id < 5 UNION SELECT customer_id FROM orders WHERE customer_id < 5;
SELECT id FROM customers WHERE id < 5 UNION ALL SELECT customer_id FROM orders WHERE customer_id < 5;
SELECT status FROM orders UNION SELECT kind FROM events; -- ci
SELECT status FROM orders UNION SELECT kind FROM events ORDER BY 1; -- ordered ci
SELECT id, 'c' AS src FROM customers WHERE id BETWEEN 1 AND 3 UNION ALL SELECT id, 'p' FROM products WHERE id <= 3 ORDER BY src, id; -- ordered prepared
SELECT name FROM tags WHERE name = 'abc' UNION SELECT name FROM tags WHERE name = 'RED'; -- ci
SELECT name FROM customers WHERE name = 'abc' UNION SELECT city FROM customers WHERE city = 'OSLO'; -- ci
SELECT name FROM tags WHERE name = 'abc' UNION SELECT name FROM customers WHERE name = 'ABC'; -- error
SELECT id FROM events WHERE id < 0 UNION ALL SELECT id FROM events WHERE id > 400 ORDER BY id DESC LIMIT 4; -- ordered
(SELECT id FROM customers ORDER BY id LIMIT 3) UNION ALL (SELECT id FROM customers ORDER BY id DESC LIMIT 3); -- refuse: a UNION branch with its own ORDER BY/LIMIT over shards
SELECT customer_id FROM orders WHERE customer_id = 7 UNION SELECT id FROM customers WHERE id = 7; -- prepared
SELECT id FROM orders WHERE customer_id = 7 UNION ALL SELECT id FROM orders WHERE customer_id = 8 ORDER BY id; -- ordered prepared
SELECT category FROM products UNION SELECT city FROM customers ORDER BY 1 LIMIT 5; -- ordered ci

-- ===== Derived tables and subqueries: co-located and over broadcast tables =====
SELECT * FROM (SELECT id, name FROM customers WHERE id = 7) d; -- prepared
SELECT d.id FROM (SELECT id, amount FROM orders WHERE customer_id = 7) d WHERE d.amount > 100 ORDER BY d.id; -- ordered prepared
SELECT d.id, d.name FROM (SELECT id, name FROM customers WHERE city = 'Paris') d;
SELECT c.id, t.n FROM customers c JOIN (SELECT customer_id, COUNT(*) n FROM orders GROUP BY customer_id) t ON t.customer_id = c.id ORDER BY c.id; -- ordered
SELECT * FROM customers WHERE id IN (SELECT customer_id FROM orders WHERE amount > 4000) ORDER BY id; -- ordered
SELECT id FROM orders WHERE customer_id IN (SELECT id FROM customers WHERE tier = 5) ORDER BY id; -- ordered
SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM customers c WHERE c.id = o.customer_id AND c.tier = 3) ORDER BY o.id; -- ordered
SELECT c.id FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id) ORDER BY c.id LIMIT 20; -- ordered
SELECT c.id, c.name, (SELECT COUNT(*) FROM orders o WHERE o.customer_id = c.id) AS n FROM customers c ORDER BY c.id LIMIT 10; -- ordered
SELECT id FROM orders WHERE product_id IN (SELECT id FROM products WHERE category = 'tools') ORDER BY id; -- ordered
SELECT o.id, (SELECT name FROM products p WHERE p.id = o.product_id) AS product FROM orders o WHERE customer_id = 7 ORDER BY o.id; -- ordered prepared
SELECT * FROM (SELECT p.id, p.name FROM products p WHERE price > 500) d ORDER BY id; -- ordered
SELECT COUNT(*) FROM orders WHERE product_id IN (SELECT id FROM products WHERE price > 500);
SELECT id, amount FROM orders WHERE amount > (SELECT AVG(price) FROM products) AND customer_id = 7 ORDER BY id; -- ordered
SELECT category, (SELECT COUNT(*) FROM products p2 WHERE p2.category = p.category) FROM products p GROUP BY category; -- ci
SELECT id FROM customers WHERE id IN (SELECT customer_id FROM orders ORDER BY id LIMIT 3); -- error

-- ===== Joins orders-customers on the shard key =====
SELECT o.id, o.amount, c.name FROM orders o JOIN customers c ON o.customer_id = c.id WHERE o.customer_id = 7 ORDER BY o.id; -- ordered prepared
SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.id IN (5, 6, 7) ORDER BY o.id; -- ordered prepared
SELECT o.id, c.name, c.city FROM orders o JOIN customers c ON o.customer_id = c.id ORDER BY o.id; -- ordered
SELECT o.id, c.id FROM orders o LEFT JOIN customers c ON o.customer_id = c.id WHERE c.id IS NULL ORDER BY o.id; -- ordered
SELECT c.id, COUNT(o.id) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY c.id ORDER BY c.id; -- ordered
SELECT c.city, COUNT(*), SUM(o.amount) FROM orders o JOIN customers c ON o.customer_id = c.id GROUP BY c.city ORDER BY c.city; -- ordered ci
SELECT c.id, c.name, SUM(o.amount) AS total FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.id, c.name ORDER BY total DESC, c.id LIMIT 10; -- ordered
SELECT COUNT(*) FROM orders o JOIN customers c ON o.customer_id = c.id;
SELECT COUNT(*) FROM customers c, orders o WHERE c.id = o.customer_id AND c.tier = 2;
SELECT o.id, c.name FROM orders o STRAIGHT_JOIN customers c ON o.customer_id = c.id WHERE o.qty > 15 ORDER BY o.id; -- ordered
SELECT c.tier, AVG(o.qty), MAX(o.amount) FROM customers c JOIN orders o ON o.customer_id = c.id WHERE c.id BETWEEN 1 AND 50 GROUP BY c.tier ORDER BY c.tier; -- ordered
SELECT c.id, o.id FROM customers c LEFT JOIN orders o ON o.customer_id = c.id AND o.qty > 18 WHERE c.id < 20 ORDER BY c.id, o.id; -- ordered
SELECT DISTINCT c.city FROM customers c JOIN orders o ON o.customer_id = c.id WHERE o.status = 'new' ORDER BY c.city; -- ordered ci

-- ===== Joins with the broadcast table products =====
SELECT o.id, p.name, p.price FROM orders o JOIN products p ON o.product_id = p.id WHERE o.customer_id = 7 ORDER BY o.id; -- ordered prepared
SELECT p.category, COUNT(*), SUM(o.qty * p.price) FROM orders o JOIN products p ON o.product_id = p.id GROUP BY p.category ORDER BY p.category; -- ordered ci
SELECT o.id, p.id FROM orders o LEFT JOIN products p ON o.product_id = p.id WHERE p.id IS NULL ORDER BY o.id; -- ordered
SELECT o.id, c.name, p.name FROM orders o JOIN customers c ON o.customer_id = c.id JOIN products p ON p.id = o.product_id WHERE c.tier = 1 ORDER BY o.id; -- ordered
SELECT t.id, p.name FROM tags t JOIN products p ON p.id = t.weight ORDER BY t.id; -- ordered
SELECT e.id, p.price FROM events e JOIN products p ON p.id = e.customer_id WHERE e.id BETWEEN 100 AND 200 ORDER BY e.id; -- ordered prepared
SELECT p.name, SUM(o.qty) AS q FROM products p JOIN orders o ON o.product_id = p.id GROUP BY p.id, p.name ORDER BY q DESC, p.id LIMIT 5; -- ordered
SELECT COUNT(*) FROM products p1 JOIN products p2 ON p1.category = p2.category;
SELECT p.id, COUNT(o.id) FROM products p LEFT JOIN orders o ON o.product_id = p.id GROUP BY p.id ORDER BY p.id; -- ordered refuse: outer join from a broadcast table to a sharded one

-- ===== Broadcast and unsharded tables alone =====
SELECT * FROM products WHERE id = 5; -- prepared
SELECT * FROM products ORDER BY id; -- ordered
SELECT category, COUNT(*) FROM products GROUP BY category; -- ci
SELECT COUNT(*), SUM(price), AVG(weight) FROM products; -- prepared
SELECT name FROM products WHERE name LIKE 'widget%' ORDER BY name, id; -- ordered prepared
SELECT DISTINCT name FROM products ORDER BY name LIMIT 5; -- ordered ci
SELECT id, price FROM products WHERE price BETWEEN 100 AND 200 ORDER BY price DESC, id LIMIT 5; -- ordered prepared
SELECT * FROM settings ORDER BY k; -- ordered
SELECT k, v FROM settings WHERE k IN ('theme', 'région', '日本') ORDER BY k; -- ordered prepared

-- ===== Errors (compared by error number) =====
SELECT * FROM no_such_table; -- error
SELECT no_such_column FROM customers; -- error
SELECT no_such_column FROM customers WHERE id = 7; -- error
SELECT * FROM customers WHERE; -- error
SELECT id FROM customers WHERE id = 7 UNION SELECT id, name FROM customers; -- error
SELECT * FROM orders o JOIN customers c ON o.customer_id = c.id WHERE id = 7; -- error

-- ===== Refused by design =====
SELECT o.id, t.name FROM orders o JOIN tags t ON t.customer_id = o.customer_id; -- refuse: join of sharded tables not on the shard key
SELECT o.id, c.name FROM orders o JOIN customers c ON o.id = c.id; -- refuse: join of sharded tables not on the shard key
SELECT e.id, c.name FROM events e JOIN customers c ON e.customer_id = c.id ORDER BY e.id; -- ordered refuse: join of tables sharded differently
SELECT t.id, c.name FROM tags t JOIN customers c ON t.customer_id = c.id WHERE t.name = 'vip' ORDER BY t.id; -- ordered refuse: join of tables sharded differently
SELECT o1.id, o2.id FROM orders o1 JOIN orders o2 ON o1.product_id = o2.product_id WHERE o1.id = 1 ORDER BY o2.id; -- ordered refuse: self-join not on the shard key
SELECT * FROM customers c WHERE EXISTS (SELECT 1 FROM events e WHERE e.customer_id = c.id) ORDER BY c.id; -- ordered refuse: correlated subquery across shards
SELECT c.id FROM customers c WHERE c.id IN (SELECT customer_id FROM tags WHERE name = 'vip') ORDER BY c.id; -- ordered refuse: subquery over a table sharded on another key
SELECT id, (SELECT COUNT(*) FROM orders) AS total FROM customers WHERE id = 5; -- refuse: subquery needing every shard inside a single-shard statement
SELECT id FROM orders WHERE amount > (SELECT AVG(amount) FROM orders) ORDER BY id; -- ordered refuse: subquery needing every shard
SELECT COUNT(*) FROM (SELECT status FROM orders GROUP BY status) d; -- refuse: aggregate over a derived table grouped across shards
SELECT COUNT(*) FROM (SELECT DISTINCT status FROM orders) d; -- refuse: aggregate over a derived table spread over shards
SELECT MAX(n) FROM (SELECT customer_id, COUNT(*) n FROM orders GROUP BY customer_id) d; -- refuse: aggregate over a derived table spread over shards
SELECT * FROM (SELECT id FROM customers ORDER BY id LIMIT 5) d ORDER BY id; -- ordered refuse: LIMIT inside a derived table spread over shards
SELECT id, ROW_NUMBER() OVER (ORDER BY id) FROM customers ORDER BY id; -- ordered refuse: window function over shards
SELECT customer_id, SUM(amount) OVER (PARTITION BY customer_id) FROM orders ORDER BY id; -- refuse: window function over shards
SELECT customer_id, SUM(qty) OVER (ORDER BY id) FROM orders WHERE customer_id = 7 ORDER BY id; -- ordered
SELECT p.id, o.id FROM products p LEFT JOIN orders o ON o.product_id = p.id WHERE p.id > 110 ORDER BY p.id, o.id; -- ordered refuse: outer join from a broadcast table to a sharded one
SELECT s.k, c.name FROM settings s JOIN customers c ON c.id = s.n ORDER BY s.k; -- ordered refuse: join of an unsharded table with a sharded one
SELECT SQL_CALC_FOUND_ROWS id FROM customers ORDER BY id LIMIT 3; -- ordered refuse: SQL_CALC_FOUND_ROWS over shards
SELECT FOUND_ROWS(); -- refuse: FOUND_ROWS after a statement spread over shards
