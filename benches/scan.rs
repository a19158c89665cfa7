//! The benchmark of [`rummy::testing::bench::scan`].
// criterion_group! expands to an undocumented public function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main};

criterion_group!(
    benches,
    rummy::testing::bench::scan::outline_alone,
    rummy::testing::bench::scan::first_scan,
    rummy::testing::bench::scan::large_first_scan
);
criterion_main!(benches);
