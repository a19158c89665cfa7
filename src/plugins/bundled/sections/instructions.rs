//! The instructions (system chain, priority 0): the preamble with the active tool list, the
//! docs of the active tools, the run's persona and the run's skills: a skill's body once
//! the model loaded it (full fidelity), else its description and how to load it.

use super::text::{PREAMBLE, SKILL_UNLOADED};
use crate::context::packet::{Bucket, MessageBuilder};
use crate::db::enums::Fidelity;
use crate::plugins::assembly::{AssemblyContext, AssemblyFilter};
use crate::plugins::text::fill;

/// Renders the instructions.
pub(super) struct Instructions;

impl AssemblyFilter for Instructions {
    fn priority(&self) -> i32 {
        0
    }

    fn apply(&self, context: &AssemblyContext<'_>, message: &mut MessageBuilder) {
        let input = &context.input;
        message.open_section(Bucket::System);
        message.count_entry(Bucket::System);
        let tools = context.active_tools.join(", ");
        message.push(Bucket::System, &fill(PREAMBLE, &[("tools", &tools)]));
        for (_, doc) in input.tools.docs(&input.policy) {
            let doc = doc.trim();
            if !doc.is_empty() {
                message.push(Bucket::System, "\n\n");
                message.push(Bucket::System, doc);
            }
        }
        if let Some(persona) = input.persona.map(str::trim).filter(|text| !text.is_empty()) {
            message.push(Bucket::System, "\n\n## Persona\n\n");
            message.push(Bucket::System, persona);
        }
        let mut skills = input.rows.iter().filter(|row| row.has_scheme("skill"));
        if let Some(first) = skills.next() {
            message.push(Bucket::Data, "\n\n## Skills");
            for skill in std::iter::once(first).chain(skills) {
                let name = skill
                    .attribute("name")
                    .or_else(|| skill.path.strip_prefix("skill://"))
                    .unwrap_or(&skill.path);
                message.count_entry(Bucket::Data);
                message.push(Bucket::Data, "\n\n### ");
                message.push(Bucket::Data, name);
                message.push(Bucket::Data, "\n");
                if skill.fidelity == Fidelity::Full {
                    message.push(Bucket::Data, skill.body.trim_end());
                } else {
                    let summary = skill.body.trim_end();
                    let unloaded = fill(
                        SKILL_UNLOADED,
                        &[("summary", summary), ("path", &skill.path)],
                    );
                    message.push(Bucket::Data, &unloaded);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{row, Fixture, RowChanges};
    use super::*;
    use crate::db::enums::Category;
    use crate::plugins::assembly::{AssemblyInput, ToolDocs};
    use crate::plugins::policy::ToolPolicy;
    use crate::plugins::Plugins;

    #[test]
    fn preamble_docs_persona_and_skills_in_order() {
        let mut fixture = Fixture::new(vec![
            row("skill://style", Category::Data, 0, "Use tabs."),
            row("known://k", Category::Data, 1, "fact"),
        ]);
        fixture.persona = Some("A careful reviewer.");
        let text = fixture.render(&Instructions);
        let preamble = fill(PREAMBLE, &[("tools", "get, set, known, unknown, update")]);
        assert_eq!(
            text,
            format!(
                "{preamble}\n\n<get path=\"…\"/> reads.\n\n<set path=\"…\"/> writes.\n\n\
                 ## Persona\n\nA careful reviewer.\n\n## Skills\n\n### style\nUse tabs."
            )
        );
    }

    #[test]
    fn an_unloaded_skill_shows_its_summary_and_how_to_load_it() {
        let fixture = Fixture::new(vec![row(
            "skill://sql",
            Category::Data,
            0,
            "How we write SQL. (when to use: before a query)",
        )
        .at(Fidelity::Summary)
        .attributes(serde_json::json!({"name": "SQL style"}))]);
        let text = fixture.render(&Instructions);
        assert!(
            text.ends_with(
                "## Skills\n\n### SQL style\nHow we write SQL. (when to use: before a query)\n\
                 Not loaded: <get path=\"skill://sql\"/> loads it."
            ),
            "{text}"
        );
    }

    #[test]
    fn the_registry_documents_exactly_the_active_tools() {
        let plugins = Plugins::bundled(crate::plugins::tool::ToolSettings::default());
        let mut policy = ToolPolicy::act();
        policy.mode = crate::db::enums::LoopMode::Ask;
        let active = ToolDocs::active_tools(&plugins, &policy);
        assert!(!active.is_empty() && !active.contains(&"sh"));
        let input = AssemblyInput {
            run: crate::db::ids::RunId(1),
            rows: &[],
            turn: 1,
            policy,
            tools: &plugins,
            persona: None,
            budget: None,
        };
        let context = AssemblyContext::new(input);
        let mut message = MessageBuilder::new("\n\n");
        Instructions.apply(&context, &mut message);
        let text = message.text();
        assert!(text.contains(&format!("Available now: {}.", active.join(", "))));
        for (_, doc) in ToolDocs::docs(&plugins, &policy) {
            assert!(text.contains(doc.trim()));
        }
    }

    #[test]
    fn without_persona_or_skills_only_the_preamble_and_docs_remain() {
        let text = Fixture::new(Vec::new()).render(&Instructions);
        assert!(text.ends_with("<set path=\"…\"/> writes."));
        assert!(!text.contains("## Persona"));
        assert!(!text.contains("## Skills"));
    }
}
