//! What the store says of the writes made to it, for a test counting the server's work: the
//! rows written ([`rows_written`]) and the text and blob bytes its tables hold
//! ([`stored_bytes`]). Both are read on the writer's connection, uncounted, while the server
//! is quiet; neither costs the server anything while it works.

use diesel::sql_types::{BigInt, Text};
use diesel::{QueryableByName, RunQueryDsl};

use crate::db::{Conn, DbError};

#[derive(QueryableByName)]
struct Number {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(QueryableByName)]
struct Name {
    #[diesel(sql_type = Text)]
    name: String,
}

#[derive(QueryableByName)]
struct Column {
    #[diesel(sql_type = Text)]
    table_name: String,
    #[diesel(sql_type = Text)]
    column_name: String,
    #[diesel(sql_type = Text)]
    data_type: String,
}

/// Rows inserted, updated or deleted on `conn` (the writer's) since it was opened, by
/// every statement and every trigger those statements fired: SQLite's `total_changes()`.
/// On PostgreSQL, the rows inserted, updated and deleted in the database's tables
/// (`pg_stat_user_tables`, the writer being the only connection that writes), after `conn`
/// was made to report its pending counts (`pg_stat_force_next_flush`, PostgreSQL 15 and
/// later, done as the session goes idle after that statement, before the next is read).
pub(crate) fn rows_written(conn: &mut Conn) -> Result<i64, DbError> {
    let sql = match conn {
        Conn::Sqlite(_) => "SELECT total_changes() AS n",
        Conn::Postgres(_) => {
            diesel::sql_query("SELECT pg_stat_force_next_flush()").execute(conn)?;
            "SELECT CAST(COALESCE(SUM(n_tup_ins + n_tup_upd + n_tup_del), 0) AS BIGINT) AS n \
             FROM pg_stat_user_tables"
        }
    };
    Ok(diesel::sql_query(sql).get_result::<Number>(conn)?.n)
}

/// The bytes of every text and blob value the store's tables hold (SQLite's virtual tables
/// aside, whose shadow tables are counted; PostgreSQL's `json`, `jsonb`, `bytea` and
/// character columns, a `jsonb` by its text). Numbers, which SQLite stores in as few bytes
/// as their value needs, are left out, so that a duration or an id one digit longer
/// changes nothing.
pub(crate) fn stored_bytes(conn: &mut Conn) -> Result<i64, DbError> {
    let mut total = 0;
    for (table, columns) in text_columns(conn)? {
        if columns.is_empty() {
            continue;
        }
        let lengths: Vec<String> = columns
            .iter()
            .map(|(column, kind)| byte_length(conn, column, kind))
            .collect();
        let sql = format!(
            "SELECT CAST(COALESCE(SUM({}), 0) AS BIGINT) AS n FROM {}",
            lengths.join(" + "),
            quoted(&table)
        );
        total += diesel::sql_query(sql).get_result::<Number>(conn)?.n;
    }
    Ok(total)
}

/// The SQL of the byte length of `column` (of type `kind`), 0 for a null or a number.
fn byte_length(conn: &Conn, column: &str, kind: &str) -> String {
    let column = quoted(column);
    match conn {
        Conn::Sqlite(_) => format!(
            "(CASE WHEN typeof({column}) IN ('text', 'blob') \
             THEN length(CAST({column} AS BLOB)) ELSE 0 END)"
        ),
        Conn::Postgres(_) if kind == "bytea" => format!("COALESCE(octet_length({column}), 0)"),
        Conn::Postgres(_) => format!("COALESCE(octet_length(CAST({column} AS TEXT)), 0)"),
    }
}

/// A table's name and its columns' names and declared types.
type TableColumns = (String, Vec<(String, String)>);

/// Every table with its columns that may hold text or blobs.
fn text_columns(conn: &mut Conn) -> Result<Vec<TableColumns>, DbError> {
    let columns: Vec<Column> = match conn {
        Conn::Sqlite(_) => {
            let tables: Vec<Name> = diesel::sql_query(
                "SELECT name FROM sqlite_schema WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' \
                 ORDER BY name",
            )
            .load(conn)?;
            let mut columns = Vec::new();
            for table in tables {
                columns.extend(
                    diesel::sql_query(
                        "SELECT ? AS table_name, name AS column_name, type AS data_type \
                         FROM pragma_table_info(?) ORDER BY cid",
                    )
                    .bind::<Text, _>(&table.name)
                    .bind::<Text, _>(&table.name)
                    .load::<Column>(conn)?,
                );
            }
            columns
        }
        Conn::Postgres(_) => diesel::sql_query(
            "SELECT c.table_name::text AS table_name, c.column_name::text AS column_name, \
             c.data_type::text AS data_type \
             FROM information_schema.columns c JOIN information_schema.tables t \
             ON t.table_schema = c.table_schema AND t.table_name = c.table_name \
             WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' \
             AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', \
             'bytea') \
             ORDER BY c.table_name, c.ordinal_position",
        )
        .load(conn)?,
    };
    let mut tables: Vec<TableColumns> = Vec::new();
    for column in columns {
        let kind = (column.column_name, column.data_type.to_lowercase());
        match tables.last_mut() {
            Some((table, kinds)) if *table == column.table_name => kinds.push(kind),
            _ => tables.push((column.table_name, vec![kind])),
        }
    }
    Ok(tables)
}

/// `name` as a quoted SQL identifier.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use diesel::connection::SimpleConnection;

    use super::*;
    use crate::db::testing::TestDb;

    #[test]
    fn rows_and_bytes_follow_what_is_written() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        conn.batch_execute("CREATE TABLE counted (id INTEGER PRIMARY KEY, name TEXT, n BIGINT)")
            .unwrap();
        let (rows, bytes) = (rows_written(conn).unwrap(), stored_bytes(conn).unwrap());
        conn.batch_execute("INSERT INTO counted (id, name, n) VALUES (1, 'abc', 12345)")
            .unwrap();
        assert_eq!(rows_written(conn).unwrap() - rows, 1);
        assert_eq!(
            stored_bytes(conn).unwrap() - bytes,
            3,
            "the text, not the numbers"
        );
        conn.batch_execute("UPDATE counted SET name = 'abcdéf', n = 7 WHERE id = 1")
            .unwrap();
        assert_eq!(rows_written(conn).unwrap() - rows, 2);
        assert_eq!(
            stored_bytes(conn).unwrap() - bytes,
            7,
            "bytes, not characters"
        );
    }
}
