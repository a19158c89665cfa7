//! What a call passes before each attempt at a provider: its share of the provider's slots
//! (at most so many attempts in flight) and the provider's back-off. When the provider
//! refuses a call for load (429, or a 503 with Retry-After), the call sets a hold that every
//! call to the provider waits out, whichever run made it: the provider asked to be left
//! alone, not to be asked again by each call in turn. A hold only ever lengthens, and a call
//! waiting on one holds no slot; dropping the waiting call (its cancellation) ends its wait.
//! A slot is a value of its own ([`Slot`]), so a call can keep it past its HTTP request:
//! until its answer is recorded.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::error::LlmError;

/// One of a provider's slots, given back when dropped.
#[derive(Debug)]
pub(super) struct Slot {
    _permit: OwnedSemaphorePermit,
}

/// One provider's slots and back-off, shared by its calls.
#[derive(Debug)]
pub(super) struct ProviderGate {
    slots: Arc<Semaphore>,
    held_until: Mutex<Option<Instant>>,
}

impl ProviderGate {
    /// A gate with `slots` attempts in flight at most (at least 1) and no hold.
    pub(super) fn new(slots: usize) -> ProviderGate {
        ProviderGate {
            slots: Arc::new(Semaphore::new(slots.max(1))),
            held_until: Mutex::new(None),
        }
    }

    /// Waits until the provider is not held and a slot is free, and takes the slot. A hold
    /// that starts while the call waits for its slot is waited out too, the slot given back.
    pub(super) async fn admit(&self) -> Result<Slot, LlmError> {
        loop {
            while let Some(until) = self.held_until() {
                tokio::time::sleep_until(until).await;
            }
            let slot = Arc::clone(&self.slots)
                .acquire_owned()
                .await
                .map_err(|_| LlmError::Aborted)?;
            if self.held_until().is_none() {
                return Ok(Slot { _permit: slot });
            }
        }
    }

    /// Holds every call to the provider for `delay` from now; a hold that ends later stands.
    pub(super) fn hold_for(&self, delay: Duration) {
        let until = Instant::now() + delay;
        let mut held = self
            .held_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *held = Some(held.map_or(until, |current| current.max(until)));
    }

    /// When the hold in place now ends; `None` when there is none.
    fn held_until(&self) -> Option<Instant> {
        let held = self
            .held_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        held.filter(|until| *until > Instant::now())
    }

    /// Slots free now.
    #[cfg(test)]
    pub(super) fn free_slots(&self) -> usize {
        self.slots.available_permits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    const HOLD: Duration = Duration::from_millis(200);

    #[tokio::test]
    async fn a_hold_keeps_every_call_out_until_it_passes() {
        let gate = ProviderGate::new(2);
        let started = Instant::now();
        gate.hold_for(HOLD);
        let slot = gate.admit().await.unwrap();
        assert!(started.elapsed() >= HOLD);
        drop(slot);
        let again = gate.admit().now_or_never();
        assert!(again.is_some_and(|slot| slot.is_ok()), "a hold passes once");
    }

    #[tokio::test]
    async fn a_shorter_hold_does_not_cut_a_longer_one() {
        let gate = ProviderGate::new(1);
        let started = Instant::now();
        gate.hold_for(HOLD * 2);
        gate.hold_for(Duration::ZERO);
        drop(gate.admit().await.unwrap());
        assert!(started.elapsed() >= HOLD * 2);
    }

    #[tokio::test]
    async fn a_hold_that_starts_while_a_call_waits_for_its_slot_is_waited_out_slotless() {
        let gate = ProviderGate::new(1);
        let busy = gate.admit().await.unwrap();
        let mut waiting = Box::pin(gate.admit());
        assert!((&mut waiting).now_or_never().is_none());
        let started = Instant::now();
        gate.hold_for(HOLD);
        drop(busy);
        assert!(
            (&mut waiting).now_or_never().is_none(),
            "held, not admitted"
        );
        assert_eq!(gate.free_slots(), 1, "a held call keeps no slot");
        drop(waiting.await.unwrap());
        assert!(started.elapsed() >= HOLD);
    }
}
