//! Assembly: the API a plugin adds a packet section with. The two messages are two ordered
//! filter chains ([`Chain`]); each section is an [`AssemblyFilter`] that reads the shared
//! rows through [`AssemblyContext`], renders itself into a
//! [`MessageBuilder`] (which accounts every character to a telemetry bucket) and returns.
//! A plugin adds its own with `Registrar::section`; equal priorities keep registration
//! order. The bundled sections are `plugins::bundled::sections`.
//!
//! The active prompt is the newest prompt entry whatever its fidelity; the loop it starts
//! splits logging into `<previous>` (earlier loops) and `<performed>` (this loop).

use std::sync::Arc;

use crate::budget::ContextWindow;
use crate::context::packet::{MessageBuilder, Packet};
use crate::context::{ContextRow, TokenMath};
use crate::db::enums::Category;
use crate::db::ids::RunId;
use crate::plugins::policy::ToolPolicy;

/// The tool registry as the sections need it.
pub trait ToolDocs: Send + Sync {
    /// The tools offered under `policy`, in display order.
    fn active_tools(&self, policy: &ToolPolicy) -> Vec<&str>;

    /// `(name, doc)` of each tool offered under `policy`, in display order.
    fn docs(&self, policy: &ToolPolicy) -> Vec<(&'static str, &'static str)>;
}

/// The numbers the budget line and the advisories need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetFigures {
    /// The model's effective context window.
    pub context_size: i64,
    /// Tokens the context uses: the calibrated size of the packet this figure is part of.
    pub used_tokens: i64,
}

impl BudgetFigures {
    /// The write ceiling, `floor(context_size × 0.9) − 500`, at least 1.
    pub fn ceiling(self) -> i64 {
        let window = ContextWindow::new(u64::try_from(self.context_size).unwrap_or(0));
        i64::try_from(window.guard_ceiling().get())
            .unwrap_or(i64::MAX)
            .max(1)
    }

    /// Used tokens as a rounded percentage of the ceiling.
    pub fn percent(self) -> i64 {
        let ceiling = self.ceiling();
        (self.used_tokens.max(0).saturating_mul(100) + ceiling / 2) / ceiling
    }
}

/// What the caller knows about the turn being assembled.
#[derive(Clone, Copy)]
pub struct AssemblyInput<'a> {
    /// The run whose packet it is.
    pub run: RunId,
    /// The materialized rows, in context order.
    pub rows: &'a [ContextRow],
    /// The run-wide turn number N.
    pub turn: i32,
    /// The loop's mode and flags (which tools are offered).
    pub policy: ToolPolicy,
    /// The tool registry's names and docs.
    pub tools: &'a dyn ToolDocs,
    /// The run's persona text, when set.
    pub persona: Option<&'a str>,
    /// Context size and tokens used, when known (progress and advisories).
    pub budget: Option<BudgetFigures>,
}

/// What every assembly plugin reads: the input plus the loop boundary derived from it.
pub struct AssemblyContext<'a> {
    pub input: AssemblyInput<'a>,
    /// The newest prompt entry, whatever its fidelity.
    pub active_prompt: Option<&'a ContextRow>,
    /// The first turn of the current loop (0 when there is no prompt).
    pub loop_start_turn: i32,
    /// The tools offered this turn, in display order.
    pub active_tools: Vec<&'a str>,
}

impl<'a> AssemblyContext<'a> {
    /// Derives the loop boundary and the active tools from `input`.
    pub fn new(input: AssemblyInput<'a>) -> AssemblyContext<'a> {
        let active_prompt = input
            .rows
            .iter()
            .filter(|row| row.category == Category::Prompt && row.has_scheme("prompt"))
            .max_by_key(|row| row.entry_id);
        let loop_start_turn = active_prompt.map_or(0, prompt_turn);
        AssemblyContext {
            active_prompt,
            loop_start_turn,
            active_tools: input.tools.active_tools(&input.policy),
            input,
        }
    }

    /// Whether `row` is the active prompt.
    pub fn is_active_prompt(&self, row: &ContextRow) -> bool {
        self.active_prompt
            .is_some_and(|prompt| prompt.entry_id == row.entry_id)
    }

    /// Rows of the history sections: logging, and prompts other than the active one.
    pub fn history_rows(&self) -> impl Iterator<Item = &'a ContextRow> + '_ {
        self.input.rows.iter().filter(|row| {
            (row.category == Category::Logging
                || (row.category == Category::Prompt && !self.is_active_prompt(row)))
                && !row.has_scheme("unknown")
        })
    }
}

/// The turn a prompt was written on: N of `prompt://N` (a later touch, such as a fidelity
/// change, must not move the loop boundary), else its last touch.
fn prompt_turn(row: &ContextRow) -> i32 {
    row.path
        .strip_prefix("prompt://")
        .and_then(|number| number.parse::<i32>().ok())
        .unwrap_or(row.source_turn)
}

/// One assembly plugin: appends its section to a message.
pub trait AssemblyFilter: Send + Sync {
    /// Position in its chain; lower runs first.
    fn priority(&self) -> i32;

    /// Appends this plugin's section (or nothing) to `message`.
    fn apply(&self, context: &AssemblyContext<'_>, message: &mut MessageBuilder);
}

/// The message a filter chain builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chain {
    /// The system message: everything the model needs to know.
    System,
    /// The user message: everything the model needs to do.
    User,
}

/// The two filter chains.
#[derive(Clone)]
pub struct Assembly {
    system: Vec<Arc<dyn AssemblyFilter>>,
    user: Vec<Arc<dyn AssemblyFilter>>,
}

impl Assembly {
    /// Sections of the system message are separated by a blank line.
    const SYSTEM_SEPARATOR: &'static str = "\n\n";
    /// Sections of the user message follow each other on new lines.
    const USER_SEPARATOR: &'static str = "\n";

    /// Chains with no sections.
    pub fn empty() -> Assembly {
        Assembly {
            system: Vec::new(),
            user: Vec::new(),
        }
    }

    /// Adds a section to a chain after every section of lower or equal priority.
    pub fn register(&mut self, chain: Chain, filter: Arc<dyn AssemblyFilter>) {
        let filters = match chain {
            Chain::System => &mut self.system,
            Chain::User => &mut self.user,
        };
        let position = filters.partition_point(|other| other.priority() <= filter.priority());
        filters.insert(position, filter);
    }

    /// Runs both chains and measures the result.
    pub(crate) fn assemble(&self, input: AssemblyInput<'_>, tokens: TokenMath) -> Packet {
        let context = AssemblyContext::new(input);
        let mut system = MessageBuilder::new(Self::SYSTEM_SEPARATOR);
        for filter in &self.system {
            filter.apply(&context, &mut system);
        }
        let mut user = MessageBuilder::new(Self::USER_SEPARATOR);
        for filter in &self.user {
            filter.apply(&context, &mut user);
        }
        let entry_tokens = input.rows.iter().map(|row| row.tokens).sum();
        Packet::new(system, user, entry_tokens, tokens)
    }
}
