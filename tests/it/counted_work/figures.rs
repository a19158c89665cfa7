//! The counted workload's figures: one row per segment, one column per count, written and
//! read as the text of the pinned files (`counted_work/<store>.txt`), and compared with them
//! exactly.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;

use rummy::testing::WorkDone;

/// What a column counts, as its heading says, read from the server's work.
type Count = fn(&WorkDone) -> u64;

/// The columns, in their order in the files.
const COLUMNS: [(&str, Count); 10] = [
    ("w.sql", |work| work.writer_statements),
    ("r.sql", |work| work.reader_statements),
    ("b.sql", |work| work.bus_statements),
    ("units", |work| work.units),
    ("reads", |work| work.reads),
    ("rows", |work| work.rows_written),
    ("bytes", |work| work.stored_bytes),
    ("frames", |work| work.frames),
    ("f.bytes", |work| work.frame_bytes),
    ("model", |work| work.model_calls),
];

/// What the columns mean, written atop each file.
const LEGEND: &str = "\
# w.sql, r.sql, b.sql: SQL statements sent by the writer's connection, the readers' and the
#   frame bus's (PostgreSQL), BEGIN and COMMIT included; units: the writer's units of work
#   (one transaction each); reads: reads beside the writer (one read transaction each);
# rows: rows inserted, updated or deleted, triggers' included (SQLite's total_changes(),
#   PostgreSQL's pg_stat_user_tables); bytes: how many more bytes of text and blobs the
#   store's tables hold (numbers left out);
# frames, f.bytes: JSON-RPC text frames handed to the client and their bytes; model: requests
#   made to the model (turns and session notes' refreshes).";

/// Width of the segment's name in the files.
const NAME_WIDTH: usize = 40;

/// One segment of the workload and what the server did in it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Segment {
    name: String,
    counts: [i64; COLUMNS.len()],
    /// Statements by connection and text, when they were recorded.
    statements: BTreeMap<(String, String), i64>,
}

impl Segment {
    /// What the server did from `before` to `after`.
    pub(crate) fn between(name: &str, before: &WorkDone, after: &WorkDone) -> Segment {
        let delta = |count: Count| count_of(after, count) - count_of(before, count);
        let mut statements = BTreeMap::new();
        for (key, count) in &after.statements {
            let before = before.statements.get(key).copied().unwrap_or_default();
            let count = i64::try_from(*count).unwrap() - i64::try_from(before).unwrap();
            if count != 0 {
                statements.insert(key.clone(), count);
            }
        }
        Segment {
            name: name.to_owned(),
            counts: COLUMNS.map(|(_, count)| delta(count)),
            statements,
        }
    }

    /// The phase it belongs to: its name before the colon.
    fn phase(&self) -> &str {
        self.name.split(':').next().unwrap_or_default()
    }
}

fn count_of(work: &WorkDone, count: Count) -> i64 {
    i64::try_from(count(work)).unwrap()
}

/// The figures of a whole workload.
pub(crate) struct Figures {
    segments: Vec<Segment>,
}

impl Figures {
    pub(crate) fn new(segments: Vec<Segment>) -> Figures {
        Figures { segments }
    }

    /// Compares the figures with `store`'s pinned ones and fails, with the whole table and
    /// how to pin it, when any differs; pins them instead under `RUMMY_COUNTED_WORK_PIN=1`.
    pub(crate) fn compare_with_pins(&self, store: &str) {
        let path = pins_path(store);
        let measured = self.file_text(store);
        if std::env::var("RUMMY_COUNTED_WORK_PIN").is_ok_and(|pin| pin == "1") {
            std::fs::write(&path, &measured).unwrap();
            println!("pinned {}:\n{measured}", path.display());
            return;
        }
        let pinned = std::fs::read_to_string(&path).unwrap_or_default();
        let differences = self.differences(&parse(&pinned));
        assert!(
            differences.is_empty(),
            "the counted workload's figures on {store} differ from {}:\n{}\n\n\
             measured now:\n{measured}\n\
             A count that rose is work added: if it is meant, pin it in the same commit and \
             say why there. A count that fell: lower the pin. To pin the figures measured: \
             RUMMY_COUNTED_WORK_PIN=1 cargo test --test it counted_work:: (for PostgreSQL with \
             RUMMY_TEST_DATABASE_URL set); RUMMY_COUNTED_WORK_STATEMENTS=1 ... -- --nocapture \
             prints each segment's statements.",
            path.display(),
            differences.join("\n"),
        );
    }

    /// What differs between these figures and `pinned`, a line each.
    fn differences(&self, pinned: &[(String, Vec<i64>)]) -> Vec<String> {
        let mut differences = Vec::new();
        let measured_names: Vec<&str> = self.segments.iter().map(|s| s.name.as_str()).collect();
        let pinned_names: Vec<&str> = pinned.iter().map(|(name, _)| name.as_str()).collect();
        if measured_names != pinned_names {
            differences.push(format!(
                "segments pinned: {pinned_names:?}\nsegments measured: {measured_names:?}"
            ));
            return differences;
        }
        for (segment, (_, pins)) in self.segments.iter().zip(pinned) {
            for (((heading, _), count), pin) in COLUMNS.iter().zip(segment.counts).zip(pins) {
                let change = match count.cmp(pin) {
                    std::cmp::Ordering::Equal => continue,
                    std::cmp::Ordering::Greater => "rose",
                    std::cmp::Ordering::Less => "fell",
                };
                differences.push(format!(
                    "{}: {heading} {change} from {pin} to {count}",
                    segment.name
                ));
            }
        }
        differences
    }

    /// The text of `store`'s pinned file for these figures.
    fn file_text(&self, store: &str) -> String {
        let mut text = format!(
            "# The work the counted workload (tests/it/counted_work.rs) makes the server do on \
             {store}:\n# one row per segment, compared exactly. Pinned by \
             RUMMY_COUNTED_WORK_PIN=1 cargo test --test it counted_work::\n{LEGEND}\n#\n"
        );
        let headings: Vec<String> = COLUMNS
            .iter()
            .map(|(heading, _)| heading.to_string())
            .collect();
        let _ = writeln!(text, "# {}", line("segment", &headings, NAME_WIDTH - 2));
        for segment in &self.segments {
            let _ = writeln!(
                text,
                "{}",
                line(&segment.name, &texts(&segment.counts), NAME_WIDTH)
            );
        }
        let _ = writeln!(
            text,
            "#\n# Each phase (the sum of its segments), and that divided by its turns:"
        );
        for (phase, turns, counts) in self.phases() {
            let name = match turns {
                1 => format!("{phase} (1 turn)"),
                _ => format!("{phase} ({turns} turns)"),
            };
            let _ = writeln!(text, "# {}", line(&name, &texts(&counts), NAME_WIDTH - 2));
            let per_turn: Vec<String> = counts
                .iter()
                .map(|count| format!("{:.1}", *count as f64 / turns.max(1) as f64))
                .collect();
            let _ = writeln!(text, "# {}", line("  per turn", &per_turn, NAME_WIDTH - 2));
        }
        text
    }

    /// Each phase with its turns (the segments that end at a turn's model request) and the
    /// sum of its segments.
    fn phases(&self) -> Vec<(String, usize, [i64; COLUMNS.len()])> {
        let mut phases: Vec<(String, usize, [i64; COLUMNS.len()])> = Vec::new();
        for segment in &self.segments {
            let turn = usize::from(segment.name.contains(" to call"));
            match phases.last_mut() {
                Some((phase, turns, counts)) if phase == segment.phase() => {
                    *turns += turn;
                    for (sum, count) in counts.iter_mut().zip(segment.counts) {
                        *sum += count;
                    }
                }
                _ => phases.push((segment.phase().to_owned(), turn, segment.counts)),
            }
        }
        phases
    }

    /// Every segment's statements by text, most frequent first.
    pub(crate) fn statements_table(&self) -> String {
        let mut text = String::new();
        for segment in &self.segments {
            let _ = writeln!(text, "\n== {} ==", segment.name);
            let mut statements: Vec<_> = segment.statements.iter().collect();
            statements.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            for ((on, sql), count) in statements {
                let _ = writeln!(text, "{count:>4}  {on:<6}  {sql}");
            }
        }
        text
    }
}

/// `name` in `name_width` characters, then each value right-aligned under its column's
/// heading.
fn line(name: &str, values: &[String], name_width: usize) -> String {
    let mut line = format!("{name:<name_width$}");
    for ((heading, _), value) in COLUMNS.iter().zip(values) {
        let _ = write!(line, "{value:>width$}", width = heading.len().max(7) + 1);
    }
    line
}

fn texts(counts: &[i64]) -> Vec<String> {
    counts.iter().map(i64::to_string).collect()
}

/// The rows of a pinned file: a name, then a count per column; `#` lines are comments.
fn parse(text: &str) -> Vec<(String, Vec<i64>)> {
    text.lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let (name, counts) = words.split_at(words.len().saturating_sub(COLUMNS.len()));
            let counts = counts
                .iter()
                .map(|count| count.parse().unwrap_or(i64::MIN))
                .collect();
            (name.join(" "), counts)
        })
        .collect()
}

/// Where `store`'s figures are pinned.
fn pins_path(store: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/counted_work")
        .join(format!("{store}.txt"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(statements: u64) -> WorkDone {
        WorkDone {
            writer_statements: statements,
            stored_bytes: 100,
            ..WorkDone::default()
        }
    }

    #[test]
    fn the_pinned_text_reads_back_as_the_figures_and_any_change_is_told() {
        let figures = Figures::new(vec![
            Segment::between("a loop: ask to call 1", &work(0), &work(40)),
            Segment::between("a loop: call 1 to quiet", &work(40), &work(50)),
        ]);
        let text = figures.file_text("sqlite");
        let pinned = parse(&text);
        assert_eq!(pinned.len(), 2, "{text}");
        assert_eq!(pinned[0].0, "a loop: ask to call 1");
        assert_eq!(pinned[0].1[0], 40);
        assert!(figures.differences(&pinned).is_empty());
        let mut lower = pinned.clone();
        lower[1].1[0] = 9;
        assert_eq!(
            figures.differences(&lower),
            ["a loop: call 1 to quiet: w.sql rose from 9 to 10"]
        );
        let mut higher = pinned;
        higher[0].1[6] = 1;
        assert_eq!(
            figures.differences(&higher),
            ["a loop: ask to call 1: bytes fell from 1 to 0"]
        );
        assert!(text.contains("# a loop (1 turn)"), "{text}");
    }
}
