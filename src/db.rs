//! The known store and everything else rummy persists: migrations, schema, SQL functions and the DB actor.
