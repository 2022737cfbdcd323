package tessera.compat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static tessera.compat.CompatMain.DB;
import static tessera.compat.CompatMain.alive;
import static tessera.compat.CompatMain.check;
import static tessera.compat.CompatMain.describe;
import static tessera.compat.CompatMain.drv;
import static tessera.compat.CompatMain.env;
import static tessera.compat.CompatMain.eq;
import static tessera.compat.CompatMain.exec;
import static tessera.compat.CompatMain.expectError;
import static tessera.compat.CompatMain.notes;
import static tessera.compat.CompatMain.proxy;
import static tessera.compat.CompatMain.skip;
import static tessera.compat.CompatMain.url;

/**
 * The session checks every compat suite has (tests/compat, common.md 1-8), with the current driver:
 * session state kept across statements (SET NAMES, SET CHARACTER SET, character_set_results,
 * collation_connection, time_zone, sql_mode, user variables, temporary table, GET_LOCK), the
 * warnings / diagnostics area, identity (USER(), CURRENT_USER(), CONNECTION_ID()), change user,
 * KILL [QUERY] from another connection and Statement.cancel(), LOAD DATA LOCAL INFILE, settable
 * session_track_* variables, and read-after-write on two connections and through HikariCP.
 * Expectations are MariaDB's own answers (run.sh --direct checks them against MariaDB itself).
 */
final class SessionChecks {
    private SessionChecks() {}

    /** Server prepares without the driver's statement cache: every prepare is a COM_STMT_PREPARE of the current session state. */
    static final String SPS = "&useServerPrepStmts=true&cachePrepStmts=false";
    /** KILL checks: every read bounded (a hang fails the check instead of stopping the suite). */
    static final String KILL = SPS + "&socketTimeout=30000";
    static final int KILL_WAIT_S = 30;

    static void run() {
        check("session: SET NAMES utf8mb4 COLLATE utf8mb4_bin, then SET NAMES utf8mb4, kept across statements", SessionChecks::setNames);
        String cs = "session: SET CHARACTER SET latin1 kept across statements";
        if (drv.utf8Only) {
            skip(cs, drv.label + " closes the connection when character_set_client becomes latin1 (only utf8 / utf8mb3 / utf8mb4)");
        } else {
            check(cs, SessionChecks::characterSet);
        }
        check("session: SET character_set_results = NULL, SET collation_connection = utf8mb4_unicode_ci kept", SessionChecks::resultsNullCollation);
        check("session: time_zone, sql_mode ANSI_QUOTES, user variable, TEMPORARY table kept across statements", SessionChecks::sessionVars);
        check("session: GET_LOCK held (IS_USED_LOCK from another connection), RELEASE_LOCK", SessionChecks::namedLock);
        check("diagnostics: SELECT CAST('abc' AS SIGNED) -> SHOW WARNINGS, @@warning_count, SHOW COUNT(*) WARNINGS, GET DIAGNOSTICS (text)",
                b -> castWarnings(b, false));
        check("diagnostics: SELECT CAST(? AS SIGNED) -> SHOW WARNINGS, @@warning_count, SHOW COUNT(*) WARNINGS, GET DIAGNOSTICS (server prepare)",
                b -> castWarnings(b, true));
        check("diagnostics: SHOW WARNINGS after a failed statement lists its error (1049, 1146), then only the next statement's", SessionChecks::errorWarnings);
        check("diagnostics: no warnings on a new connection; CAST then SELECT 1 keeps Warning 1292, CAST then a SELECT from a table clears it",
                SessionChecks::noWarnings);
        check("identity: USER(), SESSION_USER(), SYSTEM_USER(), CURRENT_USER(); CONNECTION_ID() stable, differs between connections", SessionChecks::identity);
        String cu = "change user (COM_CHANGE_USER) to " + env("TESSERA_USER2", "app2") + " and back: CURRENT_USER(), USER(), user variables reset";
        if (drv.noChangeUser() != null) {
            skip(cu, drv.noChangeUser());
        } else {
            check(cu, SessionChecks::changeUser);
        }
        check("KILL QUERY <CONNECTION_ID()> from another connection ends a running SELECT SLEEP(5) early; the connection stays usable", SessionChecks::killQuery);
        check("KILL <CONNECTION_ID()> from another connection: OK, the killed connection's next statement fails, a new connection works", SessionChecks::killConnection);
        check("KILL QUERY of an idle connection answers OK; KILL / KILL QUERY of an unknown id answer 1094", SessionChecks::killIdleUnknown);
        check("KILL QUERY by Statement.cancel() (new connection, id from the handshake) ends a running prepared SLEEP early", SessionChecks::killByCancel);
        check("LOAD DATA LOCAL INFILE of a 3-row CSV (" + drv.localInfile.substring(1) + ")", SessionChecks::loadDataLocal);
        check("session tracking: SET session_track_schema / _state_change / _system_variables by the client", SessionChecks::sessionTrack);
        check("read-after-write: a row inserted on connection A is seen at once on connection B (200 rounds)", SessionChecks::readAfterWrite);
        check("read-after-write through HikariCP: insert on one pooled connection, read on another (200 rounds)", SessionChecks::readAfterWritePooled);
    }

    // -----------------------------------------------------------------------------------------
    // Helpers
    // -----------------------------------------------------------------------------------------

    /** The first column of the first row of a text query (COM_QUERY). */
    static String text(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet r = s.executeQuery(sql)) {
            return r.next() ? r.getString(1) : "<no row>";
        }
    }

    /** The first column of the first row of a server-prepared query (COM_STMT_PREPARE / EXECUTE). */
    static String prepared(Connection c, String sql, Object... params) throws SQLException {
        try (PreparedStatement p = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) p.setObject(i + 1, params[i]);
            try (ResultSet r = p.executeQuery()) {
                return r.next() ? r.getString(1) : "<no row>";
            }
        }
    }

    static String query(Connection c, String sql, boolean prepared) throws SQLException {
        return prepared ? prepared(c, sql) : text(c, sql);
    }

    /** sql answers want, both as a text query and as a server-prepared statement. */
    static void expect(List<String> bad, Connection c, String sql, String want) throws SQLException {
        eq(bad, sql + " (text)", text(c, sql), want);
        eq(bad, sql + " (prepared)", prepared(c, sql), want);
    }

    /**
     * Twelve other statements between setting session state and reading it back: text and prepared
     * writes, a committed transaction, reads. A proxy that lost the session state on any of them
     * (e.g. moved the session to another backend connection) is caught by the reads after it.
     */
    static void busywork(Connection c) throws SQLException {
        exec(c, "CREATE TABLE IF NOT EXISTS busy (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB");
        exec(c, "INSERT INTO busy (v) VALUES ('text')");
        try (PreparedStatement p = c.prepareStatement("INSERT INTO busy (v) VALUES (?)")) {
            p.setString(1, "prepared");
            p.executeUpdate();
        }
        c.setAutoCommit(false);
        exec(c, "INSERT INTO busy (v) VALUES ('tx')");
        exec(c, "UPDATE busy SET v = 'tx2' WHERE v = 'tx'");
        c.commit();
        c.setAutoCommit(true);
        text(c, "SELECT COUNT(*) FROM busy");
        prepared(c, "SELECT MAX(id) FROM busy WHERE id > ?", 0);
        text(c, "SELECT 1 + 1");
        exec(c, "DO 1");
        prepared(c, "SELECT ?", "x");
    }

    /** "Level Code" of every SHOW WARNINGS row. */
    static List<String> warnings(Connection c) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SHOW WARNINGS")) {
            while (r.next()) out.add(r.getString(1) + " " + r.getInt(2));
        }
        return out;
    }

    static long connectionId(Connection c) throws SQLException {
        return Long.parseLong(text(c, "SELECT CONNECTION_ID()"));
    }

    /** A statement that must fail with errno code. */
    static void fails(List<String> bad, Connection c, String sql, int code) {
        try {
            exec(c, sql);
            bad.add(sql + ": no error, want " + code);
        } catch (SQLException e) {
            if (e.getErrorCode() != code) bad.add(sql + ": got " + describe(e) + ", want " + code);
        }
    }

    // -----------------------------------------------------------------------------------------
    // 1. Session state
    // -----------------------------------------------------------------------------------------

    static void setNames(List<String> bad) throws Exception {
        try (Connection c = proxy(SPS)) {
            exec(c, "SET NAMES utf8mb4 COLLATE utf8mb4_bin");
            busywork(c);
            expect(bad, c, "SELECT @@collation_connection", "utf8mb4_bin");
            expect(bad, c, "SELECT 'a' = 'A'", "0");
            exec(c, "SET NAMES utf8mb4");
            busywork(c);
            expect(bad, c, "SELECT @@collation_connection", "utf8mb4_general_ci");
            expect(bad, c, "SELECT 'a' = 'A'", "1");
        }
    }

    static void characterSet(List<String> bad) throws Exception {
        try (Connection c = proxy(SPS)) {
            String database = text(c, "SELECT @@character_set_database");
            exec(c, "SET CHARACTER SET latin1");
            busywork(c);
            expect(bad, c, "SELECT @@character_set_client", "latin1");
            expect(bad, c, "SELECT @@character_set_results", "latin1");
            // The server's own @@character_set_database, read in the same state.
            expect(bad, c, "SELECT @@character_set_connection", text(c, "SELECT @@character_set_database"));
            notes.add("(@@character_set_database = " + database + ")");
        }
    }

    static void resultsNullCollation(List<String> bad) throws Exception {
        try (Connection c = proxy(SPS)) {
            exec(c, "SET character_set_results = NULL");
            busywork(c);
            expect(bad, c, "SELECT @@character_set_results IS NULL", "1");
            exec(c, "SET collation_connection = utf8mb4_unicode_ci");
            busywork(c);
            expect(bad, c, "SELECT @@collation_connection", "utf8mb4_unicode_ci");
            expect(bad, c, "SELECT @@character_set_results IS NULL", "1");
        }
    }

    static void sessionVars(List<String> bad) throws Exception {
        try (Connection c = proxy(SPS)) {
            exec(c, "SET time_zone = '+05:30'");
            exec(c, "SET sql_mode = 'ANSI_QUOTES'");
            exec(c, "SET @x = 42");
            exec(c, "CREATE TEMPORARY TABLE tmp_session (id INT PRIMARY KEY, v VARCHAR(20))");
            exec(c, "INSERT INTO tmp_session VALUES (1, 'one')");
            busywork(c);
            try (PreparedStatement p = c.prepareStatement("INSERT INTO tmp_session VALUES (?, ?)")) {
                p.setInt(1, 2);
                p.setString(2, "two");
                p.executeUpdate();
            }
            busywork(c);
            expect(bad, c, "SELECT @@time_zone", "+05:30");
            expect(bad, c, "SELECT TIME_FORMAT(TIMEDIFF(NOW(), UTC_TIMESTAMP()), '%H:%i')", "05:30");
            expect(bad, c, "SELECT @@sql_mode", "ANSI_QUOTES");
            // With ANSI_QUOTES "v" is the column, without it the string 'v'.
            expect(bad, c, "SELECT \"v\" FROM tmp_session WHERE id = 1", "one");
            expect(bad, c, "SELECT @x", "42");
            expect(bad, c, "SELECT GROUP_CONCAT(id, ':', v ORDER BY id) FROM tmp_session", "1:one,2:two");
        }
    }

    static void namedLock(List<String> bad) throws Exception {
        String lock = DB + "_lock";
        try (Connection c = proxy(SPS); Connection other = proxy(SPS)) {
            eq(bad, "GET_LOCK('" + lock + "', 0)", text(c, "SELECT GET_LOCK('" + lock + "', 0)"), "1");
            busywork(c);
            eq(bad, "IS_USED_LOCK from another connection IS NOT NULL", text(other, "SELECT IS_USED_LOCK('" + lock + "') IS NOT NULL"), "1");
            eq(bad, "GET_LOCK from another connection", prepared(other, "SELECT GET_LOCK(?, 0)", lock), "0");
            busywork(c);
            eq(bad, "RELEASE_LOCK by the holder", prepared(c, "SELECT RELEASE_LOCK(?)", lock), "1");
            eq(bad, "IS_USED_LOCK from another connection after RELEASE_LOCK", text(other, "SELECT IS_USED_LOCK('" + lock + "') IS NULL"), "1");
        }
    }

    // -----------------------------------------------------------------------------------------
    // 2. Warnings / diagnostics area
    // -----------------------------------------------------------------------------------------

    /** SELECT CAST('abc' AS SIGNED) (text, or prepared with the string bound): 0 with Warning 1292. */
    static void cast(List<String> bad, Connection c, boolean prepared) throws SQLException {
        String got = prepared ? prepared(c, "SELECT CAST(? AS SIGNED)", "abc") : text(c, "SELECT CAST('abc' AS SIGNED)");
        eq(bad, "CAST('abc' AS SIGNED)", got, "0");
    }

    static void castWarnings(List<String> bad, boolean ps) throws Exception {
        try (Connection c = proxy(SPS)) {
            cast(bad, c, ps);
            eq(bad, "SHOW WARNINGS after CAST", warnings(c), List.of("Warning 1292"));
            cast(bad, c, ps);
            eq(bad, "SELECT @@warning_count after CAST", query(c, "SELECT @@warning_count", ps), "1");
            cast(bad, c, ps);
            eq(bad, "SHOW COUNT(*) WARNINGS after CAST", text(c, "SHOW COUNT(*) WARNINGS"), "1");
            cast(bad, c, ps);
            exec(c, "GET DIAGNOSTICS @n = NUMBER");
            eq(bad, "GET DIAGNOSTICS @n = NUMBER after CAST, SELECT @n", query(c, "SELECT @n", ps), "1");
        }
    }

    static void errorWarnings(List<String> bad) throws Exception {
        try (Connection c = proxy(SPS)) {
            fails(bad, c, "USE no_such_db_xyz", 1049);
            eq(bad, "SHOW WARNINGS after USE no_such_db_xyz", warnings(c), List.of("Error 1049"));
            fails(bad, c, "SELECT * FROM no_such_table_xyz", 1146);
            eq(bad, "SHOW WARNINGS after SELECT from a missing table", warnings(c), List.of("Error 1146"));
            try (PreparedStatement p = c.prepareStatement("SELECT * FROM no_such_table_xyz WHERE id = ?")) {
                p.setInt(1, 1);
                p.executeQuery().close();
                bad.add("prepared SELECT from a missing table: no error");
            } catch (SQLException e) {
                eq(bad, "prepared SELECT from a missing table: error", e.getErrorCode(), 1146);
            }
            eq(bad, "SHOW WARNINGS after a prepared SELECT from a missing table", warnings(c), List.of("Error 1146"));
            fails(bad, c, "USE no_such_db_xyz", 1049);
            cast(bad, c, false);
            eq(bad, "SHOW WARNINGS after failed USE, then CAST", warnings(c), List.of("Warning 1292"));
        }
    }

    /**
     * MariaDB clears the diagnostics area only on a statement that uses a table or raises messages:
     * SELECT 1 after the CAST keeps its Warning 1292, a SELECT from a table clears it.
     */
    static void noWarnings(List<String> bad) throws Exception {
        try (Connection c = proxy(SPS)) {
            eq(bad, "SELECT 1 on a new connection", text(c, "SELECT 1"), "1");
            eq(bad, "SHOW WARNINGS after SELECT 1 on a new connection", warnings(c), List.of());
            eq(bad, "SELECT 1 on a new connection", text(c, "SELECT 1"), "1");
            eq(bad, "SELECT @@warning_count after SELECT 1 on a new connection", text(c, "SELECT @@warning_count"), "0");
            exec(c, "CREATE TABLE IF NOT EXISTS diag_t (id INT PRIMARY KEY) ENGINE=InnoDB");
            for (boolean ps : new boolean[] {false, true}) {
                String how = ps ? " (prepared)" : " (text)";
                cast(bad, c, ps);
                eq(bad, "SELECT 1", query(c, "SELECT 1", ps), "1");
                eq(bad, "SHOW WARNINGS after CAST, SELECT 1 (no table: the CAST's warning stays)" + how, warnings(c), List.of("Warning 1292"));
                cast(bad, c, ps);
                eq(bad, "SELECT COUNT(*) FROM diag_t", query(c, "SELECT COUNT(*) FROM diag_t", ps), "0");
                eq(bad, "SHOW WARNINGS after CAST, SELECT from a table" + how, warnings(c), List.of());
                cast(bad, c, ps);
                eq(bad, "SELECT COUNT(*) FROM diag_t", query(c, "SELECT COUNT(*) FROM diag_t", ps), "0");
                eq(bad, "SELECT @@warning_count after CAST, SELECT from a table" + how, query(c, "SELECT @@warning_count", ps), "0");
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // 3. Identity, 4. change user
    // -----------------------------------------------------------------------------------------

    /** USER() and friends answer name@127.0.0.1 (the client's address), CURRENT_USER() the account name@%. */
    static void expectUser(List<String> bad, Connection c, String name) throws SQLException {
        for (String f : new String[] {"USER()", "SESSION_USER()", "SYSTEM_USER()"}) expect(bad, c, "SELECT " + f, name + "@127.0.0.1");
        expect(bad, c, "SELECT CURRENT_USER()", name + "@%");
        expect(bad, c, "SELECT CURRENT_USER", name + "@%");
    }

    static void identity(List<String> bad) throws Exception {
        try (Connection c = proxy(SPS); Connection other = proxy(SPS)) {
            expectUser(bad, c, CompatMain.user);
            long id = connectionId(c);
            for (int i = 0; i < 10; i++) {
                String got = i % 2 == 0 ? text(c, "SELECT CONNECTION_ID()") : prepared(c, "SELECT CONNECTION_ID() + ?", 0);
                eq(bad, "CONNECTION_ID() on statement " + i, got, Long.toString(id));
                if (i == 4) busywork(c);
            }
            long otherId = connectionId(other);
            if (otherId == id) bad.add("two connections have the same CONNECTION_ID() " + id);
        }
    }

    static void changeUser(List<String> bad) throws Exception {
        String user2 = env("TESSERA_USER2", "app2"), password2 = env("TESSERA_PASSWORD2", "app2");
        try (Connection c = proxy(SPS)) {
            exec(c, "SET @x = 42");
            drv.changeUser(c, user2, password2);
            expect(bad, c, "SELECT CURRENT_USER()", user2 + "@%");
            String u = text(c, "SELECT USER()");
            if (!u.startsWith(user2 + "@")) bad.add("USER() after change user: got " + u + ", want " + user2 + "@...");
            expect(bad, c, "SELECT @x IS NULL", "1");
            exec(c, "SET @x = 43");
            busywork(c);
            drv.changeUser(c, CompatMain.user, CompatMain.password);
            expectUser(bad, c, CompatMain.user);
            expect(bad, c, "SELECT @x IS NULL", "1");
            alive(c, "change user", bad);
        }
    }

    // -----------------------------------------------------------------------------------------
    // 5. KILL
    // -----------------------------------------------------------------------------------------

    /** Admin connections straight to every server (primary and replicas), to watch the PROCESSLIST. */
    static List<Connection> servers() throws SQLException {
        List<String> ports = new ArrayList<>();
        ports.add(env("MARIADB_PORT", ""));
        for (String p : env("MARIADB_REPLICA_PORTS", "").split(",")) ports.add(p.trim());
        List<Connection> out = new ArrayList<>();
        for (String p : ports) {
            if (p.isEmpty()) continue;
            out.add(DriverManager.getConnection(drv.url(env("MARIADB_HOST", "127.0.0.1"), Integer.parseInt(p), "", "&socketTimeout=10000"),
                    env("MARIADB_USER", "tessera"), env("MARIADB_PASSWORD", "tessera")));
        }
        if (out.isEmpty()) throw new SQLException("MARIADB_PORT is not set: cannot watch the PROCESSLIST");
        return out;
    }

    /** Polls every server's PROCESSLIST until a statement containing marker runs (at most 20 s, or until running is done). */
    static boolean awaitRunning(String marker, Future<?> running, List<String> bad) throws Exception {
        List<Connection> conns = servers();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (System.nanoTime() < deadline && !running.isDone()) {
                for (Connection s : conns) {
                    if (!"0".equals(text(s, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%" + marker
                            + "%' AND ID <> CONNECTION_ID()"))) {
                        return true;
                    }
                }
                Thread.sleep(10); // poll interval
            }
        } finally {
            for (Connection s : conns) s.close();
        }
        bad.add("the statement /* " + marker + " */ never showed in any server's PROCESSLIST"
                + (running.isDone() ? " (it ended first: " + running.get() + ")" : " within 20 s"));
        return false;
    }

    interface Query {
        ResultSet run() throws SQLException;
    }

    /** Runs q (a SLEEP(5) with a marker comment) on its own thread: "SLEEP returned n" or "error code/state message". */
    static Future<String> sleepOn(ExecutorService ex, Query q) {
        return ex.submit(() -> {
            try (ResultSet r = q.run()) {
                return r.next() ? "SLEEP returned " + r.getInt(1) : "no row";
            } catch (SQLException e) {
                return "error " + e.getErrorCode() + "/" + e.getSQLState() + " " + e.getMessage();
            }
        });
    }

    /**
     * The interrupted SLEEP(5) ended early (error 1317 Query execution was interrupted, or SLEEP
     * returned 1; a driver's own cancel error too when allowCancelError), and the connection still
     * answers with the same CONNECTION_ID().
     */
    static void interrupted(List<String> bad, Future<String> f, long t0, Connection a, long n, boolean allowCancelError) throws Exception {
        String outcome;
        try {
            outcome = f.get(KILL_WAIT_S, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            bad.add("the SLEEP(5) did not end within " + KILL_WAIT_S + " s (hang)");
            return;
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        boolean ok = outcome.equals("SLEEP returned 1") || outcome.startsWith("error 1317/")
                || (allowCancelError && outcome.startsWith("error ") && outcome.contains("/70100 "));
        if (!ok) bad.add("interrupted SLEEP(5): got " + outcome + ", want error 1317 or SLEEP returned 1");
        if (secs > 4.5) bad.add(String.format("SLEEP(5) ended after %.1f s: not interrupted", secs));
        notes.add(String.format("(SLEEP(5): %s after %.2f s)", outcome, secs));
        alive(a, "KILL QUERY", bad);
        eq(bad, "CONNECTION_ID() after KILL QUERY", connectionId(a), n);
    }

    static void killQuery(List<String> bad) throws Exception {
        ExecutorService ex = Executors.newSingleThreadExecutor();
        try (Connection a = proxy(KILL); Connection b = proxy(KILL); Statement s = a.createStatement()) {
            long n = connectionId(a);
            String marker = "compat-java-" + drv.id + "-kill-query-" + System.nanoTime();
            long t0 = System.nanoTime();
            Future<String> f = sleepOn(ex, () -> s.executeQuery("SELECT SLEEP(5) /* " + marker + " */"));
            if (!awaitRunning(marker, f, bad)) return;
            try {
                exec(b, "KILL QUERY " + n);
            } catch (SQLException e) {
                bad.add("KILL QUERY " + n + " (A's CONNECTION_ID()): " + describe(e));
            }
            interrupted(bad, f, t0, a, n, false);
        } finally {
            ex.shutdownNow();
        }
    }

    static void killConnection(List<String> bad) throws Exception {
        try (Connection a = proxy(KILL); Connection b = proxy(KILL)) {
            long n = connectionId(a);
            try {
                exec(b, "KILL " + n);
            } catch (SQLException e) {
                bad.add("KILL " + n + " (A's CONNECTION_ID()): " + describe(e));
            }
            long t0 = System.nanoTime();
            try {
                String got = text(a, "SELECT 1");
                bad.add("the killed connection still answers SELECT 1 = " + got);
            } catch (SQLException e) {
                double secs = (System.nanoTime() - t0) / 1e9;
                notes.add(String.format("(killed connection: %s after %.2f s)", describe(e).lines().findFirst().orElse(""), secs));
                if (secs > 10) bad.add(String.format("the killed connection's statement failed only after %.1f s (hang until the read timeout)", secs));
            }
            eq(bad, "the other connection after KILL", text(b, "SELECT 1"), "1");
        }
        try (Connection c = proxy(SPS)) {
            eq(bad, "a new connection after KILL", prepared(c, "SELECT ? + 1", 1), "2");
        }
    }

    static void killIdleUnknown(List<String> bad) throws Exception {
        try (Connection a = proxy(KILL); Connection b = proxy(KILL)) {
            long n = connectionId(a);
            try {
                exec(b, "KILL QUERY " + n);
            } catch (SQLException e) {
                bad.add("KILL QUERY " + n + " of an idle connection: " + describe(e));
            }
            alive(a, "KILL QUERY while idle", bad);
            eq(bad, "CONNECTION_ID() after KILL QUERY while idle", connectionId(a), n);
            long unknown = 987654321L;
            expectError(bad, "KILL " + unknown + " (no such thread)", 1094, "HY000", () -> exec(b, "KILL " + unknown));
            expectError(bad, "KILL QUERY " + unknown + " (no such thread)", 1094, "HY000", () -> exec(b, "KILL QUERY " + unknown));
            alive(b, "KILL of an unknown id", bad);
        }
    }

    static void killByCancel(List<String> bad) throws Exception {
        ExecutorService ex = Executors.newSingleThreadExecutor();
        String marker = "compat-java-" + drv.id + "-cancel-" + System.nanoTime();
        try (Connection a = proxy(KILL); PreparedStatement p = a.prepareStatement("SELECT SLEEP(?) /* " + marker + " */")) {
            long n = connectionId(a);
            p.setInt(1, 5);
            long t0 = System.nanoTime();
            Future<String> f = sleepOn(ex, p::executeQuery);
            if (!awaitRunning(marker, f, bad)) return;
            p.cancel();
            // The drivers report their own cancel as SQLSTATE 70100 (MySQL Connector/J: "Statement cancelled due to client request").
            interrupted(bad, f, t0, a, n, true);
        } finally {
            ex.shutdownNow();
        }
    }

    // -----------------------------------------------------------------------------------------
    // 6. LOAD DATA LOCAL INFILE, 7. session tracking
    // -----------------------------------------------------------------------------------------

    static void loadDataLocal(List<String> bad) throws Exception {
        Path csv = Files.createTempFile("compat-java-", ".csv");
        try (Connection c = proxy(SPS + drv.localInfile)) {
            Files.writeString(csv, "1,alpha\n2,béta\n3,🚀 gamma\n", StandardCharsets.UTF_8);
            exec(c, "DROP TABLE IF EXISTS load_local");
            exec(c, "CREATE TABLE load_local (id INT PRIMARY KEY, name VARCHAR(40)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4");
            try (Statement s = c.createStatement()) {
                int n = s.executeUpdate("LOAD DATA LOCAL INFILE '" + csv + "' INTO TABLE load_local CHARACTER SET utf8mb4"
                        + " FIELDS TERMINATED BY ',' LINES TERMINATED BY '\\n' (id, name)");
                eq(bad, "LOAD DATA LOCAL update count", n, 3);
            }
            eq(bad, "rows loaded", text(c, "SELECT COUNT(*) FROM load_local"), "3");
            eq(bad, "contents", text(c, "SELECT GROUP_CONCAT(id, '=', name ORDER BY id SEPARATOR '|') FROM load_local"),
                    "1=alpha|2=béta|3=🚀 gamma");
            alive(c, "LOAD DATA LOCAL", bad);
        } finally {
            Files.deleteIfExists(csv);
        }
    }

    static void sessionTrack(List<String> bad) throws Exception {
        try (Connection c = proxy(SPS)) {
            for (String set : new String[] {"SET session_track_schema = OFF", "SET session_track_state_change = ON",
                "SET session_track_system_variables = 'autocommit'"}) {
                try {
                    exec(c, set);
                } catch (SQLException e) {
                    bad.add(set + ": " + describe(e));
                }
            }
            busywork(c);
            expect(bad, c, "SELECT @@session_track_system_variables", "autocommit");
            expect(bad, c, "SELECT @@session_track_schema", "0");
            expect(bad, c, "SELECT @@session_track_state_change", "1");
            alive(c, "SET session_track_*", bad);
        }
    }

    // -----------------------------------------------------------------------------------------
    // 8. Read-after-write across connections
    // -----------------------------------------------------------------------------------------

    interface Conn {
        Connection get() throws SQLException;
    }

    /**
     * 200 rounds: connection A inserts a row (autocommit, text and prepared alternately), then
     * connection B (another connection, held at the same time) counts it at once. With borrowed,
     * A and B are taken from a and b for each round and closed (returned to the pool) after it.
     */
    static void writeThenRead(List<String> bad, String table, Conn a, Conn b, boolean borrowed) throws Exception {
        Connection setup = a.get();
        exec(setup, "DROP TABLE IF EXISTS " + table);
        exec(setup, "CREATE TABLE " + table + " (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40)) ENGINE=InnoDB");
        if (borrowed) setup.close();
        int misses = 0;
        for (int i = 0; i < 200; i++) {
            String v = "row-" + i;
            boolean ps = i % 2 == 0;
            Connection w = a.get(), r = b.get();
            try {
                if (ps) {
                    try (PreparedStatement p = w.prepareStatement("INSERT INTO " + table + " (v) VALUES (?)")) {
                        p.setString(1, v);
                        p.executeUpdate();
                    }
                } else {
                    exec(w, "INSERT INTO " + table + " (v) VALUES ('" + v + "')");
                }
                String got = ps ? prepared(r, "SELECT COUNT(*) FROM " + table + " WHERE v = ?", v)
                        : text(r, "SELECT COUNT(*) FROM " + table + " WHERE v = '" + v + "'");
                if (!"1".equals(got) && ++misses <= 5) bad.add("round " + i + " (" + (ps ? "prepared" : "text") + "): read " + got + " rows, want 1");
            } finally {
                if (borrowed) {
                    r.close();
                    w.close();
                }
            }
        }
        if (misses > 0) bad.add(misses + " of 200 reads missed the row written just before on another connection");
    }

    /** Two plain connections, the same two for all rounds. */
    static void readAfterWrite(List<String> bad) throws Exception {
        try (Connection a = proxy(Driver.PS); Connection b = proxy(Driver.PS)) {
            writeThenRead(bad, "raw_plain", () -> a, () -> b, false);
        }
    }

    /** Through HikariCP: each round borrows A, writes, borrows B while A is still held (so another physical connection), reads. */
    static void readAfterWritePooled(List<String> bad) throws Exception {
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(url(DB, Driver.PS));
        cfg.setUsername(CompatMain.user);
        cfg.setPassword(CompatMain.password);
        cfg.setPoolName("compat-" + drv.id);
        cfg.setMaximumPoolSize(4);
        cfg.setConnectionTimeout(10_000);
        try (HikariDataSource ds = new HikariDataSource(cfg)) {
            writeThenRead(bad, "raw_pooled", ds::getConnection, ds::getConnection, true);
            notes.add("(HikariCP pool: " + ds.getHikariPoolMXBean().getTotalConnections() + " connections)");
        }
    }
}
