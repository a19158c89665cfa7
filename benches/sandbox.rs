//! The benchmark of [`rummy::testing::bench::sandbox`], with the `rummy` binary it launches.
// criterion_group! expands to an undocumented public function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};

fn setup_cost(criterion: &mut Criterion) {
    let rummy = std::path::Path::new(env!("CARGO_BIN_EXE_rummy"));
    rummy::testing::bench::sandbox::setup_cost(criterion, rummy);
}

criterion_group!(benches, setup_cost);
criterion_main!(benches);
