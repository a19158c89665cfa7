//! The scheme registry.

use crate::db::statement::statement;
use crate::db::Conn;
use diesel::prelude::*;
use diesel::sql_types::{Bool, Text};

use crate::db::models::SchemeRow;
use crate::db::DbError;

/// Registers a scheme, or changes the visibility and category of a registered one.
pub(crate) fn register_scheme(conn: &mut Conn, scheme: &SchemeRow) -> Result<(), DbError> {
    statement(
        "INSERT INTO schemes (name, model_visible, category) VALUES (?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET
             model_visible = excluded.model_visible, category = excluded.category",
    )
    .bind::<Text, _>(&scheme.name)
    .bind::<Bool, _>(scheme.model_visible)
    .bind::<Text, _>(scheme.category)
    .execute(conn)?;
    Ok(())
}

#[cfg(test)]
/// Every registered scheme, by name.
pub(crate) fn list_schemes(conn: &mut Conn) -> Result<Vec<SchemeRow>, DbError> {
    use crate::db::schema::schemes;
    Ok(schemes::table
        .order(schemes::name)
        .select(SchemeRow::as_select())
        .load(conn)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::enums::Category;
    use crate::db::testing::TestDb;

    #[test]
    fn bootstrap_rows_exist_and_can_be_overridden() {
        let mut db = TestDb::new();
        let before = list_schemes(&mut db.conn).unwrap();
        let think = before.iter().find(|row| row.name == "think").unwrap();
        assert!(!think.model_visible);
        let file = before.iter().find(|row| row.name == "file").unwrap();
        assert_eq!(file.category, Category::Data);
        let mcp = SchemeRow {
            name: "mcp".into(),
            model_visible: true,
            category: Category::Logging,
        };
        register_scheme(&mut db.conn, &mcp).unwrap();
        let search = SchemeRow {
            name: "search".into(),
            model_visible: false,
            category: Category::Data,
        };
        register_scheme(&mut db.conn, &search).unwrap();
        let after = list_schemes(&mut db.conn).unwrap();
        assert_eq!(after.len(), before.len() + 1);
        assert!(after.contains(&mcp));
        assert!(after.contains(&search));
    }
}
