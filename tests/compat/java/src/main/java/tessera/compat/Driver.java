package tessera.compat;

import com.mysql.cj.MysqlType;
import com.mysql.cj.jdbc.JdbcConnection;
import com.mysql.cj.jdbc.StatementImpl;
import com.mysql.cj.jdbc.result.ResultSetImpl;
import com.mysql.cj.protocol.a.result.ResultsetRowsCursor;

import java.math.BigInteger;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The JDBC drivers the compat checks run with, and the few things that differ between them:
 * URL scheme and options, and the calls that are not plain JDBC (insert id of the last OK packet,
 * BIGINT UNSIGNED parameters, server-side cursors, change user). Every check in CompatMain and
 * SessionChecks runs once per driver through these.
 */
enum Driver {
    /** MySQL Connector/J (com.mysql:mysql-connector-j). */
    MYSQL("mysql", "MySQL Connector/J", "jdbc:mysql://",
            "sslMode=DISABLED&allowPublicKeyRetrieval=true&connectTimeout=10000&socketTimeout=120000"
                    + "&characterEncoding=UTF-8&connectionTimeZone=UTC&forceConnectionTimeZoneToSession=false",
            "&allowLoadLocalInfile=true",
            // A failing COM_STMT_PREPARE is reported by prepareStatement() instead of silently
            // falling back to a client-side prepared statement.
            "&emulateUnsupportedPstmts=false", false) {
        @Override
        long lastInsertId(Statement s) throws SQLException {
            return s.unwrap(StatementImpl.class).getLastInsertID();
        }

        @Override
        void setUnsignedBigint(PreparedStatement p, int i, BigInteger v) throws SQLException {
            p.setObject(i, v, MysqlType.BIGINT_UNSIGNED); // LONGLONG with the unsigned flag
        }

        @Override
        boolean hasCursorFetch() {
            return true;
        }

        @Override
        boolean usesCursor(ResultSet r) throws SQLException {
            return r.unwrap(ResultSetImpl.class).getRows() instanceof ResultsetRowsCursor;
        }

        @Override
        String noChangeUser() {
            return null;
        }

        @Override
        void changeUser(Connection c, String user, String password) throws SQLException {
            c.unwrap(JdbcConnection.class).changeUser(user, password); // COM_CHANGE_USER
        }
    },

    /** MariaDB Connector/J 3.x (org.mariadb.jdbc:mariadb-java-client). */
    MARIADB("mariadb", "MariaDB Connector/J", "jdbc:mariadb://",
            // Always utf8mb4; no characterEncoding option.
            "sslMode=disable&allowPublicKeyRetrieval=true&connectTimeout=10000&socketTimeout=120000"
                    + "&connectionTimeZone=UTC&forceConnectionTimeZoneToSession=false",
            "&allowLocalInfile=true",
            "", // server prepares are not emulated on failure: the error surfaces as it is
            // Session tracking tells it character_set_client; anything but utf8* closes the connection.
            true) {

        /** The insert id of the statement's OK packet: MariaDB Connector/J returns it as the single generated key. */
        @Override
        long lastInsertId(Statement s) throws SQLException {
            try (ResultSet r = s.getGeneratedKeys()) {
                return r.next() ? r.getLong(1) : 0;
            }
        }

        /** BigInteger parameters are sent as DECIMAL text: the server converts them. */
        @Override
        void setUnsignedBigint(PreparedStatement p, int i, BigInteger v) throws SQLException {
            p.setObject(i, v);
        }

        @Override
        boolean hasCursorFetch() {
            return false; // fetch size streams the result set; there is no COM_STMT_FETCH cursor mode
        }

        @Override
        boolean usesCursor(ResultSet r) {
            return false;
        }

        @Override
        String noChangeUser() {
            return "MariaDB Connector/J 3.x has no change-user API (only Connection.reset(), COM_RESET_CONNECTION)";
        }

        @Override
        void changeUser(Connection c, String user, String password) {
            throw new UnsupportedOperationException(noChangeUser());
        }
    };

    final String id, label, scheme, common, localInfile, strictPrepare;
    /** The driver refuses a session whose character set is not utf8 (SET CHARACTER SET latin1 cannot be checked). */
    final boolean utf8Only;

    /** Server-side prepared statements (binary protocol), cached: the same option names in both drivers. */
    static final String PS = "&useServerPrepStmts=true&cachePrepStmts=true";

    Driver(String id, String label, String scheme, String common, String localInfile, String strictPrepare, boolean utf8Only) {
        this.id = id;
        this.label = label;
        this.scheme = scheme;
        this.common = common;
        this.localInfile = localInfile;
        this.strictPrepare = strictPrepare;
        this.utf8Only = utf8Only;
    }

    /** The JDBC URL of host:port/db with this driver's common options plus extra ("&k=v..."). */
    String url(String host, int port, String db, String extra) {
        return scheme + host + ":" + port + "/" + db + "?" + common + extra;
    }

    /** The insert id of the last statement's OK packet (run with RETURN_GENERATED_KEYS). */
    abstract long lastInsertId(Statement s) throws SQLException;

    abstract void setUnsignedBigint(PreparedStatement p, int i, BigInteger v) throws SQLException;

    /** Whether the driver reads result sets through server-side cursors (useCursorFetch, COM_STMT_FETCH). */
    abstract boolean hasCursorFetch();

    abstract boolean usesCursor(ResultSet r) throws SQLException;

    /** Why the driver has no COM_CHANGE_USER call, or null when it has one (changeUser). */
    abstract String noChangeUser();

    abstract void changeUser(Connection c, String user, String password) throws SQLException;
}
