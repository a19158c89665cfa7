//! The proposals raised while the session was idle (`acp::idle`: a person's revert), asked
//! about at the start of the editor's next prompt, one by one, before the prompt is sent:
//! what the person allows is applied as any proposal is (an edit written through the
//! editor) and resolved (`run/resolve`, which does not resume the model); one another client
//! settles meanwhile is shown settled. A cancel while one is asked about ends the turn
//! `cancelled` before the prompt is sent, and what was not answered stays waiting.

use agent_client_protocol::v1::schema::StopReason;
use serde_json::{json, Value};

use super::{settled_by_another, Asked, Settled, Turn};
use crate::acp::error::AcpError;
use crate::acp::idle::settled_status;
use crate::acp::permission::{Decided, Proposal};

impl Turn<'_> {
    /// Asks about the waiting proposals; `Some(Cancelled)` when the turn was cancelled
    /// meanwhile.
    pub(super) async fn answer_waiting(&mut self) -> Result<Option<StopReason>, AcpError> {
        let mut waiting = std::mem::take(&mut self.stream.waiting).into_iter();
        while let Some(proposal) = waiting.next() {
            let asked = match self.session.is_cancelled() {
                true => None,
                false => Some(self.ask(&proposal).await?),
            };
            match asked {
                Some(Asked::Decided(Decided {
                    resolution,
                    cancelled: false,
                })) => self.settle(&proposal, resolution).await?,
                Some(Asked::Settled(Settled { acted, .. })) => {
                    self.withdrawn(&proposal, settled_status(&acted), Some(&acted))?;
                }
                _ => {
                    let mut kept = vec![proposal];
                    kept.extend(waiting);
                    kept.append(&mut self.stream.waiting);
                    self.stream.waiting = kept;
                    return Ok(Some(StopReason::Cancelled));
                }
            }
        }
        Ok(None)
    }

    /// Resolves a waiting `proposal` as the person decided; refused because another client
    /// settled it first, it is shown settled so.
    async fn settle(&mut self, proposal: &Proposal, resolution: Value) -> Result<(), AcpError> {
        self.resolved(proposal, &resolution)?;
        let action = resolution.get("action").and_then(Value::as_str);
        let own = (
            proposal.entry.path.clone(),
            action.unwrap_or_default().to_string(),
        );
        self.own.push(own);
        let params = json!({"run": self.run, "resolution": resolution});
        match self.call("run/resolve", params).await {
            Ok(_) => Ok(()),
            Err(AcpError::Rpc {
                data: Some(data), ..
            }) if settled_by_another(&data) => {
                self.own.pop();
                let Settled { acted, .. } = self.settling(proposal).await?;
                self.withdrawn(proposal, settled_status(&acted), Some(&acted))
            }
            Err(error) => Err(error),
        }
    }
}
