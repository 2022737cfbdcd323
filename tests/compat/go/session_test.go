// Session checks for github.com/go-sql-driver/mysql (tests/compat, common checks 1-3 and 5-8;
// the driver has no CHANGE USER):
//
//	TestSessionState     SET NAMES ... COLLATE, SET CHARACTER SET, character_set_results = NULL,
//	                     collation_connection, time_zone, sql_mode, @x, a TEMPORARY table and
//	                     GET_LOCK survive ten other statements (writes, a committed transaction)
//	TestWarnings         SHOW WARNINGS / @@warning_count / SHOW COUNT(*) WARNINGS / GET DIAGNOSTICS
//	                     describe the session's previous statement, also after a failed one
//	TestIdentity         USER() / SESSION_USER() / SYSTEM_USER() / CURRENT_USER, CONNECTION_ID()
//	TestKill             KILL QUERY / KILL CONNECTION from another connection, with
//	                     interpolateParams=false (server prepares) and true (COMPAT_FILTER=kill)
//	TestLoadDataLocal    LOAD DATA LOCAL INFILE via RegisterLocalFile and allowAllFiles
//	TestSessionTracking  SET session_track_* by the client
//	TestReadAfterWrite   a read sees the write acknowledged on another connection, through a
//	                     database/sql pool and through two dedicated connections
//
// Every statement runs under a context deadline (and the DSN's readTimeout): a hang is a failing
// check that names the statement it waited for. Expectations are MariaDB's own answers (the
// same checks pass with tests/compat/run.sh --direct).
package compat

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// stmtTimeout bounds every single statement of these checks.
const stmtTimeout = 15 * time.Second

// openDB opens a pool through TESSERA_PORT (or MariaDB in direct mode) with the suite's DSN,
// changed by mutate; it is closed when the test ends.
func openDB(t *testing.T, mutate func(*mysql.Config)) *sql.DB {
	t.Helper()
	cfg, err := mysql.ParseDSN(proxyDSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ReadTimeout, cfg.WriteTimeout = 20*time.Second, 20*time.Second
	if mutate != nil {
		mutate(cfg)
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return db
}

// sess is one dedicated connection; every call is bounded by stmtTimeout and reports the
// statement it waited for.
type sess struct {
	t    *testing.T // the running (sub)test: a subtest sets it to its own t
	c    *sql.Conn
	name string
}

func newSess(t *testing.T, db *sql.DB, name string) *sess {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
	defer cancel()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatalf("%s: open connection: %v", name, err)
	}
	t.Cleanup(func() { c.Close() })
	return &sess{t, c, name}
}

func (s *sess) describe(q string, err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("%s: %q: no answer within %v (hang)", s.name, q, stmtTimeout)
	}
	return fmt.Sprintf("%s: %q: %v", s.name, q, err)
}

func (s *sess) exec(q string, args ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
	defer cancel()
	_, err := s.c.ExecContext(ctx, q, args...)
	return err
}

func (s *sess) mustExec(q string, args ...any) {
	s.t.Helper()
	if err := s.exec(q, args...); err != nil {
		s.t.Fatal(s.describe(q, err))
	}
}

// query returns every row, each column as text ("NULL" for NULL).
func (s *sess) query(q string, args ...any) ([][]string, error) {
	_, rows, err := queryText(s.c, q, args...)
	return rows, err
}

// queryText runs q on a connection or pool (bounded by stmtTimeout) and returns the column
// names and every row, each column as text ("NULL" for NULL).
func queryText(db interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, q string, args ...any) ([]string, [][]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
	defer cancel()
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, err
	}
	out := [][]string{}
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		dest := make([]any, len(cols))
		for i := range vals {
			dest[i] = &vals[i]
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, nil, err
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = "NULL"
			if v.Valid {
				row[i] = v.String
			}
		}
		out = append(out, row)
	}
	return cols, out, rows.Err()
}

func (s *sess) mustQuery(q string, args ...any) [][]string {
	s.t.Helper()
	rows, err := s.query(q, args...)
	if err != nil {
		s.t.Fatal(s.describe(q, err))
	}
	return rows
}

// row returns the only row of q, tab-joined.
func (s *sess) row(q string, args ...any) string {
	s.t.Helper()
	rows := s.mustQuery(q, args...)
	if len(rows) != 1 {
		s.t.Fatalf("%s: %q: %d rows, want 1: %v", s.name, q, len(rows), rows)
	}
	return strings.Join(rows[0], "\t")
}

// expect checks that q answers want (a text query; with args, a server-side prepared one
// unless the DSN interpolates).
func (s *sess) expect(want, q string, args ...any) {
	s.t.Helper()
	if got := s.row(q, args...); got != want {
		s.t.Errorf("%s: %q %v = %q, want %q", s.name, q, args, got, want)
	}
}

// ---------------------------------------------------------------------------------
// 1. Session state kept across statements
// ---------------------------------------------------------------------------------

// churn runs ten statements, text and prepared, with a write and a committed transaction, so
// that a proxy that loses session state between statements is caught.
func churn(s *sess) {
	s.t.Helper()
	s.mustExec("CREATE TABLE IF NOT EXISTS go_churn (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB")
	s.mustExec("INSERT INTO go_churn (v) VALUES ('text')")
	s.mustExec("INSERT INTO go_churn (v) VALUES (?)", "prepared")
	s.mustExec("BEGIN")
	s.mustExec("UPDATE go_churn SET v = 'updated' WHERE id = LAST_INSERT_ID()")
	s.mustExec("INSERT INTO go_churn (v) VALUES (?)", "in transaction")
	s.mustExec("COMMIT")
	s.row("SELECT COUNT(*) FROM go_churn WHERE id <= LAST_INSERT_ID()")
	s.row("SELECT name FROM demo.customers WHERE id = ?", 2)
	s.row("SELECT SUM(amount) FROM demo.orders")
}

func TestSessionState(t *testing.T) {
	s := newSess(t, proxyDB, "session A")

	t.Run("SET NAMES utf8mb4 COLLATE utf8mb4_bin kept", func(t *testing.T) {
		s.t = t
		s.mustExec("SET NAMES utf8mb4 COLLATE utf8mb4_bin")
		churn(s)
		s.expect("utf8mb4_bin\t0", "SELECT @@collation_connection, 'a' = 'A'")
		s.expect("utf8mb4_bin\t0", "SELECT @@collation_connection, 'a' = ?", "A")
	})
	t.Run("SET NAMES utf8mb4 back to utf8mb4_general_ci", func(t *testing.T) {
		s.t = t
		s.mustExec("SET NAMES utf8mb4")
		churn(s)
		s.expect("utf8mb4_general_ci\t1", "SELECT @@collation_connection, 'a' = 'A'")
		s.expect("utf8mb4_general_ci\t1", "SELECT @@collation_connection, 'a' = ?", "A")
	})
	t.Run("SET CHARACTER SET latin1 kept", func(t *testing.T) {
		s.t = t
		s.mustExec("SET CHARACTER SET latin1")
		churn(s)
		dbCharset := s.row("SELECT @@character_set_database")
		s.expect("latin1\tlatin1\t"+dbCharset, "SELECT @@character_set_client, @@character_set_results, @@character_set_connection")
		s.mustExec("SET NAMES utf8mb4")
	})
	t.Run("SET character_set_results = NULL kept", func(t *testing.T) {
		s.t = t
		s.mustExec("SET character_set_results = NULL")
		churn(s)
		s.expect("NULL\tutf8mb4", "SELECT @@character_set_results, @@character_set_client")
		s.mustExec("SET NAMES utf8mb4")
	})
	t.Run("SET collation_connection = utf8mb4_unicode_ci kept", func(t *testing.T) {
		s.t = t
		s.mustExec("SET collation_connection = utf8mb4_unicode_ci")
		churn(s)
		s.expect("utf8mb4_unicode_ci\tutf8mb4", "SELECT @@collation_connection, @@character_set_connection")
		s.mustExec("SET NAMES utf8mb4")
	})
	t.Run("time_zone, sql_mode, user variable, TEMPORARY table, GET_LOCK kept", func(t *testing.T) {
		s.t = t
		other := newSess(t, proxyDB, "session B")
		s.mustExec("SET time_zone = '+05:30'")
		s.mustExec("SET sql_mode = 'ANSI_QUOTES'")
		s.mustExec("SET @x = 42")
		s.mustExec("CREATE TEMPORARY TABLE go_tmp (id INT PRIMARY KEY, v VARCHAR(10))")
		s.mustExec("INSERT INTO go_tmp VALUES (1, 'one')")
		s.expect("1", "SELECT GET_LOCK('compat_go_lock', 0)")
		churn(s)
		s.mustExec("INSERT INTO go_tmp VALUES (?, ?)", 2, "two")
		churn(s)
		s.expect("+05:30", "SELECT @@time_zone")
		s.expect("05:30", "SELECT TIME_FORMAT(TIMEDIFF(NOW(), UTC_TIMESTAMP()), '%H:%i')")
		s.expect("ANSI_QUOTES", "SELECT @@sql_mode")
		// With ANSI_QUOTES "x" names the column (7); without it, it is the string 'x'.
		s.expect("7", `SELECT "x" FROM (SELECT 7 AS x) AS t`)
		s.expect("42", "SELECT @x")
		s.expect("42", "SELECT @x + ?", 0)
		s.expect("2\tone,two", "SELECT COUNT(*), GROUP_CONCAT(v ORDER BY id) FROM go_tmp")
		if got := other.row("SELECT IS_USED_LOCK('compat_go_lock') IS NOT NULL"); got != "1" {
			t.Errorf("IS_USED_LOCK('compat_go_lock') from another connection is NULL: the lock of session A is gone")
		}
		s.expect("1", "SELECT RELEASE_LOCK('compat_go_lock')")
		s.mustExec("DROP TEMPORARY TABLE go_tmp")
	})
}

// ---------------------------------------------------------------------------------
// 2. Warnings / diagnostics area of the previous statement
// ---------------------------------------------------------------------------------

const castWarning = "Warning\t1292\tTruncated incorrect INTEGER value: 'abc'"

// expectWarnings checks SHOW WARNINGS against want (rows as "Level\tCode\tMessage"; a want
// entry without a message matches on level and code only).
func (s *sess) expectWarnings(after string, want ...string) {
	s.t.Helper()
	rows := s.mustQuery("SHOW WARNINGS")
	got := make([]string, len(rows))
	ok := len(rows) == len(want)
	for i, r := range rows {
		got[i] = strings.Join(r, "\t")
		if ok && got[i] != want[i] && !strings.HasPrefix(got[i], want[i]+"\t") {
			ok = false
		}
	}
	if !ok {
		s.t.Errorf("%s: SHOW WARNINGS after %s = %q, want %q", s.name, after, got, want)
	}
}

func (s *sess) expectError(q string, num uint16) {
	s.t.Helper()
	err := s.exec(q)
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != num {
		s.t.Errorf("%s: %q: got %v, want MySQL error %d", s.name, q, err, num)
	}
}

func TestWarnings(t *testing.T) {
	s := newSess(t, proxyDB, "session")
	cast := func() { s.t.Helper(); s.expect("0", "SELECT CAST('abc' AS SIGNED)") }
	t.Run("SHOW WARNINGS after SELECT CAST('abc' AS SIGNED): one 1292", func(t *testing.T) {
		s.t = t
		cast()
		s.expectWarnings("SELECT CAST", castWarning)
	})
	t.Run("@@warning_count, SHOW COUNT(*) WARNINGS, GET DIAGNOSTICS = 1", func(t *testing.T) {
		s.t = t
		cast()
		s.expect("1", "SELECT @@warning_count")
		cast()
		s.expect("1", "SHOW COUNT(*) WARNINGS")
		cast()
		s.mustExec("GET DIAGNOSTICS @n = NUMBER")
		s.expect("1", "SELECT @n")
	})
	t.Run("SHOW WARNINGS after a prepared SELECT CAST(? AS SIGNED)", func(t *testing.T) {
		s.t = t
		s.expect("0", "SELECT CAST(? AS SIGNED)", "abc")
		s.expectWarnings("prepared SELECT CAST", castWarning)
	})
	t.Run("SHOW WARNINGS after failed USE / missing table: that error", func(t *testing.T) {
		s.t = t
		s.expectError("USE no_such_db_xyz", 1049)
		s.expectWarnings("USE no_such_db_xyz", "Error\t1049\tUnknown database 'no_such_db_xyz'")
		s.expectError("SELECT * FROM no_such_table_xyz", 1146)
		s.expectWarnings("SELECT from a missing table", "Error\t1146")
	})
	t.Run("failed USE then SELECT CAST: SHOW WARNINGS lists only the 1292", func(t *testing.T) {
		s.t = t
		s.expectError("USE no_such_db_xyz", 1049)
		cast()
		s.expectWarnings("USE no_such_db_xyz; SELECT CAST", castWarning)
	})
	t.Run("statement without warnings clears them; SELECT 1 keeps them (as MariaDB does)", func(t *testing.T) {
		s.t = t
		cast()
		s.row("SELECT COUNT(*) FROM demo.customers")
		s.expectWarnings("SELECT COUNT(*) FROM demo.customers")
		cast()
		s.row("SELECT COUNT(*) FROM demo.customers")
		s.expect("0", "SELECT @@warning_count")
		// MariaDB 10.11 does not reset the diagnostics area for a statement that uses no
		// table: after SELECT CAST ...; SELECT 1 the 1292 is still listed.
		cast()
		s.expect("1", "SELECT 1")
		s.expectWarnings("SELECT CAST; SELECT 1", castWarning)
	})
}

// ---------------------------------------------------------------------------------
// 3. Identity
// ---------------------------------------------------------------------------------

func TestIdentity(t *testing.T) {
	user := env("TESSERA_USER", "app")
	s := newSess(t, proxyDB, "session A")
	t.Run("USER(), SESSION_USER(), SYSTEM_USER(), CURRENT_USER", func(t *testing.T) {
		s.t = t
		login := user + "@127.0.0.1"
		s.expect(login+"\t"+login+"\t"+login, "SELECT USER(), SESSION_USER(), SYSTEM_USER()")
		s.expect(login+"\t1", "SELECT USER(), ?", 1)
		s.expect(user+"@%\t"+user+"@%", "SELECT CURRENT_USER(), CURRENT_USER")
		s.expect(user+"@%\t1", "SELECT CURRENT_USER(), ?", 1)
	})
	t.Run("CONNECTION_ID() stable on a connection, distinct across connections", func(t *testing.T) {
		s.t = t
		first := s.row("SELECT CONNECTION_ID()")
		for i := 0; i < 10; i++ {
			q, args := "SELECT CONNECTION_ID()", []any(nil)
			if i%2 == 1 {
				q, args = "SELECT CONNECTION_ID() + ?", []any{0}
			}
			if i%3 == 0 {
				s.mustExec("DO ?", i)
			}
			if got := s.row(q, args...); got != first {
				t.Errorf("statement %d: CONNECTION_ID() = %s, first was %s", i, got, first)
			}
		}
		if other := newSess(t, proxyDB, "session B").row("SELECT CONNECTION_ID()"); other == first {
			t.Errorf("two connections share CONNECTION_ID() %s", first)
		}
	})
}

// ---------------------------------------------------------------------------------
// 5. KILL [QUERY] from another connection
// ---------------------------------------------------------------------------------

// serverDBs are the demo's servers themselves (primary and replicas, admin account), where
// the KILL checks watch information_schema.PROCESSLIST.
var (
	serverDBsOnce sync.Once
	serverDBs     map[string]*sql.DB
)

func servers(t *testing.T) map[string]*sql.DB {
	t.Helper()
	serverDBsOnce.Do(func() {
		serverDBs = map[string]*sql.DB{}
		ports := []string{os.Getenv("MARIADB_PORT")}
		for _, p := range strings.Split(os.Getenv("MARIADB_REPLICA_PORTS"), ",") {
			if p = strings.TrimSpace(p); p != "" {
				ports = append(ports, p)
			}
		}
		for _, p := range ports {
			if p == "" {
				continue
			}
			db, err := sql.Open("mysql", dsn(env("MARIADB_USER", "tessera"), env("MARIADB_PASSWORD", "tessera"),
				env("MARIADB_HOST", "127.0.0.1"), p, "", ""))
			if err == nil {
				serverDBs[p] = db
			}
		}
	})
	if len(serverDBs) == 0 {
		t.Fatal("MARIADB_PORT not set: cannot watch PROCESSLIST")
	}
	return serverDBs
}

// waitRunning polls the process list of every server until a statement containing marker
// runs. SHOW FULL PROCESSLIST, not information_schema.PROCESSLIST: the latter materializes an
// Aria temporary table in tmpdir (/tmp), where another sandbox MariaDB starting up deletes it
// (mysql_rm_tmp_tables) and this server then crashes freeing it.
func waitRunning(t *testing.T, marker string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		for port, db := range servers(t) {
			cols, rows, err := queryText(db, "SHOW FULL PROCESSLIST")
			if err != nil {
				return fmt.Errorf("SHOW FULL PROCESSLIST on port %s: %v", port, err)
			}
			for _, r := range rows {
				for i, c := range cols {
					if c == "Info" && strings.Contains(r[i], marker) {
						return nil
					}
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no statement with %q in the process list of any server after %v", marker, limit)
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}

// connID returns CONNECTION_ID() as text and as a number (the KILL argument).
func (s *sess) connID() (string, int64) {
	s.t.Helper()
	text := s.row("SELECT CONNECTION_ID()")
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		s.t.Fatalf("%s: CONNECTION_ID() = %q", s.name, text)
	}
	return text, n
}

type sleepResult struct {
	value   string
	err     error
	elapsed time.Duration
}

// startSleep runs SELECT SLEEP(5) /* marker */ on a (prepared when the DSN does not interpolate).
func startSleep(a *sql.Conn, marker string) <-chan sleepResult {
	done := make(chan sleepResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
		defer cancel()
		t0 := time.Now()
		var v sql.NullString
		err := a.QueryRowContext(ctx, "SELECT SLEEP(?) /* "+marker+" */", 5).Scan(&v)
		done <- sleepResult{v.String, err, time.Since(t0)}
	}()
	return done
}

func TestKill(t *testing.T) {
	for _, interpolate := range []bool{false, true} {
		t.Run(fmt.Sprintf("interpolateParams=%v", interpolate), func(t *testing.T) {
			db := openDB(t, func(c *mysql.Config) { c.InterpolateParams = interpolate })
			db.SetMaxOpenConns(4)
			b := newSess(t, db, "killer B")
			a := newSess(t, db, "victim A")
			n, id := a.connID()

			t.Run("KILL QUERY of a running SELECT SLEEP(5)", func(t *testing.T) {
				a.t, b.t = t, t
				marker := fmt.Sprintf("go-kill-query-%v-%d", interpolate, time.Now().UnixNano())
				done := startSleep(a.c, marker)
				if err := waitRunning(t, marker, 10*time.Second); err != nil {
					t.Error(err)
				} else if err := b.exec("KILL QUERY ?", id); err != nil {
					t.Errorf("B: KILL QUERY %s (A's CONNECTION_ID()): %v", n, err)
				}
				var r sleepResult
				select {
				case r = <-done:
				case <-time.After(30 * time.Second):
					t.Fatalf("A: SELECT SLEEP(5) did not return within 30 s after KILL QUERY (hang)")
				}
				t.Logf("A: SELECT SLEEP(5) answered %q, err %v after %v", r.value, r.err, r.elapsed.Round(time.Millisecond))
				var me *mysql.MySQLError
				interrupted := (errors.As(r.err, &me) && me.Number == 1317) || (r.err == nil && r.value == "1")
				if !interrupted || r.elapsed > 4*time.Second {
					t.Errorf("A: SELECT SLEEP(5) answered %q, err %v after %v; want error 1317 or 1, well before 5 s",
						r.value, r.err, r.elapsed.Round(time.Millisecond))
				}
				a.expect("1", "SELECT 1")
				a.expect(n, "SELECT CONNECTION_ID()")
			})
			t.Run("KILL CONNECTION: the killed connection fails, the pool recovers", func(t *testing.T) {
				a.t, b.t = t, t
				if err := b.exec("KILL ?", id); err != nil {
					t.Errorf("B: KILL %s: %v", n, err)
				}
				err := a.exec("SELECT 1")
				if err == nil {
					t.Errorf("A: statement after KILL %s succeeded, want a connection error", n)
				} else if errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("A: %s", a.describe("SELECT 1 after KILL", err))
				}
				a.c.Close()
				for i := 0; i < 5; i++ {
					ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
					var got string
					err := db.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&got)
					cancel()
					if err != nil || got == n {
						t.Errorf("pool after KILL %s: query %d: CONNECTION_ID() %q, err %v", n, i, got, err)
					}
				}
				newSess(t, db, "new connection").expect("1", "SELECT 1")
			})
			t.Run("KILL QUERY of an idle connection: OK, connection usable", func(t *testing.T) {
				b.t = t
				c := newSess(t, db, "idle C")
				cid, cnum := c.connID()
				if err := b.exec("KILL QUERY ?", cnum); err != nil {
					t.Errorf("B: KILL QUERY %s (idle): %v", cid, err)
				}
				c.expect("1", "SELECT 1")
				c.expect(cid, "SELECT CONNECTION_ID()")
			})
			t.Run("KILL of an unknown id: 1094", func(t *testing.T) {
				b.t = t
				for _, q := range []string{"KILL QUERY ?", "KILL ?", "KILL CONNECTION ?"} {
					err := b.exec(q, 999999999)
					var me *mysql.MySQLError
					if !errors.As(err, &me) || me.Number != 1094 {
						t.Errorf("B: %s with 999999999: %v, want error 1094", q, err)
					}
				}
				b.expect("1", "SELECT 1")
			})
		})
	}
}

// ---------------------------------------------------------------------------------
// 6. LOAD DATA LOCAL INFILE
// ---------------------------------------------------------------------------------

func TestLoadDataLocal(t *testing.T) {
	dir := t.TempDir()
	csv := "1,plain,1.5\n2,\"with, comma\",-2\n3,\"héllo 🚀\",\\N\n"
	registered, anyFile := filepath.Join(dir, "registered.csv"), filepath.Join(dir, "any.csv")
	for _, f := range []string{registered, anyFile} {
		if err := os.WriteFile(f, []byte(csv), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mysql.RegisterLocalFile(registered)
	defer mysql.DeregisterLocalFile(registered)
	load := func(s *sess, file string) error {
		s.mustExec("DROP TABLE IF EXISTS go_load")
		s.mustExec("CREATE TABLE go_load (id INT PRIMARY KEY, s VARCHAR(40), d DECIMAL(6,2)) DEFAULT CHARSET=utf8mb4")
		return s.exec("LOAD DATA LOCAL INFILE '" + file + "' INTO TABLE go_load CHARACTER SET utf8mb4 " +
			`FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' LINES TERMINATED BY '\n'`)
	}
	check := func(s *sess) {
		s.expect("3", "SELECT COUNT(*) FROM go_load")
		s.expect("1,plain,1.50|2,with, comma,-2.00|3,héllo 🚀,NULL",
			"SELECT GROUP_CONCAT(CONCAT_WS(',', id, s, IFNULL(d, 'NULL')) ORDER BY id SEPARATOR '|') FROM go_load")
	}
	t.Run("RegisterLocalFile", func(t *testing.T) {
		s := newSess(t, proxyDB, "session")
		if err := load(s, registered); err != nil {
			t.Fatal(s.describe("LOAD DATA LOCAL INFILE (registered file)", err))
		}
		check(s)
	})
	t.Run("allowAllFiles=true", func(t *testing.T) {
		s := newSess(t, openDB(t, func(c *mysql.Config) { c.AllowAllFiles = true }), "allowAllFiles session")
		if err := load(s, anyFile); err != nil {
			t.Fatal(s.describe("LOAD DATA LOCAL INFILE (allowAllFiles)", err))
		}
		check(s)
	})
	t.Run("unregistered file refused by the driver, connection usable", func(t *testing.T) {
		s := newSess(t, proxyDB, "session")
		if err := load(s, anyFile); err == nil {
			t.Errorf("LOAD DATA LOCAL of an unregistered file without allowAllFiles succeeded")
		}
		s.expect("0", "SELECT COUNT(*) FROM go_load")
		s.expect("1", "SELECT 1")
	})
}

// ---------------------------------------------------------------------------------
// 7. Session tracking settable by the client
// ---------------------------------------------------------------------------------

func TestSessionTracking(t *testing.T) {
	// A pool of its own (closed at the end): the tracking settings stay off proxyDB.
	s := newSess(t, openDB(t, nil), "session")
	for _, q := range []string{"SET session_track_schema = OFF", "SET session_track_state_change = ON",
		"SET session_track_system_variables = 'autocommit'"} {
		if err := s.exec(q); err != nil {
			t.Errorf("%s", s.describe(q, err))
		}
	}
	s.expect("autocommit\t0\t1", "SELECT @@session_track_system_variables, @@session_track_schema, @@session_track_state_change")
	// Statements whose OK packets carry tracked state still work.
	s.mustExec("SET autocommit = 0")
	s.mustExec("SET autocommit = 1")
	s.mustExec("USE " + dbName)
	s.expect(dbName+"\t1", "SELECT DATABASE(), @@autocommit")
}

// ---------------------------------------------------------------------------------
// 8. Reads see writes acknowledged on another connection
// ---------------------------------------------------------------------------------

func TestReadAfterWrite(t *testing.T) {
	setup := newSess(t, proxyDB, "setup")
	setup.mustExec("DROP TABLE IF EXISTS go_raw")
	setup.mustExec("CREATE TABLE go_raw (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
	const rounds = 200

	// roundTrip inserts id through w (autocommit) and selects it through r, each as a text or
	// a prepared statement; bounded.
	type execer interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}
	roundTrip := func(w, r execer, id int) string {
		ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
		defer cancel()
		var err error
		if id%2 == 0 {
			_, err = w.ExecContext(ctx, fmt.Sprintf("INSERT INTO go_raw VALUES (%d, %d)", id, id))
		} else {
			_, err = w.ExecContext(ctx, "INSERT INTO go_raw VALUES (?, ?)", id, id)
		}
		if err != nil {
			return fmt.Sprintf("id %d: insert: %v", id, err)
		}
		var n int
		if id/2%2 == 0 { // all four combinations of text/prepared write and read
			err = r.QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*) FROM go_raw WHERE id = %d", id)).Scan(&n)
		} else {
			err = r.QueryRowContext(ctx, "SELECT COUNT(*) FROM go_raw WHERE id = ?", id).Scan(&n)
		}
		if err != nil {
			return fmt.Sprintf("id %d: select: %v", id, err)
		}
		if n != 1 {
			return fmt.Sprintf("id %d: not visible to the read right after the acknowledged insert", id)
		}
		return ""
	}
	report := func(t *testing.T, misses []string) {
		t.Helper()
		if len(misses) > 0 {
			t.Errorf("%d of %d rounds missed, e.g. %q", len(misses), rounds, misses[:min(5, len(misses))])
		}
	}

	t.Run("database/sql pool (SetMaxOpenConns 4, 4 goroutines)", func(t *testing.T) {
		db := openDB(t, nil)
		db.SetMaxOpenConns(4)
		db.SetMaxIdleConns(4)
		var mu sync.Mutex
		var misses []string
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < rounds/4; i++ {
					if m := roundTrip(db, db, 1000+g*rounds+i); m != "" {
						mu.Lock()
						misses = append(misses, m)
						mu.Unlock()
					}
				}
			}(g)
		}
		wg.Wait()
		report(t, misses)
	})
	t.Run("two dedicated connections", func(t *testing.T) {
		a, b := newSess(t, proxyDB, "writer A"), newSess(t, proxyDB, "reader B")
		var misses []string
		for i := 0; i < rounds; i++ {
			if m := roundTrip(a.c, b.c, 10000+i); m != "" {
				misses = append(misses, m)
			}
		}
		report(t, misses)
	})
}
