//! Whole merges over fake shards: every stage and their combinations, with the results MariaDB
//! gives for the same statement on one server.

use super::decimal::Decimal;
use super::fake::{FakeSource, VecSink};
use super::*;
use crate::exec::row::Value;
use bytes::Bytes;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const N: Value = Value::Null;

fn i(v: i64) -> Value {
    Value::Int(v)
}

fn s(v: &str) -> Value {
    Value::Bytes(Bytes::copy_from_slice(v.as_bytes()))
}

fn d(v: &str) -> Value {
    Value::Decimal(Decimal::parse(v.as_bytes()).unwrap())
}

type Shards = Vec<Vec<Vec<Value>>>;

/// Runs `spec` over `shards`; returns the rows, the stats and how many rows each shard gave.
async fn merge(spec: &MergeSpec, shards: Shards) -> (Vec<Vec<Value>>, MergeStats, Vec<usize>) {
    let sources: Vec<FakeSource> = shards.into_iter().map(FakeSource::new).collect();
    let counters: Vec<Arc<AtomicUsize>> = sources.iter().map(FakeSource::counter).collect();
    let mut sink = VecSink::default();
    let stats = run(spec, sources, &mut sink).await.unwrap();
    let pulled = counters.iter().map(|c| c.load(Ordering::SeqCst)).collect();
    (sink.rows, stats, pulled)
}

async fn rows(spec: &MergeSpec, shards: Shards) -> Vec<Vec<Value>> {
    merge(spec, shards).await.0
}

fn sorted(visible: usize, order: Vec<SortKey>) -> MergeSpec {
    MergeSpec {
        order,
        ..MergeSpec::new(visible)
    }
}

fn aggregate(visible: usize, group_by: Vec<SortKey>, outputs: Vec<Output>) -> MergeSpec {
    MergeSpec {
        order: group_by.clone(),
        aggregate: Some(AggregateSpec { group_by, outputs }),
        ..MergeSpec::new(visible)
    }
}

#[tokio::test]
async fn kway_merge_is_stable_on_ties() {
    let spec = sorted(2, vec![SortKey::asc(0)]);
    let shards = vec![
        vec![vec![i(1), s("s0")], vec![i(3), s("s0")]],
        vec![vec![i(1), s("s1")], vec![i(2), s("s1")], vec![i(3), s("s1")]],
        vec![vec![i(0), s("s2")], vec![i(3), s("s2")]],
    ];
    let got = rows(&spec, shards).await;
    let expected = [
        (0, "s2"),
        (1, "s0"),
        (1, "s1"),
        (2, "s1"),
        (3, "s0"),
        (3, "s1"),
        (3, "s2"),
    ];
    assert_eq!(got, expected.iter().map(|(k, w)| vec![i(*k), s(w)]).collect::<Vec<_>>());
}

/// MariaDB: NULLs sort first ascending and last descending.
#[tokio::test]
async fn nulls_first_ascending_last_descending() {
    let asc = rows(
        &sorted(1, vec![SortKey::asc(0)]),
        vec![vec![vec![N], vec![i(1)]], vec![vec![i(-1)], vec![i(5)]]],
    )
    .await;
    assert_eq!(asc, vec![vec![N], vec![i(-1)], vec![i(1)], vec![i(5)]]);
    let desc = rows(
        &sorted(1, vec![SortKey::desc(0)]),
        vec![vec![vec![i(1)], vec![N]], vec![vec![i(5)], vec![i(-1)]]],
    )
    .await;
    assert_eq!(desc, vec![vec![i(5)], vec![i(1)], vec![i(-1)], vec![N]]);
}

/// ORDER BY name DESC, id with name in a _ci collation: the shards add WEIGHT_STRING(name).
#[tokio::test]
async fn weights_give_collation_order_and_hidden_columns_stay_hidden() {
    let w = |b: &[u8]| Value::Bytes(Bytes::copy_from_slice(b));
    let spec = sorted(2, vec![SortKey::desc(0).by_weight(2), SortKey::asc(1)]);
    let shards = vec![
        vec![vec![s("b"), i(1), w(b"\x00B")], vec![s("A"), i(4), w(b"\x00A")]],
        vec![
            vec![s("B"), i(2), w(b"\x00B")],
            vec![s("a"), i(3), w(b"\x00A")],
            vec![N, i(0), N],
        ],
    ];
    let got = rows(&spec, shards).await;
    let expected = vec![
        vec![s("b"), i(1)],
        vec![s("B"), i(2)],
        vec![s("a"), i(3)],
        vec![s("A"), i(4)],
        vec![N, i(0)],
    ];
    assert_eq!(got, expected);
}

#[tokio::test]
async fn no_order_concatenates_shards() {
    let got = rows(&MergeSpec::new(1), vec![vec![vec![i(2)], vec![i(1)]], vec![vec![i(0)]]]).await;
    assert_eq!(got, vec![vec![i(2)], vec![i(1)], vec![i(0)]]);
}

#[tokio::test]
async fn limit_and_offset_stop_reading_early() {
    let shard = |k: i64| (0..100).map(|n| vec![i(n * 3 + k)]).collect::<Vec<_>>();
    let mut spec = sorted(1, vec![SortKey::asc(0)]);
    spec.offset = 3;
    spec.limit = Some(5);
    let (got, stats, pulled) = merge(&spec, vec![shard(0), shard(1), shard(2)]).await;
    assert_eq!(got, (3..8).map(|n| vec![i(n)]).collect::<Vec<_>>());
    assert_eq!(stats.rows_sent, 5);
    // Rows 0..=7 went through the merge; besides them only 9 (shard 0) and 8 (shard 2) were
    // read, as the heads the merge held; shard 1's row 7 was the last one needed.
    assert_eq!(pulled, [4, 3, 3]);
    spec.limit = Some(0);
    let (got, _, pulled) = merge(&spec, vec![shard(0), shard(1)]).await;
    assert!(got.is_empty());
    assert_eq!(pulled, [0, 0]);
}

/// MariaDB over INT 1,2,2 (+ NULL) split across shards: COUNT(*) 4, COUNT(x) 3, SUM 5, MIN 1,
/// MAX 2, AVG 1.6667 (DECIMAL scale 4); over DECIMAL(10,2) 1.00,2.00,2.01: SUM 5.01, AVG
/// 1.670000 (scale 6); over DOUBLE 1.5,0.1,0.2: SUM 1.8, AVG 0.6.
#[tokio::test]
async fn scalar_aggregates_over_shards_give_one_row() {
    // Shard SQL: SELECT COUNT(*), COUNT(x), SUM(x), MIN(x), MAX(x), SUM(dc), COUNT(dc), SUM(db), COUNT(db)
    let spec = aggregate(
        9,
        vec![],
        vec![
            Output::Count(0),
            Output::Count(1),
            Output::Sum(2),
            Output::Min(SortKey::asc(3)),
            Output::Max(SortKey::asc(4)),
            Output::Avg {
                sum: 2,
                count: 1,
                scale: 4,
                double: false,
            },
            Output::Avg {
                sum: 5,
                count: 6,
                scale: 6,
                double: false,
            },
            Output::Sum(7),
            Output::Avg {
                sum: 7,
                count: 8,
                scale: 31,
                double: true,
            },
        ],
    );
    let shards = vec![
        vec![vec![
            i(2),
            i(1),
            d("2"),
            i(2),
            i(2),
            d("3.00"),
            i(2),
            Value::Double(1.5),
            i(1),
        ]],
        vec![vec![i(0), i(0), N, N, N, N, i(0), N, i(0)]],
        vec![vec![
            i(2),
            i(2),
            d("3"),
            i(1),
            i(2),
            d("2.01"),
            i(1),
            Value::Double(0.1 + 0.2),
            i(2),
        ]],
    ];
    let got = rows(&spec, shards).await;
    assert_eq!(
        got,
        vec![vec![
            i(4),
            i(3),
            d("5"),
            i(1),
            i(2),
            d("1.6667"),
            d("1.670000"),
            Value::Double(1.5 + (0.1 + 0.2)),
            Value::Double((1.5 + (0.1 + 0.2)) / 3.0)
        ]]
    );
}

/// MariaDB over an empty table: COUNT 0, SUM/AVG/MIN/MAX/GROUP_CONCAT NULL, COUNT(DISTINCT) 0;
/// with GROUP BY: no rows.
#[tokio::test]
async fn aggregates_over_no_rows() {
    let outputs = vec![
        Output::Count(0),
        Output::Sum(1),
        Output::Min(SortKey::asc(1)),
        Output::Max(SortKey::asc(1)),
        Output::Avg {
            sum: 1,
            count: 0,
            scale: 4,
            double: false,
        },
    ];
    let spec = aggregate(5, vec![], outputs.clone());
    let shards = vec![vec![vec![i(0), N]], vec![vec![i(0), N]]];
    assert_eq!(rows(&spec, shards).await, vec![vec![i(0), N, N, N, N]]);
    // Shards that return nothing at all (a distinct or GROUP_CONCAT plan) still give one row.
    let mut spec = aggregate(
        3,
        vec![],
        vec![
            Output::Count(0),
            Output::CountDistinct {
                column: SortKey::asc(1),
            },
            Output::GroupConcat {
                value: 1,
                separator: b",".to_vec(),
                max_len: 1024,
                order: vec![],
                distinct: None,
                utf8: true,
                repeat: None,
            },
        ],
    );
    spec.order = vec![SortKey::asc(1)];
    assert_eq!(rows(&spec, vec![vec![], vec![]]).await, vec![vec![i(0), i(0), N]]);
    let grouped = aggregate(2, vec![SortKey::asc(2)], vec![Output::First(2), Output::Count(0)]);
    assert!(rows(&grouped, vec![vec![], vec![]]).await.is_empty());
}

/// GROUP BY name in utf8mb4_general_ci: 'a', 'A' (and 'ä') are one group; MIN/MAX by weight.
#[tokio::test]
async fn groups_by_weight_across_shards() {
    let w = |b: &'static [u8]| Value::Bytes(Bytes::from_static(b));
    // Shard SQL: SELECT name, COUNT(*), WEIGHT_STRING(name) ... GROUP BY 3 ORDER BY 3
    let spec = aggregate(
        4,
        vec![SortKey::asc(0).by_weight(2)],
        vec![
            Output::First(0),
            Output::Count(1),
            Output::Min(SortKey::asc(0).by_weight(2)),
            Output::Max(SortKey::asc(0)),
        ],
    );
    let shards = vec![
        vec![
            vec![N, i(1), N],
            vec![s("a"), i(2), w(b"\x00A")],
            vec![s("b"), i(1), w(b"\x00B")],
        ],
        vec![vec![s("A"), i(3), w(b"\x00A")], vec![s("c"), i(1), w(b"\x00C")]],
    ];
    let got = rows(&spec, shards).await;
    assert_eq!(
        got,
        vec![
            vec![N, i(1), N, N],
            vec![s("a"), i(5), s("a"), s("a")],
            vec![s("b"), i(1), s("b"), s("b")],
            vec![s("c"), i(1), s("c"), s("c")],
        ]
    );
}

/// COUNT(DISTINCT x), SUM(DISTINCT x), AVG(DISTINCT x) GROUP BY g: shards GROUP BY g, x.
#[tokio::test]
async fn distinct_aggregates_dedupe_across_shards() {
    let spec = MergeSpec {
        order: vec![SortKey::asc(0), SortKey::asc(1)],
        ..aggregate(
            4,
            vec![SortKey::asc(0)],
            vec![
                Output::First(0),
                Output::CountDistinct {
                    column: SortKey::asc(1),
                },
                Output::SumDistinct {
                    column: SortKey::asc(1),
                    value: 1,
                },
                Output::AvgDistinct {
                    column: SortKey::asc(1),
                    value: 1,
                    scale: 4,
                    double: false,
                },
            ],
        )
    };
    let shards = vec![
        vec![vec![i(1), N], vec![i(1), i(1)], vec![i(1), i(2)], vec![i(2), i(7)]],
        vec![vec![i(1), i(2)], vec![i(1), i(4)], vec![i(3), N]],
    ];
    let got = rows(&spec, shards).await;
    assert_eq!(
        got,
        vec![
            vec![i(1), i(3), d("7"), d("2.3333")],
            vec![i(2), i(1), d("7"), d("7.0000")],
            vec![i(3), i(0), N, N],
        ]
    );
}

/// GROUP_CONCAT(s ORDER BY s DESC SEPARATOR '-') with group_concat_max_len = 5.
#[tokio::test]
async fn group_concat_orders_separates_and_truncates() {
    let concat = |max_len| Output::GroupConcat {
        value: 1,
        separator: b"-".to_vec(),
        max_len,
        order: vec![SortKey::desc(1)],
        distinct: None,
        utf8: true,
        repeat: None,
    };
    let spec = MergeSpec {
        order: vec![SortKey::asc(0), SortKey::desc(1)],
        ..aggregate(2, vec![SortKey::asc(0)], vec![Output::First(0), concat(5)])
    };
    let shards = vec![
        vec![vec![i(1), s("c")], vec![i(1), s("a")], vec![i(2), s("ddd")]],
        vec![vec![i(1), s("b")], vec![i(1), N], vec![i(2), s("eee")], vec![i(3), N]],
    ];
    let (got, stats, _) = merge(&spec, shards).await;
    assert_eq!(got, vec![vec![i(1), s("c-b-a")], vec![i(2), s("eee-d")], vec![i(3), N]]);
    assert_eq!(stats.group_concat_truncations, 1);
    let spec = aggregate(1, vec![], vec![concat(1024)]);
    let mut spec = spec;
    spec.order = vec![SortKey::desc(1)];
    let got = rows(&spec, vec![vec![vec![i(0), s("x")]], vec![vec![i(0), s("y")]]]).await;
    assert_eq!(got, vec![vec![s("y-x")]]);
}

fn having_spec(filter: Filter) -> MergeSpec {
    MergeSpec {
        having: Some(filter),
        ..aggregate(
            2,
            vec![SortKey::asc(0)],
            vec![Output::First(0), Output::Sum(1), Output::Count(2)],
        )
    }
}

fn cmp(column: usize, op: CmpOp, v: Value) -> Filter {
    Filter::Compare {
        left: Operand::Output(column),
        op,
        right: Operand::Literal(v),
    }
}

async fn having_keys(filter: Filter) -> Vec<Value> {
    // Groups: 1 → sum 10, count 2; 2 → sum NULL, count 1; 3 → sum 3, count 3; 4 → sum 40, count 1.
    let shards = vec![
        vec![vec![i(1), d("4"), i(1)], vec![i(2), N, i(1)], vec![i(4), d("40"), i(1)]],
        vec![vec![i(1), d("6"), i(1)], vec![i(3), d("3"), i(3)]],
    ];
    let got = rows(&having_spec(filter), shards).await;
    got.into_iter().map(|r| r[0].clone()).collect()
}

#[tokio::test]
async fn having_uses_three_valued_logic() {
    use CmpOp::*;
    assert_eq!(having_keys(cmp(1, Gt, i(5))).await, [i(1), i(4)]);
    // NOT (sum > 5): the NULL sum stays unknown and is dropped.
    assert_eq!(having_keys(Filter::Not(Box::new(cmp(1, Gt, i(5))))).await, [i(3)]);
    let and = Filter::And(vec![cmp(1, Ge, i(3)), cmp(2, Lt, i(3))]);
    assert_eq!(having_keys(and).await, [i(1), i(4)]);
    let or = Filter::Or(vec![cmp(1, Eq, d("3.0")), cmp(2, Eq, i(2))]);
    assert_eq!(having_keys(or).await, [i(1), i(3)]);
    let is_null = Filter::IsNull {
        operand: Operand::Output(1),
        negated: false,
    };
    assert_eq!(having_keys(is_null).await, [i(2)]);
    assert_eq!(having_keys(cmp(1, NullSafeEq, N)).await, [i(2)]);
    assert_eq!(having_keys(cmp(1, Ne, N)).await, Vec::<Value>::new());
    let between = Filter::Between {
        operand: Operand::Output(1),
        low: Operand::Literal(i(3)),
        high: Operand::Literal(s("10")),
        negated: true,
    };
    assert_eq!(having_keys(between).await, [i(4)]);
    let in_list = Filter::In {
        operand: Operand::Output(1),
        list: vec![
            Operand::Literal(N),
            Operand::Literal(i(40)),
            Operand::Literal(Value::Double(3.0)),
        ],
        negated: false,
    };
    assert_eq!(having_keys(in_list).await, [i(3), i(4)]);
    // SUM(x) / COUNT(*) > 4.5: 10/2 = 5.0000, 3/3 = 1.0000, 40/1 = 40.0000.
    let avg = Filter::Compare {
        left: Operand::Arith(Box::new(Operand::Output(1)), ArithOp::Div, Box::new(Operand::Output(2))),
        op: Gt,
        right: Operand::Literal(d("4.5")),
    };
    assert_eq!(having_keys(avg).await, [i(1), i(4)]);
}

/// SELECT g, COUNT(*) ... GROUP BY g ORDER BY COUNT(*) DESC, g LIMIT 2: sorted after grouping,
/// ties in merged order.
#[tokio::test]
async fn final_order_sorts_groups_within_the_cap() {
    let mut spec = aggregate(2, vec![SortKey::asc(0)], vec![Output::First(0), Output::Count(1)]);
    spec.final_order = vec![SortKey::desc(1)];
    let shards = vec![
        vec![vec![i(1), i(1)], vec![i(2), i(5)], vec![i(3), i(2)]],
        vec![vec![i(1), i(1)], vec![i(3), i(3)], vec![i(4), i(5)]],
    ];
    let all = rows(&spec, shards.clone()).await;
    assert_eq!(
        all,
        vec![vec![i(2), i(5)], vec![i(3), i(5)], vec![i(4), i(5)], vec![i(1), i(2)]]
    );
    spec.limit = Some(2);
    spec.offset = 1;
    assert_eq!(
        rows(&spec, shards.clone()).await,
        vec![vec![i(3), i(5)], vec![i(4), i(5)]]
    );
    spec.limit = None;
    spec.offset = 0;
    spec.memory_cap = 250;
    let sources: Vec<FakeSource> = shards.clone().into_iter().map(FakeSource::new).collect();
    let err = run(&spec, sources, &mut VecSink::default()).await.unwrap_err();
    assert!(matches!(err, MergeError::MemoryCap { cap: 250, .. }), "{err}");
    // Streaming the groups in merged order fits in the same cap.
    spec.final_order.clear();
    let (got, stats, _) = merge(&spec, shards).await;
    assert_eq!(got.len(), 4);
    assert!(stats.peak_buffered_bytes <= 250);
}

#[tokio::test]
async fn final_order_with_limit_keeps_only_the_top_rows() {
    let mut spec = sorted(1, vec![]);
    spec.final_order = vec![SortKey::desc(0)];
    spec.limit = Some(3);
    spec.memory_cap = 20_000;
    let shard = |k: i64| (0..2000).map(|n| vec![i(n * 2 + k)]).collect::<Vec<_>>();
    let (got, stats, _) = merge(&spec, vec![shard(0), shard(1)]).await;
    assert_eq!(got, vec![vec![i(3999)], vec![i(3998)], vec![i(3997)]]);
    assert!(stats.peak_buffered_bytes <= 20_000);
}

#[tokio::test]
async fn distinct_collapses_equal_neighbours() {
    let w = |b: &'static [u8]| Value::Bytes(Bytes::from_static(b));
    let mut spec = sorted(2, vec![SortKey::asc(0).by_weight(2), SortKey::asc(1)]);
    spec.distinct = true;
    let shards = vec![
        vec![vec![s("a"), i(1), w(b"A")], vec![s("b"), N, w(b"B")]],
        vec![
            vec![s("A"), i(1), w(b"A")],
            vec![s("b"), N, w(b"B")],
            vec![s("b"), i(2), w(b"B")],
        ],
    ];
    let got = rows(&spec, shards).await;
    assert_eq!(got, vec![vec![s("a"), i(1)], vec![s("b"), N], vec![s("b"), i(2)]]);
}

#[tokio::test]
async fn errors_stop_the_merge() {
    let spec = sorted(1, vec![SortKey::asc(0)]);
    let sources = vec![
        FakeSource::new(vec![vec![i(1)], vec![i(3)]]),
        FakeSource::failing(vec![vec![i(2)]], "shard 1 lost"),
    ];
    let mut sink = VecSink::default();
    let err = run(&spec, sources, &mut sink).await.unwrap_err();
    assert!(matches!(&err, MergeError::Source(m) if m == "shard 1 lost"), "{err}");
    assert_eq!(sink.rows, vec![vec![i(1)], vec![i(2)]]);
    let mut sink = VecSink {
        fail_at: Some(1),
        ..VecSink::default()
    };
    let sources = vec![FakeSource::new(vec![vec![i(1)], vec![i(2)]])];
    assert!(matches!(run(&spec, sources, &mut sink).await, Err(MergeError::Sink(_))));
    let sources = vec![FakeSource::new(vec![vec![]])];
    let err = run(&spec, sources, &mut VecSink::default()).await.unwrap_err();
    assert!(matches!(err, MergeError::ShortRow { width: 0, needed: 1 }));
}

/// Borrowed sources stay with the caller, who can drain what the LIMIT left unread.
#[tokio::test]
async fn borrowed_sources_outlive_the_merge() {
    let mut spec = sorted(1, vec![SortKey::asc(0)]);
    spec.limit = Some(1);
    let mut a = FakeSource::new(vec![vec![i(1)], vec![i(3)], vec![i(5)]]);
    let mut b = FakeSource::new(vec![vec![i(2)]]);
    let mut sink = VecSink::default();
    run(&spec, vec![&mut a, &mut b], &mut sink).await.unwrap();
    assert_eq!(sink.rows, vec![vec![i(1)]]);
    assert_eq!(a.next_row().await.unwrap(), Some(vec![i(3)]));
    assert_eq!(b.next_row().await.unwrap(), None);
}

#[test]
fn describe_names_every_stage() {
    let mut spec = aggregate(
        2,
        vec![SortKey::asc(0)],
        vec![
            Output::First(0),
            Output::Count(1),
            Output::Sum(2),
            Output::Avg {
                sum: 3,
                count: 4,
                scale: 4,
                double: false,
            },
        ],
    );
    spec.having = Some(cmp(1, CmpOp::Gt, i(10)));
    spec.final_order = vec![SortKey::desc(1)];
    spec.limit = Some(10);
    spec.offset = 20;
    spec.memory_cap = 1000;
    assert_eq!(
        spec.describe_shards(4),
        [
            "merge-sort 4 shards on (1)",
            "aggregate by (1): first 1, count 2, sum 3, avg(sum 4 / count 5, scale 4)",
            "having #2 > 10",
            "sort on (2 desc) in memory, keeping the first 30, up to 1000 bytes",
            "limit 10 offset 20",
        ]
    );
    let plain = sorted(1, vec![SortKey::desc(0).by_weight(1)]);
    assert_eq!(plain.describe(), ["merge-sort shards on (weight of 1 desc)"]);
    assert_eq!(MergeSpec::new(1).describe_shards(2), ["concatenate 2 shards"]);
}

/// Columns Tessera appends read `hN`; numbers that are no columns stay as they are, however
/// large (issue 43: the 64 MiB byte limit read "up to h66060288 bytes").
#[test]
fn describe_names_hidden_columns_and_keeps_large_numbers() {
    let hidden = |n: usize| super::HIDDEN_BASE + n;
    let mut spec = aggregate(
        2,
        vec![SortKey::asc(0)],
        vec![
            Output::First(0),
            Output::Avg {
                sum: hidden(1),
                count: hidden(2),
                scale: 0,
                double: false,
            },
        ],
    );
    spec.having = Some(cmp(1, CmpOp::Gt, i(5_000_000)));
    spec.final_order = vec![SortKey::desc(1), SortKey::asc(hidden(0))];
    spec.limit = Some(2_000_000);
    spec.memory_cap = 64 << 20;
    assert_eq!(
        spec.describe_shards(4),
        [
            "merge-sort 4 shards on (1)",
            "aggregate by (1): first 1, avg(sum h2 / count h3, scale 0)",
            "having #2 > 5000000",
            "sort on (2 desc, h1) in memory, keeping the first 2000000, up to 67108864 bytes",
            "limit 2000000",
        ]
    );
}
