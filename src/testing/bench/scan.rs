//! A run's first scan of a project (every file new: read and hashed), in files per second:
//! of this repository's `src/`, and, timed without criterion, of the tree
//! `RUMMY_BENCH_SCAN_ROOT` names when set (a large repository, such as the cargo registry's
//! sources), next to what outlining all its source files would add (outlines are made
//! only for the files the model reads at summary fidelity). Also the outline alone of every
//! source file of `src/`, in bytes per second.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::project::outline::{outline, OutlineLimits};
use crate::project::{scan, ConstraintSet, ProjectRoot, ScanOptions, ScanReport};
use criterion::{Criterion, Throughput};

/// A run's first scan of `root`: every file new, no constraint.
fn first_scan_of(root: &ProjectRoot) -> Option<ScanReport> {
    let options = ScanOptions::default();
    scan(root, &ConstraintSet::default(), &HashMap::new(), &options).ok()
}

/// This repository's `src/`.
fn source_root() -> Option<ProjectRoot> {
    ProjectRoot::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("src")).ok()
}

pub fn first_scan(c: &mut Criterion) {
    let Some(root) = source_root() else {
        return;
    };
    let Some(report) = first_scan_of(&root) else {
        return;
    };
    let mut group = c.benchmark_group("first_scan");
    group.sample_size(10);
    group.throughput(Throughput::Elements(report.files.len() as u64));
    group.bench_function("src", |b| {
        b.iter(|| first_scan_of(&root));
    });
    group.finish();
}

/// This thread's time on a CPU so far (`/proc/thread-self/schedstat`, in ns): unlike the
/// wall clock, it does not count the time other processes hold the cores.
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

/// The first scan of `RUMMY_BENCH_SCAN_ROOT`, too large for criterion's samples: three,
/// after one that fills the page cache, the fastest shown (wall and CPU time, files per
/// CPU second); then the CPU time of outlining every source file it read, once.
pub fn large_first_scan(_: &mut Criterion) {
    let Some(path) = std::env::var_os("RUMMY_BENCH_SCAN_ROOT") else {
        return;
    };
    let Ok(root) = ProjectRoot::new(PathBuf::from(&path)) else {
        eprintln!("RUMMY_BENCH_SCAN_ROOT is not a directory");
        return;
    };
    let Some(report) = first_scan_of(&root) else {
        return;
    };
    let files = report.files.len();
    let bytes: u64 = report.files.iter().map(|file| file.size).sum();
    let mut best: Option<(Duration, Duration)> = None;
    for _ in 0..3 {
        let (wall, cpu) = (Instant::now(), cpu_time().unwrap_or_default());
        let scanned = first_scan_of(&root);
        let cpu = cpu_time().unwrap_or_default().saturating_sub(cpu);
        let wall = wall.elapsed();
        drop(scanned);
        best = Some(best.map_or((wall, cpu), |kept| (kept.0.min(wall), kept.1.min(cpu))));
    }
    let Some((wall, cpu)) = best else {
        return;
    };
    eprintln!(
        "large: {files} files ({bytes} bytes) scanned in {:.2} s wall, {:.2} s CPU, \
         {:.0} files per CPU second",
        wall.as_secs_f64(),
        cpu.as_secs_f64(),
        files as f64 / cpu.as_secs_f64()
    );
    let limits = OutlineLimits::default();
    let started = cpu_time().unwrap_or_default();
    let outlined = report
        .files
        .iter()
        .filter_map(|file| {
            let body = file.body.as_deref()?;
            outline(file.path.as_str(), body, &limits).ok().flatten()
        })
        .count();
    let cpu = cpu_time().unwrap_or_default().saturating_sub(started);
    eprintln!(
        "large: outlining all {outlined} outlined files would add {:.2} s CPU",
        cpu.as_secs_f64()
    );
}

pub fn outline_alone(c: &mut Criterion) {
    let Some(report) = source_root().as_ref().and_then(first_scan_of) else {
        return;
    };
    let sources: Vec<(String, String)> = report
        .files
        .into_iter()
        .filter_map(|file| Some((file.path.to_string(), file.body?)))
        .collect();
    let bytes: usize = sources.iter().map(|(_, text)| text.len()).sum();
    let limits = OutlineLimits::default();
    let mut group = c.benchmark_group("outline");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("src", |b| {
        b.iter(|| {
            sources
                .iter()
                .filter_map(|(path, text)| outline(path, text, &limits).ok().flatten())
                .count()
        });
    });
    group.finish();
}
