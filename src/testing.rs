//! What the integration tests, the benches and `rummy-load` drive the server with, behind the
//! `testing` feature: the scripted LLM ([`fake_llm`]), PostgreSQL scratch databases
//! ([`ScratchDatabase`]), a connection of a test's own to a server's store ([`Database`]) to
//! read the tables an operator reads, the web client the model's tools use, and a few hooks
//! into a running server for what no client can see (how many loops wait for a place, the
//! database thread held busy, a notification published as a run would, its spending clock
//! fixed, the work it did counted: [`WorkDone`]); the criterion
//! benches' bodies are [`bench`]'s. A server build has none of it.

use crate::app::RunningServer;
use crate::config::Settings;
use crate::db::connection::has_pending_migrations;
use crate::db::ids::ProjectId;
use crate::db::{open_connection, ConnectionSetup, Store};
use crate::hub::notifications::{Notification, RunProgress};

pub use crate::agent::admission::PLACE_POLL;
pub use crate::db::testing::{ScratchDatabase, TEST_DATABASE_URL};
pub use crate::db::{Conn, DbError, MultiBackend as Backend};
pub use crate::hub::notifications::ProgressStatus;
pub use crate::llm::fake as fake_llm;
pub use crate::web::{WebClient, WebError, WebOptions};

/// A server's store, for reading what the server wrote with SQL of a test's own; it outlives
/// the server, so a test can read what a stop left behind.
#[derive(Clone)]
pub struct Database(Store);

impl Database {
    /// The store `settings` configure.
    fn of(settings: &Settings) -> Database {
        Database(crate::app::store(settings))
    }

    /// A new connection to it, set up as the server's are.
    pub fn connect(&self) -> Result<Conn, DbError> {
        open_connection(&self.0, ConnectionSetup::default())
    }

    /// Whether every migration the server embeds is applied.
    pub fn is_migrated(&self) -> Result<bool, DbError> {
        Ok(!has_pending_migrations(&mut self.connect()?)?)
    }
}

impl ScratchDatabase {
    /// It as a server's store.
    pub fn database(&self) -> Database {
        Database(self.store())
    }
}

/// Today's date by the system's clock, UTC, at `time` (`HH:MM:SS`), as [`RunningServer::fix_clock`]
/// takes it: a fixed time in the system's day, for a test that starts a server again,
/// which reads the system's clock until the test fixes it once more.
pub fn today_at(time: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let stored = crate::usage::UtcTime(i64::try_from(now).unwrap_or(i64::MAX)).stored();
    format!("{} {time}", &stored[..10])
}

impl RunningServer {
    /// The settings it runs with.
    pub fn settings(&self) -> &Settings {
        &self.state.agent.settings
    }

    /// Its store.
    pub fn database(&self) -> Database {
        Database::of(self.settings())
    }

    /// Publishes a `run/progress` of the run `alias` of project `project` at `turn` with
    /// `status`, as a run loop would: numbered and written, then sent. Panics when the
    /// project has no such run: a test's mistake.
    #[allow(clippy::panic)]
    pub async fn publish_progress(
        &self,
        project: i64,
        alias: &str,
        turn: i64,
        status: ProgressStatus,
    ) {
        let (project, named) = (ProjectId(project), alias.to_owned());
        let found = self
            .state
            .agent
            .db
            .read(move |conn| crate::db::queries::runs::find_run(conn, project, &named))
            .await;
        let Ok(Some(run)) = found else {
            panic!("project {project} has no run {alias}: {found:?}");
        };
        let progress = Notification::Progress(RunProgress {
            run: alias.to_owned(),
            turn,
            status,
        });
        crate::hub::publish(&self.state.agent.db, project, run.id, &progress);
    }

    /// From now on its spending clock (the time the ledger records calls at, and the caps'
    /// periods are cut from) reads `at`, a UTC time `YYYY-MM-DD HH:MM:SS`, until fixed
    /// again. Panics on another shape: a test's mistake.
    #[allow(clippy::panic)]
    pub fn fix_clock(&self, at: &str) {
        let Some(time) = crate::usage::UtcTime::parse_stored(at) else {
            panic!("not a UTC time YYYY-MM-DD HH:MM:SS: {at}");
        };
        self.state.agent.llm.spending().clock().fix(time);
    }

    /// How many loops on this instance wait for a place.
    pub fn loops_waiting_for_place(&self) -> usize {
        self.state.agent.admission.waiting()
    }

    /// How many client connections are open.
    pub fn connections_open(&self) -> usize {
        self.state.connections.count()
    }

    /// Runs `unit` as a unit of work on the database thread, with the connection of the
    /// store's one writer: the thread does nothing else until it returns.
    pub fn on_database_thread<T: Send + 'static>(
        &self,
        unit: impl FnOnce(&mut Conn) -> T + Send + 'static,
    ) -> impl std::future::Future<Output = Result<T, DbError>> + 'static {
        let db = self.state.agent.db.clone();
        async move { db.call(move |conn| Ok(unit(conn))).await }
    }
}
pub mod bench;
pub mod sandbox;
mod work;

pub use work::WorkDone;
