// One run, live: the conversation first — what it is doing now on top (what waits for
// whose approval, or its answer once done), then each prompt and answer as safe markdown
// with its commands and edits as collapsed steps (conversation.js) —, then what it is and
// costs, its loops (who asked each), what waits for approval (an edit as a diff, a command
// as text, with the output of a command running on the server as it comes), what happened
// meanwhile, what it changed (changes.js), who is in the run now (the page watches it: `run/watch`, `run/presence`), and
// collapsed, what the model keeps in mind and the session notes (run-details.js). What
// anyone does to the run (`run/action`) redraws it at once and is said with who did it
// ("Accepted by bo"); each step says who resolved it. A run paused at a spend cap says
// which cap, what was spent and when it resets; admins get Resume. Members and admins also
// get abort, approve (once or always: a command rule), inject and a prompt to go on with
// ask or act (run-forms.js); whoever has a loop in flight gets "Cancel my prompt". The
// forms live outside the parts a refresh redraws, so a refresh never takes what someone is
// typing.
import { el, fill, debounce, status, active, dollars, count } from './dom.js';
import { conversation, content, renderNow, stepName, target } from './conversation.js';
import { renderContext, renderNotes } from './run-details.js';
import { injectForm, continueForm } from './run-forms.js';
import { when, took } from './time.js';
import { said as capSaid } from './caps.js';
import { defaultPattern } from './rules.js';
import { changesSection } from './changes.js';
import { watchLive } from './live.js';

// The most output of one command the page keeps: its last bytes.
const OUTPUT_KEPT = 256 * 1024;
// Commands whose output the page keeps, the latest ones.
const OUTPUTS_KEPT = 32;
// Lines of the activity list kept.
const ACTIVITY_KEPT = 50;
// A `run/action`'s verb as said of whoever did it.
const DONE = {
  accept: 'Accepted', reject: 'Rejected', error: 'Reported failed', abort: 'Aborted',
  cancel: 'Prompt cancelled', inject: 'Message injected', prompt: 'Continued', resume: 'Resumed',
  revert: 'Revert asked',
};
// A resolution as a step says it.
const SETTLED = { accept: 'Approved', reject: 'Rejected' };
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

// Whether a proposal is a command a rule may allow always.
function isCommand(entry) {
  return (entry.scheme === 'sh' || entry.scheme === 'env') && typeof entry.attributes?.command === 'string';
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
  const now = el('section', { id: 'now', class: 'now', 'aria-live': 'polite', 'aria-label': 'Now' });
  const timeline = el('div');
  const fidelity = el('div');
  const heading = el('h1', {}, alias);
  const subtitle = el('p', { class: 'muted alias' });
  let progressText = '';
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
  const changes = changesSection(ctx, alias, () => later());

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
          el('div', { class: 'entry-head' }, el('strong', {}, stepName(entry)), el('span', {}, target(entry.attributes) || entry.path)),
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

  // Who settled each proposal, by its path: `Approved by bo`.
  const settledBy = (actions) => new Map((actions ?? []).filter((action) => action.path)
    .map((action) => [action.path, `${SETTLED[action.action] ?? DONE[action.action] ?? action.action} by ${action.person ?? 'the operator'}`]));
  const refresh = async () => {
    run = await ctx.rpc.call('getRun', { run: alias });
    const telemetry = run.context?.telemetry ?? {};
    fill(heading, run.title ?? alias);
    fill(subtitle, run.title ? `Run ${alias}` : null);
    fill(meta, el('dl', { class: 'meta' },
      [['Status', status(run.status)], ['Model', run.model ?? ''], ['Turns', String(run.turn)],
        ['Started by', run.created_by ?? 'operator'],
        ['Started', when(run.created)],
        ['Took', took(run.created, run.last_event_ms ?? run.created, active(run.status))],
        ['Tokens', count(telemetry.total_tokens)],
        ['Cost', dollars(telemetry.cost)]]
        .map(([name, value]) => el('div', {}, el('dt', {}, name), el('dd', {}, value)))));
    fill(loops, run.loops?.length ? el('details', { class: 'loops' },
      el('summary', {}, `Loops (${run.loops.length})`),
      el('table', {},
        el('thead', {}, el('tr', {}, ['Loop', 'Mode', 'Status', 'Asked by', 'At'].map((name) => el('th', { scope: 'col' }, name)))),
        el('tbody', {}, run.loops.map((loop) => el('tr', {},
          el('td', {}, String(loop.sequence)), el('td', {}, loop.mode), el('td', {}, status(loop.status)),
          el('td', {}, loop.requested_by ?? 'operator'), el('td', {}, when(loop.created_at))))))) : null);
    renderPresent(run.present ?? []);
    abortButton.hidden = !(active(run.status) || run.status === 202 || run.status === 402);
    cancelButton.hidden = !(run.loops ?? []).some((loop) => (loop.requested_by ?? null) === me && IN_FLIGHT.includes(loop.status));
    resumeButton.hidden = !(run.status === 402 && ctx.me.role === 'admin');
    fill(pausedNote, run.status === 402 ? (run.paused?.cap
      ? [`Paused at a spend cap: ${capSaid(run.paused.cap)}. It resets at `, when(run.paused.cap.resets), '; the run goes on by itself once no cap of it stands.']
      : 'Paused at a spend cap.') : null);
    if (!active(run.status)) { progress.textContent = ''; progressText = ''; }
    const entries = [
      ...(run.context?.history ?? []),
      ...(run.context?.content ?? []).map((entry) => ({ ...entry, scheme: 'content', status: 200 })),
    ].map((entry, index) => ({ entry, index }))
      .sort((a, b) => (a.entry.turn - b.entry.turn) || (a.index - b.index))
      .map(({ entry }) => entry);
    renderProposals(entries.filter((entry) => entry.status === 202));
    renderNow(now, run, entries, progressText);
    fill(timeline, el('h2', {}, 'Conversation'), conversation(entries, settledBy(run.actions)));
    const [listed, session] = await Promise.all([
      ctx.rpc.call('getEntries', { run: alias, limit: 1000 }).catch(() => []),
      ctx.rpc.call('memory/session', { run: alias }).catch(() => null),
    ]);
    renderContext(fidelity, listed);
    renderNotes(notes, session);
    await changes.refresh().catch(said);
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
      progressText = `turn ${params.turn}: ${params.status}`;
      progress.textContent = progressText;
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
      // A revert raises its proposal: it waits for approval, not settled.
      if (params.path && params.action !== 'revert') {
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
    heading, subtitle, now, pausedNote, acted,
    el('div', { class: 'actions' }, ctx.canChange ? abortButton : null, cancelButton,
      ctx.me.role === 'admin' ? resumeButton : null),
    actionSaid, progress,
    proposals, changes.section, timeline, controls, here, meta, loops,
    el('h2', {}, 'Activity'), activity, fidelity, notes);
  stops.push(await watchLive(ctx, alias, progress));
  await refresh();
  return () => {
    later.cancel();
    stops.forEach((stop) => stop());
    ctx.rpc?.call('run/unwatch', { run: alias }).catch(() => {});
  };
}
