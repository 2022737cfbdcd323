<?php
// PHP compatibility checks: PDO with pdo_mysql (mysqlnd) talking to MariaDB through Tessera
// (or to MariaDB itself with COMPAT_DIRECT=1). Checks, each with emulated prepares (every
// statement a COM_QUERY) and with server prepares (PDO::ATTR_EMULATE_PREPARES false:
// COM_STMT_PREPARE / EXECUTE): session state kept across statements (SET NAMES, SET CHARACTER
// SET, character_set_results, collation_connection, time_zone, sql_mode, user variables,
// TEMPORARY table, GET_LOCK), the warnings / diagnostics area, identity (USER(), CURRENT_USER(),
// CONNECTION_ID()), KILL [QUERY] from another connection (the running statement's connection is
// killed by a second php process, started with proc_open), SET session_track_*, read-after-write
// on two connections; once: LOAD DATA LOCAL INFILE (PDO::MYSQL_ATTR_LOCAL_INFILE). PDO has no
// change-user call. Prints "ok     NAME" / "NOT OK NAME: why" (tests/compat/lib.sh's format) and
// exits 1 if any check failed. COMPAT_FILTER=kill runs only the KILL checks.
//
//   php compat.php                                   the checks (run by tests/compat/php/run.sh)
//   php compat.php kill-helper ID MARKER             internal: waits until a statement containing
//                                                    MARKER runs on a server, then KILL QUERY ID
//
// Environment: TESSERA_HOST TESSERA_PORT TESSERA_USER TESSERA_PASSWORD, MARIADB_HOST MARIADB_PORT
// MARIADB_USER MARIADB_PASSWORD MARIADB_REPLICA_PORTS (the servers, watched for KILL), COMPAT_DIRECT.
declare(strict_types=1);

const DB = 'compat_php';
const UNKNOWN_ID = 987654321;

function env(string $k, string $def = ''): string
{
    $v = getenv($k);
    return $v === false || $v === '' ? $def : $v;
}

// ---------------------------------------------------------------------------------------------
// Connections and queries
// ---------------------------------------------------------------------------------------------

/** A PDO connection through Tessera (emulated or server prepares), as $user unless given. */
function connect(bool $emulate, string $db = DB, array $opts = []): PDO
{
    $dsn = sprintf('mysql:host=%s;port=%s;charset=utf8mb4%s', env('TESSERA_HOST', '127.0.0.1'), env('TESSERA_PORT'),
        $db === '' ? '' : ";dbname=$db");
    return new PDO($dsn, env('TESSERA_USER', 'app'), env('TESSERA_PASSWORD', 'app'), $opts + [
        PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
        PDO::ATTR_EMULATE_PREPARES => $emulate,
        PDO::ATTR_TIMEOUT => 10, // connect timeout; reads are bounded by mysqlnd.net_read_timeout (run.sh)
    ]);
}

/** Admin connections straight to every server (primary and replicas), to watch the PROCESSLIST. */
function servers(): array
{
    $ports = array_filter(array_merge([env('MARIADB_PORT')], explode(',', env('MARIADB_REPLICA_PORTS'))), fn($p) => trim($p) !== '');
    $out = [];
    foreach ($ports as $p) {
        $out[] = new PDO(sprintf('mysql:host=%s;port=%d', env('MARIADB_HOST', '127.0.0.1'), (int)$p),
            env('MARIADB_USER', 'tessera'), env('MARIADB_PASSWORD', 'tessera'),
            [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION, PDO::ATTR_EMULATE_PREPARES => true, PDO::ATTR_TIMEOUT => 10]);
    }
    if (!$out) {
        throw new RuntimeException('MARIADB_PORT is not set: cannot watch the PROCESSLIST');
    }
    return $out;
}

/** Values as MariaDB's text protocol spells them (server prepares return PHP ints). */
function str(mixed $v): ?string
{
    return $v === null ? null : (string)$v;
}

/** First column of the first row (COM_QUERY with emulated prepares, COM_STMT_PREPARE/EXECUTE without). */
function one(PDO $c, string $sql, array $params = []): ?string
{
    $st = $c->prepare($sql);
    $st->execute($params);
    $v = $st->fetchColumn();
    $st->closeCursor();
    return $v === false ? '<no row>' : str($v);
}

/** "Level Code" of every SHOW WARNINGS row. */
function warnings(PDO $c): array
{
    $st = $c->query('SHOW WARNINGS');
    $out = array_map(fn($r) => $r[0] . ' ' . $r[1], $st->fetchAll(PDO::FETCH_NUM));
    $st->closeCursor();
    return $out;
}

function connection_id(PDO $c): int
{
    return (int)one($c, 'SELECT CONNECTION_ID()');
}

/** The MariaDB error number of a PDOException (errorInfo[1]), or 0. */
function errno(Throwable $e): int
{
    return $e instanceof PDOException && isset($e->errorInfo[1]) ? (int)$e->errorInfo[1] : 0;
}

function describe(Throwable $e): string
{
    $s = get_class($e) . ': ' . preg_replace('/\s+/', ' ', $e->getMessage());
    return errno($e) ? "[errno " . errno($e) . "] $s" : $s;
}

// ---------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------

$passed = 0;
$failed = 0;
$failedNames = [];
$notes = [];

function show(mixed $v): string
{
    return $v === null ? 'NULL' : json_encode($v, JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES);
}

function eq(array &$bad, string $what, mixed $got, mixed $want): void
{
    if ($got !== $want) {
        $bad[] = "$what: got " . show($got) . ', want ' . show($want);
    }
}

/** $sql answers $want. */
function expect(array &$bad, PDO $c, string $sql, ?string $want, array $params = []): void
{
    eq($bad, $sql, one($c, $sql, $params), $want);
}

/** $sql must fail with MariaDB error $code. */
function fails(array &$bad, PDO $c, string $sql, int $code, array $params = []): void
{
    try {
        one($c, $sql, $params);
        $bad[] = "$sql: no error, want $code";
    } catch (PDOException $e) {
        if (errno($e) !== $code) {
            $bad[] = "$sql: got " . describe($e) . ", want $code";
        }
    }
}

/**
 * Runs one check unless COMPAT_FILTER (text in the name, case-insensitive) excludes it ($always:
 * the first connection, which creates the database); prints ok / NOT OK (lib.sh's format).
 */
function check(string $name, callable $fn, bool $always = false): void
{
    global $passed, $failed, $failedNames, $notes;
    $filter = strtolower(env('COMPAT_FILTER'));
    if (!$always && $filter !== '' && !str_contains(strtolower($name), $filter)) {
        return;
    }
    $bad = [];
    $notes = [];
    $t0 = microtime(true);
    try {
        $fn($bad);
    } catch (Throwable $e) {
        $bad[] = 'exception: ' . describe($e);
    }
    $ms = (int)round((microtime(true) - $t0) * 1000);
    if (!$bad) {
        $passed++;
        printf("ok     %s (%d ms)\n", $name, $ms);
    } else {
        $failed++;
        $failedNames[] = $name;
        printf("NOT OK %s (%d ms): %s\n", $name, $ms, $bad[0]);
        foreach (array_slice($bad, 1, 29) as $b) {
            echo "         $b\n";
        }
        if (count($bad) > 30) {
            echo '         ... and ' . (count($bad) - 30) . " more\n";
        }
    }
    foreach ($notes as $n) {
        echo "         $n\n";
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Session state
// ---------------------------------------------------------------------------------------------

/**
 * Twelve other statements between setting session state and reading it back: writes, a
 * committed transaction, reads. A proxy that lost the session state on any of them is caught
 * by the reads after it.
 */
function busywork(PDO $c): void
{
    $c->exec('CREATE TABLE IF NOT EXISTS busy (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB');
    $c->exec("INSERT INTO busy (v) VALUES ('exec')");
    $c->prepare('INSERT INTO busy (v) VALUES (?)')->execute(['prepared']);
    $c->beginTransaction();
    $c->exec("INSERT INTO busy (v) VALUES ('tx')");
    $c->exec("UPDATE busy SET v = 'tx2' WHERE v = 'tx'");
    $c->commit();
    one($c, 'SELECT COUNT(*) FROM busy');
    one($c, 'SELECT MAX(id) FROM busy WHERE id > ?', [0]);
    one($c, 'SELECT 1 + 1');
    $c->exec('DO 1');
    one($c, 'SELECT ?', ['x']);
}

function check_set_names(array &$bad, bool $em): void
{
    $c = connect($em);
    $c->exec('SET NAMES utf8mb4 COLLATE utf8mb4_bin');
    busywork($c);
    expect($bad, $c, 'SELECT @@collation_connection', 'utf8mb4_bin');
    expect($bad, $c, "SELECT 'a' = 'A'", '0');
    $c->exec('SET NAMES utf8mb4');
    busywork($c);
    expect($bad, $c, 'SELECT @@collation_connection', 'utf8mb4_general_ci');
    expect($bad, $c, "SELECT 'a' = 'A'", '1');
}

function check_character_set(array &$bad, bool $em): void
{
    global $notes;
    $c = connect($em);
    $c->exec('SET CHARACTER SET latin1');
    busywork($c);
    expect($bad, $c, 'SELECT @@character_set_client', 'latin1');
    expect($bad, $c, 'SELECT @@character_set_results', 'latin1');
    // The server's own @@character_set_database, read in the same state.
    $database = one($c, 'SELECT @@character_set_database');
    expect($bad, $c, 'SELECT @@character_set_connection', $database);
    $notes[] = "(@@character_set_database = $database)";
}

function check_results_null(array &$bad, bool $em): void
{
    $c = connect($em);
    $c->exec('SET character_set_results = NULL');
    busywork($c);
    expect($bad, $c, 'SELECT @@character_set_results IS NULL', '1');
    $c->exec('SET collation_connection = utf8mb4_unicode_ci');
    busywork($c);
    expect($bad, $c, 'SELECT @@collation_connection', 'utf8mb4_unicode_ci');
    expect($bad, $c, 'SELECT @@character_set_results IS NULL', '1');
}

function check_session_vars(array &$bad, bool $em): void
{
    $c = connect($em);
    $c->exec("SET time_zone = '+05:30'");
    $c->exec("SET sql_mode = 'ANSI_QUOTES'");
    $c->exec('SET @x = 42');
    $c->exec('CREATE TEMPORARY TABLE tmp_session (id INT PRIMARY KEY, v VARCHAR(20))');
    $c->exec("INSERT INTO tmp_session VALUES (1, 'one')");
    busywork($c);
    $c->prepare('INSERT INTO tmp_session VALUES (?, ?)')->execute([2, 'two']);
    busywork($c);
    expect($bad, $c, 'SELECT @@time_zone', '+05:30');
    expect($bad, $c, "SELECT TIME_FORMAT(TIMEDIFF(NOW(), UTC_TIMESTAMP()), '%H:%i')", '05:30');
    expect($bad, $c, 'SELECT @@sql_mode', 'ANSI_QUOTES');
    // With ANSI_QUOTES "v" is the column, without it the string 'v'.
    expect($bad, $c, 'SELECT "v" FROM tmp_session WHERE id = 1', 'one');
    expect($bad, $c, 'SELECT @x', '42');
    expect($bad, $c, "SELECT GROUP_CONCAT(id, ':', v ORDER BY id) FROM tmp_session", '1:one,2:two');
}

function check_named_lock(array &$bad, bool $em): void
{
    $lock = DB . '_lock_' . ($em ? 'emulated' : 'server');
    $c = connect($em);
    $other = connect($em);
    expect($bad, $c, 'SELECT GET_LOCK(?, 0)', '1', [$lock]);
    busywork($c);
    eq($bad, 'IS_USED_LOCK from another connection IS NOT NULL', one($other, 'SELECT IS_USED_LOCK(?) IS NOT NULL', [$lock]), '1');
    eq($bad, 'GET_LOCK from another connection', one($other, 'SELECT GET_LOCK(?, 0)', [$lock]), '0');
    busywork($c);
    eq($bad, 'RELEASE_LOCK by the holder', one($c, 'SELECT RELEASE_LOCK(?)', [$lock]), '1');
    eq($bad, 'IS_USED_LOCK from another connection after RELEASE_LOCK', one($other, 'SELECT IS_USED_LOCK(?) IS NULL', [$lock]), '1');
}

// ---------------------------------------------------------------------------------------------
// 2. Warnings / diagnostics area
// ---------------------------------------------------------------------------------------------

/** SELECT CAST('abc' AS SIGNED), the string bound as a parameter: 0 with Warning 1292. */
function cast(array &$bad, PDO $c): void
{
    eq($bad, "CAST('abc' AS SIGNED)", one($c, 'SELECT CAST(? AS SIGNED)', ['abc']), '0');
}

function check_cast_warnings(array &$bad, bool $em): void
{
    $c = connect($em);
    cast($bad, $c);
    eq($bad, 'SHOW WARNINGS after CAST', warnings($c), ['Warning 1292']);
    cast($bad, $c);
    eq($bad, 'SELECT @@warning_count after CAST', one($c, 'SELECT @@warning_count'), '1');
    cast($bad, $c);
    eq($bad, 'SHOW COUNT(*) WARNINGS after CAST', one($c, 'SHOW COUNT(*) WARNINGS'), '1');
    cast($bad, $c);
    $c->exec('GET DIAGNOSTICS @n = NUMBER');
    eq($bad, 'GET DIAGNOSTICS @n = NUMBER after CAST, SELECT @n', one($c, 'SELECT @n'), '1');
}

function check_error_warnings(array &$bad, bool $em): void
{
    $c = connect($em);
    try {
        $c->exec('USE no_such_db_xyz');
        $bad[] = 'USE no_such_db_xyz: no error';
    } catch (PDOException $e) {
        eq($bad, 'USE no_such_db_xyz: errno', errno($e), 1049);
    }
    eq($bad, 'SHOW WARNINGS after USE no_such_db_xyz', warnings($c), ['Error 1049']);
    fails($bad, $c, 'SELECT * FROM no_such_table_xyz WHERE id = ?', 1146, [1]);
    eq($bad, 'SHOW WARNINGS after SELECT from a missing table', warnings($c), ['Error 1146']);
    try {
        $c->exec('USE no_such_db_xyz');
    } catch (PDOException) {
    }
    cast($bad, $c);
    eq($bad, 'SHOW WARNINGS after failed USE, then CAST', warnings($c), ['Warning 1292']);
}

/**
 * MariaDB clears the diagnostics area only on a statement that uses a table or raises messages:
 * SELECT 1 after the CAST keeps its Warning 1292, a SELECT from a table clears it.
 */
function check_no_warnings(array &$bad, bool $em): void
{
    $c = connect($em);
    expect($bad, $c, 'SELECT 1', '1');
    eq($bad, 'SHOW WARNINGS after SELECT 1 on a new connection', warnings($c), []);
    expect($bad, $c, 'SELECT 1', '1');
    eq($bad, 'SELECT @@warning_count after SELECT 1 on a new connection', one($c, 'SELECT @@warning_count'), '0');
    $c->exec('CREATE TABLE IF NOT EXISTS diag_t (id INT PRIMARY KEY) ENGINE=InnoDB');
    cast($bad, $c);
    expect($bad, $c, 'SELECT 1', '1');
    eq($bad, 'SHOW WARNINGS after CAST, SELECT 1 (no table: the warning stays)', warnings($c), ['Warning 1292']);
    cast($bad, $c);
    expect($bad, $c, 'SELECT COUNT(*) FROM diag_t', '0');
    eq($bad, 'SHOW WARNINGS after CAST, SELECT from a table', warnings($c), []);
    cast($bad, $c);
    expect($bad, $c, 'SELECT COUNT(*) FROM diag_t', '0');
    eq($bad, 'SELECT @@warning_count after CAST, SELECT from a table', one($c, 'SELECT @@warning_count'), '0');
}

// ---------------------------------------------------------------------------------------------
// 3. Identity
// ---------------------------------------------------------------------------------------------

function check_identity(array &$bad, bool $em): void
{
    $user = env('TESSERA_USER', 'app');
    $c = connect($em);
    foreach (['USER()', 'SESSION_USER()', 'SYSTEM_USER()'] as $f) {
        expect($bad, $c, "SELECT $f", "$user@127.0.0.1");
    }
    expect($bad, $c, 'SELECT CURRENT_USER()', "$user@%");
    expect($bad, $c, 'SELECT CURRENT_USER', "$user@%");
    $id = connection_id($c);
    for ($i = 0; $i < 10; $i++) {
        eq($bad, "CONNECTION_ID() on statement $i", one($c, 'SELECT CONNECTION_ID() + ?', [0]), (string)$id);
        if ($i === 4) {
            busywork($c);
        }
    }
    $other = connection_id(connect($em));
    if ($other === $id) {
        $bad[] = "two connections have the same CONNECTION_ID() $id";
    }
}

// ---------------------------------------------------------------------------------------------
// 5. KILL
// ---------------------------------------------------------------------------------------------

/**
 * kill-helper mode (a second php process): polls every server's PROCESSLIST until a statement
 * containing $marker runs (at most 20 s), then sends KILL QUERY $id through Tessera. Prints one
 * JSON line: {"seen": bool, "kill": "OK" | "errno N ..."}.
 */
function kill_helper(int $id, string $marker): void
{
    $seen = false;
    $deadline = microtime(true) + 20;
    $conns = servers();
    while (!$seen && microtime(true) < $deadline) {
        foreach ($conns as $s) {
            $n = one($s, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%$marker%' AND ID <> CONNECTION_ID()");
            if ($n !== '0') {
                $seen = true;
                break;
            }
        }
        if (!$seen) {
            usleep(10000); // poll interval
        }
    }
    $kill = 'not sent';
    if ($seen) {
        try {
            connect(true, '')->exec("KILL QUERY $id");
            $kill = 'OK';
        } catch (Throwable $e) {
            $kill = describe($e);
        }
    }
    echo json_encode(['seen' => $seen, 'kill' => $kill]), "\n";
}

/**
 * Starts `php compat.php kill-helper ID MARKER` in the background; returns [process, pipe of its
 * stdout and stderr]. (Not 2 => STDERR: PHP would seek our shared stderr back to where its STDERR
 * stream stood, and a log file that takes both outputs would be overwritten.)
 */
function spawn_kill_helper(int $id, string $marker): array
{
    $cmd = [PHP_BINARY, '-d', 'mysqlnd.net_read_timeout=30', '-d', 'display_errors=stderr', __FILE__, 'kill-helper', (string)$id, $marker];
    $p = proc_open($cmd, [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['redirect', 1]], $pipes);
    if (!is_resource($p)) {
        throw new RuntimeException('proc_open of the kill helper failed');
    }
    return [$p, $pipes[1]];
}

/** The helper's JSON answer (its last line), waiting at most $seconds for it to exit (else it is terminated). */
function helper_result(array $h, int $seconds): array
{
    [$p, $out] = $h;
    $buf = '';
    $eof = false;
    $deadline = microtime(true) + $seconds;
    while (!$eof && ($left = $deadline - microtime(true)) > 0) {
        $r = [$out];
        $w = $e = null;
        if (stream_select($r, $w, $e, (int)$left, 100000) === false) {
            break;
        }
        if ($r) {
            $chunk = fread($out, 8192);
            $eof = $chunk === '' || $chunk === false; // the helper exited
            $buf .= (string)$chunk;
        }
    }
    if (!$eof) {
        proc_terminate($p);
    }
    fclose($out);
    proc_close($p);
    $lines = explode("\n", trim($buf));
    $res = json_decode((string)array_pop($lines), true);
    if (!is_array($res)) {
        return ['error' => $eof ? 'the kill helper failed: ' . preg_replace('/\s+/', ' ', $buf) : "the kill helper gave no answer within $seconds s"];
    }
    return $res;
}

/** Connection $c still answers, with the same CONNECTION_ID(). */
function still_usable(array &$bad, PDO $c, int $id, string $after): void
{
    try {
        eq($bad, "SELECT 1 after $after", one($c, 'SELECT 1'), '1');
        eq($bad, "CONNECTION_ID() after $after", connection_id($c), $id);
    } catch (PDOException $e) {
        $bad[] = "connection unusable after $after: " . describe($e);
    }
}

function check_kill_query(array &$bad, bool $em): void
{
    global $notes;
    $a = connect($em);
    $n = connection_id($a);
    $marker = 'compat-php-kill-query-' . getmypid() . '-' . hrtime(true);
    $helper = spawn_kill_helper($n, $marker);
    $t0 = microtime(true);
    try {
        $outcome = 'SLEEP returned ' . one($a, "SELECT SLEEP(?) /* $marker */", [5]);
    } catch (PDOException $e) {
        $outcome = 'error ' . errno($e) . ' ' . $e->getMessage();
    }
    $secs = microtime(true) - $t0;
    $res = helper_result($helper, 30);
    if (isset($res['error'])) {
        $bad[] = $res['error'];
    } elseif (!$res['seen']) {
        $bad[] = "the statement /* $marker */ never showed in any server's PROCESSLIST within 20 s";
    } elseif ($res['kill'] !== 'OK') {
        $bad[] = "KILL QUERY $n (A's CONNECTION_ID()): " . $res['kill'];
    }
    if ($outcome !== 'SLEEP returned 1' && !str_starts_with($outcome, 'error 1317 ')) {
        $bad[] = "interrupted SLEEP(5): got $outcome, want error 1317 or SLEEP returned 1";
    }
    if ($secs > 4.5) {
        $bad[] = sprintf('SLEEP(5) ended after %.1f s: not interrupted', $secs);
    }
    $notes[] = sprintf('(SLEEP(5): %s after %.2f s)', $outcome, $secs);
    still_usable($bad, $a, $n, 'KILL QUERY');
}

function check_kill_connection(array &$bad, bool $em): void
{
    global $notes;
    $a = connect($em);
    $b = connect($em);
    $n = connection_id($a);
    try {
        $b->exec("KILL $n");
    } catch (PDOException $e) {
        $bad[] = "KILL $n (A's CONNECTION_ID()): " . describe($e);
    }
    $t0 = microtime(true);
    try {
        $got = one($a, 'SELECT 1');
        $bad[] = "the killed connection still answers SELECT 1 = $got";
    } catch (PDOException $e) {
        $secs = microtime(true) - $t0;
        $notes[] = sprintf('(killed connection: %s after %.2f s)', describe($e), $secs);
        if ($secs > 10) {
            $bad[] = sprintf("the killed connection's statement failed only after %.1f s (hang until the read timeout)", $secs);
        }
    }
    eq($bad, 'the other connection after KILL', one($b, 'SELECT 1'), '1');
    eq($bad, 'a new connection after KILL', one(connect($em), 'SELECT ? + 1', [1]), '2');
}

function check_kill_idle_unknown(array &$bad, bool $em): void
{
    $a = connect($em);
    $b = connect($em);
    $n = connection_id($a);
    try {
        $b->exec("KILL QUERY $n");
    } catch (PDOException $e) {
        $bad[] = "KILL QUERY $n of an idle connection: " . describe($e);
    }
    still_usable($bad, $a, $n, 'KILL QUERY while idle');
    foreach (['KILL', 'KILL QUERY'] as $kill) {
        try {
            $b->exec("$kill " . UNKNOWN_ID);
            $bad[] = "$kill " . UNKNOWN_ID . ' (no such thread): no error, want 1094';
        } catch (PDOException $e) {
            eq($bad, "$kill " . UNKNOWN_ID . ' (no such thread): errno', errno($e), 1094);
        }
    }
    eq($bad, 'SELECT 1 after KILL of an unknown id', one($b, 'SELECT 1'), '1');
}

// ---------------------------------------------------------------------------------------------
// 6. LOAD DATA LOCAL INFILE, 7. session tracking, 8. read-after-write
// ---------------------------------------------------------------------------------------------

function check_load_data_local(array &$bad): void
{
    $csv = tempnam(sys_get_temp_dir(), 'compat-php-');
    try {
        file_put_contents($csv, "1,alpha\n2,béta\n3,🚀 gamma\n");
        $c = connect(true, DB, [PDO::MYSQL_ATTR_LOCAL_INFILE => true]);
        $c->exec('DROP TABLE IF EXISTS load_local');
        $c->exec('CREATE TABLE load_local (id INT PRIMARY KEY, name VARCHAR(40)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4');
        $n = $c->exec("LOAD DATA LOCAL INFILE " . $c->quote($csv) . " INTO TABLE load_local CHARACTER SET utf8mb4"
            . " FIELDS TERMINATED BY ',' LINES TERMINATED BY '\\n' (id, name)");
        eq($bad, 'LOAD DATA LOCAL row count', $n, 3);
        expect($bad, $c, 'SELECT COUNT(*) FROM load_local', '3');
        expect($bad, $c, "SELECT GROUP_CONCAT(id, '=', name ORDER BY id SEPARATOR '|') FROM load_local", '1=alpha|2=béta|3=🚀 gamma');
    } finally {
        unlink($csv);
    }
}

function check_session_track(array &$bad, bool $em): void
{
    $c = connect($em);
    foreach (['SET session_track_schema = OFF', 'SET session_track_state_change = ON',
                 "SET session_track_system_variables = 'autocommit'"] as $set) {
        try {
            $c->exec($set);
        } catch (PDOException $e) {
            $bad[] = "$set: " . describe($e);
        }
    }
    busywork($c);
    expect($bad, $c, 'SELECT @@session_track_system_variables', 'autocommit');
    expect($bad, $c, 'SELECT @@session_track_schema', '0');
    expect($bad, $c, 'SELECT @@session_track_state_change', '1');
}

/** 200 rounds: connection A inserts a row (autocommit), connection B counts it at once. */
function check_read_after_write(array &$bad, bool $em): void
{
    $table = 'raw_' . ($em ? 'emulated' : 'server');
    $a = connect($em);
    $b = connect($em);
    $a->exec("DROP TABLE IF EXISTS $table");
    $a->exec("CREATE TABLE $table (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40)) ENGINE=InnoDB");
    $insert = $a->prepare("INSERT INTO $table (v) VALUES (?)");
    $misses = 0;
    for ($i = 0; $i < 200; $i++) {
        $insert->execute(["row-$i"]);
        $got = one($b, "SELECT COUNT(*) FROM $table WHERE v = ?", ["row-$i"]);
        if ($got !== '1' && ++$misses <= 5) {
            $bad[] = "round $i: read $got rows, want 1";
        }
    }
    if ($misses > 0) {
        $bad[] = "$misses of 200 reads missed the row written just before on another connection";
    }
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

if (($argv[1] ?? '') === 'kill-helper') {
    kill_helper((int)$argv[2], $argv[3]);
    exit(0);
}
if (env('TESSERA_PORT') === '') {
    fwrite(STDERR, "TESSERA_PORT is not set (run through tests/compat/php/run.sh)\n");
    exit(2);
}

check('connect, CREATE DATABASE ' . DB, function (array &$bad) {
    connect(true, '')->exec('CREATE DATABASE IF NOT EXISTS ' . DB . ' CHARACTER SET utf8mb4');
}, true);
foreach ([true, false] as $em) {
    $mode = $em ? '(emulated prepares)' : '(server prepares)';
    $checks = [
        "session: SET NAMES utf8mb4 COLLATE utf8mb4_bin, then SET NAMES utf8mb4, kept across statements $mode" => 'check_set_names',
        "session: SET CHARACTER SET latin1 kept across statements $mode" => 'check_character_set',
        "session: SET character_set_results = NULL, SET collation_connection = utf8mb4_unicode_ci kept $mode" => 'check_results_null',
        "session: time_zone, sql_mode ANSI_QUOTES, user variable, TEMPORARY table kept across statements $mode" => 'check_session_vars',
        "session: GET_LOCK held (IS_USED_LOCK from another connection), RELEASE_LOCK $mode" => 'check_named_lock',
        "diagnostics: CAST('abc' AS SIGNED) -> SHOW WARNINGS, @@warning_count, SHOW COUNT(*) WARNINGS, GET DIAGNOSTICS $mode" => 'check_cast_warnings',
        "diagnostics: SHOW WARNINGS after a failed statement lists its error (1049, 1146), then only the next statement's $mode" => 'check_error_warnings',
        "diagnostics: none on a new connection; CAST then SELECT 1 keeps Warning 1292, CAST then a SELECT from a table clears it $mode" => 'check_no_warnings',
        "identity: USER(), SESSION_USER(), SYSTEM_USER(), CURRENT_USER(); CONNECTION_ID() stable, differs between connections $mode" => 'check_identity',
        "KILL QUERY <CONNECTION_ID()> from another process ends a running SELECT SLEEP(5) early; the connection stays usable $mode" => 'check_kill_query',
        "KILL <CONNECTION_ID()> from another connection: OK, the killed connection's next statement fails, a new connection works $mode" => 'check_kill_connection',
        "KILL QUERY of an idle connection answers OK; KILL / KILL QUERY of an unknown id answer 1094 $mode" => 'check_kill_idle_unknown',
        "session tracking: SET session_track_schema / _state_change / _system_variables by the client $mode" => 'check_session_track',
        "read-after-write: a row inserted on connection A is seen at once on connection B (200 rounds) $mode" => 'check_read_after_write',
    ];
    foreach ($checks as $name => $fn) {
        check($name, function (array &$bad) use ($fn, $em) {
            $fn($bad, $em);
        });
    }
}
check('LOAD DATA LOCAL INFILE of a 3-row CSV (PDO::MYSQL_ATTR_LOCAL_INFILE)', 'check_load_data_local');

printf("php (PDO pdo_mysql %s): %d ok, %d not ok\n", phpversion('pdo_mysql'), $passed, $failed);
foreach ($failedNames as $n) {
    echo "  failed: $n\n";
}
exit($failed === 0 ? 0 : 1);
