//! The benchmark of [`rummy::testing::bench::recall`].
// criterion_group! expands to an undocumented public function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main};

criterion_group!(benches, rummy::testing::bench::recall::recall_at_sizes);
criterion_main!(benches);
