//! The sharded topology's servers and its check of rows loaded through Tessera, against real
//! sandbox MariaDB servers (the rows are placed here directly, as Tessera is meant to).

use tessera_bench::topology::{deploy, sql, Topology};
use tessera_bench::BenchError;

/// Fills `sbtest1` of every shard with ids 1..=rows, each on shard `CRC32(id) % shards`.
fn place_rows(sharding: &tessera_bench::topology::Sharding, rows: u64) {
    let shards = sharding.shards();
    for (i, (group, db)) in shards.iter().enumerate() {
        let statement = format!(
            "USE `{db}`; CREATE TABLE sbtest1 (id INT PRIMARY KEY);
             INSERT INTO sbtest1 SELECT seq FROM seq_1_to_{rows} WHERE CRC32(seq) % {} = {i}",
            shards.len()
        );
        sql(&sharding.groups[*group], &statement).expect("rows placed");
    }
}

#[test]
fn the_sharded_topology_starts_groups_with_their_shard_databases_and_checks_placement() {
    let deployment = deploy(Topology::Sharded { groups: 2 }, None, &["sbtest"]).expect("servers start");
    let sharding = deployment.backends.sharding.as_ref().expect("a sharded layout");
    assert_eq!(sharding.groups.len(), 2);
    assert_eq!(
        sql(&deployment.direct, "SHOW DATABASES LIKE 'sbtest'").unwrap(),
        "sbtest",
        "direct clients get one server with the whole database"
    );
    let on_g1 = sql(&sharding.groups[1], "SHOW DATABASES LIKE 'sbtest%'").unwrap();
    assert_eq!(on_g1, "sbtest_2\nsbtest_3");
    assert_eq!(deployment.server_pids.len(), 3);

    place_rows(sharding, 1000);
    sharding.check_placement(1, 1000).expect("every row where it belongs");
    let err = sharding.check_placement(1, 999).unwrap_err();
    assert!(
        err.to_string()
            .contains("sbtest1 has 1000 rows over the shards, not 999"),
        "{err}"
    );

    // A row on the wrong shard (CRC32('1') % 4 = 3) and a missing table are both caught.
    sql(&sharding.groups[0], "INSERT INTO sbtest_0.sbtest1 VALUES (1)").unwrap();
    let err = sharding.check_placement(1, 1001).unwrap_err();
    assert!(matches!(err, BenchError::ShardCheck(_)), "{err}");
    assert!(
        err.to_string()
            .contains("sbtest_0.sbtest1: 1 rows belong on other shards"),
        "{err}"
    );
    let err = sharding.check_placement(2, 1000).unwrap_err();
    assert!(err.to_string().contains("doesn't exist"), "{err}");
}
