// What a run changed (`run/changes`): the files its accepted proposals changed, each as one
// combined diff (from before its first change to after its last; diff.js draws it), for the
// whole run or one loop of it, and for members and admins a Revert button per file, which
// raises a proposal putting the file back (`run/revert`): it then waits for approval like any
// other, above.
import { el, fill } from './dom.js';
import { diffView } from './diff.js';

const SAID = { added: 'added', modified: 'modified', deleted: 'deleted' };

// The section and its `refresh()`; `changed()` is called once a revert is raised.
export function changesSection(ctx, alias, changed) {
  const section = el('section', { id: 'changes', 'aria-labelledby': 'changes-title' });
  const said = el('p', { class: 'muted', role: 'status', id: 'changes-said' });
  let scope = null;

  const revert = (path) => {
    const params = scope === null ? { run: alias, path } : { run: alias, path, loop: scope };
    ctx.rpc.call('run/revert', params).then(() => {
      said.textContent = `Revert of ${path} proposed: approve it above.`;
      changed();
    }, (error) => { said.textContent = `Not reverted: ${error.message}`; });
  };

  const scopes = (loops) => el('div', { class: 'actions', role: 'group', 'aria-label': 'Which changes' },
    [null, ...loops].map((loop) => el('button', {
      type: 'button',
      class: loop === scope ? 'primary' : null,
      'aria-pressed': loop === scope ? 'true' : 'false',
      onclick: () => { scope = loop; refresh(); },
    }, loop === null ? 'Overall' : `Loop ${loop}`)));

  const file = (change) => el('li', { class: 'changed-file' },
    el('div', { class: 'entry-head' },
      el('strong', {}, change.path),
      el('span', { class: 'muted' }, `${SAID[change.status] ?? change.status}, +${change.added} −${change.removed}`),
      ctx.canChange ? el('button', { type: 'button', class: 'revert', onclick: () => revert(change.path) }, 'Revert') : null),
    diffView(change.diff));

  const refresh = async () => {
    const params = scope === null ? { run: alias } : { run: alias, loop: scope };
    const changes = await ctx.rpc.call('run/changes', params);
    fill(section, el('h2', { id: 'changes-title' }, 'What changed'),
      changes.loops.length ? scopes(changes.loops) : null,
      changes.files.length
        ? el('ul', { class: 'cards changes' }, changes.files.map(file))
        : el('p', { class: 'muted' }, 'No file changed yet.'),
      said);
  };
  return { section, refresh };
}
