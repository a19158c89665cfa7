//! Filters: values plugins may rewrite at fixed hook points (PLUGINS: filters rewrite,
//! events observe). Each hook is a type ([`FilterHook`]) naming the value it threads and
//! what the filters are told beside it; its filters run in ascending priority, equal
//! priorities in registration order, each given the value the one before left. A filter is
//! a function, or a future ([`AsyncFilterFn`]: a plugin process's, which is asked over a
//! pipe) that is given a copy of the value and answers the value to go on with. A filter
//! that panics is caught and logged, and the value goes on as it left it. A hook with no
//! filter costs one emptiness check.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::Value;

use crate::db::enums::{CallPurpose, EntryStatus, LoopMode};
use crate::db::ids::{ProjectId, RunId};
use crate::hub::notifications::ProposedEntry;
use crate::llm::ChatMessage;
use crate::parser::Command;

/// A hook point whose value filters rewrite.
pub trait FilterHook: Sized + 'static {
    /// What the filters rewrite.
    type Value: Clone + Send + 'static;
    /// What they are told beside it.
    type Context: Copy + std::fmt::Debug + Send + Sync + 'static;

    /// Its chain among the filters.
    fn chain(filters: &Filters) -> &FilterChain<Self>;

    /// Its chain, to add a filter to.
    fn chain_mut(filters: &mut Filters) -> &mut FilterChain<Self>;
}

/// One filter of hook `H`: rewrites the value in place.
pub type FilterFn<H> =
    dyn Fn(&mut <H as FilterHook>::Value, &<H as FilterHook>::Context) + Send + Sync;

/// One filter of hook `H` that answers later: given a copy of the value, it answers the
/// value to go on with (the copy unchanged when it has nothing to say).
pub type AsyncFilterFn<H> = dyn Fn(
        <H as FilterHook>::Value,
        <H as FilterHook>::Context,
    ) -> BoxFuture<'static, <H as FilterHook>::Value>
    + Send
    + Sync;

/// One filter as its chain holds it.
enum Filter<H: FilterHook> {
    Now(Arc<FilterFn<H>>),
    Later(Arc<AsyncFilterFn<H>>),
}

impl<H: FilterHook> Clone for Filter<H> {
    fn clone(&self) -> Self {
        match self {
            Filter::Now(filter) => Filter::Now(Arc::clone(filter)),
            Filter::Later(filter) => Filter::Later(Arc::clone(filter)),
        }
    }
}

/// The filters of one hook, in the order they run.
pub struct FilterChain<H: FilterHook> {
    filters: Vec<(i32, Filter<H>)>,
}

impl<H: FilterHook> Default for FilterChain<H> {
    fn default() -> Self {
        FilterChain {
            filters: Vec::new(),
        }
    }
}

impl<H: FilterHook> Clone for FilterChain<H> {
    fn clone(&self) -> Self {
        FilterChain {
            filters: self.filters.clone(),
        }
    }
}

impl<H: FilterHook> FilterChain<H> {
    /// No filter is registered.
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    fn add(&mut self, priority: i32, filter: Filter<H>) {
        let position = self
            .filters
            .partition_point(|(other, _)| *other <= priority);
        self.filters.insert(position, (priority, filter));
    }

    async fn apply(&self, value: &mut H::Value, context: &H::Context) {
        for (priority, filter) in &self.filters {
            let panicked = match filter {
                Filter::Now(filter) => {
                    catch_unwind(AssertUnwindSafe(|| filter(value, context))).is_err()
                }
                Filter::Later(filter) => {
                    let answer = AssertUnwindSafe(filter(value.clone(), *context));
                    match answer.catch_unwind().await {
                        Ok(answered) => {
                            *value = answered;
                            false
                        }
                        Err(_) => true,
                    }
                }
            };
            if panicked {
                tracing::error!(
                    hook = std::any::type_name::<H>(),
                    priority,
                    ?context,
                    "a filter panicked; the value goes on as it left it"
                );
            }
        }
    }
}

/// `run.config`: a run's settings on their way to it, from every call that sets them (`ask`,
/// `act`, `startRun`, `run/config`, `persona/set`), before anything is admitted or written:
/// a filter may clamp them (another model, a lower temperature or context limit, a flag
/// set, an `act` made an `ask`) or refuse the call.
pub struct RunConfig;

/// `llm.request` (the seeds' `llm.messages`): the messages of each model call (a turn's,
/// or memory's beside the turns), before it is sent.
pub struct LlmMessages;

/// `llm.response`: the model's raw reply to each call, before it is parsed (a turn's) or
/// read (memory's).
pub struct LlmResponse;

/// `entry.recording`: each command of a model's reply (or a client's tool call), before it
/// is recorded and run, as a [`Recordable`]: a filter may rewrite the command or refuse it.
/// A rewrite into a command no tool takes is ignored.
pub struct EntryRecording;

/// A command on its way to be recorded (the value of `entry.recording`).
#[derive(Debug, Clone, PartialEq)]
pub struct Recordable {
    pub command: Command,
    /// Set by a filter that refuses the command: it is recorded with this status and
    /// message, and not run.
    pub refusal: Option<Refusal>,
}

impl Recordable {
    /// `command`, not refused.
    pub fn new(command: Command) -> Recordable {
        Recordable {
            command,
            refusal: None,
        }
    }
}

/// Why a filter refused a command: the status (at least 400) and the message the model
/// reads in its result entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    status: EntryStatus,
    pub message: String,
}

impl Refusal {
    /// A refusal with `status`; one below 400 becomes 403 (a refusal is a failure).
    pub fn new(status: EntryStatus, message: impl Into<String>) -> Refusal {
        let status = if status.is_failure() {
            status
        } else {
            EntryStatus::Forbidden
        };
        Refusal {
            status,
            message: message.into(),
        }
    }

    /// Its status, at least 400.
    pub fn status(&self) -> EntryStatus {
        self.status
    }
}

/// `rpc.response.result`: a method's result, before it goes back to the client.
pub struct RpcResult;

/// `budget.enforce`: the window a turn's assembled packet must fit, in tokens, before the
/// model is called; a filter may lower it (a raise is ignored). A packet over it ends the
/// turn with 413, as one over the model's window does.
pub struct BudgetEnforce;

/// `turn.proposing`: the proposals a turn left, before they are offered to the clients
/// (`run/proposal`); a filter may rewrite what is offered (annotate, redact), not what is
/// stored, nor which proposals there are (a path or a proposal it drops or adds is
/// ignored).
pub struct TurnProposing;

/// A run's settings as a call gives them (the value of `run.config`): all of them for an
/// `ask`, `act` or `startRun`; for `run/config` and `persona/set`, those the call changes
/// (the others `None`, the run's model as it stands when the call names none).
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    /// `ask` or `act` for a call that queues a loop, `None` for one that only sets the run's
    /// settings; a filter may make an `act` an `ask` (any other change is ignored).
    pub mode: Option<LoopMode>,
    /// The model alias (checked against the catalogue after the filters).
    pub model: String,
    pub temperature: Option<f64>,
    /// The run's context limit, in tokens.
    pub context_limit: Option<i64>,
    pub persona: Option<String>,
    /// The loop's flags (`false`, and not read, for a call that queues no loop).
    pub no_repo: bool,
    pub no_interaction: bool,
    pub no_web: bool,
    pub no_proposals: bool,
    /// Set by a filter that refuses the call: what the client is told.
    pub refusal: Option<String>,
}

/// Who sets a run's settings.
#[derive(Debug, Clone, Copy)]
pub struct RunAsked {
    pub project: ProjectId,
    /// The method that sets them: `ask`, `act`, `startRun`, `run/config` or `persona/set`.
    pub method: &'static str,
}

/// The turn whose packet is measured (`budget.enforce`).
#[derive(Debug, Clone, Copy)]
pub struct Measuring {
    pub project: ProjectId,
    pub run: RunId,
    /// The run-wide turn number.
    pub turn: i32,
    /// The calibrated size of the packet, in tokens.
    pub measured: u64,
}

/// The turn whose proposals are offered (`turn.proposing`).
#[derive(Debug, Clone, Copy)]
pub struct Proposing {
    pub project: ProjectId,
    pub run: RunId,
    /// The run-wide turn number.
    pub turn: i32,
}

/// The model call a request or reply belongs to: a turn's, or one beside the turns
/// (memory's sidecar calls).
#[derive(Debug, Clone, Copy)]
pub struct LlmCall {
    pub project: ProjectId,
    pub run: RunId,
    /// The run-wide turn number (of the latest turn, for a call beside the turns).
    pub turn: i32,
    /// What the call is for.
    pub purpose: CallPurpose,
}

/// The turn a reply's commands are recorded in.
#[derive(Debug, Clone, Copy)]
pub struct Recording {
    pub run: RunId,
    /// The run-wide turn number; `None` for a client's tool call (numbered when recorded).
    pub turn: Option<i32>,
}

/// The call a result answers.
#[derive(Debug, Clone, Copy)]
pub struct RpcCall {
    pub method: &'static str,
    /// The connection's project, once bound.
    pub project: Option<ProjectId>,
}

/// The filters of every hook.
#[derive(Default, Clone)]
pub struct Filters {
    run_config: FilterChain<RunConfig>,
    budget_enforce: FilterChain<BudgetEnforce>,
    llm_messages: FilterChain<LlmMessages>,
    llm_response: FilterChain<LlmResponse>,
    entry_recording: FilterChain<EntryRecording>,
    turn_proposing: FilterChain<TurnProposing>,
    rpc_result: FilterChain<RpcResult>,
}

impl Filters {
    /// Adds `filter` to hook `H` after every filter of lower or equal priority.
    pub fn register<H: FilterHook>(&mut self, priority: i32, filter: Arc<FilterFn<H>>) {
        H::chain_mut(self).add(priority, Filter::Now(filter));
    }

    /// Adds a filter that answers later to hook `H`, ordered as [`Filters::register`].
    pub fn register_async<H: FilterHook>(&mut self, priority: i32, filter: Arc<AsyncFilterFn<H>>) {
        H::chain_mut(self).add(priority, Filter::Later(filter));
    }

    /// Threads `value` through the filters of `H`.
    pub async fn apply<H: FilterHook>(&self, value: &mut H::Value, context: &H::Context) {
        H::chain(self).apply(value, context).await;
    }
}

macro_rules! hook {
    ($hook:ty, $field:ident, $value:ty, $context:ty) => {
        impl FilterHook for $hook {
            type Value = $value;
            type Context = $context;

            fn chain(filters: &Filters) -> &FilterChain<Self> {
                &filters.$field
            }

            fn chain_mut(filters: &mut Filters) -> &mut FilterChain<Self> {
                &mut filters.$field
            }
        }
    };
}

hook!(RunConfig, run_config, RunRequest, RunAsked);
hook!(BudgetEnforce, budget_enforce, u64, Measuring);
hook!(LlmMessages, llm_messages, Vec<ChatMessage>, LlmCall);
hook!(LlmResponse, llm_response, String, LlmCall);
hook!(EntryRecording, entry_recording, Recordable, Recording);
hook!(TurnProposing, turn_proposing, Vec<ProposedEntry>, Proposing);
hook!(RpcResult, rpc_result, Value, RpcCall);

#[cfg(test)]
mod tests {
    use super::*;

    const CALL: LlmCall = LlmCall {
        project: ProjectId(1),
        run: RunId(1),
        turn: 1,
        purpose: CallPurpose::Turn,
    };

    fn appending(text: &'static str) -> Arc<FilterFn<LlmResponse>> {
        Arc::new(move |value: &mut String, _: &LlmCall| value.push_str(text))
    }

    #[tokio::test]
    async fn filters_run_in_ascending_priority_then_registration_order() {
        let mut filters = Filters::default();
        filters.register::<LlmResponse>(200, appending(" 200"));
        filters.register::<LlmResponse>(10, appending(" 10"));
        filters.register::<LlmResponse>(100, appending(" 100a"));
        filters.register::<LlmResponse>(100, appending(" 100b"));
        filters.register_async::<LlmResponse>(
            150,
            Arc::new(|value: String, _: LlmCall| async move { value + " 150 later" }.boxed()),
        );
        let mut reply = String::from("reply");
        filters.apply::<LlmResponse>(&mut reply, &CALL).await;
        assert_eq!(reply, "reply 10 100a 100b 150 later 200");
    }

    #[tokio::test]
    async fn a_panicking_filter_leaves_the_value_to_the_next_ones() {
        let mut filters = Filters::default();
        filters.register::<LlmResponse>(1, appending(" kept"));
        filters.register::<LlmResponse>(
            2,
            Arc::new(|value: &mut String, _: &LlmCall| {
                value.push_str(" half");
                panic!("filter bug");
            }),
        );
        filters.register_async::<LlmResponse>(
            3,
            Arc::new(|_: String, _: LlmCall| async move { panic!("async filter bug") }.boxed()),
        );
        filters.register::<LlmResponse>(4, appending(" after"));
        let mut reply = String::from("reply");
        filters.apply::<LlmResponse>(&mut reply, &CALL).await;
        assert_eq!(reply, "reply kept half after");
    }

    #[tokio::test]
    async fn each_hook_has_its_own_chain() {
        let mut filters = Filters::default();
        filters.register::<LlmResponse>(1, appending(" filtered"));
        let mut messages = vec![ChatMessage::user("question")];
        filters.apply::<LlmMessages>(&mut messages, &CALL).await;
        assert_eq!(messages, vec![ChatMessage::user("question")]);
    }
}
