//! Merge stages between shard sources and the client sink (sort, limit, aggregate, distinct, having).

pub mod decimal;
pub mod float;
// TEMPORARY STUB (worktree only)
use crate::exec::row::Value;
#[derive(Debug, Clone, PartialEq)]
pub struct MergeSpec { pub visible: usize, pub order: Vec<SortKey>, pub aggregate: Option<AggregateSpec>, pub distinct: bool, pub having: Option<Filter>, pub final_order: Vec<SortKey>, pub offset: u64, pub limit: Option<u64>, pub memory_cap: usize }
impl MergeSpec { pub fn passthrough(visible: usize) -> Self { MergeSpec { visible, order: vec![], aggregate: None, distinct: false, having: None, final_order: vec![], offset: 0, limit: None, memory_cap: 1 << 26 } } pub fn describe(&self) -> Vec<String> { vec![] } }
#[derive(Debug, Clone, PartialEq)]
pub struct SortKey { pub column: usize, pub descending: bool, pub by: SortBy }
#[derive(Debug, Clone, PartialEq)]
pub enum SortBy { Value, Weight(usize) }
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateSpec { pub group_by: Vec<SortKey>, pub outputs: Vec<Output> }
#[derive(Debug, Clone, PartialEq)]
pub enum Output { First(usize), Count(usize), Sum(usize), Min(SortKey), Max(SortKey), Avg { sum: usize, count: usize, scale: u32, double: bool }, CountDistinct { column: SortKey }, SumDistinct { column: SortKey, value: usize } }
#[derive(Debug, Clone, PartialEq)]
pub enum Filter { And(Vec<Filter>), Or(Vec<Filter>), Not(Box<Filter>), Compare { left: Operand, op: CmpOp, right: Operand }, IsNull { operand: Operand, negated: bool }, Between { operand: Operand, low: Operand, high: Operand }, In { operand: Operand, list: Vec<Operand> } }
#[derive(Debug, Clone, PartialEq)]
pub enum Operand { Output(usize), Literal(Value), Arith(Box<Operand>, ArithOp, Box<Operand>) }
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CmpOp { Eq, Ne, Lt, Le, Gt, Ge }
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArithOp { Add, Sub, Mul, Div }
#[derive(Debug, thiserror::Error)]
pub enum MergeError { #[error("x")] Source(String), #[error("x")] Shard(u16, String, String), #[error("x")] Sink(String), #[error("x")] MemoryCap { cap: usize } }
pub struct MergeStats { pub rows_sent: u64, pub group_concat_truncations: u64, pub peak_buffered_bytes: usize }
pub trait RowSource { fn next_row(&mut self) -> impl std::future::Future<Output = Result<Option<Vec<Value>>, MergeError>> + Send; }
pub trait RowSink { fn send_row(&mut self, row: &[Value]) -> impl std::future::Future<Output = Result<(), MergeError>> + Send; }
pub async fn run<S: RowSource, K: RowSink>(_spec: &MergeSpec, _sources: Vec<S>, _sink: &mut K) -> Result<MergeStats, MergeError> { Err(MergeError::Source("stub".into())) }
