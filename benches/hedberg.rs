//! Hedberg speed: one SEARCH/REPLACE edit on a 10,000-line file, a glob over 100,000 paths,
//! a regex search through a 1 MB body.
// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use rummy::hedberg::{apply_edit, pattern_search, EditBlock, Pattern};

fn ten_thousand_line_file() -> String {
    (0..10_000)
        .map(|n| format!("    let value_{n} = compute({n}, \"item-{n}\");\n"))
        .collect()
}

fn edit_benches(criterion: &mut Criterion) {
    let file = ten_thousand_line_file();
    let exact = EditBlock::literal(
        "    let value_5000 = compute(5000, \"item-5000\");\n    let value_5001 = compute(5001, \"item-5001\");",
        "    let value_5000 = 0;\n    let value_5001 = 1;",
    );
    criterion.bench_function("search_replace_exact_10k_lines", |bench| {
        bench.iter(|| apply_edit(black_box(&file), black_box(&exact)))
    });
    let drifted = EditBlock::literal(
        "let value_5000 = compute(5000, \"item-5000\");\nlet value_5001 = compute(5001, \"item-5001\");",
        "let value_5000 = 0;\nlet value_5001 = 1;",
    );
    criterion.bench_function("search_replace_indent_healed_10k_lines", |bench| {
        bench.iter(|| apply_edit(black_box(&file), black_box(&drifted)))
    });
}

fn glob_bench(criterion: &mut Criterion) {
    let paths: Vec<String> = (0..100_000)
        .map(|n| match n % 4 {
            0 => format!("src/module_{}/file_{n}.rs", n % 97),
            1 => format!("tests/case_{n}.test.ts"),
            2 => format!("known://notes/{n}"),
            _ => format!("docs/{}/page_{n}.md", n % 13),
        })
        .collect();
    let Ok(pattern) = Pattern::compile("src/**/*.rs") else {
        return;
    };
    criterion.bench_function("glob_100k_paths", |bench| {
        bench.iter(|| {
            paths
                .iter()
                .filter(|path| pattern.is_match(black_box(path)))
                .count()
        })
    });
}

fn regex_bench(criterion: &mut Criterion) {
    let line = "fn handler(request: Request) -> Response { respond(request.id, 200) }\n";
    let mut body = line.repeat((1 << 20) / line.len());
    body.push_str("// TODO(hedberg): final marker 12345\n");
    criterion.bench_function("regex_search_1mb", |bench| {
        bench.iter(|| pattern_search(black_box(r"/TODO\((\w+)\): .* \d+/"), black_box(&body)))
    });
}

criterion_group!(benches, edit_benches, glob_bench, regex_bench);
criterion_main!(benches);
