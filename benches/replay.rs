//! The benchmark of [`rummy::testing::bench::replay`].
// criterion_group! expands to an undocumented public function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main};

criterion_group!(
    benches,
    rummy::testing::bench::replay::replay_after_a_restart
);
criterion_main!(benches);
