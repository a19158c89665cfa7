//! A plugin process's model tool: `<name attr="…">body</name>`, a result entry
//! `name://turn_N/<body's start>` holding what the plugin answered to `tool/call`. A tool
//! that `changes` things is a 202 proposal instead, and the plugin is called (`accepted`)
//! only when a client accepts it. The calls are made by the gather halves, before the unit
//! of work, and name the run where it is (its alias, its project's name and root: the
//! plugin's reach knows them for a loop's reply, the acceptance reads them); a plugin that
//! fails (crash, timeout, garbage, disabled) makes a 502 entry.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::protocol::{LoopFlag, Place, ToolAnswer, ToolCall, ToolDecl, TOOL_CALL};
use super::reach::Reach;
use crate::context::view::EntryView;
use crate::db::enums::{EntryStatus, LoopMode};
use crate::db::models::entry::EntryRow;
use crate::parser::{Command, TaggedText};
use crate::plugins::gather::{Accepting, Gather, Gathering, Keyed};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    Availability, ClientCall, Handled, TargetKind, ToolEffect, ToolError, ToolInfo, ToolScope,
    TypedTool,
};
use crate::plugins::writes::finish;
use crate::plugins::writes::resolve_accepted;

/// The most characters of a call's body in its result path.
const TARGET_CHARS: usize = 60;

/// What one call came to: its status and the text the model reads.
pub(super) type Outcome = (EntryStatus, String);

/// One tool of a plugin process.
pub(super) struct ProcessTool {
    pub reach: Arc<Reach>,
    /// The plugin's place among the plugin processes (its bit in the policy's set).
    pub index: usize,
    pub name: &'static str,
    pub doc: &'static str,
    pub changes: bool,
    pub excluded_by: Vec<LoopFlag>,
}

impl ProcessTool {
    pub(super) fn new(reach: Arc<Reach>, index: usize, declared: ToolDecl) -> ProcessTool {
        ProcessTool {
            reach,
            index,
            name: declared.name.leak(),
            doc: declared.doc.leak(),
            changes: declared.changes,
            excluded_by: declared.excluded_by,
        }
    }

    /// Calls the plugin with `content` of the run at `place`; whatever fails is a 502 with
    /// the reason.
    async fn call(&self, place: &Place, content: &TaggedText, accepted: bool) -> Outcome {
        let attributes: Map<String, Value> = content
            .attributes
            .iter()
            .map(|(name, value)| (name.clone(), value.to_json()))
            .collect();
        let call = ToolCall {
            tool: self.name,
            place,
            body: &content.body,
            attributes: &attributes,
            accepted,
        };
        let params = serde_json::to_value(call).unwrap_or(Value::Null);
        match self.reach.link.call(TOOL_CALL, params).await {
            Ok(answer) => match serde_json::from_value::<ToolAnswer>(answer) {
                Ok(answer) => (
                    EntryStatus::from_code(i32::from(answer.status)).unwrap_or(EntryStatus::Failed),
                    answer.body,
                ),
                Err(error) => (
                    EntryStatus::BadGateway,
                    format!("the plugin answered {error}"),
                ),
            },
            Err(error) => (EntryStatus::BadGateway, error.to_string()),
        }
    }
}

impl ToolInfo for ProcessTool {
    fn name(&self) -> &'static str {
        self.name
    }

    fn availability(&self, policy: &ToolPolicy) -> Availability {
        let flagged = self.excluded_by.iter().any(|flag| match flag {
            LoopFlag::Ask => policy.mode == LoopMode::Ask,
            LoopFlag::NoWeb => policy.no_web,
            LoopFlag::NoInteraction => policy.no_interaction,
            LoopFlag::NoProposals => policy.no_proposals,
        });
        let changes_out_of_act = self.changes && policy.mode != LoopMode::Act;
        if flagged
            || changes_out_of_act
            || policy.mode == LoopMode::Panic
            || !policy.plugin_processes.contains(self.index)
        {
            return Availability::Excluded;
        }
        Availability::Offered
    }

    fn excluded_because(&self, policy: &ToolPolicy) -> Option<&'static str> {
        (!policy.plugin_processes.contains(self.index))
            .then_some("this plugin does not serve this project")
    }

    fn effect(&self) -> ToolEffect {
        if self.changes {
            ToolEffect::Changes
        } else {
            ToolEffect::Reads
        }
    }

    fn proposes(&self) -> bool {
        self.changes
    }

    fn doc(&self) -> &'static str {
        self.doc
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        format!("# {}\n{}", self.name, entry.body)
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        let attributes = call
            .attributes
            .keys()
            .filter_map(|name| {
                Some((
                    name.clone(),
                    crate::parser::AttrValue::Text(call.attribute(name)?),
                ))
            })
            .collect();
        Command::Other {
            name: self.name.to_owned(),
            content: TaggedText {
                body: call.body.clone().unwrap_or_else(|| call.path.clone()),
                attributes,
            },
        }
    }

    fn target_kind(&self) -> TargetKind {
        TargetKind::Text
    }

    fn gather_acceptance<'a>(&'a self, accepting: &'a Accepting<'a>) -> Option<Gather<'a>> {
        let proposal = accepting.proposal;
        let content = TaggedText {
            body: proposal.body.clone(),
            attributes: proposed_attributes(proposal),
        };
        let place = Place::from(accepting.place);
        Some(Gather::of(async move {
            self.call(&place, &content, true).await
        }))
    }

    fn accept(
        &self,
        scope: &mut ToolScope<'_>,
        proposal: &EntryRow,
        _output: Option<&str>,
    ) -> Result<(), ToolError> {
        let made = scope.gathered::<Outcome>(self.name).cloned();
        resolve_accepted(scope, proposal, made)
    }
}

/// A command's key among the outcomes of its reply: all it says.
fn key(content: &TaggedText) -> String {
    format!("{content:?}")
}

/// The attributes a proposal was recorded with (its `attributes` attribute).
fn proposed_attributes(proposal: &EntryRow) -> Vec<(String, crate::parser::AttrValue)> {
    proposal
        .attributes
        .0
        .get("attributes")
        .and_then(Value::as_object)
        .map(|attributes| {
            attributes
                .iter()
                .filter_map(|(name, value)| {
                    Some((
                        name.clone(),
                        crate::parser::AttrValue::Text(value.as_str()?.to_owned()),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

impl TypedTool for ProcessTool {
    type Input = TaggedText;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, TaggedText>> {
        match command {
            Command::Other { name, content } if name == self.name => Some(Cow::Borrowed(content)),
            _ => None,
        }
    }

    fn target(&self, content: &TaggedText) -> String {
        let line = content.body.trim().lines().next().unwrap_or_default();
        line.chars().take(TARGET_CHARS).collect()
    }

    /// Calls the plugin for each of the reply's commands, in order (a changing tool's are
    /// proposed instead, and called when accepted).
    fn gather<'a>(
        &'a self,
        at: &'a Gathering<'a>,
        inputs: Vec<Cow<'a, TaggedText>>,
    ) -> Option<Gather<'a>> {
        if self.changes {
            return None;
        }
        Some(Gather::of(async move {
            let mut outcomes: Keyed<String, Outcome> = Keyed::default();
            let place = self.reach.run_place(at.run);
            for content in inputs {
                if at.cancel.is_cancelled() {
                    break;
                }
                let outcome = match &place {
                    Some(place) => self.call(place, &content, false).await,
                    None => (
                        EntryStatus::BadGateway,
                        "the plugin has not seen this run's loop start".to_owned(),
                    ),
                };
                outcomes.put(key(&content), outcome);
            }
            outcomes
        }))
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        content: &TaggedText,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let attributes: Map<String, Value> = content
            .attributes
            .iter()
            .map(|(name, value)| (name.clone(), value.to_json()))
            .collect();
        let attributes = Some(json!({ "attributes": attributes }));
        if self.changes {
            let body = &content.body;
            return finish(scope, result_path, EntryStatus::Proposed, body, attributes);
        }
        let (status, body) = scope
            .gathered::<Keyed<String, Outcome>>(self.name)
            .and_then(|outcomes| outcomes.take(&key(content)))
            .unwrap_or((
                EntryStatus::BadGateway,
                "the plugin is called from a loop's replies only".to_owned(),
            ));
        finish(scope, result_path, status, &body, attributes)
    }
}
