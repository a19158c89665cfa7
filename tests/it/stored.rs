//! What a server stored, read with SQL of the test's own through
//! [`rummy::testing::Database`]: the tables an operator reads (runs, loops, entries, the
//! audit log), never the server's own queries.

use diesel::sql_types::{BigInt, Nullable, Text};
use diesel::{QueryableByName, RunQueryDsl};
use rummy::testing::Conn;

/// A text as an SQL literal.
pub(crate) fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Rows of `query`.
pub(crate) fn rows<T>(conn: &mut Conn, query: &str) -> Vec<T>
where
    T: QueryableByName<rummy::testing::Backend> + 'static,
{
    diesel::sql_query(query).load(conn).unwrap()
}

/// One number: the first column of the first row of `query`, `None` without a row.
pub(crate) fn number(conn: &mut Conn, query: &str) -> Option<i64> {
    #[derive(QueryableByName)]
    struct Number {
        #[diesel(sql_type = Nullable<BigInt>)]
        n: Option<i64>,
    }
    rows::<Number>(conn, query)
        .into_iter()
        .next()
        .and_then(|row| row.n)
}

/// A stored run: its id and status code.
#[derive(Debug, QueryableByName)]
pub(crate) struct StoredRun {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    #[diesel(sql_type = BigInt)]
    pub status: i64,
}

/// The run called `alias` in whichever project has it: names are unique per project only,
/// and these tests' aliases come from one project each.
pub(crate) fn run_named(conn: &mut Conn, alias: &str) -> Option<StoredRun> {
    rows(
        conn,
        &format!(
            "SELECT CAST(id AS BIGINT) AS id, CAST(status AS BIGINT) AS status \
             FROM runs WHERE alias = {}",
            literal(alias)
        ),
    )
    .into_iter()
    .next()
}

/// How many of the run's loops wait (status 100).
pub(crate) fn pending_loops(conn: &mut Conn, run: i64) -> i64 {
    number(
        conn,
        &format!(
            "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM loops WHERE run_id = {run} AND status = 100"
        ),
    )
    .unwrap_or(0)
}

/// The status of the run's latest loop.
pub(crate) fn latest_loop_status(conn: &mut Conn, run: i64) -> Option<i64> {
    number(
        conn,
        &format!(
            "SELECT CAST(status AS BIGINT) AS n FROM loops WHERE run_id = {run} \
             ORDER BY id DESC LIMIT 1"
        ),
    )
}

/// The attributes (JSON text) of the run's entry at `path`.
pub(crate) fn entry_attributes(conn: &mut Conn, run: i64, path: &str) -> Option<String> {
    #[derive(QueryableByName)]
    struct Attributes {
        #[diesel(sql_type = Text)]
        attributes: String,
    }
    rows::<Attributes>(
        conn,
        &format!(
            "SELECT CAST(attributes AS TEXT) AS attributes FROM known_entries \
             WHERE run_id = {run} AND path = {}",
            literal(path)
        ),
    )
    .into_iter()
    .next()
    .map(|row| row.attributes)
}

/// The project's file constraints as `(pattern, visibility)`, in the order they were added.
pub(crate) fn constraints(conn: &mut Conn, project: i64) -> Vec<(String, String)> {
    #[derive(QueryableByName)]
    struct Constraint {
        #[diesel(sql_type = Text)]
        pattern: String,
        #[diesel(sql_type = Text)]
        visibility: String,
    }
    rows::<Constraint>(
        conn,
        &format!(
            "SELECT pattern, visibility FROM file_constraints WHERE project_id = {project} \
             ORDER BY id"
        ),
    )
    .into_iter()
    .map(|row| (row.pattern, row.visibility))
    .collect()
}

/// The status and body of the entry at `path` of the run called `alias`.
pub(crate) fn entry_named(conn: &mut Conn, alias: &str, path: &str) -> Option<(i64, String)> {
    #[derive(QueryableByName)]
    struct Entry {
        #[diesel(sql_type = BigInt)]
        status: i64,
        #[diesel(sql_type = Text)]
        body: String,
    }
    let run = run_named(conn, alias)?.id;
    rows::<Entry>(
        conn,
        &format!(
            "SELECT CAST(status AS BIGINT) AS status, body FROM known_entries \
             WHERE run_id = {run} AND path = {}",
            literal(path)
        ),
    )
    .into_iter()
    .next()
    .map(|row| (row.status, row.body))
}
