// A unified diff (the `patch` of a proposed edit) as lines marked added, removed, hunk or
// file header, each line a text node.
import { el } from './dom.js';

function kind(line) {
  if (line.startsWith('+++') || line.startsWith('---')) return 'file';
  if (line.startsWith('@@')) return 'hunk';
  if (line.startsWith('+')) return 'add';
  if (line.startsWith('-')) return 'del';
  return 'same';
}

const SAID = { add: 'added', del: 'removed' };

export function diffView(patch) {
  const lines = patch.replace(/\n$/, '').split('\n');
  const added = lines.filter((line) => kind(line) === 'add').length;
  const removed = lines.filter((line) => kind(line) === 'del').length;
  return el('figure', { class: 'diff' },
    el('figcaption', { class: 'muted' }, `${added} line${added === 1 ? '' : 's'} added, ${removed} removed`),
    el('pre', {}, lines.map((line) => {
      const marked = kind(line);
      return el('span', { class: `line ${marked}`, title: SAID[marked] }, line + '\n');
    })));
}
