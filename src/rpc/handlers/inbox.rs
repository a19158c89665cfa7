//! `inbox`, `inbox/dismiss`: what waits for the caller across their projects (`inbox`).

use serde::{Deserialize, Serialize};

use crate::db::queries::inbox;
use crate::error::AppError;
use crate::inbox::items::{self, Cursor, ItemId};
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::params::Required;

/// How many items a page holds unless `limit` says fewer.
const PAGE_DEFAULT: u32 = 50;

/// The most items a page holds.
const PAGE_MAX: u32 = 200;

/// `inbox` params.
#[derive(Debug, Deserialize)]
pub(crate) struct InboxParams {
    /// Items at most (1 to 200; 50 when absent).
    #[serde(default)]
    limit: Option<u32>,
    /// The `next` of the page before: the items older than it.
    #[serde(default)]
    before: Option<String>,
}

/// `inbox`: the page of what waits for the caller, newest first; from now on the
/// connection is told of changes to it (`inbox/changed`) until it closes.
pub(crate) async fn list(context: CallContext, params: InboxParams) -> Result<Reply, AppError> {
    let grant = context.grant()?;
    let limit = params.limit.unwrap_or(PAGE_DEFAULT);
    if !(1..=PAGE_MAX).contains(&limit) {
        return Err(AppError::InvalidParam(format!(
            "limit must be between 1 and {PAGE_MAX}"
        )));
    }
    let before = params
        .before
        .map(|before| {
            before.parse::<Cursor>().map_err(|()| {
                AppError::InvalidParam(format!(
                    "before '{before}' is not a cursor inbox gave (its 'next')"
                ))
            })
        })
        .transpose()?;
    context.agent.inbox.watch(
        context.conn,
        context.caller.clone(),
        context.access.clone(),
        context.outbound.clone(),
    );
    let person = context.person();
    let rows = context
        .agent
        .db
        .read(move |conn| inbox::waiting(conn, person.as_deref(), None))
        .await?;
    Reply::of(items::page(rows, &grant, before, limit as usize))
}

/// `inbox/dismiss` params.
#[derive(Debug, Deserialize)]
pub(crate) struct DismissParams {
    id: Required,
}

#[derive(Serialize)]
struct Dismissed {
    dismissed: String,
}

/// `inbox/dismiss`: the item leaves the caller's inbox until its run has something new; an
/// item that is not in their inbox (never was, resolved meanwhile, another project's) is
/// refused. The caller's connections, on every instance, are told.
pub(crate) async fn dismiss(
    context: CallContext,
    params: DismissParams,
) -> Result<Reply, AppError> {
    let grant = context.grant()?;
    let not_there = || {
        AppError::InvalidParam(format!(
            "'{}' is not in your inbox (resolved, or its run moved on: ask inbox again)",
            &*params.id
        ))
    };
    let id: ItemId = params.id.parse().map_err(|()| not_there())?;
    let person = context.person();
    let who = person.clone();
    let found = context
        .agent
        .db
        .read(move |conn| inbox::waiting(conn, who.as_deref(), Some(id.run)))
        .await?;
    let current = found
        .iter()
        .any(|row| row.seq == id.seq && items::why(row, &grant).is_some());
    if !current {
        return Err(not_there());
    }
    let who = person.clone();
    context
        .agent
        .db
        .call(move |conn| inbox::dismiss(conn, who.as_deref(), id.run, id.seq))
        .await?;
    context.agent.inbox.dismissed(person.as_deref(), &id);
    Reply::of(Dismissed {
        dismissed: id.to_string(),
    })
}
