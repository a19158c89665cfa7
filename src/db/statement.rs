//! Fixed SQL text that the database compiles once per connection. diesel compiles every
//! `sql_query` (and every `UPDATE` and upsert it builds) again on each call, since their text
//! may differ from call to call; a [`Statement`]'s text is a `&'static str`, so diesel keeps
//! its compiled form in the connection's statement cache, keyed by the text, and reuses it.
//! Its `?`s become each backend's own placeholders (`?` on SQLite, `$1`, `$2` … on
//! PostgreSQL), so one text serves both.

use std::marker::PhantomData;

use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::query_dsl::RunQueryDsl;
use diesel::result::Error as QueryError;
use diesel::serialize::ToSql;
use diesel::sql_types::{HasSqlType, Untyped};
use diesel::QueryResult;

use super::MultiBackend;

/// One SQL statement whose parameters are anonymous `?`s, bound in order with
/// [`Statement::bind`] (a value used twice is bound twice), run like `diesel::sql_query` and
/// read into `QueryableByName` rows. The text must hold no other `?`.
pub(crate) struct Statement<'a> {
    sql: &'static str,
    binds: Vec<Box<dyn QueryFragment<MultiBackend> + Send + 'a>>,
}

/// A [`Statement`] for `sql` with nothing bound yet.
pub(crate) fn statement<'a>(sql: &'static str) -> Statement<'a> {
    Statement {
        sql,
        binds: Vec::new(),
    }
}

impl<'a> Statement<'a> {
    /// Binds the next `?` to `value`, of SQL type `ST`.
    pub(crate) fn bind<ST, Value>(mut self, value: Value) -> Self
    where
        MultiBackend: HasSqlType<ST>,
        Value: ToSql<ST, MultiBackend> + Send + 'a,
        ST: Send + 'a,
    {
        self.binds.push(Box::new(Bind {
            value,
            sql_type: PhantomData,
        }));
        self
    }
}

struct Bind<ST, Value> {
    value: Value,
    sql_type: PhantomData<ST>,
}

impl<ST, Value> QueryFragment<MultiBackend> for Bind<ST, Value>
where
    MultiBackend: HasSqlType<ST>,
    Value: ToSql<ST, MultiBackend>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, MultiBackend>) -> QueryResult<()> {
        out.push_bind_param::<ST, Value>(&self.value)
    }
}

impl QueryFragment<MultiBackend> for Statement<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, MultiBackend>) -> QueryResult<()> {
        let mut pieces = self.sql.split('?');
        if let Some(first) = pieces.next() {
            out.push_sql(first);
        }
        let mut binds = self.binds.iter();
        for piece in pieces {
            let bind = binds.next().ok_or_else(|| wrong_binds(self))?;
            bind.walk_ast(out.reborrow())?;
            out.push_sql(piece);
        }
        match binds.next() {
            Some(_) => Err(wrong_binds(self)),
            None => Ok(()),
        }
    }
}

fn wrong_binds(statement: &Statement<'_>) -> QueryError {
    QueryError::QueryBuilderError(
        format!(
            "{} values bound to a statement with {} parameters: {}",
            statement.binds.len(),
            statement.sql.matches('?').count(),
            statement.sql
        )
        .into(),
    )
}

/// No static id: the cache keys a statement by its text, so statements do not collide.
impl QueryId for Statement<'_> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl Query for Statement<'_> {
    type SqlType = Untyped;
}

impl<Conn> RunQueryDsl<Conn> for Statement<'_> {}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use diesel::connection::{InstrumentationEvent, SimpleConnection};
    use diesel::sql_types::{BigInt, Text};
    use diesel::{Connection, QueryableByName};

    use crate::db::{open_connection, Conn, ConnectionSetup, Store};

    use super::*;

    #[derive(QueryableByName, Debug, PartialEq)]
    struct Row {
        #[diesel(sql_type = Text)]
        name: String,
    }

    /// A connection that counts the statements diesel adds to its cache.
    fn counted() -> (Conn, Arc<Mutex<usize>>) {
        let store = Store::Sqlite(":memory:".into());
        let mut conn = open_connection(&store, ConnectionSetup::default()).unwrap();
        conn.batch_execute("CREATE TABLE names (id INTEGER PRIMARY KEY, name TEXT)")
            .unwrap();
        let cached = Arc::new(Mutex::new(0));
        let counter = Arc::clone(&cached);
        conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
            if let InstrumentationEvent::CacheQuery { .. } = event {
                *counter.lock().unwrap() += 1;
            }
        });
        (conn, cached)
    }

    #[test]
    fn a_statement_binds_reads_and_is_compiled_once() {
        let (mut conn, cached) = counted();
        for name in ["a", "b", "c"] {
            let row: Row = statement("INSERT INTO names (name) VALUES (?) RETURNING name")
                .bind::<Text, _>(name)
                .get_result(&mut conn)
                .unwrap();
            assert_eq!(row.name, name);
        }
        for _ in 0..3 {
            let rows: Vec<Row> = statement("SELECT name FROM names WHERE id > ? AND name <> ?")
                .bind::<BigInt, _>(1)
                .bind::<Text, _>("c")
                .load(&mut conn)
                .unwrap();
            assert_eq!(rows, [Row { name: "b".into() }]);
        }
        assert_eq!(*cached.lock().unwrap(), 2, "each text compiled once");
    }

    #[test]
    fn too_few_or_too_many_values_are_an_error_not_a_wrong_query() {
        let (mut conn, _) = counted();
        let few = statement("INSERT INTO names (id, name) VALUES (?, ?)")
            .bind::<BigInt, _>(1)
            .execute(&mut conn);
        assert!(few.unwrap_err().to_string().contains("1 values bound"));
        let many = statement("INSERT INTO names (name) VALUES (?)")
            .bind::<Text, _>("a")
            .bind::<Text, _>("b")
            .execute(&mut conn);
        assert!(many.unwrap_err().to_string().contains("2 values bound"));
    }

    #[test]
    fn diesel_compiles_a_sql_query_on_every_call() {
        let (mut conn, cached) = counted();
        for name in ["a", "b"] {
            diesel::sql_query("INSERT INTO names (name) VALUES (?1)")
                .bind::<Text, _>(name)
                .execute(&mut conn)
                .unwrap();
        }
        assert_eq!(*cached.lock().unwrap(), 0, "nothing cached");
    }
}
