//! Bounded counts under keys, shared by every connection.
//!
//! A [`Claim`] takes `count` slots under each of its keys, all of them or none: either now
//! or refused ([`Slots::try_take`]), or by waiting its turn ([`Slots::take`]). Turns are kept
//! per key: a waiting claim holds back later claims only on the keys it waits for (those at
//! their limit, or held back by an older claim), never on a key where it has room, so one
//! person at their own limit does not stall the rest of their project. What a claim took is
//! given back when its [`Permit`] drops, whatever ends the work; a waiting claim whose future
//! is dropped gives its place up.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// Slots under keys of type `K`. Clones share the counts.
pub(crate) struct Slots<K> {
    state: Arc<Mutex<State<K>>>,
}

impl<K> Clone for Slots<K> {
    fn clone(&self) -> Self {
        Slots {
            state: Arc::clone(&self.state),
        }
    }
}

impl<K> Default for Slots<K> {
    fn default() -> Self {
        Slots {
            state: Arc::new(Mutex::new(State {
                held: HashMap::new(),
                waiting: VecDeque::new(),
                granted: HashMap::new(),
                next_ticket: 0,
            })),
        }
    }
}

/// What one piece of work takes: `count` slots under each of its keys.
#[derive(Debug, Clone)]
pub(crate) struct Claim<K> {
    /// Each key with the most slots it may hold.
    keys: Vec<(K, usize)>,
    count: usize,
}

impl<K> Claim<K> {
    /// A claim of `count` slots, under no key yet.
    pub(crate) fn of(count: usize) -> Self {
        Claim {
            keys: Vec::new(),
            count,
        }
    }

    /// The claim, also under `key`, which may hold at most `limit` slots; a limit of 0 is no
    /// bound, and adds nothing.
    pub(crate) fn under(mut self, key: K, limit: usize) -> Self {
        if limit > 0 {
            self.keys.push((key, limit));
        }
        self
    }
}

/// Why a claim was refused: a key it needs has no room for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Full<K> {
    pub key: K,
    /// The slots taken under it.
    pub held: usize,
    pub limit: usize,
}

struct State<K> {
    held: HashMap<K, usize>,
    /// Claims waiting their turn, oldest first.
    waiting: VecDeque<Waiting<K>>,
    /// Claims whose slots are taken for a waiter that has not seen it yet, by ticket.
    granted: HashMap<u64, Claim<K>>,
    next_ticket: u64,
}

struct Waiting<K> {
    ticket: u64,
    claim: Claim<K>,
    waker: Option<Waker>,
}

impl<K: Hash + Eq + Clone> State<K> {
    /// The keys `claim` cannot take now, given the keys `held_back` by older claims.
    fn obstacles<'a>(
        &'a self,
        claim: &'a Claim<K>,
        held_back: &'a HashSet<K>,
    ) -> impl Iterator<Item = Full<K>> + 'a {
        claim.keys.iter().filter_map(move |(key, limit)| {
            let held = self.held.get(key).copied().unwrap_or(0);
            let full = held + claim.count > *limit || held_back.contains(key);
            full.then(|| Full {
                key: key.clone(),
                held,
                limit: *limit,
            })
        })
    }

    fn hold(&mut self, claim: &Claim<K>) {
        for (key, _) in &claim.keys {
            *self.held.entry(key.clone()).or_insert(0) += claim.count;
        }
    }

    fn release(&mut self, claim: &Claim<K>) {
        for (key, _) in &claim.keys {
            if let Some(held) = self.held.get_mut(key) {
                *held = held.saturating_sub(claim.count);
                if *held == 0 {
                    self.held.remove(key);
                }
            }
        }
    }

    /// Grants, oldest first, every waiting claim that can take its slots now; returns the
    /// keys the claims still waiting wait for.
    fn grant(&mut self) -> HashSet<K> {
        let mut held_back = HashSet::new();
        let mut index = 0;
        while let Some(waiting) = self.waiting.get(index) {
            let waits_for: Vec<K> = self
                .obstacles(&waiting.claim, &held_back)
                .map(|full| full.key)
                .collect();
            if !waits_for.is_empty() {
                held_back.extend(waits_for);
                index += 1;
                continue;
            }
            let Some(waiting) = self.waiting.remove(index) else {
                break;
            };
            self.hold(&waiting.claim);
            self.granted.insert(waiting.ticket, waiting.claim);
            if let Some(waker) = waiting.waker {
                waker.wake();
            }
        }
        held_back
    }
}

impl<K: Hash + Eq + Clone> Slots<K> {
    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Takes the claim's slots now, or says which key has no room (a key some waiting claim
    /// waits for has none for a newcomer).
    pub(crate) fn try_take(&self, claim: Claim<K>) -> Result<Permit<K>, Full<K>> {
        let mut state = self.lock();
        let held_back = state.grant();
        if let Some(full) = state.obstacles(&claim, &held_back).next() {
            return Err(full);
        }
        state.hold(&claim);
        drop(state);
        Ok(Permit {
            slots: self.clone(),
            claim,
        })
    }

    /// Takes the claim's slots once its turn comes; its place in line is kept from this call.
    pub(crate) fn take(&self, claim: Claim<K>) -> Take<K> {
        let mut state = self.lock();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.waiting.push_back(Waiting {
            ticket,
            claim,
            waker: None,
        });
        state.grant();
        Take {
            slots: self.clone(),
            ticket,
            done: false,
        }
    }

    /// How many claims are waiting their turn.
    pub(crate) fn waiting(&self) -> usize {
        self.lock().waiting.len()
    }
}

/// Slots taken by one claim, given back when dropped.
pub(crate) struct Permit<K: Hash + Eq + Clone> {
    slots: Slots<K>,
    claim: Claim<K>,
}

impl<K: Hash + Eq + Clone> Drop for Permit<K> {
    fn drop(&mut self) {
        let mut state = self.slots.lock();
        state.release(&self.claim);
        state.grant();
    }
}

/// A claim waiting its turn; dropping it gives the place (or the slots it was just granted)
/// up.
pub(crate) struct Take<K: Hash + Eq + Clone> {
    slots: Slots<K>,
    ticket: u64,
    done: bool,
}

impl<K: Hash + Eq + Clone> Future for Take<K> {
    type Output = Permit<K>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Permit<K>> {
        let this = self.get_mut();
        let mut state = this.slots.lock();
        if let Some(claim) = state.granted.remove(&this.ticket) {
            drop(state);
            this.done = true;
            return Poll::Ready(Permit {
                slots: this.slots.clone(),
                claim,
            });
        }
        if let Some(waiting) = state
            .waiting
            .iter_mut()
            .find(|waiting| waiting.ticket == this.ticket)
        {
            waiting.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl<K: Hash + Eq + Clone> Drop for Take<K> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut state = self.slots.lock();
        if let Some(claim) = state.granted.remove(&self.ticket) {
            state.release(&claim);
        }
        state
            .waiting
            .retain(|waiting| waiting.ticket != self.ticket);
        state.grant();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    fn one(key: &'static str, limit: usize) -> Claim<&'static str> {
        Claim::of(1).under(key, limit)
    }

    #[test]
    fn a_key_holds_up_to_its_limit_and_a_dropped_permit_makes_room() {
        let slots = Slots::default();
        let first = slots.try_take(one("alpha", 2)).unwrap();
        let _second = slots.try_take(one("alpha", 2)).unwrap();
        let refused = slots.try_take(one("alpha", 2)).err();
        assert_eq!(
            refused,
            Some(Full {
                key: "alpha",
                held: 2,
                limit: 2
            })
        );
        assert!(slots.try_take(one("beta", 2)).is_ok(), "keys count apart");
        drop(first);
        let _third = slots.try_take(one("alpha", 2)).unwrap();
        assert_eq!(
            slots.try_take(one("alpha", 2)).err().map(|full| full.held),
            Some(2),
            "one given back of two, one taken again"
        );
    }

    #[test]
    fn a_claim_counts_all_its_slots_under_every_key_or_takes_none() {
        let slots = Slots::default();
        let _held = slots.try_take(one("alpha", 4)).unwrap();
        let batch = |count| Claim::of(count).under("alpha", 4).under("beta", 3);
        let refused = slots.try_take(batch(4)).err().map(|full| full.key);
        assert_eq!(refused, Some("alpha"), "1 held + 4 > 4");
        let taken = slots.try_take(batch(3)).unwrap();
        assert_eq!(
            slots.try_take(one("beta", 3)).err().map(|full| full.held),
            Some(3),
            "the batch's three are counted under beta too"
        );
        assert_eq!(
            slots.try_take(one("alpha", 4)).err().map(|full| full.held),
            Some(4)
        );
        drop(taken);
        let refused_whole = slots.try_take(Claim::of(1).under("beta", 3).under("gamma", 0));
        assert!(refused_whole.is_ok(), "a limit of 0 is no bound");
        let none_taken = slots.try_take(Claim::of(2).under("delta", 5).under("alpha", 1));
        assert!(none_taken.is_err());
        assert!(
            slots.try_take(Claim::of(5).under("delta", 5)).is_ok(),
            "a refused claim took nothing under its other keys"
        );
    }

    #[test]
    fn waiting_claims_are_granted_in_arrival_order() {
        let slots = Slots::default();
        let running = slots.try_take(one("alpha", 1)).unwrap();
        let mut first = slots.take(one("alpha", 1));
        let mut second = slots.take(one("alpha", 1));
        assert!((&mut first).now_or_never().is_none());
        assert!((&mut second).now_or_never().is_none());
        assert_eq!(slots.waiting(), 2);
        drop(running);
        assert!((&mut second).now_or_never().is_none(), "first come first");
        let granted = (&mut first).now_or_never().unwrap();
        assert_eq!(slots.waiting(), 1);
        assert!(
            slots.try_take(one("alpha", 1)).is_err(),
            "no newcomer jumps the line"
        );
        drop(granted);
        assert!((&mut second).now_or_never().is_some());
    }

    #[test]
    fn a_claim_with_room_is_taken_at_once() {
        let slots = Slots::default();
        let mut take = slots.take(one("alpha", 1));
        let permit = (&mut take).now_or_never();
        assert!(permit.is_some());
        assert_eq!(slots.waiting(), 0);
        assert!(slots.try_take(one("alpha", 1)).is_err());
    }

    #[test]
    fn a_waiter_that_leaves_gives_its_place_up() {
        let slots = Slots::default();
        let running = slots.try_take(one("alpha", 1)).unwrap();
        let leaving = slots.take(one("alpha", 1));
        let mut staying = slots.take(one("alpha", 1));
        drop(leaving);
        assert_eq!(slots.waiting(), 1);
        drop(running);
        assert!((&mut staying).now_or_never().is_some());
    }

    #[test]
    fn slots_granted_to_a_waiter_that_left_are_given_back() {
        let slots = Slots::default();
        let running = slots.try_take(one("alpha", 1)).unwrap();
        let granted_but_gone = slots.take(one("alpha", 1));
        let mut next = slots.take(one("alpha", 1));
        drop(running);
        assert!((&mut next).now_or_never().is_none());
        drop(granted_but_gone);
        assert!((&mut next).now_or_never().is_some());
    }

    #[test]
    fn a_waiter_holds_back_only_the_keys_it_waits_for() {
        let slots = Slots::default();
        let alice = |limit| Claim::of(1).under("project", 3).under("alice", limit);
        let _busy = slots.try_take(alice(1)).unwrap();
        let mut alice_again = slots.take(alice(1));
        assert!((&mut alice_again).now_or_never().is_none());
        let bob = slots.try_take(Claim::of(1).under("project", 3).under("bob", 1));
        assert!(bob.is_ok(), "alice waits for alice, not for the project");
        let mut carol = slots.take(Claim::of(2).under("project", 3).under("carol", 2));
        assert!(
            (&mut carol).now_or_never().is_none(),
            "two more would pass the project's three"
        );
        let dave = slots.try_take(Claim::of(1).under("project", 3).under("dave", 1));
        assert_eq!(
            dave.err().map(|full| (full.key, full.held)),
            Some(("project", 2)),
            "the project has room for one, which carol waits for"
        );
    }

    #[test]
    fn a_wakeup_reaches_the_waiting_task() {
        let slots = Slots::default();
        let running = slots.try_take(one("alpha", 1)).unwrap();
        let woken = Arc::new(Woken::default());
        let waker = Waker::from(Arc::clone(&woken));
        let mut take = slots.take(one("alpha", 1));
        assert!(Pin::new(&mut take)
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        assert!(!woken.get());
        drop(running);
        assert!(woken.get());
        assert!((&mut take).now_or_never().is_some());
    }

    #[derive(Default)]
    struct Woken(std::sync::atomic::AtomicBool);

    impl Woken {
        fn get(&self) -> bool {
            self.0.load(std::sync::atomic::Ordering::SeqCst)
        }
    }

    impl std::task::Wake for Woken {
        fn wake(self: Arc<Self>) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
}
