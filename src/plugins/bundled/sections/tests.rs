//! Whole-packet tests: the observed packets of AGENT §2.4 under this project's decisions
//! (skills in the instructions, targets or entry paths in history tags, the newest prompt
//! active, `<previous>` from the second loop on).

use serde_json::json;

use super::testing::{row, Fixture, RowChanges};
use super::text::{BRIDGE, COUNTS, FIDELITY, PREAMBLE};
use crate::context::packet::{Bucket, BucketShare};
use crate::db::enums::{Category, Fidelity};
use crate::plugins::text::fill;

fn instructions() -> String {
    let preamble = fill(PREAMBLE, &[("tools", "get, set, known, unknown, update")]);
    format!("{preamble}\n\n<get path=\"…\"/> reads.\n\n<set path=\"…\"/> writes.")
}

fn counts(knowns: &str, logging: &str, unknowns: &str) -> String {
    fill(
        COUNTS,
        &[
            ("knowns", knowns),
            ("logging", logging),
            ("unknowns", unknowns),
        ],
    )
}

#[test]
fn first_turn_of_a_fresh_run() {
    let mut fixture = Fixture::new(vec![row("prompt://1", Category::Prompt, 1, "Do the thing")]);
    fixture.turn = 1;
    let packet = fixture.packet();
    assert_eq!(packet.system, instructions());
    assert_eq!(
        packet.user,
        format!(
            "<progress turn=\"1\">{}</progress>\n\
             <prompt mode=\"act\" tools=\"get,set,known,unknown,update\">Do the thing</prompt>",
            counts("0 knowns", "0 logging", "0 unknowns")
        )
    );
}

#[test]
fn second_turn_after_filing_knowns_and_an_unknown() {
    let fixture = Fixture::new(vec![
        row(
            "known://proj/info",
            Category::Data,
            1,
            "# known known://proj/info\nProject uses node",
        ),
        row(
            "known://notes",
            Category::Data,
            1,
            "# known known://notes\nhello notes",
        ),
        row(
            "set://known%3A//notes",
            Category::Logging,
            1,
            "# set known://notes",
        )
        .attributes(json!({"path": "known://notes"})),
        row(
            "get://turn_1/known%3A//*",
            Category::Logging,
            1,
            "# get known://*\n2 matched",
        )
        .attributes(json!({"path": "known://*"})),
        row(
            "update://reading",
            Category::Logging,
            1,
            "# update\nReading",
        ),
        row(
            "unknown://what%20is%20in%20a.txt",
            Category::Unknown,
            1,
            "# unknown\nwhat is in a.txt",
        ),
        row("prompt://1", Category::Prompt, 1, "Do the thing"),
    ]);
    let packet = fixture.packet();
    assert_eq!(
        packet.system,
        format!(
            "{}\n\n<knowns>\n\
             <known path=\"known://proj/info\" turn=\"1\" status=\"200\" fidelity=\"full\" \
             tokens=\"11\"># known known://proj/info\nProject uses node</known>\n\
             <known path=\"known://notes\" turn=\"1\" status=\"200\" fidelity=\"full\" \
             tokens=\"9\"># known known://notes\nhello notes</known>\n\
             </knowns>\n\n<unknowns>\n\
             <unknown path=\"unknown://what%20is%20in%20a.txt\" turn=\"1\" fidelity=\"full\" \
             tokens=\"7\"># unknown\nwhat is in a.txt</unknown>\n\
             </unknowns>",
            instructions()
        )
    );
    let stats = fill(FIDELITY, &[("groups", "5 full (36 tok)")]);
    assert_eq!(
        packet.user,
        format!(
            "<performed>\n\
             <set path=\"known://notes\" turn=\"1\" status=\"200\" fidelity=\"full\" \
             tokens=\"5\"># set known://notes</set>\n\
             <get path=\"known://*\" turn=\"1\" status=\"200\" fidelity=\"full\" \
             tokens=\"7\"># get known://*\n2 matched</get>\n\
             <update path=\"update://reading\" turn=\"1\" status=\"200\" fidelity=\"full\" \
             tokens=\"4\"># update\nReading</update>\n\
             </performed>\n\
             <progress turn=\"2\">{}\n{stats}\n{}</progress>\n\
             <prompt mode=\"act\" tools=\"get,set,known,unknown,update\">Do the thing</prompt>",
            counts("2 knowns", "3 logging", "1 unknown"),
            fill(BRIDGE, &[]),
        )
    );
    let buckets: Vec<(Bucket, i64)> = packet
        .distribution
        .iter()
        .map(|share| (share.bucket, share.entries))
        .collect();
    assert_eq!(
        buckets,
        [
            (Bucket::Data, 2),
            (Bucket::Logging, 3),
            (Bucket::Prompt, 1),
            (Bucket::System, 1),
            (Bucket::Unknown, 1),
        ]
    );
    let total: i64 = packet
        .distribution
        .iter()
        .map(|share: &BucketShare| share.tokens)
        .sum();
    assert_eq!(total, packet.assembled_tokens);
}

#[test]
fn a_second_prompt_moves_the_first_loop_to_previous() {
    let mut fixture = Fixture::new(vec![
        row("skill://style", Category::Data, 0, "Use tabs."),
        row("prompt://1", Category::Prompt, 1, "Do the thing").at(Fidelity::Summary),
        row(
            "summarize://all-done",
            Category::Logging,
            2,
            "# summarize\nAll done",
        )
        .at(Fidelity::Summary),
        row("prompt://3", Category::Prompt, 3, "Now this"),
    ]);
    fixture.turn = 3;
    let packet = fixture.packet();
    assert_eq!(
        packet.system,
        format!(
            "{}\n\n## Skills\n\n### style\nUse tabs.\n\n<previous>\n\
             <prompt path=\"prompt://1\" turn=\"1\" status=\"200\" summary=\"Do the thing\" \
             fidelity=\"summary\" tokens=\"3\"/>\n\
             <summarize path=\"summarize://all-done\" turn=\"2\" status=\"200\" \
             summary=\"# summarize\nAll done\" fidelity=\"summary\" tokens=\"5\"/>\n\
             </previous>",
            instructions()
        )
    );
    assert!(packet.user.ends_with(
        "<prompt mode=\"act\" tools=\"get,set,known,unknown,update\">Now this</prompt>"
    ));
    assert!(!packet.user.contains("<performed>"));
}
