// The parts of a run page a lead opens when needed: what the model keeps in its context (its
// entries by how much of each it sees) and the run's session notes.
import { el, fill, status, count, longCell } from './dom.js';

const LEVELS = [
  ['full', 'In full'], ['summary', 'As a summary'], ['index', 'By name only'], ['archive', 'Put away'],
];

export function renderContext(node, entries) {
  fill(node, el('details', { class: 'context' },
    el('summary', {}, el('h2', {}, `What the model keeps in mind (${entries.length})`)),
    el('p', { class: 'muted' }, 'Each file, command and note of the run, by how much of it the model reads each turn.'),
    entries.length ? LEVELS.map(([level, name]) => {
      const these = entries.filter((entry) => entry.fidelity === level);
      return el('details', { class: 'fidelity', open: level === 'full' && these.length <= 30 },
        el('summary', {}, `${name} (${these.length})`),
        these.length ? el('table', {},
          el('thead', {}, el('tr', {}, ['Path', 'Status', 'Tokens'].map((title) => el('th', { scope: 'col' }, title)))),
          el('tbody', {}, these.map((entry) => el('tr', {},
            longCell(entry.path), el('td', {}, status(entry.status), ` (${entry.status})`), el('td', {}, count(entry.tokens))))))
          : el('p', { class: 'muted' }, 'None.'));
    }) : el('p', {}, 'No entries.')));
}

export function renderNotes(node, session) {
  fill(node, el('h2', {}, 'Session notes'),
    session?.rendered ? el('pre', { class: 'notes' }, session.rendered)
      : el('p', { class: 'muted' }, 'No session notes yet.'));
}
