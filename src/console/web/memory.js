// A project's memory: its facts (search, write, erase) and the facts they replaced; the
// server-wide facts beside them, written and erased by admins only. Members write and erase
// the project's; viewers read.
import { el, fill, field } from './dom.js';

export async function memoryView(ctx, main, project) {
  const isAdmin = ctx.me.role === 'admin';
  const state = el('p', { class: 'muted', role: 'status' });
  const facts = el('div');
  const server = el('div');
  const history = el('div');
  const found = el('div', { 'aria-live': 'polite' });

  const refresh = async () => {
    const [mine, everyone, replaced] = await Promise.all([
      ctx.rpc.call('memory/list', {}),
      ctx.rpc.call('memory/list', { server: true }),
      ctx.rpc.call('memory/list', { history: true }),
    ]);
    state.textContent = mine.enabled ? 'Memory is on for this project.' : 'Memory is off for this project.';
    fill(facts, el('h2', {}, `Facts of ${project} (${mine.items.length})`),
      itemList(mine.items, ctx.canChange ? (item) => erase('memory/delete', item) : null));
    fill(server, el('h2', {}, `Server-wide facts (${everyone.items.length})`),
      itemList(everyone.items, isAdmin ? (item) => erase('memory/server/delete', item) : null));
    fill(history, el('details', {},
      el('summary', {}, `Replaced facts (${replaced.items.length})`),
      itemList(replaced.items, ctx.canChange ? (item) => erase('memory/delete', item, true) : null)));
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

  fill(main, el('h1', {}, `Memory of ${project}`), state, search, found,
    ctx.canChange ? writeForm(ctx, 'memory/set', 'fact', 'Remember a fact for this project', refresh, state) : null,
    isAdmin ? writeForm(ctx, 'memory/server/set', 'server-fact', 'Remember a fact for every project', refresh, state) : null,
    facts, server, history);
  await refresh();
  return () => {};
}

function itemList(items, onErase) {
  if (!items.length) return el('p', { class: 'muted' }, 'None.');
  return el('ul', { class: 'cards' }, items.map((item) => el('li', {},
    el('div', { class: 'entry-head' },
      el('strong', {}, item.topic),
      el('span', {}, item.writtenBy ? `by ${item.writtenBy}` : ''),
      el('span', {}, item.replacedAt ? `replaced ${item.replacedAt}` : `written ${item.writtenAt}`)),
    el('pre', {}, item.body),
    onErase ? el('div', { class: 'actions' },
      el('button', { type: 'button', class: 'danger', 'aria-label': `Erase ${item.topic}`, onclick: () => onErase(item) }, 'Erase')) : null)));
}

// Writes a fact on a topic (a fact on a remembered topic replaces it).
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
  return form;
}
