-- sysbench script: an autocommit INSERT, then SELECT LAST_INSERT_ID(), per event (what an
-- application does that reads the generated key with a query: MyBatis selectKey, hand-written
-- DAOs). Needs the table:
--   CREATE TABLE sbtest.lii_bench (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT)
-- Run: sysbench scripts/probes/insert_then_last_insert_id.lua --mysql-host=127.0.0.1 \
--   --mysql-port=PORT --mysql-user=bench --mysql-password=bench --mysql-db=sbtest \
--   --threads=16 --time=8 --percentile=99 run
function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end

function event()
  con:query("INSERT INTO lii_bench (v) VALUES (1)")
  con:query("SELECT LAST_INSERT_ID()")
end
