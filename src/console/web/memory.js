// A project's memory: its facts (search, write, erase) and the facts they replaced; the
// server-wide facts beside them, written and erased by admins only. Members write and erase
// the project's; viewers read.
import { el, fill, field } from './dom.js';

export async function memoryView(ctx, main, project) {
  const isAdmin = ctx.me.role === 'admin';
  const state = el('p', { class: 'muted', role: 'status' });
  const facts = el('section', { id: 'facts' });
  const server = el('section', { id: 'server-facts' });
  const history = el('section', { id: 'replaced-facts' });
  const found = el('div', { 'aria-live': 'polite' });

  const refresh = async () => {
    const [mine, everyone, replaced] = await Promise.all([
      ctx.rpc.call('memory/list', {}),
      ctx.rpc.call('memory/list', { server: true }),
      ctx.rpc.call('memory/list', { history: true }),
    ]);
    state.textContent = mine.enabled ? 'Memory is on for this project.' : 'Memory is off for this project.';
    fill(facts, el('h2', {}, `Facts of ${project} (${mine.items.length})`),
      itemList(mine.items, ctx.canChange ? { erase: (item) => erase('memory/delete', item), edit: projectForm?.edit } : {}));
    fill(server, el('h2', {}, `Server-wide facts (${everyone.items.length})`),
      itemList(everyone.items, isAdmin ? { erase: (item) => erase('memory/server/delete', item), edit: serverForm?.edit } : {}));
    fill(history, el('details', {},
      el('summary', {}, `Replaced facts (${replaced.items.length})`),
      itemList(replaced.items, ctx.canChange ? { erase: (item) => erase('memory/delete', item, true) } : {})));
  };
  const erase = (method, item, replaced = false) =>
    ctx.rpc.call(method, { id: item.id, ...(replaced ? { history: true } : {}) })
      .then(refresh, (error) => { state.textContent = `Not erased: ${error.message}`; });

  const [queryLabel, query] = field('memory-query', 'Search memory', { type: 'search' });
  const search = el('form', { class: 'form', role: 'search' }, queryLabel, query,
    el('div', { class: 'actions' }, el('button', { type: 'submit' }, 'Search')));
  search.addEventListener('submit', async (event) => {
    event.preventDefault();
    const words = query.value.trim();
    if (!words) { fill(found); return; }
    const hits = await ctx.rpc.call('memory/search', { query: words })
      .catch((error) => { state.textContent = error.message; return []; });
    fill(found, el('h2', {}, `Found (${hits.length})`), hits.length
      ? el('ul', { class: 'cards' }, hits.map((hit) => el('li', {},
        el('div', { class: 'entry-head' }, el('strong', {}, hit.topic), el('span', {}, hit.layer)),
        el('pre', {}, hit.body))))
      : el('p', {}, 'Nothing found.'));
  });

  const projectForm = ctx.canChange ? writeForm(ctx, 'memory/set', 'fact', 'Remember a fact for this project', refresh, state) : null;
  const serverForm = isAdmin ? writeForm(ctx, 'memory/server/set', 'server-fact', 'Remember a fact for every project', refresh, state) : null;
  fill(main, el('h1', {}, `Memory of ${project}`), state, search, found,
    projectForm?.form, serverForm?.form, facts, server, history);
  await refresh();
  return () => {};
}

// The items, each with Edit (fills the form that writes its layer) and Erase when given.
function itemList(items, { erase, edit } = {}) {
  if (!items.length) return el('p', { class: 'muted' }, 'None.');
  return el('ul', { class: 'cards' }, items.map((item) => el('li', {},
    el('div', { class: 'entry-head' },
      el('strong', {}, item.topic),
      el('span', {}, item.writtenBy ? `by ${item.writtenBy}` : ''),
      el('span', {}, item.replacedAt ? `replaced ${item.replacedAt}` : `written ${item.writtenAt}`)),
    el('pre', {}, item.body),
    erase || edit ? el('div', { class: 'actions' },
      edit ? el('button', { type: 'button', 'aria-label': `Edit ${item.topic}`, onclick: () => edit(item) }, 'Edit') : null,
      erase ? el('button', { type: 'button', class: 'danger', 'aria-label': `Erase ${item.topic}`, onclick: () => erase(item) }, 'Erase') : null) : null)));
}

// Writes a fact on a topic (a fact on a remembered topic replaces it): {form, edit(item)},
// edit filling it with an item to change.
function writeForm(ctx, method, id, title, changed, state) {
  const [topicLabel, topic] = field(`${id}-topic`, 'Topic', { required: true });
  const [bodyLabel, body] = field(`${id}-body`, 'Fact', { rows: 3, required: true });
  const form = el('form', { class: 'form' }, el('h2', {}, title), topicLabel, topic, bodyLabel, body,
    el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary' }, 'Remember')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    ctx.rpc.call(method, { topic: topic.value.trim(), body: body.value.trim() })
      .then(() => { topic.value = ''; body.value = ''; state.textContent = 'Remembered.'; return changed(); })
      .catch((error) => { state.textContent = `Not remembered: ${error.message}`; });
  });
  const edit = (item) => {
    topic.value = item.topic;
    body.value = item.body;
    body.focus();
  };
  return { form, edit };
}
