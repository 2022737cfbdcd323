package tessera.compat;

import java.io.ByteArrayInputStream;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.sql.Types;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Compatibility checks for MySQL Connector/J and MariaDB Connector/J talking to MariaDB through
 * Tessera: column types, BLOBs, transactions, errors, procedures, insert ids, concurrent sessions,
 * server-side cursors (here), and the session checks of SessionChecks (session state, warnings,
 * identity, change user, KILL, LOAD DATA LOCAL, session tracking, read-after-write with HikariCP).
 * Every check runs once per driver (Driver) and asserts the answers (values, error numbers,
 * SQLSTATEs, row counts), not only the absence of errors. Prints one PASS/FAIL line per check and
 * exits 1 if any failed.
 *
 * <p>Environment: TESSERA_HOST TESSERA_PORT TESSERA_USER TESSERA_PASSWORD [TESSERA_USER2
 * TESSERA_PASSWORD2] (the proxy), MARIADB_PORT [MARIADB_USER MARIADB_PASSWORD MARIADB_REPLICA_PORTS]
 * (MariaDB itself: the reference for insert ids / affected rows, and where KILL checks watch the
 * PROCESSLIST), COMPAT_DIRECT=1 when TESSERA_PORT is MariaDB itself, COMPAT_FILTER / -Donly=text
 * (run only the checks whose name contains text, case-insensitive), -Ddrivers=mysql,mariadb.
 */
public final class CompatMain {
    /** The driver the checks run with now, and its own database (tables are per driver). */
    static Driver drv;
    static String DB;
    static String host, user, password, mariadbPort;
    static int port;
    static boolean directMode;

    /** Server-side prepared statements (binary protocol), cached. */
    static final String PS = Driver.PS;
    /** Server-side cursors (MySQL Connector/J): COM_STMT_EXECUTE with a read-only cursor, rows pulled with COM_STMT_FETCH. */
    static final String CURSOR = "&useServerPrepStmts=true&useCursorFetch=true&defaultFetchSize=10";

    static int passed, failed;
    /** Informational lines printed under the current check's PASS/FAIL line. */
    static final List<String> notes = Collections.synchronizedList(new ArrayList<>());
    static final List<String> failedNames = new ArrayList<>();

    interface Check {
        void run(List<String> bad) throws Exception;
    }

    /** -Donly=text or COMPAT_FILTER=text runs only the checks whose name contains text (case-insensitive). */
    static final String ONLY = System.getProperty("only", env("COMPAT_FILTER", "")).toLowerCase(java.util.Locale.ROOT);

    static boolean selected(String name) {
        return name.toLowerCase(java.util.Locale.ROOT).contains(ONLY);
    }

    /** Prints a check that does not apply to this driver or mode (not counted). */
    static void skip(String name, String why) {
        if (selected(name)) System.out.println("SKIP  [" + drv.id + "] " + name + " (" + why + ")");
    }

    static void check(String name, Check c) {
        if (selected(name)) run(name, c);
    }

    /** Runs one check (also when filtered out: the first connection, which creates the database). */
    static void run(String name, Check c) {
        name = "[" + drv.id + "] " + name;
        List<String> bad = Collections.synchronizedList(new ArrayList<>());
        long t0 = System.nanoTime();
        try {
            c.run(bad);
        } catch (Throwable t) {
            bad.add("exception: " + describe(t));
            if (Boolean.getBoolean("trace")) t.printStackTrace(System.out);
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        if (bad.isEmpty()) {
            passed++;
            System.out.printf("PASS  %s (%d ms)%n", name, ms);
            notes.forEach(n -> System.out.println("        " + n));
        } else {
            failed++;
            failedNames.add(name);
            System.out.printf("FAIL  %s (%d ms)%n", name, ms);
            bad.stream().limit(30).forEach(b -> System.out.println("        " + b));
            if (bad.size() > 30) System.out.println("        ... and " + (bad.size() - 30) + " more");
            notes.forEach(n -> System.out.println("        " + n));
        }
        notes.clear();
    }

    static String describe(Throwable t) {
        if (t instanceof SQLException e) {
            String s = e.getClass().getSimpleName() + " [" + e.getErrorCode() + "/" + e.getSQLState() + "] " + e.getMessage();
            // MariaDB Connector/J wraps the server's answer to its connection setup ("Initialization command fail").
            return e.getCause() instanceof SQLException cause ? s + " <- " + describe(cause) : s;
        }
        return t.toString();
    }

    static void eq(List<String> bad, String what, Object got, Object want) {
        boolean same = (got instanceof byte[] g && want instanceof byte[] w) ? Arrays.equals(g, w) : java.util.Objects.equals(got, want);
        if (!same) bad.add(what + ": got " + show(got) + ", want " + show(want));
    }

    static String show(Object o) {
        if (o instanceof byte[] b) return b.length > 64 ? "<" + b.length + " bytes>" : "0x" + HexFormat.of().formatHex(b);
        if (o instanceof String s) return "\"" + s + "\"";
        return o == null ? "null" : o + " (" + o.getClass().getSimpleName() + ")";
    }

    /** Appended to every Tessera URL; for experiments only (e.g. TESSERA_JDBC_EXTRA='&characterSetResults=utf8mb4'). */
    static final String EXTRA = System.getenv().getOrDefault("TESSERA_JDBC_EXTRA", "");

    static String url(String db, String extra) {
        return drv.url(host, port, db, extra + EXTRA);
    }

    static Connection proxy(String extra) throws SQLException {
        return DriverManager.getConnection(url(DB, extra), user, password);
    }

    static Connection direct(String extra) throws SQLException {
        if (mariadbPort == null) return null;
        String h = env("MARIADB_HOST", host);
        return DriverManager.getConnection(drv.url(h, Integer.parseInt(mariadbPort), DB, extra),
                env("MARIADB_USER", "tessera"), env("MARIADB_PASSWORD", "tessera"));
    }

    static String env(String k, String def) {
        String v = System.getenv(k);
        return v == null || v.isEmpty() ? def : v;
    }

    static void exec(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    static void alive(Connection c, String after, List<String> bad) {
        try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT 1")) {
            r.next();
            eq(bad, "text SELECT 1 after " + after, r.getInt(1), 1);
        } catch (SQLException e) {
            bad.add("connection unusable (text) after " + after + ": " + describe(e));
        }
        try (PreparedStatement p = c.prepareStatement("SELECT ? + 0")) {
            p.setInt(1, 1);
            try (ResultSet r = p.executeQuery()) {
                r.next();
                eq(bad, "prepared SELECT ? after " + after, r.getInt(1), 1);
            }
        } catch (SQLException e) {
            bad.add("connection unusable (prepared) after " + after + ": " + describe(e));
        }
    }

    public static void main(String[] args) throws Exception {
        host = env("TESSERA_HOST", "127.0.0.1");
        String p = System.getenv("TESSERA_PORT");
        if (p == null || p.isEmpty()) {
            System.err.println("TESSERA_PORT is not set (run through tests/compat/java/run.sh)");
            System.exit(2);
        }
        port = Integer.parseInt(p);
        user = env("TESSERA_USER", "app");
        password = env("TESSERA_PASSWORD", "app");
        mariadbPort = System.getenv("MARIADB_PORT");
        if (mariadbPort != null && mariadbPort.isEmpty()) mariadbPort = null;
        directMode = "1".equals(System.getenv("COMPAT_DIRECT"));

        List<String> summary = new ArrayList<>();
        int totalPassed = 0, totalFailed = 0;
        for (String id : System.getProperty("drivers", "mysql,mariadb").split(",")) {
            drv = Driver.valueOf(id.trim().toUpperCase(java.util.Locale.ROOT));
            DB = "compat_java_" + drv.id;
            typesTableReady = cursorTableReady = false;
            passed = failed = 0;
            System.out.println();
            System.out.println("--- " + drv.label + (directMode ? " directly to MariaDB " : " through Tessera ") + host + ":" + port);
            runChecks();
            System.out.printf("%s: %d passed, %d failed%n", drv.label, passed, failed);
            summary.add(String.format("%s: %d passed, %d failed", drv.label, passed, failed));
            totalPassed += passed;
            totalFailed += failed;
        }
        System.out.println();
        summary.forEach(l -> System.out.println("  " + l));
        failedNames.forEach(n -> System.out.println("  failed: " + n));
        System.out.printf("java: %d passed, %d failed%n", totalPassed, totalFailed);
        System.exit(totalFailed == 0 ? 0 : 1);
    }

    /** Every check, with the current driver. */
    static void runChecks() {
        run("connect, CREATE DATABASE " + DB, CompatMain::boot);
        check("connect with a wrong password -> 1045/28000", CompatMain::authError);
        String sha2Port = env("TESSERA_SHA2_PORT", "");
        String sha2 = "caching_sha2_password login (full + fast auth), wrong password -> 1045/28000";
        if (directMode) {
            skip(sha2, "Tessera's caching_sha2_password front end; MariaDB has no such plugin");
        } else if (sha2Port.isEmpty()) {
            skip(sha2, "TESSERA_SHA2_PORT not set");
        } else if (drv == Driver.MYSQL && !"1".equals(System.getenv("TESSERA_JAVA_SHA2"))) {
            // Connector/J reads caching_sha2_password's AuthMoreData one byte early for servers
            // older than 5.5.16, and every MariaDB-compatible greeting announces "5.5.5-...".
            // caching_sha2_password is covered with MariaDB Connector/J, the mariadb CLI, PyMySQL and Go.
            skip(sha2, "needs a server version >= 5.5.16 in the greeting; Tessera announces its MariaDB backend as 5.5.5-...;"
                    + " set TESSERA_JAVA_SHA2=1 to run");
        } else {
            check(sha2, b -> cachingSha2(b, sha2Port));
        }
        check("column types round trip, prepared INSERT/SELECT with bound parameters (server prepare, binary)", b -> types(b, true));
        check("column types round trip, text INSERT/SELECT (Statement)", b -> types(b, false));
        check("column types: all-NULL rows via prepared and text", CompatMain::typesNull);
        check("prepared SELECT with a bound parameter of each kind in WHERE", CompatMain::whereParams);
        check("1 MB BLOB byte-exact: setBytes, setBinaryStream, text X'..'", CompatMain::blob);
        check("transactions: commit visible, rollback not visible, savepoint", CompatMain::transactions);
        check("errors: duplicate key 1062/23000 (text, prepared, in transaction)", CompatMain::dupErrors);
        check("errors: syntax error 1064/42000 (text, COM_STMT_PREPARE), unknown table 1146/42S02", CompatMain::syntaxErrors);
        check("stored procedure CALL returning two result sets", CompatMain::procedure);
        check("prepared SELECT re-executed after ALTER TABLE changed its column's type (server prepare)",
                CompatMain::metadataAfterAlter);
        check("insert id / update count equal to what MariaDB reports", CompatMain::insertIds);
        check("LAST_INSERT_ID() stays per session when another session inserts", CompatMain::lastInsertIdPerSession);
        check("20 concurrent threads: own SET @v / SET time_zone, 50 interleaved reads each", CompatMain::concurrentSessions);
        String[] cursorChecks = {
            "server-side cursor (useCursorFetch, fetch size 10): all 100 rows arrive",
            "server-side cursors: two open cursors interleaved + other statements between fetches",
            "server-side cursor: 1 MB BLOB rows with fetch size 1, early close and re-execute",
        };
        if (drv.hasCursorFetch()) {
            check(cursorChecks[0], CompatMain::cursorAllRows);
            check(cursorChecks[1], CompatMain::cursorInterleaved);
            check(cursorChecks[2], CompatMain::cursorBlobs);
        } else {
            for (String n : cursorChecks) skip(n, drv.label + " has no server-side cursor mode");
        }
        SessionChecks.run();
    }

    /** The first connection: creates this driver's database (every other check uses it). */
    static void boot(List<String> bad) throws SQLException {
        try (Connection c = DriverManager.getConnection(url("", ""), user, password)) {
            exec(c, "CREATE DATABASE IF NOT EXISTS " + DB + " CHARACTER SET utf8mb4");
            notes.add("server " + c.getMetaData().getDatabaseProductName() + " " + c.getMetaData().getDatabaseProductVersion()
                    + ", " + drv.label + " " + c.getMetaData().getDriverVersion());
        } catch (SQLException e) {
            if (String.valueOf(e.getMessage()).contains("Unknown server response after fast auth")) {
                notes.add("Connector/J reads AuthMoreData without its 0x01 prefix for servers older than 5.5.16,"
                        + " and the greeting's version is 5.5.5-10.11...");
            }
            throw e;
        }
    }

    // -----------------------------------------------------------------------------------------
    // Authentication error
    // -----------------------------------------------------------------------------------------

    static void authError(List<String> bad) {
        try (Connection c = DriverManager.getConnection(url(DB, "&socketTimeout=10000"), user, password + "-wrong")) {
            bad.add("login with a wrong password succeeded");
        } catch (SQLException e) {
            eq(bad, "error code", e.getErrorCode(), 1045);
            eq(bad, "SQLSTATE", e.getSQLState(), "28000");
            if (e.getErrorCode() != 1045) bad.add("got: " + describe(e).lines().findFirst().orElse(""));
        }
    }

    /**
     * caching_sha2_password environment of tests/compat/run.sh (TESSERA_SHA2_PORT): full
     * authentication (RSA public key retrieval over plain TCP) first, fast auth on the next logins.
     */
    static void cachingSha2(List<String> bad, String sha2Port) {
        String u = drv.url(host, Integer.parseInt(sha2Port), "", PS + EXTRA);
        for (int i = 0; i < 3; i++) {
            try (Connection c = DriverManager.getConnection(u, user, password)) {
                try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT 'héllo 🚀', 1 + 1")) {
                    r.next();
                    eq(bad, "login " + i + " text", r.getString(1) + " " + r.getInt(2), "héllo 🚀 2");
                }
                try (PreparedStatement p = c.prepareStatement("SELECT ?, ? + 1")) {
                    p.setString(1, "héllo 🚀");
                    p.setInt(2, 1);
                    try (ResultSet r = p.executeQuery()) {
                        r.next();
                        eq(bad, "login " + i + " prepared", r.getString(1) + " " + r.getInt(2), "héllo 🚀 2");
                    }
                }
            } catch (SQLException e) {
                bad.add("login " + i + ": " + describe(e).lines().findFirst().orElse(""));
                if (String.valueOf(e.getMessage()).contains("Unknown server response after fast auth")) {
                    bad.add("(Connector/J reads AuthMoreData without its 0x01 prefix for servers older than 5.5.16,"
                            + " and the greeting's version is 5.5.5-10.11...)");
                }
                break;
            }
        }
        try (Connection c = DriverManager.getConnection(u, user, password + "-wrong")) {
            bad.add("caching_sha2_password login with a wrong password succeeded");
        } catch (SQLException e) {
            if (e.getErrorCode() != 1045 || !"28000".equals(e.getSQLState())) {
                bad.add("wrong password: got " + e.getErrorCode() + "/" + e.getSQLState() + " (" + describe(e).lines().findFirst().orElse("") + "), want 1045/28000");
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Column types
    // -----------------------------------------------------------------------------------------

    static final String TYPES_DDL = """
            CREATE TABLE types (
              id INT PRIMARY KEY,
              c_tinyint TINYINT, c_smallint SMALLINT, c_mediumint MEDIUMINT, c_int INT,
              c_bigint BIGINT, c_ubigint BIGINT UNSIGNED,
              c_float FLOAT, c_double DOUBLE, c_decimal DECIMAL(65,30),
              c_char CHAR(10), c_varchar VARCHAR(100), c_text TEXT,
              c_binary BINARY(4), c_varbinary VARBINARY(16), c_blob BLOB,
              c_date DATE, c_time TIME(6), c_datetime DATETIME(6), c_timestamp TIMESTAMP(6) NULL,
              c_year YEAR, c_bit BIT(8), c_enum ENUM('a','b','c'), c_set SET('x','y','z'), c_json JSON
            ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4""";
    static final String[] COLS = {"c_tinyint", "c_smallint", "c_mediumint", "c_int", "c_bigint", "c_ubigint",
        "c_float", "c_double", "c_decimal", "c_char", "c_varchar", "c_text", "c_binary", "c_varbinary", "c_blob",
        "c_date", "c_time", "c_datetime", "c_timestamp", "c_year", "c_bit", "c_enum", "c_set", "c_json"};
    static final String COLLIST = String.join(", ", COLS);
    static final String PH = String.join(", ", Collections.nCopies(COLS.length + 1, "?"));

    static final String UNICODE = "héllo wörld 🚀";
    static final String TEXT = "日本語テキスト — héllo wörld 🚀 ñ € 𝄞";
    static final String DECIMAL = "-12345678901234567890123456789012345.123456789012345678901234567890";
    static final String JSON = "{\"k\": [1, 2, \"é\"], \"emoji\": \"🚀\"}";
    static final byte[] BINARY = {0x00, (byte) 0xFF, 0x7F, (byte) 0x80};
    static final byte[] VARBINARY = {0x00, (byte) 0xFF, 0x00, (byte) 0xFF, 0x00};
    static final byte[] BLOB = new byte[256];
    static {
        for (int i = 0; i < 256; i++) BLOB[i] = (byte) i;
    }
    static final BigInteger UBIG_MAX = new BigInteger("18446744073709551615");
    static final LocalDateTime DT = LocalDateTime.of(2024, 2, 29, 23, 59, 58, 123456000);
    static final LocalDateTime TS = LocalDateTime.of(2024, 1, 2, 3, 4, 5, 1000);
    static final LocalTime TIME = LocalTime.of(12, 34, 56, 789012000);

    static boolean typesTableReady;

    static void ensureTypesTable(Connection c) throws SQLException {
        if (typesTableReady) return;
        exec(c, "DROP TABLE IF EXISTS types");
        exec(c, TYPES_DDL);
        typesTableReady = true;
    }

    static String hex(byte[] b) {
        return HexFormat.of().formatHex(b);
    }

    static void types(List<String> bad, boolean prepared) throws Exception {
        try (Connection c = proxy(PS)) {
            ensureTypesTable(c);
            int id = prepared ? 1 : 2;
            if (prepared) {
                try (PreparedStatement p = c.prepareStatement("INSERT INTO types (id, " + COLLIST + ") VALUES (" + PH + ")")) {
                    int i = 1;
                    p.setInt(i++, id);
                    p.setByte(i++, (byte) -128);
                    p.setShort(i++, (short) -32768);
                    p.setInt(i++, -8388608);
                    p.setInt(i++, Integer.MIN_VALUE);
                    p.setLong(i++, Long.MIN_VALUE);
                    drv.setUnsignedBigint(p, i++, UBIG_MAX);
                    p.setFloat(i++, 1.5f);
                    p.setDouble(i++, 3.141592653589793);
                    p.setBigDecimal(i++, new BigDecimal(DECIMAL));
                    p.setString(i++, "abc");
                    p.setString(i++, UNICODE);
                    p.setString(i++, TEXT);
                    p.setBytes(i++, BINARY);
                    p.setBytes(i++, VARBINARY);
                    p.setBytes(i++, BLOB);
                    p.setObject(i++, LocalDate.of(2024, 2, 29));
                    // Connector/J drops fractional seconds of LocalTime/LocalDateTime/Timestamp
                    // parameters when the server version is below 5.6.4, and MariaDB announces
                    // itself as 5.5.5-10.11.x (same directly and through Tessera). Bound as strings,
                    // the microseconds reach the server.
                    p.setString(i++, "12:34:56.789012");
                    p.setString(i++, "2024-02-29 23:59:58.123456");
                    p.setString(i++, "2024-01-02 03:04:05.000001");
                    p.setInt(i++, 2024);
                    p.setBytes(i++, new byte[] {(byte) 0xA5});
                    p.setString(i++, "b");
                    p.setString(i++, "x,z");
                    p.setString(i++, JSON);
                    eq(bad, "prepared INSERT update count", p.executeUpdate(), 1);
                }
            } else {
                try (Statement s = c.createStatement()) {
                    int n = s.executeUpdate("INSERT INTO types (id, " + COLLIST + ") VALUES (" + id + ", -128, -32768, -8388608,"
                            + " -2147483648, -9223372036854775808, 18446744073709551615, 1.5, 3.141592653589793, " + DECIMAL
                            + ", 'abc', '" + UNICODE + "', '" + TEXT + "', X'" + hex(BINARY) + "', X'" + hex(VARBINARY) + "', X'"
                            + hex(BLOB) + "', '2024-02-29', '12:34:56.789012', '2024-02-29 23:59:58.123456',"
                            + " '2024-01-02 03:04:05.000001', 2024, b'10100101', 'b', 'x,z', '" + JSON + "')");
                    eq(bad, "text INSERT update count", n, 1);
                }
            }
            // Read the row back both ways, whichever way it was written.
            try (PreparedStatement p = c.prepareStatement("SELECT " + COLLIST + " FROM types WHERE id = ?")) {
                p.setInt(1, id);
                try (ResultSet r = p.executeQuery()) {
                    checkFullRow(bad, "read via prepared SELECT", r);
                }
            }
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT " + COLLIST + " FROM types WHERE id = " + id)) {
                checkFullRow(bad, "read via text SELECT", r);
            }
        }
    }

    static void checkFullRow(List<String> bad, String how, ResultSet r) throws SQLException {
        if (!r.next()) {
            bad.add(how + ": no row");
            return;
        }
        eq(bad, how + " c_tinyint", r.getInt("c_tinyint"), -128);
        eq(bad, how + " c_smallint", r.getInt("c_smallint"), -32768);
        eq(bad, how + " c_mediumint", r.getInt("c_mediumint"), -8388608);
        eq(bad, how + " c_int", r.getInt("c_int"), Integer.MIN_VALUE);
        eq(bad, how + " c_bigint", r.getLong("c_bigint"), Long.MIN_VALUE);
        eq(bad, how + " c_ubigint getObject", r.getObject("c_ubigint"), UBIG_MAX);
        eq(bad, how + " c_ubigint getString", r.getString("c_ubigint"), "18446744073709551615");
        eq(bad, how + " c_float", r.getFloat("c_float"), 1.5f);
        eq(bad, how + " c_double", r.getDouble("c_double"), 3.141592653589793);
        BigDecimal d = r.getBigDecimal("c_decimal");
        eq(bad, how + " c_decimal", d == null ? null : d.toPlainString(), DECIMAL);
        eq(bad, how + " c_char", r.getString("c_char"), "abc");
        eq(bad, how + " c_varchar", r.getString("c_varchar"), UNICODE);
        eq(bad, how + " c_text", r.getString("c_text"), TEXT);
        eq(bad, how + " c_binary", r.getBytes("c_binary"), BINARY);
        eq(bad, how + " c_varbinary", r.getBytes("c_varbinary"), VARBINARY);
        eq(bad, how + " c_blob", r.getBytes("c_blob"), BLOB);
        eq(bad, how + " c_date", r.getObject("c_date", LocalDate.class), LocalDate.of(2024, 2, 29));
        eq(bad, how + " c_time", r.getObject("c_time", LocalTime.class), TIME);
        eq(bad, how + " c_datetime", r.getObject("c_datetime", LocalDateTime.class), DT);
        eq(bad, how + " c_timestamp", r.getObject("c_timestamp", LocalDateTime.class), TS);
        eq(bad, how + " c_year", r.getInt("c_year"), 2024);
        eq(bad, how + " c_bit", r.getBytes("c_bit"), new byte[] {(byte) 0xA5});
        eq(bad, how + " c_enum", r.getString("c_enum"), "b");
        eq(bad, how + " c_set", r.getString("c_set"), "x,z");
        eq(bad, how + " c_json", r.getString("c_json"), JSON);
        if (r.next()) bad.add(how + ": more than one row");
    }

    static void checkNullRow(List<String> bad, String how, ResultSet r) throws SQLException {
        if (!r.next()) {
            bad.add(how + ": no row");
            return;
        }
        for (String col : COLS) {
            Object o = r.getObject(col);
            if (o != null || !r.wasNull()) bad.add(how + ": " + col + " = " + show(o) + ", want NULL");
        }
    }

    static void typesNull(List<String> bad) throws Exception {
        try (Connection c = proxy(PS)) {
            ensureTypesTable(c);
            int[] sqlTypes = {Types.TINYINT, Types.SMALLINT, Types.INTEGER, Types.INTEGER, Types.BIGINT, Types.BIGINT,
                Types.FLOAT, Types.DOUBLE, Types.DECIMAL, Types.CHAR, Types.VARCHAR, Types.LONGVARCHAR, Types.BINARY,
                Types.VARBINARY, Types.BLOB, Types.DATE, Types.TIME, Types.TIMESTAMP, Types.TIMESTAMP, Types.SMALLINT,
                Types.BIT, Types.VARCHAR, Types.VARCHAR, Types.VARCHAR};
            try (PreparedStatement p = c.prepareStatement("INSERT INTO types (id, " + COLLIST + ") VALUES (" + PH + ")")) {
                p.setInt(1, 3);
                for (int i = 0; i < sqlTypes.length; i++) p.setNull(i + 2, sqlTypes[i]);
                eq(bad, "prepared NULL INSERT count", p.executeUpdate(), 1);
            }
            try (Statement s = c.createStatement()) {
                eq(bad, "text NULL INSERT count", s.executeUpdate("INSERT INTO types (id) VALUES (4)"), 1);
            }
            for (int id : new int[] {3, 4}) {
                try (PreparedStatement p = c.prepareStatement("SELECT " + COLLIST + " FROM types WHERE id = ?")) {
                    p.setInt(1, id);
                    try (ResultSet r = p.executeQuery()) {
                        checkNullRow(bad, "id " + id + " via prepared SELECT", r);
                    }
                }
                try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT " + COLLIST + " FROM types WHERE id = " + id)) {
                    checkNullRow(bad, "id " + id + " via text SELECT", r);
                }
            }
        }
    }

    static void whereParams(List<String> bad) throws Exception {
        try (Connection c = proxy(PS)) {
            Object[][] probes = {
                {"c_ubigint", new BigDecimal(UBIG_MAX)}, {"c_ubigint", "18446744073709551615"}, {"c_bigint", Long.MIN_VALUE},
                {"c_decimal", new BigDecimal(DECIMAL)}, {"c_varchar", UNICODE}, {"c_varbinary", VARBINARY},
                {"c_binary", BINARY}, {"c_datetime", "2024-02-29 23:59:58.123456"}, {"c_time", "12:34:56.789012"},
                {"c_date", LocalDate.of(2024, 2, 29)}, {"c_double", 3.141592653589793},
            };
            for (Object[] pr : probes) {
                try (PreparedStatement p = c.prepareStatement("SELECT GROUP_CONCAT(id ORDER BY id) FROM types WHERE " + pr[0] + " = ?")) {
                    p.setObject(1, pr[1]);
                    try (ResultSet r = p.executeQuery()) {
                        r.next();
                        eq(bad, "WHERE " + pr[0] + " = ? (" + pr[1].getClass().getSimpleName() + ")", r.getString(1), "1,2");
                    }
                }
            }
            try (PreparedStatement p = c.prepareStatement("SELECT COUNT(*) FROM types WHERE c_int IS NULL AND ? IS NULL")) {
                p.setNull(1, Types.INTEGER);
                try (ResultSet r = p.executeQuery()) {
                    r.next();
                    eq(bad, "NULL parameter", r.getInt(1), 2);
                }
            }
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT COUNT(*) FROM types a JOIN types b ON a.id = 1 AND b.id = 2 AND "
                    + String.join(" AND ", Arrays.stream(COLS).map(x -> "a." + x + " <=> b." + x).toList()))) {
                r.next();
                eq(bad, "prepared-inserted row == text-inserted row on the server", r.getInt(1), 1);
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // 1 MB BLOB
    // -----------------------------------------------------------------------------------------

    static byte[] bigBlob() {
        byte[] b = new byte[1 << 20];
        new Random(42).nextBytes(b);
        Arrays.fill(b, 1000, 1100, (byte) 0x00);
        Arrays.fill(b, 2000, 2100, (byte) 0xFF);
        b[0] = 0x00;
        b[1] = (byte) 0xFF;
        b[b.length - 2] = 0x00;
        b[b.length - 1] = (byte) 0xFF;
        return b;
    }

    static String sha256(byte[] b) throws Exception {
        return hex(MessageDigest.getInstance("SHA-256").digest(b));
    }

    static void blob(List<String> bad) throws Exception {
        byte[] blob = bigBlob();
        String sha = sha256(blob);
        try (Connection c = proxy(PS)) {
            exec(c, "DROP TABLE IF EXISTS blobs");
            exec(c, "CREATE TABLE blobs (id INT PRIMARY KEY, b LONGBLOB) ENGINE=InnoDB");
            try (PreparedStatement p = c.prepareStatement("INSERT INTO blobs VALUES (?, ?)")) {
                p.setInt(1, 1);
                p.setBytes(2, blob);
                eq(bad, "setBytes insert count", p.executeUpdate(), 1);
                p.setInt(1, 2);
                p.setBinaryStream(2, new ByteArrayInputStream(blob), blob.length); // COM_STMT_SEND_LONG_DATA
                eq(bad, "setBinaryStream insert count", p.executeUpdate(), 1);
            }
            try (Statement s = c.createStatement()) {
                eq(bad, "text X'..' insert count", s.executeUpdate("INSERT INTO blobs VALUES (3, X'" + hex(blob) + "')"), 1);
            }
            for (int id = 1; id <= 3; id++) {
                try (PreparedStatement p = c.prepareStatement("SELECT b, LENGTH(b), SHA2(b, 256) FROM blobs WHERE id = ?")) {
                    p.setInt(1, id);
                    try (ResultSet r = p.executeQuery()) {
                        r.next();
                        byte[] got = r.getBytes(1);
                        if (!Arrays.equals(got, blob)) bad.add("id " + id + " prepared read: " + got.length + " bytes sha256 " + sha256(got) + ", want " + sha);
                        eq(bad, "id " + id + " server LENGTH", r.getLong(2), (long) blob.length);
                        eq(bad, "id " + id + " server SHA2", r.getString(3), sha);
                    }
                }
                try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT b FROM blobs WHERE id = " + id)) {
                    r.next();
                    byte[] got = r.getBytes(1);
                    if (!Arrays.equals(got, blob)) bad.add("id " + id + " text read: " + got.length + " bytes sha256 " + sha256(got) + ", want " + sha);
                }
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Transactions
    // -----------------------------------------------------------------------------------------

    static int count(Connection c, String where) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT COUNT(*) FROM tx WHERE " + where)) {
            r.next();
            return r.getInt(1);
        }
    }

    static void transactions(List<String> bad) throws Exception {
        try (Connection c = proxy(PS); Connection other = proxy(PS)) {
            exec(c, "DROP TABLE IF EXISTS tx");
            exec(c, "CREATE TABLE tx (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB");
            c.setAutoCommit(false);
            exec(c, "INSERT INTO tx VALUES (1, 'committed')");
            try (PreparedStatement p = c.prepareStatement("INSERT INTO tx VALUES (?, ?)")) {
                p.setInt(1, 2);
                p.setString(2, "committed");
                p.executeUpdate();
            }
            eq(bad, "inside transaction: own rows", count(c, "id IN (1, 2)"), 2);
            eq(bad, "other connection before COMMIT", count(other, "id IN (1, 2)"), 0);
            c.commit();
            eq(bad, "other connection after COMMIT", count(other, "id IN (1, 2)"), 2);

            exec(c, "INSERT INTO tx VALUES (3, 'rolled back')");
            try (PreparedStatement p = c.prepareStatement("INSERT INTO tx VALUES (?, ?)")) {
                p.setInt(1, 4);
                p.setString(2, "rolled back");
                p.executeUpdate();
            }
            try {
                exec(c, "UPDATE tx SET v = 'changed' WHERE id = 1");
            } catch (SQLException e) {
                bad.add("UPDATE inside the transaction failed: " + describe(e));
            }
            eq(bad, "inside transaction: rows 3, 4", count(c, "id IN (3, 4)"), 2);
            c.rollback();
            eq(bad, "after ROLLBACK (same connection)", count(c, "id IN (3, 4)"), 0);
            eq(bad, "after ROLLBACK (other connection)", count(other, "id IN (3, 4)"), 0);
            eq(bad, "after ROLLBACK: update undone", count(other, "id = 1 AND v = 'committed'"), 1);

            exec(c, "INSERT INTO tx VALUES (5, 'before savepoint')");
            Savepoint sp = c.setSavepoint("sp1");
            exec(c, "INSERT INTO tx VALUES (6, 'after savepoint')");
            c.rollback(sp);
            c.commit();
            eq(bad, "savepoint: row before savepoint committed", count(other, "id = 5"), 1);
            eq(bad, "savepoint: row after savepoint rolled back", count(other, "id = 6"), 0);
            c.setAutoCommit(true);
            exec(c, "INSERT INTO tx VALUES (7, 'autocommit')");
            eq(bad, "autocommit restored", count(other, "id = 7"), 1);
        }
    }

    // -----------------------------------------------------------------------------------------
    // Errors
    // -----------------------------------------------------------------------------------------

    interface SqlAction {
        void run() throws SQLException;
    }

    static void expectError(List<String> bad, String what, int code, String state, SqlAction a) {
        try {
            a.run();
            bad.add(what + ": no error raised, want " + code + "/" + state);
        } catch (SQLException e) {
            if (e.getErrorCode() != code || !state.equals(e.getSQLState())) {
                bad.add(what + ": got " + e.getErrorCode() + "/" + e.getSQLState() + " (" + e.getMessage() + "), want " + code + "/" + state);
            }
        }
    }

    static void dupErrors(List<String> bad) throws Exception {
        try (Connection c = proxy(PS)) {
            exec(c, "DROP TABLE IF EXISTS errs");
            exec(c, "CREATE TABLE errs (id INT PRIMARY KEY) ENGINE=InnoDB");
            exec(c, "INSERT INTO errs VALUES (1)");
            expectError(bad, "duplicate key, Statement", 1062, "23000", () -> exec(c, "INSERT INTO errs VALUES (1)"));
            alive(c, "text duplicate key", bad);
            expectError(bad, "duplicate key, server PreparedStatement", 1062, "23000", () -> {
                try (PreparedStatement p = c.prepareStatement("INSERT INTO errs VALUES (?)")) {
                    p.setInt(1, 1);
                    p.executeUpdate();
                }
            });
            alive(c, "prepared duplicate key", bad);
            c.setAutoCommit(false);
            exec(c, "INSERT INTO errs VALUES (2)");
            expectError(bad, "duplicate key inside a transaction", 1062, "23000", () -> exec(c, "INSERT INTO errs VALUES (2)"));
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT COUNT(*) FROM errs WHERE id = 2")) {
                r.next();
                eq(bad, "own row still there after error in transaction", r.getInt(1), 1);
            }
            c.rollback();
            c.setAutoCommit(true);
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT COUNT(*) FROM errs WHERE id = 2")) {
                r.next();
                eq(bad, "row gone after rollback", r.getInt(1), 0);
            }
        }
    }

    static void prepareExecute(Connection c, String sql) throws SQLException {
        try (PreparedStatement p = c.prepareStatement(sql)) {
            p.setInt(1, 1);
            p.execute();
        }
    }

    static void syntaxErrors(List<String> bad) throws Exception {
        // drv.strictPrepare: a failing COM_STMT_PREPARE is reported as it is, without a fallback to
        // a client-side prepared statement (MySQL Connector/J: emulateUnsupportedPstmts=false).
        try (Connection c = proxy(PS + drv.strictPrepare)) {
            expectError(bad, "syntax error, Statement", 1064, "42000", () -> exec(c, "SELEC 1"));
            alive(c, "text syntax error", bad);
            // MySQL Connector/J prepares in prepareStatement(), MariaDB Connector/J on the first execute.
            expectError(bad, "syntax error, COM_STMT_PREPARE", 1064, "42000", () -> prepareExecute(c, "SELEC ? FROM errs"));
            alive(c, "prepare syntax error", bad);
            expectError(bad, "unknown table, COM_STMT_PREPARE", 1146, "42S02",
                    () -> prepareExecute(c, "SELECT * FROM no_such_table_xyz WHERE id = ?"));
            alive(c, "prepare unknown table", bad);
        }
        // Default settings (MySQL Connector/J: emulateUnsupportedPstmts=true): the error surfaces at prepare or execute time.
        try (Connection c = proxy(PS)) {
            expectError(bad, "syntax error, prepare+execute with fallback", 1064, "42000", () -> prepareExecute(c, "SELEC ? FROM errs"));
            alive(c, "syntax error with fallback", bad);
        }
    }

    // -----------------------------------------------------------------------------------------
    // Stored procedure with two result sets
    // -----------------------------------------------------------------------------------------

    static List<String> readAllSets(Statement s, boolean hasResult) throws SQLException {
        List<String> sets = new ArrayList<>();
        boolean isRs = hasResult;
        for (int guard = 0; guard < 10; guard++) {
            if (isRs) {
                List<String> rows = new ArrayList<>();
                try (ResultSet r = s.getResultSet()) {
                    while (r.next()) rows.add(r.getInt(1) + ":" + r.getString(2));
                }
                sets.add(String.join(",", rows));
            } else if (s.getUpdateCount() == -1) {
                break;
            }
            isRs = s.getMoreResults();
        }
        return sets;
    }

    static void procedure(List<String> bad) throws Exception {
        String ddl = """
                CREATE PROCEDURE two_sets(IN p INT)
                BEGIN
                  SELECT p AS a, 'first' AS label;
                  SELECT p * 2 AS a, 'second 🚀' AS label UNION ALL SELECT p * 3, 'third';
                END""";
        List<String> want = List.of("7:first", "14:second 🚀,21:third");
        try (Connection c = proxy(PS)) {
            exec(c, "DROP PROCEDURE IF EXISTS two_sets");
            try {
                exec(c, ddl); // a BEGIN ... END body is one statement: no allowMultiQueries needed
            } catch (SQLException e) {
                bad.add("CREATE PROCEDURE with a BEGIN ... END body through Tessera: " + describe(e));
                try (Connection d = direct("")) {
                    if (d == null) return;
                    exec(d, ddl); // so that the CALL checks below still run
                }
            }
            try (Statement s = c.createStatement()) {
                eq(bad, "Statement CALL two_sets(7)", readAllSets(s, s.execute("CALL two_sets(7)")), want);
            }
            alive(c, "text CALL", bad);
            try (PreparedStatement p = c.prepareStatement("CALL two_sets(?)")) {
                p.setInt(1, 7);
                eq(bad, "PreparedStatement CALL two_sets(?)", readAllSets(p, p.execute()), want);
            }
            alive(c, "prepared CALL", bad);
            try (java.sql.CallableStatement cs = c.prepareCall("{CALL two_sets(?)}")) {
                cs.setInt(1, 7);
                eq(bad, "CallableStatement {CALL two_sets(?)}", readAllSets(cs, cs.execute()), want);
            }
            alive(c, "CallableStatement", bad);
        }
    }

    /**
     * A server-prepared SELECT executed again after a table change altered its column: the
     * values and the metadata are the new type's. MariaDB Connector/J negotiates cached
     * metadata, so its executions leave out definitions it holds; the ones after the ALTER
     * must carry the new ones, or the driver decodes a VARCHAR as an INT.
     */
    static void metadataAfterAlter(List<String> bad) throws Exception {
        try (Connection c = proxy(PS)) {
            exec(c, "DROP TABLE IF EXISTS meta_alter");
            exec(c, "CREATE TABLE meta_alter (id INT PRIMARY KEY, v INT)");
            exec(c, "INSERT INTO meta_alter VALUES (1, 42)");
            try (PreparedStatement p = c.prepareStatement("SELECT v FROM meta_alter WHERE id = ?")) {
                p.setInt(1, 1);
                for (int i = 0; i < 3; i++) {
                    try (ResultSet rs = p.executeQuery()) {
                        eq(bad, "a row before the ALTER, execution " + i, rs.next(), true);
                        eq(bad, "INT value, execution " + i, rs.getString(1), "42");
                        eq(bad, "INT metadata, execution " + i, rs.getMetaData().getColumnType(1), Types.INTEGER);
                    }
                }
                exec(c, "ALTER TABLE meta_alter MODIFY v VARCHAR(20)");
                exec(c, "UPDATE meta_alter SET v = 'forty-two' WHERE id = 1");
                for (int i = 0; i < 3; i++) {
                    try (ResultSet rs = p.executeQuery()) {
                        eq(bad, "a row after the ALTER, execution " + i, rs.next(), true);
                        eq(bad, "VARCHAR value, execution " + i, rs.getString(1), "forty-two");
                        eq(bad, "VARCHAR metadata, execution " + i, rs.getMetaData().getColumnType(1), Types.VARCHAR);
                    }
                }
            }
            alive(c, "prepared SELECT after ALTER", bad);
        }
    }

    // -----------------------------------------------------------------------------------------
    // Insert ids / update counts
    // -----------------------------------------------------------------------------------------

    static final Object[][] ID_STEPS = {
        {"text insert 1 row", "INSERT INTO %s (k, v) VALUES (1, 1)", null},
        {"text insert 3 rows", "INSERT INTO %s (k, v) VALUES (2, 2), (3, 3), (4, 4)", null},
        {"prepared insert 1 row", "INSERT INTO %s (k, v) VALUES (?, ?)", new int[] {5, 5}},
        {"prepared insert 2 rows", "INSERT INTO %s (k, v) VALUES (?, ?), (?, ?)", new int[] {6, 6, 7, 7}},
        {"prepared insert explicit id", "INSERT INTO %s (id, k, v) VALUES (?, ?, ?)", new int[] {5000, 8, 8}},
        {"text update 2 rows", "UPDATE %s SET v = v + 1 WHERE k <= 2", null},
        {"text update matched not changed", "UPDATE %s SET v = v WHERE k <= 2", null},
        {"prepared update 3 rows", "UPDATE %s SET v = ? WHERE k BETWEEN ? AND ?", new int[] {100, 3, 5}},
        {"prepared update 0 rows", "UPDATE %s SET v = ? WHERE k > ?", new int[] {1, 1000}},
        {"text upsert (update)", "INSERT INTO %s (k, v) VALUES (1, 1) ON DUPLICATE KEY UPDATE v = v + 10", null},
        {"prepared upsert (insert)", "INSERT INTO %s (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = v + 10", new int[] {9, 9}},
        {"text insert ignore dup", "INSERT IGNORE INTO %s (k, v) VALUES (1, 1)", null},
        {"text replace", "REPLACE INTO %s (id, k, v) VALUES (1000, 1, 42)", null},
        {"prepared delete 2 rows", "DELETE FROM %s WHERE k IN (?, ?)", new int[] {6, 7}},
        {"text delete 0 rows", "DELETE FROM %s WHERE k = 12345", null},
    };

    /** Both drivers set CLIENT_FOUND_ROWS (useAffectedRows=false): UPDATE counts matched rows. */
    static final long[][] ID_EXPECTED = {
        {1000, 1}, {1001, 3}, {1004, 1}, {1005, 2}, {5000, 1}, {0, 2}, {0, 2}, {0, 3}, {0, 0}, {1000, 2}, {5002, 1},
        {0, 0}, {1000, 2}, {0, 2}, {0, 0}, {5002, 5002},
    };

    static List<String> idSequence(Connection c, String table) throws SQLException {
        exec(c, "DROP TABLE IF EXISTS " + table);
        exec(c, "CREATE TABLE " + table + " (id BIGINT AUTO_INCREMENT PRIMARY KEY, k INT UNIQUE, v INT) ENGINE=InnoDB AUTO_INCREMENT=1000");
        List<String> out = new ArrayList<>();
        for (Object[] step : ID_STEPS) {
            String sql = String.format((String) step[1], table);
            long lastId;
            int n;
            String keys;
            if (step[2] == null) {
                try (Statement s = c.createStatement()) {
                    n = s.executeUpdate(sql, Statement.RETURN_GENERATED_KEYS);
                    lastId = drv.lastInsertId(s);
                    keys = keys(s);
                }
            } else {
                try (PreparedStatement p = c.prepareStatement(sql, Statement.RETURN_GENERATED_KEYS)) {
                    int[] a = (int[]) step[2];
                    for (int i = 0; i < a.length; i++) p.setInt(i + 1, a[i]);
                    n = p.executeUpdate();
                    lastId = drv.lastInsertId(p);
                    keys = keys(p);
                }
            }
            out.add(step[0] + ": lastInsertId=" + lastId + " updateCount=" + n + " generatedKeys=" + keys);
        }
        long a, b;
        try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT LAST_INSERT_ID()")) {
            r.next();
            a = r.getLong(1);
        }
        try (PreparedStatement p = c.prepareStatement("SELECT LAST_INSERT_ID() + ?")) {
            p.setInt(1, 0);
            try (ResultSet r = p.executeQuery()) {
                r.next();
                b = r.getLong(1);
            }
        }
        out.add("SELECT LAST_INSERT_ID() text/prepared: lastInsertId=" + a + " updateCount=" + b + " generatedKeys=-");
        return out;
    }

    static String keys(Statement s) throws SQLException {
        List<String> k = new ArrayList<>();
        try (ResultSet r = s.getGeneratedKeys()) {
            while (r.next()) k.add(r.getString(1));
        }
        return "[" + String.join(",", k) + "]";
    }

    static void insertIds(List<String> bad) throws Exception {
        List<String> got;
        try (Connection c = proxy(PS)) {
            got = idSequence(c, "ids_proxy");
        }
        for (int i = 0; i < ID_EXPECTED.length; i++) {
            String prefix = (i < ID_STEPS.length ? ID_STEPS[i][0] : "SELECT LAST_INSERT_ID() text/prepared") + ": lastInsertId="
                    + ID_EXPECTED[i][0] + " updateCount=" + ID_EXPECTED[i][1] + " ";
            if (!got.get(i).startsWith(prefix)) bad.add("got " + got.get(i) + "; want " + prefix.trim());
        }
        try (Connection d = direct(PS)) {
            if (d == null) {
                notes.add("(MARIADB_PORT not set: hard-coded MariaDB 10.11 values only)");
                return;
            }
            List<String> ref = idSequence(d, "ids_direct");
            for (int i = 0; i < ref.size(); i++) {
                if (!ref.get(i).equals(got.get(i))) bad.add("through Tessera " + got.get(i) + " but MariaDB direct " + ref.get(i));
            }
        }
    }

    /**
     * Session A inserts (auto id), session B inserts, A inserts a row with an explicit id (reported in
     * the OK packet, but LAST_INSERT_ID() does not change): A must still read its own id.
     */
    static void lastInsertIdPerSession(List<String> bad) throws Exception {
        try (Connection a = proxy(PS); Connection b = proxy(PS)) {
            exec(a, "DROP TABLE IF EXISTS lii");
            exec(a, "CREATE TABLE lii (id INT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=InnoDB");
            int wrong = 0;
            for (int i = 0; i < 20; i++) {
                long own, other;
                try (Statement s = a.createStatement()) {
                    s.executeUpdate("INSERT INTO lii (v) VALUES (1)", Statement.RETURN_GENERATED_KEYS);
                    own = drv.lastInsertId(s);
                }
                try (PreparedStatement p = b.prepareStatement("INSERT INTO lii (v) VALUES (?)", Statement.RETURN_GENERATED_KEYS)) {
                    p.setInt(1, 2);
                    p.executeUpdate();
                    other = drv.lastInsertId(p);
                }
                exec(a, "INSERT INTO lii (id, v) VALUES (" + (-1 - i) + ", 3)");
                long text, prep;
                try (Statement s = a.createStatement(); ResultSet r = s.executeQuery("SELECT LAST_INSERT_ID()")) {
                    r.next();
                    text = r.getLong(1);
                }
                try (PreparedStatement p = a.prepareStatement("SELECT LAST_INSERT_ID() + ?")) {
                    p.setInt(1, 0);
                    try (ResultSet r = p.executeQuery()) {
                        r.next();
                        prep = r.getLong(1);
                    }
                }
                if (text != own || prep != own) {
                    if (++wrong <= 5) {
                        bad.add("round " + i + ": session A reads LAST_INSERT_ID() " + text + " (text) / " + prep
                                + " (prepared), want its own " + own + " (session B's id was " + other + ")");
                    }
                }
            }
            if (wrong > 0) bad.add(wrong + " of 20 rounds wrong");
        }
    }

    // -----------------------------------------------------------------------------------------
    // 20 concurrent sessions
    // -----------------------------------------------------------------------------------------

    static void concurrentSessions(List<String> bad) throws Exception {
        final int workers = 20, rounds = 50;
        CountDownLatch ready = new CountDownLatch(workers);
        ExecutorService pool = Executors.newFixedThreadPool(workers);
        List<Future<?>> fs = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            final int me = w;
            fs.add(pool.submit(() -> {
                String myV = "worker-" + me + "-🚀";
                int h = me - 9;
                String myTz = String.format("%s%02d:%02d", h < 0 ? "-" : "+", Math.abs(h), (me * 15) % 60);
                boolean counted = false;
                try (Connection c = proxy(PS)) {
                    exec(c, "SET @v = '" + myV + "'");
                    try (PreparedStatement p = c.prepareStatement("SET time_zone = ?")) {
                        p.setString(1, myTz);
                        p.execute();
                    }
                    ready.countDown(); // all workers start reading together
                    counted = true;
                    ready.await(60, TimeUnit.SECONDS);
                    Random rnd = new Random(me);
                    try (PreparedStatement p = c.prepareStatement("SELECT @v, @@session.time_zone, ?"); Statement s = c.createStatement()) {
                        for (int i = 0; i < rounds; i++) {
                            ResultSet r;
                            if (i % 2 == 0) {
                                r = s.executeQuery("SELECT @v, @@session.time_zone, " + i);
                            } else {
                                p.setInt(1, i);
                                r = p.executeQuery();
                            }
                            try (r) {
                                r.next();
                                String v = r.getString(1), tz = r.getString(2);
                                int echo = r.getInt(3);
                                if (!myV.equals(v) || !myTz.equals(tz) || echo != i) {
                                    bad.add("worker " + me + " round " + i + ": @v=" + v + " tz=" + tz + " echo=" + echo + ", want " + myV + " " + myTz + " " + i);
                                }
                            }
                            if (rnd.nextInt(4) == 0) Thread.sleep(rnd.nextInt(3));
                        }
                    }
                    try (Statement s = c.createStatement();
                         ResultSet r = s.executeQuery("SELECT TIME_FORMAT(TIMEDIFF(NOW(), UTC_TIMESTAMP()), '%H:%i')")) {
                        r.next();
                        eq(bad, "worker " + me + " NOW()-UTC_TIMESTAMP()", r.getString(1), myTz.replaceFirst("^\\+", ""));
                    }
                } catch (Exception e) {
                    bad.add("worker " + me + ": " + describe(e));
                } finally {
                    if (!counted) ready.countDown();
                }
                return null;
            }));
        }
        for (Future<?> f : fs) f.get(180, TimeUnit.SECONDS);
        pool.shutdown();
        for (int i = 0; i < 5; i++) {
            try (Connection c = proxy(PS); Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT @v, @@session.time_zone, @@global.time_zone")) {
                r.next();
                eq(bad, "fresh session " + i + " @v", r.getString(1), null);
                eq(bad, "fresh session " + i + " time_zone (= global)", r.getString(2), r.getString(3));
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Server-side cursors (COM_STMT_FETCH)
    // -----------------------------------------------------------------------------------------

    static boolean cursorTableReady;

    static void ensureCursorTable(Connection c) throws SQLException {
        if (cursorTableReady) return;
        exec(c, "DROP TABLE IF EXISTS cursor_rows");
        exec(c, "CREATE TABLE cursor_rows (id INT PRIMARY KEY, payload VARCHAR(64), n BIGINT UNSIGNED, d DATETIME(6)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4");
        // Single-row prepared INSERTs in one transaction: the fixture does not depend on the
        // info text of multi-row OK packets ("Records: 100 ..."), which the insert-id check covers.
        c.setAutoCommit(false);
        try (PreparedStatement p = c.prepareStatement("INSERT INTO cursor_rows VALUES (?, ?, ?, ?)")) {
            for (int i = 1; i <= 100; i++) {
                p.setInt(1, i);
                p.setString(2, payload(i));
                drv.setUnsignedBigint(p, 3, nOf(i));
                p.setString(4, "2024-02-29 23:59:58." + String.format("%06d", i));
                p.executeUpdate();
            }
        }
        c.commit();
        c.setAutoCommit(true);
        cursorTableReady = true;
    }

    static String payload(int i) {
        return String.format("row-%03d-héllo 🚀", i);
    }

    static BigInteger nOf(int i) {
        return UBIG_MAX.subtract(BigInteger.valueOf(i));
    }

    static long comStmtFetch() {
        try (Connection d = direct(""); Statement s = d == null ? null : d.createStatement();
             ResultSet r = s == null ? null : s.executeQuery("SHOW GLOBAL STATUS LIKE 'Com_stmt_fetch'")) {
            if (r == null || !r.next()) return -1;
            return r.getLong(2);
        } catch (SQLException e) {
            return -1;
        }
    }

    static boolean usesCursor(ResultSet r) throws SQLException {
        return drv.usesCursor(r);
    }

    static void checkRow(List<String> bad, String how, ResultSet r, int want) throws SQLException {
        int id = r.getInt(1);
        if (id != want || !payload(want).equals(r.getString(2)) || !nOf(want).equals(r.getObject(3))
                || !LocalDateTime.of(2024, 2, 29, 23, 59, 58, want * 1000).equals(r.getObject(4, LocalDateTime.class))) {
            bad.add(how + ": row " + want + " arrived as id=" + id + " payload=" + r.getString(2) + " n=" + r.getObject(3) + " d=" + r.getString(4));
        }
    }

    static void cursorAllRows(List<String> bad) throws Exception {
        try (Connection c = proxy(CURSOR)) {
            ensureCursorTable(c);
            long before = comStmtFetch();
            try (PreparedStatement p = c.prepareStatement("SELECT id, payload, n, d FROM cursor_rows WHERE id >= ? ORDER BY id")) {
                p.setInt(1, 1);
                eq(bad, "statement fetch size", p.getFetchSize(), 10);
                try (ResultSet r = p.executeQuery()) {
                    if (!usesCursor(r)) bad.add("driver did not get a server-side cursor (no SERVER_STATUS_CURSOR_EXISTS in the execute response)");
                    int n = 0;
                    while (r.next()) checkRow(bad, "cursor", r, ++n);
                    eq(bad, "rows received through the cursor", n, 100);
                }
                // Execute the same statement again with another parameter.
                p.setInt(1, 91);
                try (ResultSet r = p.executeQuery()) {
                    int n = 90;
                    while (r.next()) checkRow(bad, "cursor re-execute", r, ++n);
                    eq(bad, "last row id on re-execute", n, 100);
                }
            }
            long after = comStmtFetch();
            if (before >= 0) notes.add("(MariaDB Com_stmt_fetch grew by " + (after - before) + ")");
        }
    }

    static void cursorInterleaved(List<String> bad) throws Exception {
        try (Connection c = proxy(CURSOR)) {
            ensureCursorTable(c);
            try (PreparedStatement pa = c.prepareStatement("SELECT id, payload, n, d FROM cursor_rows ORDER BY id");
                 PreparedStatement pb = c.prepareStatement("SELECT id, payload, n, d FROM cursor_rows WHERE id > ? ORDER BY id DESC");
                 PreparedStatement other = c.prepareStatement("SELECT COUNT(*) FROM cursor_rows WHERE id <= ?");
                 Statement text = c.createStatement()) {
                pb.setInt(1, 0);
                try (ResultSet ra = pa.executeQuery(); ResultSet rb = pb.executeQuery()) {
                    if (!usesCursor(ra) || !usesCursor(rb)) bad.add("driver did not get server-side cursors");
                    int na = 0, nb = 101;
                    for (int step = 0; step < 100; step++) {
                        if (ra.next()) checkRow(bad, "cursor A", ra, ++na);
                        if (rb.next()) checkRow(bad, "cursor B", rb, --nb);
                        if (step % 7 == 3) { // other statements while both cursors are open
                            other.setInt(1, step);
                            try (ResultSet r = other.executeQuery()) {
                                r.next();
                                eq(bad, "prepared query between fetches", r.getInt(1), step);
                            }
                            try (ResultSet r = text.executeQuery("SELECT " + step + ", @@session.time_zone")) {
                                r.next();
                                eq(bad, "text query between fetches", r.getInt(1), step);
                            }
                        }
                    }
                    if (ra.next()) bad.add("cursor A: extra row " + ra.getInt(1));
                    if (rb.next()) bad.add("cursor B: extra row " + rb.getInt(1));
                    eq(bad, "cursor A rows", na, 100);
                    eq(bad, "cursor B last id", nb, 1);
                }
            }
        }
    }

    static void cursorBlobs(List<String> bad) throws Exception {
        byte[] blob = bigBlob();
        try (Connection c = proxy(CURSOR)) {
            ensureCursorTable(c);
            exec(c, "DROP TABLE IF EXISTS cursor_blobs");
            exec(c, "CREATE TABLE cursor_blobs (id INT PRIMARY KEY, b LONGBLOB) ENGINE=InnoDB");
            try (PreparedStatement p = c.prepareStatement("INSERT INTO cursor_blobs VALUES (?, ?)")) {
                for (int id = 1; id <= 3; id++) {
                    p.setInt(1, id);
                    p.setBytes(2, blob);
                    p.executeUpdate();
                }
            }
            try (PreparedStatement p = c.prepareStatement("SELECT id, b FROM cursor_blobs WHERE id > ? ORDER BY id")) {
                p.setFetchSize(1);
                p.setInt(1, 0);
                try (ResultSet r = p.executeQuery()) {
                    if (!usesCursor(r)) bad.add("driver did not get a server-side cursor");
                    int n = 0;
                    while (r.next()) {
                        n++;
                        eq(bad, "blob row id", r.getInt(1), n);
                        if (!Arrays.equals(r.getBytes(2), blob)) bad.add("blob row " + n + ": bytes differ (" + r.getBytes(2).length + " bytes)");
                    }
                    eq(bad, "blob rows through the cursor", n, 3);
                }
            }
            // Close a cursor early, then re-execute the statement and read everything.
            try (PreparedStatement p = c.prepareStatement("SELECT id, payload, n, d FROM cursor_rows WHERE id >= ? ORDER BY id")) {
                p.setInt(1, 1);
                try (ResultSet r = p.executeQuery()) {
                    for (int i = 1; i <= 15 && r.next(); i++) checkRow(bad, "early-closed cursor", r, i);
                }
                p.setInt(1, 1);
                try (ResultSet r = p.executeQuery()) {
                    int n = 0;
                    while (r.next()) checkRow(bad, "cursor after early close", r, ++n);
                    eq(bad, "rows after early close + re-execute", n, 100);
                }
            }
            alive(c, "cursors", bad);
        }
    }
}
