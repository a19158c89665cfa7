//! The bounds on requests in flight: per connection, and per person across all of their
//! connections. A frame whose requests would pass either bound is answered `-32006` whole,
//! and none of it is served.

use crate::config::ServerSettings;
use crate::error::AppError;
use crate::hub::ConnId;
use crate::slots::{Claim, Permit, Slots};

/// Whom requests in flight are counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Sender {
    Connection(ConnId),
    /// A person's key (see `CallContext::person`).
    Person(String),
}

/// The requests in flight on every connection. Clones share the counts.
#[derive(Clone)]
pub(crate) struct InFlight {
    slots: Slots<Sender>,
    per_connection: usize,
    per_person: usize,
}

impl InFlight {
    /// The bounds of `settings` (`max_in_flight`, `max_in_flight_per_person`).
    pub(crate) fn new(settings: &ServerSettings) -> Self {
        InFlight {
            slots: Slots::default(),
            per_connection: settings.max_in_flight,
            per_person: settings.max_in_flight_per_person,
        }
    }

    /// Counts `count` requests of connection `conn`, sent by `person`, until the permit
    /// drops; `Overloaded` when that would pass a bound.
    pub(crate) fn take(
        &self,
        conn: ConnId,
        person: &str,
        count: usize,
    ) -> Result<Permit<Sender>, AppError> {
        let claim = Claim::of(count)
            .under(Sender::Connection(conn), self.per_connection)
            .under(Sender::Person(person.to_owned()), self.per_person);
        self.slots.try_take(claim).map_err(|full| match full.key {
            Sender::Connection(_) => AppError::Overloaded(full.limit),
            Sender::Person(_) => AppError::PersonOverloaded(full.limit),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::code;

    fn in_flight(per_connection: usize, per_person: usize) -> InFlight {
        InFlight {
            slots: Slots::default(),
            per_connection,
            per_person,
        }
    }

    #[test]
    fn a_connection_and_a_person_are_bounded_apart() {
        let bounds = in_flight(3, 4);
        let batch = bounds.take(1, "alice", 3).unwrap();
        let more = bounds.take(1, "alice", 1).err();
        assert!(matches!(more, Some(AppError::Overloaded(3))), "{more:?}");
        let _elsewhere = bounds.take(2, "alice", 1).unwrap();
        let past_person = bounds.take(3, "alice", 1).err();
        assert!(
            matches!(past_person, Some(AppError::PersonOverloaded(4))),
            "{past_person:?}"
        );
        assert_eq!(
            past_person.map(|error| error.to_rpc().code),
            Some(code::OVERLOADED)
        );
        assert!(bounds.take(3, "bob", 3).is_ok(), "bob is not alice");
        drop(batch);
        assert!(bounds.take(1, "alice", 3).is_ok());
    }

    #[test]
    fn zero_is_no_bound() {
        let bounds = in_flight(0, 0);
        assert!(bounds.take(1, "alice", 100_000).is_ok());
    }
}
