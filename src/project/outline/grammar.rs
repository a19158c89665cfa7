//! Which tree-sitter grammar reads a file, and the definitions query run on its tree: the
//! tags query the grammar crate ships, its `@reference.*` patterns and `@doc` captures
//! disabled, with a few patterns of ours for definitions it leaves out (Rust `impl` blocks,
//! constants, statics and trait methods without a body; Java enums, records and
//! constructors; TypeScript type aliases and enums). TypeScript reads JavaScript's tags
//! too, as the tree-sitter CLI does.

use std::path::Path;
use std::sync::OnceLock;

use tree_sitter::{Language, Query, QueryError};

/// Rust definitions the shipped tags query does not tag. An `impl` is named by its type,
/// and by its trait (captured as `@trait`) when it has one.
const RUST_EXTRA: &str = r#"
(impl_item trait: (_)? @trait type: (_) @name) @definition.impl
(const_item name: (identifier) @name) @definition.constant
(static_item name: (identifier) @name) @definition.constant
(function_signature_item name: (identifier) @name) @definition.method
"#;

const JAVA_EXTRA: &str = r#"
(enum_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.class
(constructor_declaration name: (identifier) @name) @definition.method
"#;

const TYPESCRIPT_EXTRA: &str = r#"
(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name) @definition.type
"#;

/// A language rummy outlines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Grammar {
    C,
    Cpp,
    Go,
    Java,
    JavaScript,
    Python,
    Ruby,
    Rust,
    Tsx,
    TypeScript,
}

const ALL: [Grammar; 10] = [
    Grammar::C,
    Grammar::Cpp,
    Grammar::Go,
    Grammar::Java,
    Grammar::JavaScript,
    Grammar::Python,
    Grammar::Ruby,
    Grammar::Rust,
    Grammar::Tsx,
    Grammar::TypeScript,
];

impl Grammar {
    /// The grammar of `path`, by its extension (or, for Ruby's build files, its name).
    /// A `.h` header is read as C++, whose grammar also reads C's.
    pub(crate) fn for_path(path: &str) -> Option<Grammar> {
        let path = Path::new(path);
        let name = path.file_name()?.to_str()?;
        if matches!(name, "Rakefile" | "Gemfile") {
            return Some(Grammar::Ruby);
        }
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        let grammar = match extension.as_str() {
            "c" => Grammar::C,
            "h" | "cc" | "cpp" | "cxx" | "c++" | "hh" | "hpp" | "hxx" | "h++" => Grammar::Cpp,
            "go" => Grammar::Go,
            "java" => Grammar::Java,
            "js" | "mjs" | "cjs" | "jsx" => Grammar::JavaScript,
            "py" | "pyi" | "pyw" => Grammar::Python,
            "rb" | "rake" | "gemspec" => Grammar::Ruby,
            "rs" => Grammar::Rust,
            "tsx" => Grammar::Tsx,
            "ts" | "mts" | "cts" => Grammar::TypeScript,
            _ => return None,
        };
        Some(grammar)
    }

    pub(crate) fn language(self) -> Language {
        match self {
            Grammar::C => tree_sitter_c::LANGUAGE.into(),
            Grammar::Cpp => tree_sitter_cpp::LANGUAGE.into(),
            Grammar::Go => tree_sitter_go::LANGUAGE.into(),
            Grammar::Java => tree_sitter_java::LANGUAGE.into(),
            Grammar::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Grammar::Python => tree_sitter_python::LANGUAGE.into(),
            Grammar::Ruby => tree_sitter_ruby::LANGUAGE.into(),
            Grammar::Rust => tree_sitter_rust::LANGUAGE.into(),
            Grammar::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Grammar::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        }
    }

    /// The definitions query, compiled once per grammar. An error means a shipped query
    /// does not compile against its own grammar: a dependency mismatch, which a unit test
    /// catches.
    pub(crate) fn query(self) -> Result<&'static Query, &'static QueryError> {
        static QUERIES: [OnceLock<Result<Query, QueryError>>; ALL.len()] =
            [const { OnceLock::new() }; ALL.len()];
        QUERIES[self as usize]
            .get_or_init(|| definitions_query(self.language(), &self.tags_source()))
            .as_ref()
    }

    fn tags_source(self) -> String {
        let javascript = tree_sitter_javascript::TAGS_QUERY;
        let typescript = tree_sitter_typescript::TAGS_QUERY;
        match self {
            Grammar::C => tree_sitter_c::TAGS_QUERY.to_owned(),
            Grammar::Cpp => tree_sitter_cpp::TAGS_QUERY.to_owned(),
            Grammar::Go => tree_sitter_go::TAGS_QUERY.to_owned(),
            Grammar::Java => [tree_sitter_java::TAGS_QUERY, JAVA_EXTRA].concat(),
            Grammar::JavaScript => javascript.to_owned(),
            Grammar::Python => tree_sitter_python::TAGS_QUERY.to_owned(),
            Grammar::Ruby => tree_sitter_ruby::TAGS_QUERY.to_owned(),
            Grammar::Rust => [tree_sitter_rust::TAGS_QUERY, RUST_EXTRA].concat(),
            Grammar::Tsx | Grammar::TypeScript => {
                [javascript, typescript, TYPESCRIPT_EXTRA].concat()
            }
        }
    }
}

/// `source` compiled for `language`, keeping only the patterns that tag a definition.
fn definitions_query(language: Language, source: &str) -> Result<Query, QueryError> {
    let mut query = Query::new(&language, source)?;
    for pattern in 0..query.pattern_count() {
        let text = source
            .get(query.start_byte_for_pattern(pattern)..query.end_byte_for_pattern(pattern))
            .unwrap_or_default();
        if !text.contains("@definition.") {
            query.disable_pattern(pattern);
        }
    }
    query.disable_capture("doc");
    Ok(query)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_definitions_query_compiles_against_its_grammar() {
        for grammar in ALL {
            let query = grammar
                .query()
                .unwrap_or_else(|error| panic!("{grammar:?}: {error}"));
            assert!(
                query
                    .capture_names()
                    .iter()
                    .any(|name| name.starts_with("definition.")),
                "{grammar:?}"
            );
        }
    }

    #[test]
    fn each_grammar_has_its_own_query() {
        for (index, grammar) in ALL.into_iter().enumerate() {
            assert_eq!(grammar as usize, index);
        }
    }

    #[test]
    fn files_are_read_by_their_extension() {
        let cases = [
            ("src/main.rs", Some(Grammar::Rust)),
            ("lib/a.PY", Some(Grammar::Python)),
            ("web/app.mjs", Some(Grammar::JavaScript)),
            ("web/app.tsx", Some(Grammar::Tsx)),
            ("web/app.d.ts", Some(Grammar::TypeScript)),
            ("cmd/main.go", Some(Grammar::Go)),
            ("A.java", Some(Grammar::Java)),
            ("x.c", Some(Grammar::C)),
            ("x.h", Some(Grammar::Cpp)),
            ("x.hpp", Some(Grammar::Cpp)),
            ("Rakefile", Some(Grammar::Ruby)),
            ("lib/a.rb", Some(Grammar::Ruby)),
            ("README.md", None),
            ("Makefile", None),
            ("rs", None),
        ];
        for (path, grammar) in cases {
            assert_eq!(Grammar::for_path(path), grammar, "{path}");
        }
    }
}
