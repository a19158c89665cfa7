// A project's runs, live and filterable, and one run's timeline, live. Controls that change
// things are shown to members and admins only (the server refuses them to viewers anyway).
import { el, fill, link, debounce, status, active } from './dom.js';

const FILTERS = {
  all: () => true,
  active: (run) => active(run.status) || run.status === 202,
  done: (run) => run.status === 200,
  failed: (run) => run.status >= 400,
};

export async function runsView(ctx, main, project) {
  let runs = [];
  const progress = new Map();
  const text = el('input', { id: 'filter', type: 'search', placeholder: 'run, model, person, summary' });
  const which = el('select', { id: 'status-filter' },
    Object.keys(FILTERS).map((key) => el('option', { value: key }, key)));
  const body = el('tbody');
  const table = el('table', { class: 'runs' },
    el('caption', { class: 'muted' }, 'Newest first; updates as runs go.'),
    el('thead', {}, el('tr', {}, ['Run', 'Status', 'Model', 'Turns', 'Started by', 'Created', 'Summary']
      .map((name) => el('th', { scope: 'col' }, name)))),
    body);
  const render = () => {
    const needle = text.value.trim().toLowerCase();
    const shown = runs.filter(FILTERS[which.value]).filter((run) => !needle
      || [run.run, run.model, run.created_by, run.summary]
        .some((field) => (field ?? '').toLowerCase().includes(needle)));
    fill(body, ...shown.map((run) => el('tr', {},
      el('td', { 'data-label': 'Run' }, el('a', { href: link('p', project, 'r', run.run) }, run.run)),
      el('td', { 'data-label': 'Status' }, status(run.status),
        progress.has(run.run) && active(run.status) ? el('div', { class: 'progress' }, progress.get(run.run)) : null),
      el('td', { 'data-label': 'Model' }, run.model ?? ''),
      el('td', { 'data-label': 'Turns' }, String(run.turn)),
      el('td', { 'data-label': 'Started by' }, run.created_by ?? 'operator'),
      el('td', { 'data-label': 'Created' }, run.created),
      el('td', { 'data-label': 'Summary' }, run.summary ?? ''))));
    if (!shown.length) body.append(el('tr', {}, el('td', { colspan: 7 }, 'No run matches.')));
  };
  const refresh = async () => {
    runs = await ctx.rpc.call('getRuns', { limit: 200 });
    render();
    // A run's end is its caller's reply, no notification: look again while one goes.
    if (runs.some((run) => active(run.status))) later();
  };
  text.addEventListener('input', render);
  which.addEventListener('change', render);
  const later = debounce(() => refresh().catch(() => {}), 1000);
  const stops = [
    ctx.rpc.on('run/progress', (params) => { progress.set(params.run, `turn ${params.turn}: ${params.status}`); later(); }),
    ctx.rpc.on('run/state', later),
  ];
  fill(main,
    el('h1', {}, project),
    ctx.canChange ? await askForm(ctx, project, later) : null,
    el('div', { class: 'filters', role: 'search' },
      el('div', {}, el('label', { for: 'filter' }, 'Filter'), text),
      el('div', {}, el('label', { for: 'status-filter' }, 'Status'), which)),
    table);
  await refresh();
  return () => { later.cancel(); stops.forEach((stop) => stop()); };
}

// A prompt box that starts an ask on a new run (members and admins).
async function askForm(ctx, project, changed) {
  const models = await ctx.rpc.call('getModels', {});
  const prompt = el('textarea', { id: 'prompt', rows: 3, required: true });
  const model = el('select', { id: 'model' }, models.map((entry) => el('option', { value: entry.alias }, entry.alias)));
  const said = el('p', { class: 'muted', role: 'status' });
  const form = el('form', { class: 'form ask' },
    el('label', { for: 'prompt' }, 'Ask a question'), prompt,
    el('label', { for: 'model' }, 'Model'), model,
    el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary' }, 'Ask')),
    said);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const text = prompt.value.trim();
    if (!text) return;
    prompt.value = '';
    said.textContent = 'Asked; the run appears below.';
    ctx.rpc.call('ask', { model: model.value, prompt: text })
      .then((outcome) => { said.textContent = `Run ${outcome.run} ended with status ${outcome.status}.`; changed(); })
      .catch((error) => { said.textContent = `Not asked: ${error.message}`; });
    changed();
  });
  return form;
}

// What kind of step an entry of a run is, for the timeline.
function kind(entry) {
  if (entry.scheme === 'prompt') return ['prompt', 'Prompt'];
  if (['content', 'update', 'summarize', 'known', 'unknown'].includes(entry.scheme)) return ['reply', 'Model'];
  return ['command', entry.scheme];
}

function target(attributes) {
  for (const key of ['command', 'file', 'path', 'question', 'url']) {
    if (typeof attributes?.[key] === 'string') return attributes[key];
  }
  return '';
}

export async function runView(ctx, main, project, alias) {
  const progress = el('p', { class: 'progress', role: 'status', 'aria-live': 'polite' });
  const refresh = async () => {
    const run = await ctx.rpc.call('getRun', { run: alias });
    const telemetry = run.context?.telemetry ?? {};
    const meta = el('dl', { class: 'meta' },
      [['Status', status(run.status)], ['Model', run.model ?? ''], ['Turns', String(run.turn)],
        ['Started by', run.created_by ?? 'operator'],
        ['Tokens', String(telemetry.total_tokens ?? 0)],
        typeof telemetry.cost === 'number' && telemetry.cost > 0 ? ['Cost', `$${telemetry.cost.toFixed(4)}`] : null]
        .filter(Boolean).map(([name, value]) => el('div', {}, el('dt', {}, name), el('dd', {}, value))));
    const entries = [
      ...(run.context?.history ?? []),
      ...(run.context?.content ?? []).map((entry) => ({ ...entry, scheme: 'content', status: 200 })),
    ].map((entry, index) => ({ entry, index }))
      .sort((a, b) => (a.entry.turn - b.entry.turn) || (a.index - b.index))
      .map(({ entry }) => entry);
    const steps = entries.map((entry) => {
      const [cls, label] = kind(entry);
      const pending = entry.status === 202;
      return el('li', { class: cls },
        el('div', { class: 'entry-head' },
          el('strong', {}, label), el('span', {}, `turn ${entry.turn}`), status(entry.status),
          el('span', {}, target(entry.attributes))),
        entry.body ? el('pre', {}, entry.body) : null,
        pending && ctx.canChange ? el('div', { class: 'actions' },
          el('button', { type: 'button', class: 'primary', onclick: () => resolve(entry.path, 'accept') }, 'Approve'),
          el('button', { type: 'button', onclick: () => resolve(entry.path, 'reject') }, 'Reject')) : null);
    });
    fill(main,
      el('h1', {}, alias), meta, progress,
      ctx.canChange && active(run.status)
        ? el('div', { class: 'actions' }, el('button', { type: 'button', class: 'danger', id: 'abort', onclick: abort }, 'Abort'))
        : null,
      el('h2', {}, 'Timeline'),
      steps.length ? el('ol', { class: 'timeline' }, steps) : el('p', {}, 'Nothing yet.'));
    // A run's end is its caller's reply, no notification: look again while it goes.
    if (active(run.status)) later();
  };
  const said = (error) => { progress.textContent = error.message; };
  const abort = () => ctx.rpc.call('run/abort', { run: alias }).then(later, said);
  const resolve = (path, action) => {
    ctx.rpc.call('run/resolve', { run: alias, resolution: { path, action } }).then(later, said);
    later();
  };
  const later = debounce(() => refresh().catch(said), 1000);
  const stops = [
    ctx.rpc.on('run/progress', (params) => {
      if (params.run !== alias) return;
      progress.textContent = `turn ${params.turn}: ${params.status}`;
      later();
    }),
    ctx.rpc.on('run/state', (params) => { if (params.run === alias) later(); }),
  ];
  await refresh();
  return () => { later.cancel(); stops.forEach((stop) => stop()); };
}
