// One run, live: what it is and costs, its loops (who asked each), what waits for approval
// (an edit as a diff, a command as text, with the output of a command running on the server
// as it comes), its turns as a timeline, its entries by fidelity, its session notes, and
// what happened meanwhile, and who is in the run now (the page watches it: `run/watch`,
// `run/presence`). What anyone does to the run (`run/action`) redraws it at once and is said
// with who did it ("Accepted by bo"); the timeline says who resolved each proposal. A run
// paused at a spend cap says which cap, what was spent and when it resets; admins get
// Resume. Members and admins also get abort, approve (once or always: a command rule),
// inject and a prompt to go on with ask or act; whoever has a loop in flight gets "Cancel my
// prompt". The forms live outside the parts a refresh redraws, so a refresh never takes what
// someone is typing.
import { el, fill, debounce, status, active, dollars, count, field, longCell } from './dom.js';
import { diffView } from './diff.js';
import { said as capSaid } from './caps.js';
import { defaultPattern } from './rules.js';
import { watchLive } from './live.js';

// The most output of one command the page keeps: its last bytes.
const OUTPUT_KEPT = 256 * 1024;
// Commands whose output the page keeps, the latest ones.
const OUTPUTS_KEPT = 32;
// Lines of the activity list kept.
const ACTIVITY_KEPT = 50;
const FIDELITIES = ['full', 'summary', 'index', 'archive'];
// A `run/action`'s verb as said of whoever did it.
const DONE = {
  accept: 'Accepted', reject: 'Rejected', error: 'Reported failed', abort: 'Aborted',
  cancel: 'Prompt cancelled', inject: 'Message injected', prompt: 'Continued', resume: 'Resumed',
};
// The loops of a person still to end: queued (or paused), running, waiting on proposals.
const IN_FLIGHT = [100, 102, 202];

// What someone did to the run, in words: "Accepted by bo: sh://turn_1/make" (`by` null is the
// operator, or for a resume the server).
function actedWords(params) {
  const verb = DONE[params.action] ?? params.action;
  const who = params.by ?? (params.action === 'resume' ? 'the server' : 'the operator');
  const rule = params.rule ? ` (by the rule ${params.rule.pattern})` : '';
  return `${verb} by ${who}${rule}${params.path ? `: ${params.path}` : ''}`;
}

// What kind of step an entry of a run is, for the timeline.
function kind(entry) {
  if (entry.scheme === 'prompt') return ['prompt', 'Prompt'];
  if (['content', 'update', 'summarize', 'known', 'unknown'].includes(entry.scheme)) return ['reply', 'Model'];
  return ['command', entry.scheme ?? 'entry'];
}

// Whether a proposal is a command a rule may allow always.
function isCommand(entry) {
  return (entry.scheme === 'sh' || entry.scheme === 'env') && typeof entry.attributes?.command === 'string';
}

function target(attributes) {
  for (const key of ['command', 'file', 'path', 'question', 'url']) {
    if (typeof attributes?.[key] === 'string') return attributes[key];
  }
  return '';
}

// An entry's content: its edit as a diff when it has one, else its body.
function content(entry) {
  if (typeof entry.attributes?.patch === 'string' && entry.attributes.patch) return diffView(entry.attributes.patch);
  return entry.body ? el('pre', {}, entry.body) : null;
}

// The output kept for each command of each run, across redraws and reconnects.
const outputs = new Map();

function outputOf(run, path) {
  const key = `${run}\n${path}`;
  if (!outputs.has(key)) {
    outputs.set(key, { text: '', end: null });
    if (outputs.size > OUTPUTS_KEPT) outputs.delete(outputs.keys().next().value);
  }
  return outputs.get(key);
}

// What a proposal's card says once this page resolved it, where its buttons were (so the
// rest of a double click selects none of it).
function saidOn({ text, refused }) {
  return el('p', {
    class: refused ? 'error' : 'muted',
    role: 'status',
    onmousedown: (event) => { if (event.detail > 1) event.preventDefault(); },
  }, text);
}

export async function runView(ctx, main, project, alias) {
  const meta = el('div');
  const here = el('p', { class: 'muted', id: 'present', 'aria-live': 'polite' });
  const renderPresent = (present) => {
    fill(here, 'Here now: ', present.length ? present.flatMap((someone, index) => [index ? ', ' : '',
      el(someone.driving ? 'strong' : 'span', {},
        `${someone.person ?? 'operator'} (${someone.client.name}${someone.client.kind === someone.client.name ? '' : `, ${someone.client.kind}`})${someone.driving ? ' driving' : ''}`)])
      : 'nobody');
  };
  const loops = el('div');
  const progress = el('p', { class: 'progress', role: 'status', 'aria-live': 'polite' });
  const proposals = el('section', { 'aria-labelledby': 'waiting' });
  const timeline = el('div');
  const fidelity = el('div');
  const notes = el('div');
  const activity = el('ol', { class: 'activity', 'aria-live': 'polite' });
  const outputNodes = new Map();
  let run = null;

  const acted = el('p', { class: 'acted', id: 'acted', role: 'status' });
  const pausedNote = el('p', { class: 'banner', id: 'paused', role: 'alert' });
  const actionSaid = el('p', { class: 'muted', id: 'action-said', role: 'status' });
  const abortButton = el('button', { type: 'button', class: 'danger', id: 'abort', hidden: true }, 'Abort');
  const cancelButton = el('button', { type: 'button', id: 'cancel', hidden: true }, 'Cancel my prompt');
  const resumeButton = el('button', { type: 'button', class: 'primary', id: 'resume', hidden: true }, 'Resume');
  const said = (error) => { progress.textContent = error.message; };
  abortButton.addEventListener('click', () => ctx.rpc.call('run/abort', { run: alias }).then(later, said));
  cancelButton.addEventListener('click', () => ctx.rpc.call('run/cancel', { run: alias }).then((answer) => {
    actionSaid.textContent = answer.cancelled.length ? `Cancelled your prompt (loop ${answer.cancelled.join(', ')}).` : 'Nothing of yours was in flight.';
    later();
  }, (error) => { actionSaid.textContent = `Not cancelled: ${error.message}`; }));
  resumeButton.addEventListener('click', () => ctx.rpc.call('run/resume', { run: alias }).then(() => {
    actionSaid.textContent = 'Resumed: the run goes on.';
    later();
  }, (error) => { actionSaid.textContent = `Not resumed: ${error.message}`; }));
  const me = ctx.me.person ?? null;

  const controls = ctx.canChange ? el('section', { class: 'controls', 'aria-label': 'Go on with the run' },
    injectForm(ctx, alias, () => later()),
    continueForm(ctx, alias, () => run, () => later())) : null;

  const showOutput = (path, node) => {
    const kept = outputs.get(`${alias}\n${path}`);
    if (!kept) return;
    fill(node, kept.text, kept.end ? `\n[${kept.end}]` : '');
  };

  // What this page did about each proposal it resolved, as its card says it while the run
  // still shows the proposal waiting (a command running on the server, the run going on):
  // `{ text, refused }`. A card says it at once, never offers the proposal again, and keeps
  // a refusal said until the proposal is gone.
  const resolved = new Map();
  let shown = [];
  const renderProposals = (pending) => {
    shown = pending;
    outputNodes.clear();
    if (!pending.length) { fill(proposals); return; }
    fill(proposals,
      el('h2', { id: 'waiting' }, `Waiting for approval (${pending.length})`),
      el('ul', { class: 'cards proposals' }, pending.map((entry) => {
        const output = el('pre', { class: 'output', 'aria-label': `Output of ${entry.path}` });
        outputNodes.set(entry.path, output);
        showOutput(entry.path, output);
        const pattern = isCommand(entry) ? defaultPattern(entry.attributes.command) : null;
        const open = !resolved.has(entry.path) && ctx.canChange;
        return el('li', { class: 'proposal' },
          el('div', { class: 'entry-head' }, el('strong', {}, entry.scheme ?? 'proposal'), el('span', {}, target(entry.attributes) || entry.path)),
          content(entry),
          output,
          resolved.has(entry.path) ? saidOn(resolved.get(entry.path))
            : open ? el('div', { class: 'actions' },
              el('button', { type: 'button', class: 'primary', onclick: () => resolve(entry.path, 'accept') }, 'Approve'),
              pattern ? el('button', { type: 'button', onclick: () => resolve(entry.path, 'accept', pattern) }, 'Approve always') : null,
              el('button', { type: 'button', onclick: () => resolve(entry.path, 'reject') }, 'Reject')) : null,
          open && pattern ? el('p', { class: 'muted pattern' }, 'Approve always also allows, in this project, the commands of your prompts that match ',
            el('code', {}, pattern), ': they will run without asking.') : null);
      })));
  };

  // Who settled each proposal, by its path: `accepted by bo`.
  const settledBy = (actions) => new Map((actions ?? []).filter((action) => action.path)
    .map((action) => [action.path, `${DONE[action.action] ?? action.action} by ${action.person ?? 'the operator'}`.toLowerCase()]));
  const renderTimeline = (entries, settled) => {
    const turns = new Map();
    for (const entry of entries) {
      if (!turns.has(entry.turn)) turns.set(entry.turn, []);
      turns.get(entry.turn).push(entry);
    }
    fill(timeline, el('h2', {}, 'Timeline'), entries.length
      ? el('ol', { class: 'timeline' }, [...turns].map(([turn, steps]) => el('li', { class: 'turn' },
        el('h3', {}, turn === 0 ? 'Before the first turn' : `Turn ${turn}`),
        el('ol', { class: 'steps' }, steps.map((entry) => {
          const [cls, label] = kind(entry);
          return el('li', { class: cls },
            el('div', { class: 'entry-head' },
              el('strong', {}, label), status(entry.status), el('span', {}, target(entry.attributes)),
              settled.has(entry.path) ? el('span', { class: 'by' }, settled.get(entry.path)) : null),
            entry.status === 202 ? el('p', { class: 'muted' }, 'Waiting for approval: see above.') : content(entry));
        })))))
      : el('p', {}, 'Nothing yet.'));
  };

  const renderFidelity = (entries) => {
    fill(fidelity, el('h2', {}, 'Entries by fidelity'),
      entries.length ? FIDELITIES.map((level) => {
        const these = entries.filter((entry) => entry.fidelity === level);
        return el('details', { class: 'fidelity', open: level === 'full' && these.length <= 30 },
          el('summary', {}, `${level} (${these.length})`),
          these.length ? el('table', {},
            el('thead', {}, el('tr', {}, ['Path', 'Status', 'Tokens'].map((name) => el('th', { scope: 'col' }, name)))),
            el('tbody', {}, these.map((entry) => el('tr', {},
              longCell(entry.path), el('td', {}, status(entry.status)), el('td', {}, count(entry.tokens))))))
            : el('p', { class: 'muted' }, 'None.'));
      }) : el('p', {}, 'No entries.'));
  };

  const renderNotes = (session) => {
    fill(notes, el('h2', {}, 'Session notes'),
      session?.rendered ? el('pre', { class: 'notes' }, session.rendered)
        : el('p', { class: 'muted' }, 'No session notes yet.'));
  };

  const refresh = async () => {
    run = await ctx.rpc.call('getRun', { run: alias });
    const telemetry = run.context?.telemetry ?? {};
    fill(meta, el('dl', { class: 'meta' },
      [['Status', status(run.status)], ['Model', run.model ?? ''], ['Turns', String(run.turn)],
        ['Started by', run.created_by ?? 'operator'],
        ['Tokens', count(telemetry.total_tokens)],
        ['Cost', dollars(telemetry.cost)]]
        .map(([name, value]) => el('div', {}, el('dt', {}, name), el('dd', {}, value)))));
    fill(loops, run.loops?.length ? el('details', { class: 'loops' },
      el('summary', {}, `Loops (${run.loops.length})`),
      el('table', {},
        el('thead', {}, el('tr', {}, ['Loop', 'Mode', 'Status', 'Asked by', 'At'].map((name) => el('th', { scope: 'col' }, name)))),
        el('tbody', {}, run.loops.map((loop) => el('tr', {},
          el('td', {}, String(loop.sequence)), el('td', {}, loop.mode), el('td', {}, status(loop.status)),
          el('td', {}, loop.requested_by ?? 'operator'), el('td', {}, loop.created_at)))))) : null);
    renderPresent(run.present ?? []);
    abortButton.hidden = !(active(run.status) || run.status === 202 || run.status === 402);
    cancelButton.hidden = !(run.loops ?? []).some((loop) => (loop.requested_by ?? null) === me && IN_FLIGHT.includes(loop.status));
    resumeButton.hidden = !(run.status === 402 && ctx.me.role === 'admin');
    fill(pausedNote, run.status === 402 ? (run.paused?.cap
      ? `Paused at a spend cap: ${capSaid(run.paused.cap)}. It resets at ${run.paused.cap.resets}; the run goes on by itself once no cap of it stands.`
      : 'Paused at a spend cap.') : null);
    if (!active(run.status)) progress.textContent = '';
    const entries = [
      ...(run.context?.history ?? []),
      ...(run.context?.content ?? []).map((entry) => ({ ...entry, scheme: 'content', status: 200 })),
    ].map((entry, index) => ({ entry, index }))
      .sort((a, b) => (a.entry.turn - b.entry.turn) || (a.index - b.index))
      .map(({ entry }) => entry);
    renderProposals(entries.filter((entry) => entry.status === 202));
    renderTimeline(entries, settledBy(run.actions));
    const [listed, session] = await Promise.all([
      ctx.rpc.call('getEntries', { run: alias, limit: 1000 }).catch(() => []),
      ctx.rpc.call('memory/session', { run: alias }).catch(() => null),
    ]);
    renderFidelity(listed);
    renderNotes(session);
    // A loop's end is told (`run/outcome`); look again while one goes, as a backstop.
    if (active(run.status)) later();
  };
  // Resolves a proposal; `always` (an accepted command's pattern) also makes the rule.
  const resolve = (path, action, always) => {
    const text = action === 'accept' ? `Approved${always ? ` always (${always})` : ''}: running…` : 'Rejected.';
    resolved.set(path, { text, refused: false });
    renderProposals(shown);
    const resolution = always ? { path, action, always: true } : { path, action };
    ctx.rpc.call('run/resolve', { run: alias, resolution }).then(later, (error) => {
      resolved.set(path, { text: `Not resolved: ${error.message}`, refused: true });
      renderProposals(shown);
      later();
    });
  };
  const later = debounce(() => refresh().catch(said), 1000);
  const noted = (text) => {
    activity.prepend(el('li', {}, text));
    while (activity.children.length > ACTIVITY_KEPT) activity.lastChild.remove();
  };
  const stops = [
    ctx.rpc.on('run/progress', (params) => {
      if (params.run !== alias) return;
      progress.textContent = `turn ${params.turn}: ${params.status}`;
      noted(`turn ${params.turn}: ${params.status}`);
      later();
    }),
    ctx.rpc.on('run/state', (params) => {
      if (params.run !== alias) return;
      noted(`turn ${params.turn}: ${params.status === 202 ? 'waiting for approval' : 'state'}`);
      later();
    }),
    // What a person did to the run, from anywhere, and who: the page redraws at once.
    ctx.rpc.on('run/action', (params) => {
      if (params.run !== alias) return;
      const words = actedWords(params);
      noted(words);
      acted.textContent = words;
      if (params.path) {
        resolved.set(params.path, { text: `${words}.`, refused: false });
        renderProposals(shown);
      }
      refresh().catch(said);
    }),
    ctx.rpc.on('run/outcome', (params) => {
      if (params.run !== alias) return;
      noted(`ended: ${params.status}${params.reason ? ` ${params.reason}` : ''}`);
      refresh().catch(said);
    }),
    ctx.rpc.on('run/presence', (params) => {
      if (params.run === alias) renderPresent(params.present);
    }),
    ctx.rpc.on('run/output', (params) => {
      if (params.run !== alias) return;
      const kept = outputOf(alias, params.path);
      if (typeof params.text === 'string') kept.text = (kept.text + params.text).slice(-OUTPUT_KEPT);
      if (typeof params.skipped === 'number') kept.text += `\n[${count(params.skipped)} bytes not shown]\n`;
      if (params.done) {
        kept.end = `ended with status ${params.status}${typeof params.exit === 'number' ? `, exit ${params.exit}` : ''}`;
        later();
      }
      const node = outputNodes.get(params.path);
      if (node) showOutput(params.path, node);
    }),
  ];
  fill(main,
    el('h1', {}, alias), here, meta, pausedNote, loops, progress, acted,
    el('div', { class: 'actions' }, ctx.canChange ? abortButton : null, cancelButton,
      ctx.me.role === 'admin' ? resumeButton : null),
    actionSaid,
    proposals, timeline, controls,
    el('h2', {}, 'Activity'), activity, fidelity, notes);
  stops.push(await watchLive(ctx, alias, progress));
  await refresh();
  return () => {
    later.cancel();
    stops.forEach((stop) => stop());
    ctx.rpc?.call('run/unwatch', { run: alias }).catch(() => {});
  };
}

// Adds a message to the run's work (run/inject): taken in by the running loop, or starting
// one when none runs.
function injectForm(ctx, alias, changed) {
  const [label, message] = field('inject', 'Inject a message', { rows: 2 });
  const said = el('p', { class: 'muted', role: 'status' });
  const form = el('form', { class: 'form' }, label, message,
    el('div', { class: 'actions' }, el('button', { type: 'submit' }, 'Inject')), said);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const text = message.value.trim();
    if (!text) return;
    message.value = '';
    ctx.rpc.call('run/inject', { run: alias, message: text })
      .then(() => { said.textContent = 'Injected.'; changed(); })
      .catch((error) => { said.textContent = `Not injected: ${error.message}`; });
  });
  return form;
}

// Goes on with the run: a new ask or act on it, with its model.
function continueForm(ctx, alias, current, changed) {
  const [label, prompt] = field('continue', 'Continue the run', { rows: 2 });
  const mode = el('select', { id: 'continue-mode' }, el('option', { value: 'ask' }, 'ask'), el('option', { value: 'act' }, 'act'));
  const said = el('p', { class: 'muted', role: 'status' });
  const form = el('form', { class: 'form' }, label, prompt,
    el('label', { for: 'continue-mode' }, 'Mode'), mode,
    el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary' }, 'Continue')), said);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const text = prompt.value.trim();
    const run = current();
    if (!text || !run) return;
    prompt.value = '';
    said.textContent = 'Sent; the run goes on.';
    ctx.rpc.call(mode.value, { model: run.model, prompt: text, run: alias })
      .then((outcome) => { said.textContent = `The loop ended with status ${outcome.status}.`; changed(); })
      .catch((error) => { said.textContent = `Not sent: ${error.message}`; });
    changed();
  });
  return form;
}
