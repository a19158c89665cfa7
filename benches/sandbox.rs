//! The benchmark of [`rummy::testing::bench::sandbox`], with the `rummy-sandbox` binary it launches.
// criterion_group! expands to an undocumented public function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};

fn setup_cost(criterion: &mut Criterion) {
    let launcher = std::path::Path::new(env!("CARGO_BIN_EXE_rummy-sandbox"));
    rummy::testing::bench::sandbox::setup_cost(criterion, launcher);
}

criterion_group!(benches, setup_cost);
criterion_main!(benches);
