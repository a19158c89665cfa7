// A run as a conversation: what it is doing now on top (the latest answer once it is done),
// then each prompt and answer in order, rendered as safe markdown, with the commands, edits
// and other steps between them as collapsed <details> whose summary says the outcome in
// words ("Approved by bo, exit 0"); the status code is said only inside.
import { el, fill, statusWords } from './dom.js';
import { diffView } from './diff.js';
import { markdown } from './markdown.js';

// Schemes whose entries are the model's words to people.
const ANSWERS = ['content', 'update', 'summarize'];
// What a step of each scheme is called.
const STEPS = {
  sh: 'Command', env: 'Command', set: 'Edit', rm: 'Removal', mv: 'Move', cp: 'Copy',
  get: 'Read', known: 'Noted', unknown: 'Question noted', ask_user: 'Question', search: 'Search',
};

export function target(attributes) {
  for (const key of ['command', 'file', 'path', 'question', 'url']) {
    if (typeof attributes?.[key] === 'string') return attributes[key];
  }
  return '';
}

// An entry's content: its edit as a diff when it has one, else its body.
export function content(entry) {
  if (typeof entry.attributes?.patch === 'string' && entry.attributes.patch) return diffView(entry.attributes.patch);
  return entry.body ? el('pre', {}, entry.body) : null;
}

export function stepName(entry) {
  return STEPS[entry.scheme] ?? entry.scheme ?? 'Step';
}

// A command's exit status: 0 when it succeeded, else the one its output's footer says.
function exitOf(entry) {
  if (entry.scheme !== 'sh' && entry.scheme !== 'env') return null;
  if (entry.status === 200) return 0;
  const footer = /\[exit status (\d+)\]\s*$/.exec(entry.body ?? '');
  return footer ? Number(footer[1]) : null;
}

// A step's outcome in words: who settled it ("Approved by bo"), or its status; its exit.
function outcome(entry, settled) {
  const said = settled.get(entry.path) ?? statusWords(entry.status);
  const exit = settled.get(entry.path)?.startsWith('Rejected') ? null : exitOf(entry);
  return exit === null ? said : `${said}, exit ${exit}`;
}

function step(entry, settled) {
  const words = entry.status === 202 ? 'Waiting for approval' : outcome(entry, settled);
  const kind = entry.scheme === 'sh' || entry.scheme === 'env' ? 'command' : entry.scheme === 'set' ? 'edit' : 'other';
  return el('li', { class: `step ${kind}` }, el('details', {},
    el('summary', {}, el('strong', {}, stepName(entry)), ' ', el('span', { class: 'target' }, target(entry.attributes)),
      ' — ', el('span', { class: `outcome${entry.status >= 400 ? ' bad' : ''}` }, words)),
    entry.status === 202 ? el('p', { class: 'muted' }, 'Waiting for approval: see above.') : content(entry),
    el('p', { class: 'muted code' }, `Entry ${entry.path}, turn ${entry.turn}, status code ${entry.status}`)));
}

// The run's entries (sorted) as a conversation list; `settled` maps a path to who settled it.
export function conversation(entries, settled) {
  if (!entries.length) return el('p', {}, 'Nothing yet.');
  return el('ol', { class: 'conversation' }, entries.map((entry) => {
    if (entry.scheme === 'prompt') {
      return el('li', { class: 'prompt' }, el('p', { class: 'who' }, 'Asked'), markdown(entry.body));
    }
    if (ANSWERS.includes(entry.scheme)) {
      return el('li', { class: `answer ${entry.scheme}` }, markdown(entry.body));
    }
    return step(entry, settled);
  }));
}

// The latest answer of the run: its newest summary, else its newest words.
function latestAnswer(entries) {
  const answers = entries.filter((entry) => ANSWERS.includes(entry.scheme) && entry.body);
  return answers.filter((entry) => entry.scheme === 'summarize').pop() ?? answers.pop() ?? null;
}

// What the run is doing now, in words, into `node`: waiting for approval of what, working,
// paused, ended (done with its answer, aborted, failed).
export function renderNow(node, run, entries, progress) {
  const pending = entries.filter((entry) => entry.status === 202);
  let head;
  let body = null;
  if (pending.length) {
    const first = pending[0];
    head = `Waiting for your approval: ${stepName(first).toLowerCase()} ${target(first.attributes) || first.path}`
      + (pending.length > 1 ? ` and ${pending.length - 1} more` : '');
  } else if (run.status === 100 || run.status === 102) {
    head = progress ? `Working: ${progress}` : 'Working…';
  } else if (run.status === 402) {
    head = 'Paused at a spend cap';
  } else {
    head = statusWords(run.status);
    const answer = latestAnswer(entries);
    if (answer) body = markdown(answer.body);
  }
  fill(node, el('p', { class: 'state' }, el('strong', {}, head)), body);
}
