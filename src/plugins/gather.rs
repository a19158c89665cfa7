//! A tool's gather half: what its commands need from outside the store (a page, a search's
//! hits, an MCP server's answer, a sub-agent's report), obtained before the unit of work
//! that records them, so that the writer never waits on the network, a model or a process.
//!
//! A tool with a gather half ([`TypedTool::gather`](crate::plugins::tool::TypedTool::gather),
//! [`ToolInfo::gather_acceptance`](crate::plugins::tool::ToolInfo::gather_acceptance)) is
//! given all its commands of one reply at once and orders them, bounds their concurrency and
//! stops at an abort itself; the halves of different tools run at once. What each obtains is
//! kept under the tool's name in [`Gathered`], which the unit hands the handlers in their
//! scope; a handler takes its own tool's
//! ([`ToolScope::gathered`](crate::plugins::tool::ToolScope::gathered)). What a handler does
//! not take (a command the dispatch cancelled) is dropped with the unit.

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::hash::Hash;
use std::path::PathBuf;

use futures_util::future::BoxFuture;

use crate::db::ids::RunId;
use crate::db::models::entry::EntryRow;
use crate::db::models::run::LoopRow;
use crate::llm::CancellationToken;
use crate::plugins::policy::ToolPolicy;
use crate::sandbox::runner::CommandPlace;
use crate::web::WebClient;

/// The reply (or client call) whose commands are gathered for, and what a gather half may
/// use.
pub struct Gathering<'a> {
    pub run: RunId,
    /// The loop whose reply it is; `None` for a client's tool call.
    pub loop_row: Option<&'a LoopRow>,
    pub policy: &'a ToolPolicy,
    /// The loop's: an abort drops what is under way.
    pub cancel: &'a CancellationToken,
    /// Web searches and page fetches.
    pub web: &'a WebClient,
    /// The agent (`crate::agent::AgentContext`), for the tools that live beside it (a
    /// sub-agent runs its child loop through it).
    pub agent: &'a (dyn Any + Send + Sync),
}

/// Where a run is: its alias, and its project's name and root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunPlace {
    pub alias: String,
    pub project: String,
    pub root: PathBuf,
}

/// The acceptance of one proposal, and what its gather half may use.
pub struct Accepting<'a> {
    pub proposal: &'a EntryRow,
    /// Where the proposal's run is.
    pub place: &'a RunPlace,
    /// Where an accepted command runs when its project runs commands on the server (`None`:
    /// the client runs it and resolves with its output).
    pub(crate) commands: Option<CommandPlace<'a>>,
}

/// One gather half under way; what it comes to is the tool's own type.
pub struct Gather<'a>(BoxFuture<'a, Box<dyn Any + Send>>);

impl<'a> Gather<'a> {
    /// The half that comes to what `work` comes to.
    pub fn of<T: Any + Send>(work: impl Future<Output = T> + Send + 'a) -> Gather<'a> {
        Gather(Box::pin(async move {
            let gathered: Box<dyn Any + Send> = Box::new(work.await);
            gathered
        }))
    }

    /// Runs it.
    pub async fn run(self) -> Box<dyn Any + Send> {
        self.0.await
    }
}

/// What the gather halves obtained for one unit of work, one value per tool.
#[derive(Default)]
pub struct Gathered {
    by_tool: HashMap<&'static str, Box<dyn Any + Send>>,
}

impl std::fmt::Debug for Gathered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.by_tool.keys()).finish()
    }
}

impl Gathered {
    /// These, with what `tool`'s half obtained (in place of any it had).
    pub fn with(mut self, tool: &'static str, gathered: Box<dyn Any + Send>) -> Gathered {
        self.by_tool.insert(tool, gathered);
        self
    }

    /// What `tool`'s half obtained, `None` when it obtained nothing or not a `T`.
    pub fn of<T: Any>(&mut self, tool: &str) -> Option<&mut T> {
        self.by_tool.get_mut(tool)?.downcast_mut::<T>()
    }

    /// A `T` some half obtained, whichever tool's (for the caller of one acceptance, which
    /// has a single half).
    pub(crate) fn any<T: Any>(&self) -> Option<&T> {
        self.by_tool
            .values()
            .find_map(|gathered| gathered.downcast_ref::<T>())
    }
}

/// What a half obtained per command, by the command's key `K` (a reply may write the same
/// command twice: its answers are taken in the order they were put).
#[derive(Debug)]
pub struct Keyed<K, V> {
    waiting: HashMap<K, VecDeque<V>>,
}

impl<K, V> Default for Keyed<K, V> {
    fn default() -> Self {
        Keyed {
            waiting: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash, V> Keyed<K, V> {
    /// Keeps `answer` for the command at `key`.
    pub fn put(&mut self, key: K, answer: V) {
        self.waiting.entry(key).or_default().push_back(answer);
    }

    /// The first answer kept for `key`, taken.
    pub fn take(&mut self, key: &K) -> Option<V> {
        self.waiting.get_mut(key)?.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::{Gather, Gathered, Keyed};

    #[derive(Debug, PartialEq)]
    struct Pages(Vec<&'static str>);

    #[tokio::test]
    async fn each_tool_finds_its_own_only() {
        let pages = Gather::of(async { Pages(vec!["a"]) }).run().await;
        let count = Gather::of(async { 3_u32 }).run().await;
        let mut gathered = Gathered::default().with("get", pages).with("search", count);
        assert_eq!(gathered.of::<Pages>("get"), Some(&mut Pages(vec!["a"])));
        assert_eq!(gathered.of::<u32>("search"), Some(&mut 3));
        assert_eq!(gathered.of::<Pages>("search"), None, "another type");
        assert_eq!(gathered.of::<Pages>("mcp"), None, "another tool");
    }

    #[test]
    fn keyed_answers_are_taken_in_order() {
        let mut outcomes: Keyed<&str, u32> = Keyed::default();
        outcomes.put("call", 1);
        outcomes.put("call", 2);
        outcomes.put("other", 3);
        let taken = [
            outcomes.take(&"call"),
            outcomes.take(&"call"),
            outcomes.take(&"call"),
        ];
        assert_eq!(taken, [Some(1), Some(2), None]);
        assert_eq!(outcomes.take(&"other"), Some(3));
    }
}
