//! The benchmark of [`rummy::testing::bench::context`].
// criterion_group! expands to an undocumented public function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main};

criterion_group!(
    benches,
    rummy::testing::bench::context::materialize_and_assemble
);
criterion_main!(benches);
