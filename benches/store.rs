//! The benchmark of [`rummy::testing::bench::store`].
// criterion_group! expands to an undocumented public function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main};

criterion_group!(
    benches,
    rummy::testing::bench::store::upsert_one,
    rummy::testing::bench::store::upsert_logged,
    rummy::testing::bench::store::pattern_query
);
criterion_main!(benches);
