// Command rules ("allow always", `rules/list`, `rules/revoke`): a person's own rules in a
// project, or an admin's view of everyone's there, each revocable after a confirmation by
// whoever may (members and admins; the server refuses anyone else anyway). A rule is made
// by "Approve always" on a command's card (run.js), whose pattern `defaultPattern` shows
// beforehand.
import { el, fill, longCell, confirmed } from './dom.js';
import { when } from './time.js';

// What lets a shell run more than one command from a line (src/agent/allow/pattern.rs).
const OPERATORS = [';', '&', '|', '`', '$(', '<', '>', '\n', '\r'];

// The pattern the server stores for `command` when a person allows it always and names none:
// its program and first argument then ` *`, their glob characters escaped; a command with a
// shell operator is its own pattern. Null for a command with no word.
export function defaultPattern(command) {
  if (OPERATORS.some((operator) => command.includes(operator))) return command;
  const words = command.split(/\s+/).filter(Boolean).slice(0, 2)
    .map((word) => word.replace(/[*?[\\]/g, '\\$&'));
  return words.length ? `${words.join(' ')} *` : null;
}

// A section listing the rules of `project` the person may see; returns {node, refresh}.
export function rulesPanel(ctx, project) {
  const admin = ctx.me.role === 'admin';
  const node = el('section', { class: 'rules', 'aria-labelledby': 'rules-heading' });
  const refresh = async () => {
    const { rules } = await ctx.rpc.call('rules/list', { project });
    fill(node,
      el('h2', { id: 'rules-heading' }, `${admin ? `Command rules of ${project}` : 'Your command rules'} (${rules.length})`),
      el('p', { class: 'muted' }, 'A command a rule matches runs without asking when the loop is the rule\'s person\'s. "Approve always" on a command makes one.'),
      rules.length ? el('table', { class: 'rules' },
        el('thead', {}, el('tr', {}, ['Pattern', 'Person', 'Made by', 'Made', '']
          .map((name) => el('th', { scope: 'col' }, name)))),
        el('tbody', {}, rules.map((rule) => el('tr', {},
          longCell(rule.pattern), el('td', {}, rule.person ?? 'operator'),
          el('td', {}, rule.madeBy ?? 'operator'), el('td', {}, when(rule.madeAt)),
          el('td', {}, ctx.canChange ? confirmed({
            label: 'Revoke',
            name: `Revoke ${rule.pattern}`,
            question: `Revoke the rule ${rule.pattern}${admin ? ` of ${rule.person ?? 'the operator'}` : ''}? Such commands will be asked about again.`,
            yes: 'Yes, revoke',
            act: () => ctx.rpc.call('rules/revoke', { id: rule.id }).then(refresh),
          }) : null)))))
        : el('p', {}, admin ? 'No command rules in this project.' : 'You have no command rules in this project.'));
  };
  return { node, refresh };
}
