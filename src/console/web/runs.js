// A project's runs, live, filterable and paged (the newest first, more on demand). Each run
// reads as its title (its alias and model on hover), what was asked, who, its status in
// words, how long it took and what it cost. The ask box is shown to members and admins only
// (the server refuses it to viewers anyway); below the runs, the command rules the person
// may see there; admins get a link to its webhooks.
import { el, fill, link, debounce, status, statusWords, active, dollars, field, longCell } from './dom.js';
import { when, took } from './time.js';
import { capsPanel } from './caps.js';
import { rulesPanel } from './rules.js';

const FILTERS = {
  all: () => true,
  active: (run) => active(run.status) || run.status === 202,
  done: (run) => run.status === 200,
  paused: (run) => run.status === 402,
  failed: (run) => run.status >= 400 && run.status !== 402,
};

// Runs asked for at a time; `Show more` asks for the next ones.
const PAGE = 50;

export async function runsView(ctx, main, project) {
  let runs = [];
  let wanted = PAGE;
  let more = false;
  const progress = new Map();
  const [textLabel, text] = field('filter', 'Filter', { type: 'search', placeholder: 'title, question, run, model, person, summary' });
  const which = el('select', { id: 'status-filter' },
    Object.keys(FILTERS).map((key) => el('option', { value: key }, key)));
  const body = el('tbody');
  const moreButton = el('button', { type: 'button', id: 'more', hidden: true }, 'Show more runs');
  const table = el('table', { class: 'runs' },
    el('caption', { class: 'muted' }, 'Newest first; updates as runs go.'),
    el('thead', {}, el('tr', {}, ['Run', 'Asked', 'Status', 'Started by', 'Took', 'Cost', 'Created', 'Summary']
      .map((name) => el('th', { scope: 'col' }, name)))),
    body);
  const render = () => {
    const needle = text.value.trim().toLowerCase();
    const shown = runs.filter(FILTERS[which.value]).filter((run) => !needle
      || [run.title, run.asked, run.run, run.model, run.created_by, run.summary]
        .some((value) => (value ?? '').toLowerCase().includes(needle)));
    fill(body, ...shown.map((run) => el('tr', {},
      el('td', { 'data-label': 'Run', class: 'title' },
        el('a', { href: link('p', project, 'r', run.run), title: `${run.run} on ${run.model ?? 'no model'}` }, run.title ?? run.run)),
      longCell(run.asked, { 'data-label': 'Asked' }),
      el('td', { 'data-label': 'Status' }, status(run.status),
        progress.has(run.run) && active(run.status) ? el('div', { class: 'progress' }, progress.get(run.run)) : null),
      el('td', { 'data-label': 'Started by' }, run.created_by ?? 'operator'),
      el('td', { 'data-label': 'Took' }, took(run.created, run.last_event_ms ?? run.created, active(run.status))),
      el('td', { 'data-label': 'Cost' }, dollars(run.cost)),
      el('td', { 'data-label': 'Created' }, when(run.created)),
      longCell(run.summary, { 'data-label': 'Summary' }))));
    if (!shown.length) body.append(el('tr', {}, el('td', { colspan: 8 }, 'No run matches.')));
    moreButton.hidden = !more;
  };
  const refresh = async () => {
    // One more than shown tells whether there are more.
    const page = await ctx.rpc.call('getRuns', { limit: wanted + 1 });
    more = page.length > wanted;
    runs = page.slice(0, wanted);
    render();
    // A run's end is its caller's reply, no notification: look again while one goes.
    if (runs.some((run) => active(run.status))) later();
  };
  text.addEventListener('input', render);
  which.addEventListener('change', render);
  moreButton.addEventListener('click', () => { wanted += PAGE; refresh().catch(() => {}); });
  const later = debounce(() => refresh().catch(() => {}), 1000);
  const stops = [
    ctx.rpc.on('run/progress', (params) => { progress.set(params.run, `turn ${params.turn}: ${params.status}`); later(); }),
    ctx.rpc.on('run/state', later),
    ctx.rpc.on('run/action', () => { later(); rules.refresh().catch(() => {}); }),
    ctx.rpc.on('run/outcome', later),
  ];
  const caps = capsPanel(ctx);
  const rules = rulesPanel(ctx, project);
  stops.push(caps.stop);
  fill(main,
    el('h1', {}, project),
    el('p', { class: 'row' }, el('a', { href: link('p', project, 'memory') }, 'Memory of this project'),
      ctx.me.role === 'admin' ? el('a', { href: link('p', project, 'webhooks') }, 'Webhooks of this project') : null),
    caps.node,
    ctx.canChange ? await askForm(ctx, later) : null,
    el('div', { class: 'filters', role: 'search' },
      el('div', {}, textLabel, text),
      el('div', {}, el('label', { for: 'status-filter' }, 'Status'), which)),
    table, moreButton, rules.node);
  await Promise.all([refresh(), rules.refresh()]);
  return () => { later.cancel(); stops.forEach((stop) => stop()); };
}

// A prompt box that starts an ask or an act on a new run (members and admins).
async function askForm(ctx, changed) {
  const models = await ctx.rpc.call('getModels', {});
  const [promptLabel, prompt] = field('prompt', 'Ask a question', { rows: 3, required: true });
  const model = el('select', { id: 'model' }, models.map((entry) => el('option', { value: entry.alias }, entry.alias)));
  const mode = el('select', { id: 'mode' }, el('option', { value: 'ask' }, 'ask (read only)'), el('option', { value: 'act' }, 'act (may change files)'));
  const said = el('p', { class: 'muted', role: 'status' });
  const form = el('form', { class: 'form ask' },
    promptLabel, prompt,
    el('div', { class: 'row' },
      el('div', {}, el('label', { for: 'model' }, 'Model'), model),
      el('div', {}, el('label', { for: 'mode' }, 'Mode'), mode)),
    el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary' }, 'Ask')),
    said);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const text = prompt.value.trim();
    if (!text) return;
    prompt.value = '';
    said.textContent = 'Asked; the run appears below.';
    // The run is made and watched with its deltas before the question, so that its first
    // turn is streamed (the server streams a call only for a run watched as it starts).
    ctx.rpc.call('startRun', { model: model.value })
      .then(async ({ run }) => {
        await ctx.rpc.call('run/watch', { run, deltas: true });
        return ctx.rpc.call(mode.value, { model: model.value, prompt: text, run });
      })
      .then((outcome) => { said.textContent = `Run ${outcome.run}: ${statusWords(outcome.status)}.`; changed(); })
      .catch((error) => { said.textContent = `Not asked: ${error.message}`; });
    changed();
  });
  return form;
}
