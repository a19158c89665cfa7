//! Free result paths: `path`, else `path_2`, `path_3`, … without probing one name at a time.

use crate::db::Conn;
use std::collections::{HashMap, HashSet};

use diesel::prelude::*;

use crate::db::ids::RunId;
use crate::db::paths::normalize_path;
use crate::db::queries::entries::get_entry;
use crate::db::schema::known_entries;
use crate::db::DbError;

/// How many suffixes [`free_path`] tries.
const FREE_PATH_ATTEMPTS: u32 = 10_000;

/// `path` (normalised) when no entry of the run has it, else the first free `path_2`,
/// `path_3`, ...
///
/// One indexed range query reads every taken name of the form `path_…` (the range
/// `[path_, path\`)` holds exactly the texts that start with `path_`, `_` and `` ` `` being
/// neighbours), then the smallest free suffix is picked in memory: probing one name at a
/// time made a reply with thousands of the same command quadratic.
pub(crate) fn free_path(conn: &mut Conn, run_id: RunId, path: &str) -> Result<String, DbError> {
    let base = normalize_path(path);
    let prefix = format!("{base}_");
    let taken: Vec<String> = known_entries::table
        .filter(known_entries::run_id.eq(run_id))
        .filter(
            known_entries::path.eq(&base).or(known_entries::path
                .ge(&prefix)
                .and(known_entries::path.lt(format!("{base}`")))),
        )
        .select(known_entries::path)
        .load(conn)?;
    if !taken.contains(&base) {
        return Ok(base);
    }
    let suffixes: HashSet<u32> = taken
        .iter()
        .filter_map(|name| name.strip_prefix(&prefix)?.parse().ok())
        .collect();
    (2..=FREE_PATH_ATTEMPTS)
        .find(|suffix| !suffixes.contains(suffix))
        .map(|suffix| format!("{base}_{suffix}"))
        .ok_or_else(|| DbError::Conflict(format!("no free path near {base}")))
}

/// Result paths handed out during one dispatch. The taken suffixes of a base are read once
/// ([`free_path`]); each further path of that base then costs one indexed lookup, so a reply
/// repeating one command thousands of times stays linear.
#[derive(Debug, Default)]
pub(crate) struct FreePaths {
    next_suffix: HashMap<String, u32>,
}

impl FreePaths {
    /// [`free_path`], remembering where the next free suffix of the base is likely to be.
    pub(crate) fn free_path(
        &mut self,
        conn: &mut Conn,
        run_id: RunId,
        path: &str,
    ) -> Result<String, DbError> {
        let base = normalize_path(path);
        let Some(next) = self.next_suffix.get(&base).copied() else {
            let found = free_path(conn, run_id, &base)?;
            let suffix = found
                .strip_prefix(&format!("{base}_"))
                .and_then(|suffix| suffix.parse::<u32>().ok())
                .unwrap_or(1);
            self.next_suffix.insert(base, suffix.saturating_add(1));
            return Ok(found);
        };
        for suffix in next..=FREE_PATH_ATTEMPTS {
            let candidate = format!("{base}_{suffix}");
            if get_entry(conn, run_id, &candidate)?.is_none() {
                self.next_suffix.insert(base, suffix.saturating_add(1));
                return Ok(candidate);
            }
        }
        Err(DbError::Conflict(format!("no free path near {base}")))
    }
}
