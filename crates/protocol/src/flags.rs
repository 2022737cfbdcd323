//! Capability flags (handshake) and server status flags (OK/EOF), as in the MySQL protocol docs.

pub const CLIENT_LONG_PASSWORD: u32 = 1;
pub const CLIENT_FOUND_ROWS: u32 = 1 << 1;
pub const CLIENT_LONG_FLAG: u32 = 1 << 2;
pub const CLIENT_CONNECT_WITH_DB: u32 = 1 << 3;
pub const CLIENT_NO_SCHEMA: u32 = 1 << 4;
pub const CLIENT_COMPRESS: u32 = 1 << 5;
pub const CLIENT_ODBC: u32 = 1 << 6;
pub const CLIENT_LOCAL_FILES: u32 = 1 << 7;
pub const CLIENT_IGNORE_SPACE: u32 = 1 << 8;
pub const CLIENT_PROTOCOL_41: u32 = 1 << 9;
pub const CLIENT_INTERACTIVE: u32 = 1 << 10;
pub const CLIENT_SSL: u32 = 1 << 11;
pub const CLIENT_IGNORE_SIGPIPE: u32 = 1 << 12;
pub const CLIENT_TRANSACTIONS: u32 = 1 << 13;
pub const CLIENT_RESERVED: u32 = 1 << 14;
pub const CLIENT_SECURE_CONNECTION: u32 = 1 << 15;
pub const CLIENT_MULTI_STATEMENTS: u32 = 1 << 16;
pub const CLIENT_MULTI_RESULTS: u32 = 1 << 17;
pub const CLIENT_PS_MULTI_RESULTS: u32 = 1 << 18;
pub const CLIENT_PLUGIN_AUTH: u32 = 1 << 19;
pub const CLIENT_CONNECT_ATTRS: u32 = 1 << 20;
pub const CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA: u32 = 1 << 21;
pub const CLIENT_CAN_HANDLE_EXPIRED_PASSWORDS: u32 = 1 << 22;
pub const CLIENT_SESSION_TRACK: u32 = 1 << 23;
pub const CLIENT_DEPRECATE_EOF: u32 = 1 << 24;

/// What Tessera offers to clients (SSL is added when TLS is configured).
pub const PROXY_CAPABILITIES: u32 = CLIENT_LONG_PASSWORD
    | CLIENT_FOUND_ROWS
    | CLIENT_LONG_FLAG
    | CLIENT_CONNECT_WITH_DB
    | CLIENT_ODBC
    | CLIENT_LOCAL_FILES
    | CLIENT_IGNORE_SPACE
    | CLIENT_PROTOCOL_41
    | CLIENT_INTERACTIVE
    | CLIENT_IGNORE_SIGPIPE
    | CLIENT_TRANSACTIONS
    | CLIENT_RESERVED
    | CLIENT_SECURE_CONNECTION
    | CLIENT_MULTI_STATEMENTS
    | CLIENT_MULTI_RESULTS
    | CLIENT_PS_MULTI_RESULTS
    | CLIENT_PLUGIN_AUTH
    | CLIENT_CONNECT_ATTRS
    | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
    | CLIENT_CAN_HANDLE_EXPIRED_PASSWORDS
    | CLIENT_SESSION_TRACK
    | CLIENT_DEPRECATE_EOF;

pub const SERVER_STATUS_IN_TRANS: u16 = 0x0001;
pub const SERVER_STATUS_AUTOCOMMIT: u16 = 0x0002;
pub const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;
pub const SERVER_STATUS_NO_GOOD_INDEX_USED: u16 = 0x0010;
pub const SERVER_STATUS_NO_INDEX_USED: u16 = 0x0020;
pub const SERVER_STATUS_CURSOR_EXISTS: u16 = 0x0040;
pub const SERVER_STATUS_LAST_ROW_SENT: u16 = 0x0080;
pub const SERVER_STATUS_DB_DROPPED: u16 = 0x0100;
pub const SERVER_STATUS_NO_BACKSLASH_ESCAPES: u16 = 0x0200;
pub const SERVER_STATUS_METADATA_CHANGED: u16 = 0x0400;
pub const SERVER_QUERY_WAS_SLOW: u16 = 0x0800;
pub const SERVER_PS_OUT_PARAMS: u16 = 0x1000;
pub const SERVER_STATUS_IN_TRANS_READONLY: u16 = 0x2000;
pub const SERVER_SESSION_STATE_CHANGED: u16 = 0x4000;

/// Session-state change types carried in OK packets when CLIENT_SESSION_TRACK is on.
pub const SESSION_TRACK_SYSTEM_VARIABLES: u8 = 0;
pub const SESSION_TRACK_SCHEMA: u8 = 1;
pub const SESSION_TRACK_STATE_CHANGE: u8 = 2;
pub const SESSION_TRACK_GTIDS: u8 = 3;
pub const SESSION_TRACK_TRANSACTION_CHARACTERISTICS: u8 = 4;
pub const SESSION_TRACK_TRANSACTION_STATE: u8 = 5;

/// MariaDB extended capabilities (the upper 32 bits, exchanged in reserved handshake bytes).
pub const MARIADB_CLIENT_PROGRESS: u32 = 1;
pub const MARIADB_CLIENT_STMT_BULK_OPERATIONS: u32 = 1 << 2;
/// Column definitions carry extended type information (e.g. JSON, UUID formats).
pub const MARIADB_CLIENT_EXTENDED_METADATA: u32 = 1 << 3;
/// A result set's column count carries a "metadata follows" byte; a prepared statement's
/// result skips the column definitions the client already holds for it (MariaDB 10.6+).
pub const MARIADB_CLIENT_CACHE_METADATA: u32 = 1 << 4;
