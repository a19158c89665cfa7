//! The re-rank of a recall (`RUMMY_MEMORY_RERANK_MODEL`): when at least
//! `RUMMY_MEMORY_RERANK_TIES` of the candidates a prompt recalls score alike where
//! `RUMMY_MEMORY_RECALL_TOKENS` cuts them, lexical scoring cannot tell which to keep, so a
//! sidecar call of that model, given the prompt and those candidates (numbered, cut short),
//! answers their order as JSON. It is a reflection
//! before a loop's first turn, so the writer never waits for a model: it reads the
//! candidates on a reader, asks, and hands the order through [`RecallOrders`] to the recall
//! that writes `memory://recall` in that turn's unit of work, which reorders the tied
//! candidates (in the places they held) before the budget cuts. A failed, slow (past
//! `RUMMY_MEMORY_RERANK_TIMEOUT_SECS`) or malformed answer is logged and the recall keeps
//! its lexical order.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::Deserialize;

use crate::context::TokenMath;
use crate::db::enums::CallPurpose;
use crate::db::ids::{LoopId, ProjectId, RunId};
use crate::db::models::memory::{MemoryLayer, RecalledItem};
use crate::db::queries::{loops, memory, models};
use crate::db::{Conn, DbError};
use crate::plugins::reflection::{Moment, Reflecting, Reflection, ReflectionServices};

use super::recalled::{candidates, fits, line};
use super::sidecar::{self, json_object, SidecarCall, SidecarError};

/// What the re-ranking model is told to do.
const INSTRUCTIONS: &str = include_str!("../plugins/text/memory/rerank.md");
/// Relative difference of two full-text scores within which they score alike.
const SCORE_BAND: f64 = 0.1;
/// Most characters of the prompt the model reads.
const PROMPT_CHARS: usize = 2_000;
/// Most characters of one candidate the model reads.
const CANDIDATE_CHARS: usize = 300;
/// Cap on the answer, in tokens (a list of at most 40 numbers).
const ANSWER_TOKENS: u32 = 300;

/// The reflection.
pub(super) struct RecallRerank {
    /// The alias of the model asked.
    pub model: String,
    /// Least candidates scoring alike that call for a re-rank.
    pub ties: usize,
    pub timeout: Duration,
    /// The recall's budget, in tokens.
    pub budget: i64,
    pub tokens: TokenMath,
    pub orders: Arc<RecallOrders>,
}

/// Re-ranked orders on their way from the re-rank to the recall of the same loop's first
/// turn, each the tied candidates' lines in their new order: at most one per run (a loop's
/// replaces its run's previous one), taken by that recall.
#[derive(Default)]
pub(super) struct RecallOrders {
    by_run: Mutex<HashMap<RunId, (LoopId, Vec<String>)>>,
}

impl RecallOrders {
    fn hand(&self, run: RunId, loop_id: LoopId, order: Vec<String>) {
        self.lock().insert(run, (loop_id, order));
    }

    /// The order handed for `loop_id` of `run`; the run has none left after.
    pub(super) fn take(&self, run: RunId, loop_id: LoopId) -> Option<Vec<String>> {
        let (handed_for, order) = self.lock().remove(&run)?;
        (handed_for == loop_id).then_some(order)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, (LoopId, Vec<String>)>> {
        self.by_run.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What a re-rank asks about.
struct Tie {
    prompt: String,
    /// The catalogue `actual` of the re-ranking model; `None` when its alias is unknown.
    model_actual: Option<String>,
    /// The candidates scoring alike, in lexical order.
    items: Vec<RecalledItem>,
}

/// Why a re-rank has no order.
#[derive(Debug, thiserror::Error)]
enum RerankError {
    #[error("cannot read the candidates: {0}")]
    Read(#[from] DbError),
    #[error("no model has the alias {0:?}")]
    UnknownModel(String),
    #[error(transparent)]
    Sidecar(#[from] SidecarError),
    #[error(transparent)]
    Answer(#[from] OrderError),
}

impl Reflection for RecallRerank {
    fn reflect<'a>(
        &'a self,
        services: &'a ReflectionServices,
        at: &'a Reflecting,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if at.moment != Moment::LoopStarting {
                return;
            }
            match self.rerank(services, at).await {
                Ok(Some(order)) => self.orders.hand(at.run, at.loop_id, order),
                Ok(None) => {}
                Err(error) => tracing::warn!(
                    %error,
                    run.id = %at.run,
                    "recall re-rank: no order; the recall keeps its lexical order"
                ),
            }
        })
    }
}

impl RecallRerank {
    /// The tied candidates' lines in the model's order; `None` when nothing ties.
    async fn rerank(
        &self,
        services: &ReflectionServices,
        at: &Reflecting,
    ) -> Result<Option<Vec<String>>, RerankError> {
        let (loop_id, project, model) = (at.loop_id, at.project, self.model.clone());
        let (budget, tokens, ties) = (self.budget, self.tokens, self.ties);
        let tie = services
            .db
            .read(move |conn| read_tie(conn, loop_id, project, &model, budget, tokens, ties))
            .await?;
        let Some(tie) = tie else {
            return Ok(None);
        };
        let model_actual = tie
            .model_actual
            .clone()
            .ok_or_else(|| RerankError::UnknownModel(self.model.clone()))?;
        let call = SidecarCall {
            purpose: CallPurpose::Rerank,
            model_actual,
            instructions: INSTRUCTIONS,
            input: rerank_input(&tie),
            answer_tokens: ANSWER_TOKENS,
            timeout: self.timeout,
        };
        let answer = sidecar::ask(services, at, call).await?;
        let order = order_of(&answer, tie.items.len())?;
        Ok(Some(
            order
                .into_iter()
                .filter_map(|position| tie.items.get(position))
                .map(line)
                .collect(),
        ))
    }
}

/// The loop's prompt and its candidates that score alike where `budget` tokens cut them;
/// `None` without a prompt, with memory off or without a tie.
fn read_tie(
    conn: &mut Conn,
    loop_id: LoopId,
    project: ProjectId,
    model: &str,
    budget: i64,
    tokens: TokenMath,
    ties: usize,
) -> Result<Option<Tie>, DbError> {
    let Some(lp) = loops::get_loop(conn, loop_id)? else {
        return Ok(None);
    };
    if lp.prompt.is_empty() || !memory::is_enabled(conn, project)? {
        return Ok(None);
    }
    let mut items = candidates(conn, project, &lp.prompt)?;
    let Some(tied) = tied(&items, &fits(&items, budget, tokens), ties) else {
        return Ok(None);
    };
    Ok(Some(Tie {
        prompt: lp.prompt,
        model_actual: models::find_model(conn, model)?.map(|row| row.actual),
        items: items.drain(tied).collect(),
    }))
}

/// Which of the recall's index segments an item's layer is in: the project's facts, the
/// server-wide ones, the history (replaced facts and narratives, ranked together). A
/// re-rank never moves an item out of its segment.
fn segment(layer: MemoryLayer) -> u8 {
    match layer {
        MemoryLayer::Project => 0,
        MemoryLayer::Server => 1,
        MemoryLayer::History | MemoryLayer::Narrative => 2,
    }
}

/// The candidates, among `items` in recall order (`fits`: whether each fits the budget),
/// that score alike where the budget cuts: around the first one it leaves out, the
/// contiguous ones of its segment whose scores are within [`SCORE_BAND`] of its score;
/// `None` when the budget leaves none out or fewer than `ties` score alike.
pub(super) fn tied(items: &[RecalledItem], fits: &[bool], ties: usize) -> Option<Range<usize>> {
    let cut = fits.iter().position(|fits| !fits)?;
    let left_out = items.get(cut)?;
    let alike = |item: &RecalledItem| {
        segment(item.layer) == segment(left_out.layer)
            && (item.score - left_out.score).abs() <= SCORE_BAND * left_out.score.abs()
    };
    let (before, after) = items.split_at(cut);
    let start = before
        .iter()
        .rposition(|item| !alike(item))
        .map_or(0, |unlike| unlike + 1);
    let end = after
        .iter()
        .position(|item| !alike(item))
        .map_or(items.len(), |unlike| cut + unlike);
    (end - start >= ties).then_some(start..end)
}

/// The model's user message: the prompt and the tied candidates, numbered from 1.
fn rerank_input(tie: &Tie) -> String {
    let candidates: Vec<String> = tie
        .items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let text = line(item);
            let text = text.strip_prefix("- ").unwrap_or(&text);
            format!("{}. {}", index + 1, cut(text, CANDIDATE_CHARS))
        })
        .collect();
    format!(
        "The prompt:\n{}\n\nThe facts:\n{}",
        cut(&tie.prompt, PROMPT_CHARS),
        candidates.join("\n")
    )
}

fn cut(text: &str, chars: usize) -> String {
    text.chars().take(chars).collect()
}

/// Why an answer is not an order.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
enum OrderError {
    #[error("the answer holds no JSON object")]
    NoObject,
    #[error("the answer is not an order: {0}")]
    Shape(String),
}

/// The answer's shape: `{"order": [3, 1, 2]}`.
#[derive(Deserialize)]
struct Answer {
    order: Vec<u64>,
}

/// The positions (from 0) of `count` candidates in the order `answer` gives: the numbers
/// it names (1 to `count`) at their first mention, then those it does not name in their
/// lexical order; a number that names no candidate and a repeat are skipped.
fn order_of(answer: &str, count: usize) -> Result<Vec<usize>, OrderError> {
    let json = json_object(answer).ok_or(OrderError::NoObject)?;
    let answer: Answer =
        serde_json::from_str(json).map_err(|error| OrderError::Shape(error.to_string()))?;
    let mut order: Vec<usize> = Vec::with_capacity(count);
    for number in answer.order {
        let position = usize::try_from(number)
            .ok()
            .and_then(|number| number.checked_sub(1));
        match position {
            Some(position) if position < count && !order.contains(&position) => {
                order.push(position);
            }
            _ => {}
        }
    }
    let unnamed: Vec<usize> = (0..count)
        .filter(|position| !order.contains(position))
        .collect();
    order.extend(unnamed);
    Ok(order)
}

/// `items` with those whose lines `order` names put in its order, in the places they held;
/// the others stay where they are.
pub(super) fn reorder(items: Vec<RecalledItem>, order: &[String]) -> Vec<RecalledItem> {
    let rank = |item: &RecalledItem| {
        let text = line(item);
        order.iter().position(|named| *named == text)
    };
    let mut named = Vec::new();
    let mut places = Vec::with_capacity(items.len());
    for item in items {
        match rank(&item) {
            Some(rank) => {
                named.push((rank, item));
                places.push(None);
            }
            None => places.push(Some(item)),
        }
    }
    named.sort_by_key(|(rank, _)| *rank);
    let mut named = named.into_iter().map(|(_, item)| item);
    places
        .into_iter()
        .filter_map(|place| place.or_else(|| named.next()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(layer: MemoryLayer, topic: &str, score: f64) -> RecalledItem {
        RecalledItem {
            layer,
            topic: topic.into(),
            body: format!("about {topic}"),
            dated: "2026-11-25 10:00:00".into(),
            score,
        }
    }

    fn topics(items: &[RecalledItem]) -> Vec<&str> {
        items.iter().map(|item| item.topic.as_str()).collect()
    }

    #[test]
    fn an_order_names_known_numbers_once_and_the_unnamed_follow_in_lexical_order() {
        assert_eq!(order_of("{\"order\": [3, 1, 2]}", 3), Ok(vec![2, 0, 1]));
        assert_eq!(
            order_of("Here:\n```json\n{\"order\": [4, 2]}\n```", 5),
            Ok(vec![3, 1, 0, 2, 4]),
            "the unnamed keep their order after the named"
        );
        assert_eq!(
            order_of("{\"order\": [2, 9, 0, 2, 1]}", 3),
            Ok(vec![1, 0, 2]),
            "unknown numbers and repeats are skipped"
        );
        assert_eq!(order_of("{\"order\": []}", 2), Ok(vec![0, 1]));
        assert_eq!(order_of("{\"order\": [4, 2]}", 3), Ok(vec![1, 0, 2]));
        assert_eq!(order_of("3, 1, 2", 3), Err(OrderError::NoObject));
        assert!(matches!(
            order_of("{\"order\": [\"3\"]}", 3),
            Err(OrderError::Shape(_))
        ));
        assert!(matches!(
            order_of("{\"ranking\": [1]}", 3),
            Err(OrderError::Shape(_))
        ));
        assert!(matches!(
            order_of("{\"order\": [-1]}", 3),
            Err(OrderError::Shape(_))
        ));
    }

    #[test]
    fn the_named_take_the_places_of_the_named_and_the_others_stay() {
        let items = vec![
            item(MemoryLayer::Project, "a", -3.0),
            item(MemoryLayer::Project, "b", -1.0),
            item(MemoryLayer::Project, "c", -1.0),
            item(MemoryLayer::Project, "d", -1.0),
            item(MemoryLayer::History, "e", -1.0),
        ];
        let order = [
            line(&items[3]),
            line(&items[1]),
            "- [project] gone: x".into(),
        ];
        assert_eq!(
            topics(&reorder(items.clone(), &order)),
            ["a", "d", "c", "b", "e"]
        );
        assert_eq!(topics(&reorder(items, &[])), ["a", "b", "c", "d", "e"]);
    }

    #[test]
    fn a_tie_is_the_run_of_alike_scores_of_one_segment_around_the_cut() {
        let items = [
            item(MemoryLayer::Project, "best", -5.0),
            item(MemoryLayer::Project, "a", -2.05),
            item(MemoryLayer::Project, "b", -2.0),
            item(MemoryLayer::Project, "c", -1.9),
            item(MemoryLayer::Project, "far", -1.5),
            item(MemoryLayer::Server, "shared", -2.0),
        ];
        let held = |count: usize| -> Vec<bool> { (0..items.len()).map(|i| i < count).collect() };
        assert_eq!(tied(&items, &held(2), 3), Some(1..4));
        assert_eq!(tied(&items, &held(2), 4), None, "three score alike");
        assert_eq!(tied(&items, &held(6), 2), None, "the budget holds them all");
        assert_eq!(
            tied(&items, &held(5), 2),
            None,
            "the server's fact is alone in its segment"
        );
        assert_eq!(
            tied(&items, &held(4), 2),
            None,
            "-1.5 is not within 10% of -1.9"
        );
        let history = [
            item(MemoryLayer::History, "replaced", -1.0),
            item(MemoryLayer::Narrative, "narrative", -1.0),
        ];
        assert_eq!(tied(&history, &[true, false], 2), Some(0..2));
        let layers = [
            item(MemoryLayer::Project, "own", -2.0),
            item(MemoryLayer::Server, "shared", -2.0),
        ];
        assert_eq!(
            tied(&layers, &[true, false], 2),
            None,
            "alike scores of two segments do not tie"
        );
        let skipped = [false, true, true, true, true, true];
        assert_eq!(
            tied(&items, &skipped, 1),
            Some(0..1),
            "the cut is the first left out"
        );
    }

    #[test]
    fn the_order_handed_is_taken_once_by_its_loop() {
        let orders = RecallOrders::default();
        orders.hand(RunId(1), LoopId(10), vec!["x".into()]);
        orders.hand(RunId(2), LoopId(20), vec!["y".into()]);
        assert_eq!(orders.take(RunId(1), LoopId(11)), None, "another loop's");
        assert_eq!(
            orders.take(RunId(1), LoopId(10)),
            None,
            "dropped by the other take"
        );
        assert_eq!(orders.take(RunId(2), LoopId(20)), Some(vec!["y".into()]));
        assert_eq!(orders.take(RunId(2), LoopId(20)), None);
    }
}
