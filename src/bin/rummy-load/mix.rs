//! The request mix one load connection repeats, and the JSON-RPC request each step sends.
//!
//! A connection owns one run; it cycles through [`CYCLE`], writing `known://` entries under
//! its own prefix (at most `keys` of them, so the store stays bounded however long the run)
//! and reading them back.

use serde_json::{json, Value};

/// One step of the mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    Ping,
    /// `getRuns`, first page.
    GetRuns,
    /// `set` of one `known://` entry of this connection (tool dispatch).
    SetKnown,
    /// `getEntries` of the entry just written.
    GetEntriesOfKey,
    /// `getEntries` of every `known://` entry whose body mentions this connection.
    SearchKnown,
    /// `run/config` changing the run's temperature.
    RunConfig,
}

/// The order a connection repeats: reads and writes of the store weigh the most.
pub(crate) const CYCLE: [Operation; 8] = [
    Operation::Ping,
    Operation::SetKnown,
    Operation::GetEntriesOfKey,
    Operation::GetRuns,
    Operation::SetKnown,
    Operation::GetEntriesOfKey,
    Operation::SearchKnown,
    Operation::RunConfig,
];

impl Operation {
    /// The label the report shows.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Operation::Ping => "ping",
            Operation::GetRuns => "getRuns",
            Operation::SetKnown => "set known://",
            Operation::GetEntriesOfKey => "getEntries key",
            Operation::SearchKnown => "getEntries known://* +body",
            Operation::RunConfig => "run/config",
        }
    }

    /// The JSON-RPC method name.
    pub(crate) fn method(self) -> &'static str {
        match self {
            Operation::Ping => "ping",
            Operation::GetRuns => "getRuns",
            Operation::SetKnown => "set",
            Operation::GetEntriesOfKey | Operation::SearchKnown => "getEntries",
            Operation::RunConfig => "run/config",
        }
    }
}

/// Where a connection is in its mix, and what it writes.
#[derive(Debug, Clone)]
pub(crate) struct MixState {
    connection: usize,
    run: String,
    keys: usize,
    step: usize,
    writes: usize,
}

impl MixState {
    /// The mix of connection number `connection` on run `run`, writing at most `keys` keys.
    pub(crate) fn new(connection: usize, run: String, keys: usize) -> MixState {
        MixState {
            connection,
            run,
            keys: keys.max(1),
            step: 0,
            writes: 0,
        }
    }

    /// The next operation and its params.
    pub(crate) fn next_request(&mut self) -> (Operation, Value) {
        let operation = CYCLE
            .get(self.step % CYCLE.len())
            .copied()
            .unwrap_or(Operation::Ping);
        self.step = self.step.wrapping_add(1);
        let params = match operation {
            Operation::Ping => json!({}),
            Operation::GetRuns => json!({"limit": 20}),
            Operation::SetKnown => {
                self.writes = self.writes.wrapping_add(1);
                json!({
                    "run": self.run,
                    "path": self.key_path(),
                    "body": format!("write {} by connection c{}", self.writes, self.connection),
                })
            }
            Operation::GetEntriesOfKey => json!({"run": self.run, "pattern": self.key_path()}),
            Operation::SearchKnown => json!({
                "run": self.run,
                "pattern": "known://*",
                "body": format!("connection c{}", self.connection),
            }),
            Operation::RunConfig => json!({
                "run": self.run,
                "temperature": (self.step % 10) as f64 / 10.0,
            }),
        };
        (operation, params)
    }

    /// The key the latest write went to.
    fn key_path(&self) -> String {
        let key = self.writes.saturating_sub(1) % self.keys;
        format!("known://load/c{}/k{key}", self.connection)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cycle_repeats_in_order() {
        let mut mix = MixState::new(3, "r_1".into(), 10);
        let operations: Vec<Operation> =
            (0..CYCLE.len() * 2).map(|_| mix.next_request().0).collect();
        let expected: Vec<Operation> = CYCLE.iter().chain(CYCLE.iter()).copied().collect();
        assert_eq!(operations, expected);
    }

    #[test]
    fn reads_follow_the_write_before_them() {
        let mut mix = MixState::new(3, "r_1".into(), 10);
        let requests: Vec<(Operation, Value)> =
            (0..CYCLE.len()).map(|_| mix.next_request()).collect();
        for pair in requests.windows(2) {
            if let [(Operation::SetKnown, set), (Operation::GetEntriesOfKey, get)] = pair {
                assert_eq!(set["path"], get["pattern"]);
                assert_eq!(get["run"], "r_1");
            }
        }
        let paths: Vec<&Value> = requests
            .iter()
            .filter(|(operation, _)| *operation == Operation::SetKnown)
            .map(|(_, params)| &params["path"])
            .collect();
        assert_eq!(paths, ["known://load/c3/k0", "known://load/c3/k1"]);
    }

    #[test]
    fn writes_stay_within_the_keys() {
        let mut mix = MixState::new(0, "r".into(), 3);
        let mut paths = std::collections::BTreeSet::new();
        for _ in 0..CYCLE.len() * 20 {
            let (operation, params) = mix.next_request();
            if operation == Operation::SetKnown {
                paths.insert(params["path"].as_str().unwrap().to_string());
            }
        }
        assert_eq!(paths.len(), 3);
    }

    #[test]
    fn the_search_names_this_connection() {
        let mut mix = MixState::new(7, "r".into(), 3);
        let search = (0..CYCLE.len())
            .map(|_| mix.next_request())
            .find(|(operation, _)| *operation == Operation::SearchKnown)
            .unwrap();
        assert_eq!(search.1["pattern"], "known://*");
        assert_eq!(search.1["body"], "connection c7");
    }
}
