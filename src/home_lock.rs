//! One server per home. A server on the embedded SQLite store — `rummy serve`, a local
//! `rummy acp`, `rummy migrate` — holds an exclusive advisory lock on `$RUMMY_HOME/rummy.lock`
//! from before it opens the store until it stops: a second one on the same home is refused
//! at start, before it writes anything (its start-up recovery would abort the first one's
//! running loops, and both would write one database, one transcript folder). The kernel
//! releases the lock when the process ends, however it ends, so a killed server leaves
//! nothing stale behind. Instances that share a PostgreSQL store may share a home too
//! (docs/src/several-instances.md): they take no lock.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Write};
use std::path::Path;

/// The lock file, in the home; it holds the holder's process id, for the refusal.
pub(crate) const LOCK_FILE: &str = "rummy.lock";

/// Why the home could not be locked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HomeLockError {
    /// Another process holds the home.
    #[error(
        "another rummy{holder} is serving the home {home} on its SQLite store, and one home has \
         one server: stop that one, give this one another home (RUMMY_HOME), or point an \
         editor at the running server (`rummy acp --url ws://<its host:port>/`)"
    )]
    Busy {
        home: String,
        /// ` (process <id>)`, or nothing when the file does not say.
        holder: String,
    },
    /// The home or its lock file could not be made or locked.
    #[error("cannot lock the home {home} ({LOCK_FILE}): {source}")]
    Io {
        home: String,
        source: std::io::Error,
    },
}

/// The home, held until this is dropped.
#[derive(Debug)]
pub(crate) struct HomeLock {
    _file: File,
}

impl HomeLock {
    /// Creates `home` if it is missing and takes its lock, without waiting: refused when
    /// another process holds it. Blocking file I/O.
    pub(crate) fn take(home: &Path) -> Result<HomeLock, HomeLockError> {
        let failed = |source| HomeLockError::Io {
            home: home.display().to_string(),
            source,
        };
        std::fs::create_dir_all(home).map_err(failed)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(home.join(LOCK_FILE))
            .map_err(failed)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(HomeLockError::Busy {
                    home: home.display().to_string(),
                    holder: holder(&mut file),
                })
            }
            Err(TryLockError::Error(error)) => return Err(failed(error)),
        }
        file.set_len(0)
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .map_err(failed)?;
        Ok(HomeLock { _file: file })
    }
}

/// ` (process <id>)` of the process id the holder wrote, or nothing.
fn holder(file: &mut File) -> String {
    let mut text = String::new();
    match file.read_to_string(&mut text) {
        Ok(_) => match text.trim().parse::<u32>() {
            Ok(id) => format!(" (process {id})"),
            Err(_) => String::new(),
        },
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_home_is_refused_with_its_holder_until_it_is_let_go() {
        let home = tempfile::tempdir().unwrap();
        let nested = home.path().join("new/home");
        let held = HomeLock::take(&nested).unwrap();
        assert_eq!(
            std::fs::read_to_string(nested.join(LOCK_FILE)).unwrap(),
            format!("{}\n", std::process::id())
        );
        let refused = HomeLock::take(&nested).unwrap_err();
        assert!(
            matches!(&refused, HomeLockError::Busy { home, holder }
                if *home == nested.display().to_string()
                    && *holder == format!(" (process {})", std::process::id())),
            "{refused:?}"
        );
        let message = refused.to_string();
        assert!(message.contains("RUMMY_HOME"), "{message}");
        assert!(message.contains("rummy acp --url"), "{message}");
        drop(held);
        let again = HomeLock::take(&nested).unwrap();
        drop(again);
    }

    #[test]
    fn a_lock_file_that_names_no_process_names_no_holder() {
        let home = tempfile::tempdir().unwrap();
        let mut file = File::create(home.path().join(LOCK_FILE)).unwrap();
        file.write_all(b"not a process\n").unwrap();
        let mut file = File::open(home.path().join(LOCK_FILE)).unwrap();
        assert_eq!(holder(&mut file), "");
    }
}
