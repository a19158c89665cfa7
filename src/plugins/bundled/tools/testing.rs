//! Test support: a migrated temporary database with one run and a project root, and
//! shortcuts to dispatch model text and client calls against it.

use crate::db::Conn;
use tempfile::TempDir;

use crate::budget::WriteGate;
use crate::db::enums::{EntryStatus, LoopMode, Visibility};
use crate::db::ids::RunId;
use crate::db::models::entry::{EntryRow, EntryUpsertForm};
use crate::db::queries::{constraints, entries, runs};
use crate::db::testing::{project_with_run, TestDb};
use crate::plugins::engine::dispatch::{
    dispatch_call, dispatch_gated, CallInput, DispatchOutcome, ResponseTurn,
};
use crate::plugins::engine::resolve::{
    resolve_proposal, resolve_proposal_on_disk, Resolution, ResolveInput, ResolveOutcome,
};
use crate::plugins::filters::Recordable;
use crate::plugins::gather::Gathered;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{ClientCall, ToolError, ToolSettings};
use crate::plugins::Plugins;

/// A run in a fresh database, with a project root of its own.
pub(crate) struct TestRun {
    _dir: TempDir,
    pub root: TempDir,
    pub conn: Conn,
    pub run_id: RunId,
    pub plugins: Plugins,
    pub policy: ToolPolicy,
    pub turn: i32,
    /// What the gather halves obtained for the next reply, call or resolution.
    gathered: Gathered,
    _database: Option<crate::db::testing::ScratchDatabase>,
}

impl TestRun {
    pub(crate) fn new() -> TestRun {
        let TestDb {
            dir,
            mut conn,
            database,
            ..
        } = TestDb::new();
        let root = tempfile::tempdir().unwrap();
        let run = project_with_run(&mut conn, Some(root.path().display().to_string())).unwrap();
        let settings = ToolSettings {
            token_divisor: 4,
            max_entry_tokens: 50,
            max_commands: 100,
        };
        TestRun {
            _dir: dir,
            _database: database,
            root,
            conn,
            run_id: run.id,
            plugins: Plugins::bundled(settings),
            policy: ToolPolicy::act(),
            turn: 1,
            gathered: Gathered::default(),
        }
    }

    /// Hands what `tool`'s gather half obtained to the next reply, call or resolution.
    pub(crate) fn gathering(&mut self, tool: &'static str, obtained: impl std::any::Any + Send) {
        let gathered = std::mem::take(&mut self.gathered);
        self.gathered = gathered.with(tool, Box::new(obtained));
    }

    /// Pins a file constraint on the run's project.
    pub(crate) fn constrain(&mut self, pattern: &str, visibility: Visibility) {
        let project = runs::get_run(&mut self.conn, self.run_id)
            .unwrap()
            .unwrap()
            .project_id;
        constraints::set_constraint(&mut self.conn, project, pattern, visibility).unwrap();
    }

    pub(crate) fn mode(mut self, mode: LoopMode) -> TestRun {
        self.policy.mode = mode;
        self
    }

    /// Dispatches a model response at the current turn, then advances the turn.
    pub(crate) fn respond(&mut self, text: &str) -> DispatchOutcome {
        self.respond_gated(text, None)
    }

    /// [`TestRun::respond`] with a write gate.
    pub(crate) fn respond_gated(
        &mut self,
        text: &str,
        gate: Option<&mut dyn WriteGate>,
    ) -> DispatchOutcome {
        let commands: Vec<Recordable> = crate::parser::parse(text, &self.plugins.tags())
            .commands
            .into_iter()
            .map(Recordable::new)
            .collect();
        let input = ResponseTurn {
            run_id: self.run_id,
            loop_id: None,
            turn: self.turn,
            policy: self.policy,
            project_root: self.root.path().to_owned(),
        };
        let mut gathered = std::mem::take(&mut self.gathered);
        let outcome = dispatch_gated(
            &mut self.conn,
            &self.plugins,
            &input,
            &commands,
            &mut gathered,
            gate,
        )
        .unwrap();
        self.turn += 1;
        outcome
    }

    /// A client tool call.
    pub(crate) fn call(
        &mut self,
        tool: &str,
        call: ClientCall,
    ) -> Result<DispatchOutcome, ToolError> {
        let command = self
            .plugins
            .get(tool)
            .ok_or_else(|| ToolError::UnknownTool(tool.into()))?
            .command_from_call(&call);
        let input = CallInput {
            run_id: self.run_id,
            policy: self.policy,
            project_root: self.root.path().to_owned(),
            tool: tool.into(),
            call,
        };
        let mut gathered = std::mem::take(&mut self.gathered);
        let command = Recordable::new(command);
        dispatch_call(
            &mut self.conn,
            &self.plugins,
            &input,
            command,
            &mut gathered,
            None,
        )
    }

    pub(crate) fn resolve(
        &mut self,
        path: &str,
        resolution: Resolution,
        output: Option<&str>,
    ) -> Result<ResolveOutcome, ToolError> {
        let input = ResolveInput {
            run_id: self.run_id,
            path: path.into(),
            resolution,
            output: output.map(str::to_owned),
            claimed: false,
            by: None,
        };
        let mut gathered = std::mem::take(&mut self.gathered);
        resolve_proposal(&mut self.conn, &self.plugins, &input, &mut gathered)
    }

    /// A resolution the server applies to the project root itself.
    pub(crate) fn resolve_on_disk(&mut self, path: &str, resolution: Resolution) -> ResolveOutcome {
        let input = ResolveInput {
            run_id: self.run_id,
            path: path.into(),
            resolution,
            output: None,
            claimed: false,
            by: None,
        };
        let root = self.root.path().to_owned();
        let mut gathered = std::mem::take(&mut self.gathered);
        resolve_proposal_on_disk(&mut self.conn, &self.plugins, &input, &mut gathered, &root)
            .unwrap()
    }

    /// A project file on disk and in the store.
    pub(crate) fn file(&mut self, path: &str, body: &str) {
        let target = self.root.path().join(path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, body).unwrap();
        self.put(path, body);
    }

    pub(crate) fn on_disk(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.root.path().join(path)).ok()
    }

    /// Writes an entry directly (a scanned file, an earlier fact).
    pub(crate) fn put(&mut self, path: &str, body: &str) -> EntryRow {
        entries::upsert_entry(
            &mut self.conn,
            &EntryUpsertForm::new(self.run_id, None, 0, path, body),
        )
        .unwrap()
    }

    pub(crate) fn entry(&mut self, path: &str) -> Option<EntryRow> {
        entries::get_entry(&mut self.conn, self.run_id, path).unwrap()
    }

    pub(crate) fn status(&mut self, path: &str) -> Option<EntryStatus> {
        self.entry(path).map(|row| row.status)
    }

    pub(crate) fn attribute(&mut self, path: &str, name: &str) -> serde_json::Value {
        self.entry(path)
            .map(|row| row.attributes.to_value())
            .and_then(|attributes| attributes.get(name).cloned())
            .unwrap_or(serde_json::Value::Null)
    }

    /// The text the model sees for `path` at its fidelity.
    pub(crate) fn projected(&mut self, path: &str) -> String {
        let row = self.entry(path).unwrap();
        let attributes = row.attributes.0.clone();
        let view = crate::context::view::EntryView {
            path: &row.path,
            scheme: row.scheme.as_deref(),
            status: row.status,
            fidelity: row.fidelity,
            category: crate::db::enums::Category::Data,
            body: &row.body,
            attributes: &attributes,
            turn: i64::from(row.turn),
        };
        self.plugins.project(&view)
    }
}
