//! `run/abort`, `run/cancel`, `run/resolve` and `run/inject` for a run whose lease another
//! instance holds: asked of that instance through the cluster's lease holder
//! ([`LeaseHolder`](crate::cluster::LeaseHolder)) once the instance the client sent them to
//! has checked their params and found their run. The instance asked executes them with
//! `handlers::held`. These types are what such a call and its answer carry.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::verbs::resolve::Resolving;
use crate::cluster::HolderGone;
use crate::db::ids::RunId;
use crate::error::{AppError, RpcError};
use crate::rpc::call::{CallContext, Reply};

/// A method a client sent for `run`, on behalf of `person`, to be executed by the holder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct HeldCall {
    pub run: RunId,
    pub person: Option<String>,
    /// The connection it came on (`Instance::connection_key`).
    #[serde(default)]
    pub connection: Option<i64>,
    pub method: HeldMethod,
}

/// The methods the holder executes for another instance's clients, with their params
/// already checked by the instance the client sent them to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "camelCase")]
pub(crate) enum HeldMethod {
    /// `run/abort`.
    Abort,
    /// `run/resolve`.
    Resolve(Resolving),
    /// `run/inject` of `message`.
    Inject { message: String },
    /// `run/cancel` of loop `which` (`None`: the caller's own); `may_abort`: the caller may
    /// abort the run, and so cancel another's loop.
    Cancel { which: Option<i32>, may_abort: bool },
}

/// The holder's answer: the method's JSON-RPC result or error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum HeldAnswer {
    Result(Value),
    Error(RpcError),
}

/// The answer of the instance holding `run`'s lease to `method`, sent by `context`'s
/// caller; `None` when this instance is to execute it (it runs a loop or a command of the
/// run, or no other instance answers for it).
pub(crate) async fn ask(
    context: &CallContext,
    run: RunId,
    method: HeldMethod,
) -> Option<Result<Reply, AppError>> {
    let agent = &context.agent;
    if agent.runs.current(run).is_some() || agent.commands.running(run).is_some() {
        return None;
    }
    let call = HeldCall {
        run,
        person: context.person(),
        connection: Some(context.connection()),
        method,
    };
    let answer = agent
        .lease_holder
        .ask(&agent.db, agent.runs.instance(), run, call)
        .await?;
    Some(reply(answer))
}

/// The client's reply to what the holder answered; a holder gone after it acknowledged is
/// an internal error.
fn reply(answer: Result<HeldAnswer, HolderGone>) -> Result<Reply, AppError> {
    match answer {
        Ok(HeldAnswer::Result(result)) => Ok(Reply { result, bind: None }),
        Ok(HeldAnswer::Error(error)) => Err(AppError::Relayed(error)),
        Err(gone) => Err(AppError::Internal(gone.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::code;
    use crate::plugins::engine::resolve::Resolution;

    #[test]
    fn a_call_and_its_answers_read_back_as_they_were_sent() {
        let calls = [
            HeldCall {
                run: RunId(9),
                person: Some("ann".into()),
                connection: Some(1),
                method: HeldMethod::Resolve(Resolving {
                    path: "sh://turn_1/echo".into(),
                    action: Resolution::Accept,
                    output: Some("hi\tthere".into()),
                    always: Some(crate::agent::allow::Always::Pattern("echo *".into())),
                }),
            },
            HeldCall {
                run: RunId(9),
                person: None,
                connection: None,
                method: HeldMethod::Inject {
                    message: "also the tests".into(),
                },
            },
            HeldCall {
                run: RunId(9),
                person: None,
                connection: Some(7),
                method: HeldMethod::Abort,
            },
            HeldCall {
                run: RunId(9),
                person: None,
                connection: Some(7),
                method: HeldMethod::Cancel {
                    which: Some(2),
                    may_abort: false,
                },
            },
        ];
        for call in calls {
            let text = serde_json::to_string(&call).unwrap();
            assert_eq!(serde_json::from_str::<HeldCall>(&text).unwrap(), call);
        }
        let answers = [
            HeldAnswer::Error(RpcError {
                code: code::INVALID_PARAMS,
                message: "nothing".into(),
                data: None,
            }),
            HeldAnswer::Result(serde_json::json!({"status": 102})),
        ];
        for answer in answers {
            let text = serde_json::to_string(&answer).unwrap();
            assert_eq!(serde_json::from_str::<HeldAnswer>(&text).unwrap(), answer);
        }
    }

    #[test]
    fn the_holder_s_answer_reaches_the_client_as_it_was_given() {
        let result = serde_json::json!({"status": 200});
        let Ok(reply_) = reply(Ok(HeldAnswer::Result(result.clone()))) else {
            panic!("a result");
        };
        assert_eq!((reply_.result, reply_.bind.is_none()), (result, true));
        let relayed = RpcError {
            code: code::RUN_NOT_FOUND,
            message: "Run 'x' not found.".into(),
            data: None,
        };
        let Err(error) = reply(Ok(HeldAnswer::Error(relayed.clone()))) else {
            panic!("an error");
        };
        assert_eq!(error.to_rpc(), relayed);
    }

    #[test]
    fn a_holder_gone_after_it_acknowledged_is_an_internal_error() {
        let Err(error) = reply(Err(HolderGone { holder: "b".into() })) else {
            panic!("an error");
        };
        let rpc = error.to_rpc();
        assert_eq!(rpc.code, code::INTERNAL);
        assert_eq!(
            rpc.message,
            "The instance executing this run (b) stopped before it answered; \
             getRun shows what it did."
        );
    }
}
