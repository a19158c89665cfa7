//! Test support: rows, a small tool registry and a fixture that renders one plugin or the
//! whole packet.

use serde_json::{Map, Value};

use crate::context::packet::{MessageBuilder, Packet};
use crate::context::{ContextRow, TokenMath};
use crate::db::enums::{Category, EntryStatus, Fidelity, LoopMode};
use crate::db::ids::EntryId;
use crate::db::paths::scheme_of;
use crate::plugins::assembly::{
    Assembly, AssemblyContext, AssemblyFilter, AssemblyInput, BudgetFigures, ToolDocs,
};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::ToolSettings;
use crate::plugins::Plugins;

/// The bundled sections, registered as the server registers them.
pub(crate) fn bundled_sections() -> Assembly {
    Plugins::bundled(ToolSettings::default()).assembly().clone()
}

/// The divisor the fixtures count tokens with.
pub(crate) const DIVISOR: u32 = 4;

/// Five tools; `set` is not offered in ask mode; only get and set have docs.
pub(crate) struct FakeTools;

impl ToolDocs for FakeTools {
    fn active_tools(&self, policy: &ToolPolicy) -> Vec<&str> {
        ["get", "set", "known", "unknown", "update"]
            .into_iter()
            .filter(|name| policy.mode != LoopMode::Ask || *name != "set")
            .collect()
    }

    fn docs(&self, policy: &ToolPolicy) -> Vec<(&'static str, &'static str)> {
        [
            ("get", "<get path=\"…\"/> reads."),
            ("set", "<set path=\"…\"/> writes."),
        ]
        .into_iter()
        .filter(|(name, _)| policy.mode != LoopMode::Ask || *name != "set")
        .collect()
    }
}

/// A full-fidelity, status-200 row whose projected text is `body`.
pub(crate) fn row(path: &str, category: Category, turn: i32, body: &str) -> ContextRow {
    ContextRow {
        entry_id: EntryId(0),
        ordinal: 0,
        path: path.to_owned(),
        scheme: scheme_of(path).map(str::to_owned),
        status: EntryStatus::Ok,
        fidelity: Fidelity::Full,
        category,
        attributes: Map::new(),
        source_turn: turn,
        body: body.to_owned(),
        tokens: TokenMath::new(DIVISOR).count(body),
    }
}

/// Builder-style changes to a test row.
pub(crate) trait RowChanges {
    /// At `fidelity`.
    fn at(self, fidelity: Fidelity) -> Self;
    /// With `status`.
    fn status(self, status: EntryStatus) -> Self;
    /// With attributes from a JSON object.
    fn attributes(self, attributes: Value) -> Self;
    /// Created as entry `id` (otherwise its position in the fixture).
    fn created(self, id: i64) -> Self;
}

impl RowChanges for ContextRow {
    fn at(mut self, fidelity: Fidelity) -> Self {
        self.fidelity = fidelity;
        self
    }

    fn status(mut self, status: EntryStatus) -> Self {
        self.status = status;
        self
    }

    fn attributes(mut self, attributes: Value) -> Self {
        if let Value::Object(map) = attributes {
            self.attributes = map;
        }
        self
    }

    fn created(mut self, id: i64) -> Self {
        self.entry_id = EntryId(id);
        self
    }
}

/// Rows in context order plus the turn's settings.
pub(crate) struct Fixture {
    /// The rows; unless set, entry ids follow their order here.
    pub rows: Vec<ContextRow>,
    pub turn: i32,
    /// Mode and flags.
    pub policy: ToolPolicy,
    pub persona: Option<&'static str>,
    pub budget: Option<BudgetFigures>,
}

impl Fixture {
    /// An act turn 2 over `rows` (in context order).
    pub(crate) fn new(mut rows: Vec<ContextRow>) -> Fixture {
        for (index, row) in rows.iter_mut().enumerate() {
            let number = i64::try_from(index).unwrap() + 1;
            if row.entry_id == EntryId(0) {
                row.entry_id = EntryId(number);
            }
            row.ordinal = i32::try_from(number).unwrap();
        }
        Fixture {
            rows,
            turn: 2,
            policy: ToolPolicy::act(),
            persona: None,
            budget: None,
        }
    }

    pub(crate) fn input(&self) -> AssemblyInput<'_> {
        AssemblyInput {
            run: crate::db::ids::RunId(1),
            rows: &self.rows,
            turn: self.turn,
            policy: self.policy,
            tools: &FakeTools,
            persona: self.persona,
            budget: self.budget,
        }
    }

    /// What one plugin appends to an empty message.
    pub(crate) fn render(&self, filter: &dyn AssemblyFilter) -> String {
        let context = AssemblyContext::new(self.input());
        let mut message = MessageBuilder::new("\n");
        filter.apply(&context, &mut message);
        message.text().to_owned()
    }

    /// The packet of the bundled plugins.
    pub(crate) fn packet(&self) -> Packet {
        bundled_sections().assemble(self.input(), TokenMath::new(DIVISOR))
    }
}
