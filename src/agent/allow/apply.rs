//! A person's rules applied to the commands a loop of theirs proposes (the module doc of
//! `agent::allow` says what each kind of project gets): one lookup of the person's rules in
//! the project, only for a turn that proposes a command in a project that has rules, and
//! nothing for a person who may not accept there.

use std::path::Path;

use crate::agent::allow::pattern::CommandPattern;
use crate::agent::allow::{person_key, person_of, Allowed};
use crate::agent::error::LoopError;
use crate::agent::AgentContext;
use crate::config::RunCommands;
use crate::db::enums::RunAction;
use crate::db::ids::ProjectId;
use crate::db::models::entry::UnresolvedRow;
use crate::db::models::run::{LoopRow, RunActionForm};
use crate::db::queries::command_rules::{self, CommandRuleRow};
use crate::db::queries::{proposals, run_actions};
use crate::db::{DbError, UnitError};
use crate::hub;
use crate::hub::notifications::{Act, Notification, RunActed};
use crate::llm::CancellationToken;
use crate::plugins::bundled::tools::command_proposal::RanOnServer;
use crate::plugins::engine::resolve::{acceptance, gathered, resolve_proposal};
use crate::plugins::engine::resolve::{Resolution, ResolveInput};
use crate::plugins::gather::{Accepting, RunPlace};
use crate::sandbox::policy::{CommandPolicy, ProjectChoice};
use crate::sandbox::runner::CommandPlace;

/// Where a loop runs, for applying its person's rules.
pub(crate) struct LoopPlace<'a> {
    pub lp: &'a LoopRow,
    pub alias: &'a str,
    pub project: ProjectId,
    pub project_name: &'a str,
    pub root: &'a Path,
    /// The loop's: an abort while an allowed command runs records nothing more.
    pub cancel: &'a CancellationToken,
}

/// What became of a turn's proposals.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    /// The proposals still pending: all but those the server accepted.
    pub proposed: Vec<UnresolvedRow>,
    /// Those of them a rule allows, by path, for the client that runs them.
    pub allowed: Vec<(String, Allowed)>,
}

/// Applies the rules of the person who requested the loop at `place` to the commands among
/// `proposed`.
pub(crate) async fn apply(
    agent: &AgentContext,
    place: &LoopPlace<'_>,
    proposed: Vec<UnresolvedRow>,
) -> Result<Applied, LoopError> {
    let commands: Vec<(String, String)> = proposed
        .iter()
        .filter_map(|row| {
            let tool = agent.plugins.get(row.path.split_once("://")?.0)?;
            let command = tool.command_line(&row.body, &row.attributes)?;
            Some((row.path.clone(), command))
        })
        .collect();
    let person = place.lp.requested_by.clone();
    if commands.is_empty() || !(agent.may_accept)(person.as_deref(), place.project_name) {
        return Ok(Applied {
            proposed,
            allowed: Vec::new(),
        });
    }
    let (project, key) = (place.project, person_key(person.as_deref()).to_owned());
    let rules = agent
        .db
        .read(move |conn| command_rules::of_project(conn, project, Some(&key)))
        .await?;
    let allowed: Vec<(String, Allowed)> = commands
        .iter()
        .filter_map(|(path, command)| Some((path.clone(), allowing(&rules, command)?)))
        .collect();
    if allowed.is_empty() {
        return Ok(Applied { proposed, allowed });
    }
    let policy = ProjectChoice::load(&agent.db, place.project)
        .await?
        .policy(&agent.settings.commands);
    if policy.commands != RunCommands::Server {
        return Ok(Applied { proposed, allowed });
    }
    let mut accepted = Vec::new();
    for (path, rule) in allowed {
        if accept(agent, place, &policy, &path, rule).await? {
            accepted.push(path);
        }
    }
    Ok(Applied {
        proposed: proposed
            .into_iter()
            .filter(|row| !accepted.contains(&row.path))
            .collect(),
        allowed: Vec::new(),
    })
}

/// The first of `rules` that allows `command`.
fn allowing(rules: &[CommandRuleRow], command: &str) -> Option<Allowed> {
    rules.iter().find_map(|rule| {
        let pattern = CommandPattern::parse(&rule.pattern).ok()?;
        pattern.matches(command).then(|| Allowed {
            rule: rule.id,
            pattern: rule.pattern.clone(),
            person: person_of(&rule.person),
        })
    })
}

/// Accepts the command proposed at `path` as the loop's person, by `rule`: claimed, run
/// here, resolved and told (`run/action` accept with the rule) as their own acceptance
/// would be. Whether it was: a proposal another request settled or claimed first, a
/// command that could not be started, or an abort meanwhile leaves it to the clients.
async fn accept(
    agent: &AgentContext,
    place: &LoopPlace<'_>,
    policy: &CommandPolicy,
    path: &str,
    rule: Allowed,
) -> Result<bool, LoopError> {
    let (run, instance) = (place.lp.run_id, agent.runs.instance().id().to_owned());
    let person = place.lp.requested_by.clone();
    let owned = path.to_owned();
    let entry = agent
        .db
        .read(move |conn| proposals::pending(conn, run, &owned, false))
        .await?;
    let Some(entry) = entry else {
        return Ok(false);
    };
    let (owned, claimer, by) = (path.to_owned(), instance.clone(), person.clone());
    let claimed = agent
        .db
        .call(move |conn| proposals::claim(conn, run, &owned, &claimer, by.as_deref()))
        .await?;
    if !claimed {
        return Ok(false);
    }
    let run_place = RunPlace {
        alias: place.alias.to_owned(),
        project: place.project_name.to_owned(),
        root: place.root.to_path_buf(),
    };
    let accepting = Accepting {
        proposal: &entry,
        place: &run_place,
        commands: Some(CommandPlace {
            commands: &agent.commands,
            run,
            alias: place.alias,
            project: place.project,
            root: place.root,
            policy,
        }),
    };
    let mut gathered = gathered(acceptance(&agent.plugins, &accepting)).await;
    let failed = matches!(gathered.any::<RanOnServer>(), Some(Err(_)));
    let owned = path.to_owned();
    if failed || place.cancel.is_cancelled() {
        agent
            .db
            .call(move |conn| proposals::release(conn, run, &owned).map(|_| ()))
            .await?;
        return Ok(false);
    }
    let plugins = agent.plugins.clone();
    let bounds = agent.db.event_bounds();
    let (alias, project, loop_id) = (place.alias.to_owned(), place.project, place.lp.id);
    let recorded = agent
        .db
        .call(move |conn| {
            let input = ResolveInput {
                run_id: run,
                path: owned.clone(),
                resolution: Resolution::Accept,
                output: None,
                claimed: true,
                by: None,
            };
            let resolved = resolve_proposal(conn, &plugins, &input, &mut gathered);
            proposals::release(conn, run, &owned)?;
            let outcome = match resolved {
                Ok(outcome) => outcome,
                Err(error) => return error.refusal().map(|_| false),
            };
            run_actions::record(
                conn,
                &RunActionForm {
                    run_id: run,
                    loop_id: Some(loop_id),
                    person: person.clone(),
                    action: RunAction::Accept,
                    path: Some(owned.clone()),
                },
            )?;
            let acted = RunActed {
                run: alias,
                action: Act::Accept,
                by: person,
                path: Some(owned),
                status: Some(outcome.status),
                withdrawn: Vec::new(),
                cancelled: Vec::new(),
                message: None,
                rule: Some(rule),
            };
            hub::append(conn, &bounds, project, run, &Notification::Action(acted))?;
            Ok::<bool, DbError>(true)
        })
        .await?;
    Ok(recorded)
}
