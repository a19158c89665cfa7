// Spend caps set at run time, for admins (`caps/list`, `caps/set`, `caps/clear`): each
// stored cap with who set it when, a form setting those of a person, a project or the
// server (each replaces the configured cap of its period and unit), and Clear. Then the
// audit of admins' changes (`admin/changes`). `changed` is called after each change.
import { el, fill, field, count, dollars } from './dom.js';
import { when } from './time.js';

const KEYS = [
  ['day_tokens', 'Tokens per day'],
  ['day_dollars', 'US$ per day'],
  ['month_tokens', 'Tokens per month'],
  ['month_dollars', 'US$ per month'],
];

// `{day_tokens: 5000, month_dollars: 2}` said in words: `5,000 tokens per day, $2.00 per month`.
function capsSaid(caps) {
  return KEYS.filter(([key]) => caps?.[key] !== undefined).map(([key]) => {
    const [period, unit] = key.split('_');
    return `${unit === 'dollars' ? dollars(caps[key]) : `${count(caps[key])} tokens`} per ${period}`;
  }).join(', ');
}

export function capsSection(ctx, changed) {
  const node = el('section', { class: 'stored-caps', 'aria-label': 'Spend caps set here' });
  const said = el('p', { class: 'muted said', 'aria-live': 'polite' });
  const failed = (what) => (error) => { said.textContent = `${what}: ${error.message}`; };
  const scope = el('select', { id: 'cap-scope' }, ['person', 'project', 'server'].map((name) => el('option', { value: name }, name)));
  const [subjectLabel, subject] = field('cap-subject', 'Person or project (none for the server)', { placeholder: 'olga' });
  const amounts = KEYS.map(([key, words]) => field(`cap-${key.replace('_', '-')}`, words, { type: 'number', min: '0', step: key.endsWith('dollars') ? 'any' : '1' }));
  const form = el('form', { class: 'form caps' },
    el('h3', {}, 'Set caps'), el('label', { for: 'cap-scope' }, 'Scope'), scope, subjectLabel, subject,
    amounts.flat(),
    el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary' }, 'Set caps')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const caps = {};
    KEYS.forEach(([key], index) => {
      const value = amounts[index][1].value.trim();
      if (value !== '') caps[key] = Number(value);
    });
    const params = { scope: scope.value, caps };
    if (subject.value.trim()) params.subject = subject.value.trim();
    ctx.rpc.call('caps/set', params)
      .then((set) => { said.textContent = `Caps of ${set.scope} ${set.subject} set.`; changed(); return refresh(); })
      .catch(failed('Not set'));
  });

  async function refresh() {
    const { caps } = await ctx.rpc.call('caps/list', {});
    fill(node, el('h2', {}, 'Spend caps set here'),
      el('p', { class: 'muted' }, 'Each replaces the configured cap of the same scope, period and unit; raising one lets the runs it paused go on.'),
      caps.length ? el('table', { class: 'stored-caps' },
        el('thead', {}, el('tr', {}, ['Scope', 'Of', 'Caps', 'Set by', 'Set', ''].map((text) => el('th', { scope: 'col' }, text)))),
        el('tbody', {}, caps.map((cap) => el('tr', {},
          el('td', {}, cap.scope), el('td', {}, cap.subject), el('td', {}, capsSaid(cap.caps)),
          el('td', {}, cap.setBy ?? 'operator'), el('td', {}, when(cap.setAt)),
          el('td', {}, el('button', {
            type: 'button', 'aria-label': `Clear the caps of ${cap.scope} ${cap.subject}`,
            onclick: () => ctx.rpc.call('caps/clear', { scope: cap.scope, subject: cap.subject || undefined })
              .then(() => { said.textContent = 'Cleared.'; changed(); return refresh(); })
              .catch(failed('Not cleared')),
          }, 'Clear'))))))
        : el('p', { class: 'muted' }, 'None: the configured caps hold.'),
      said, form);
  }
  return { node, refresh };
}

export function changesSection(ctx) {
  const node = el('section', { class: 'changes', 'aria-label': 'Audit of changes' });
  async function refresh() {
    const { changes } = await ctx.rpc.call('admin/changes', { limit: 50 });
    fill(node, el('h2', {}, 'Audit of changes'),
      changes.length ? el('table', { class: 'changes' },
        el('thead', {}, el('tr', {}, ['When', 'Who', 'What', 'Of', 'Details'].map((text) => el('th', { scope: 'col' }, text)))),
        el('tbody', {}, changes.map((change) => el('tr', {},
          el('td', {}, when(change.at)), el('td', {}, change.by ?? 'operator'), el('td', {}, change.action),
          el('td', {}, change.subject), el('td', {}, JSON.stringify(change.detail))))))
        : el('p', { class: 'muted' }, 'No change yet.'));
  }
  return { node, refresh };
}
