// What waits for you across your projects (`inbox`): runs waiting for your approval, and the
// runs you asked for that a cap stopped, that failed or that finished, newest first; each
// with a link to its run and a Dismiss button. Live: `inbox/changed` reads it again.
import { el, fill, link, debounce, status } from './dom.js';

const WHY = {
  approval: 'Waiting for approval',
  capped: 'Stopped by a spend cap',
  failed: 'Failed',
  finished: 'Finished',
};

// The number of items waiting, for the header's badge: `200+` past a page.
export async function inboxCount(ctx) {
  const page = await ctx.rpc.call('inbox', { limit: 200 });
  return page.next ? `${page.items.length}+` : String(page.items.length);
}

export async function inboxView(ctx, main) {
  const list = el('div');
  const said = el('p', { class: 'muted', role: 'status' });
  let items = [];
  let next = null;

  const render = () => {
    fill(list, items.length ? el('ul', { class: 'cards inbox' }, items.map((item) => el('li', { class: `inbox-${item.why}` },
      el('div', { class: 'entry-head' },
        el('strong', {}, WHY[item.why] ?? item.why), status(item.status),
        el('a', { href: link('p', item.project, 'r', item.run) }, `${item.project} / ${item.run}`)),
      el('p', {}, item.title),
      el('p', { class: 'muted' }, `since ${new Date(item.since).toLocaleString()}`),
      el('div', { class: 'actions' },
        el('button', { type: 'button', onclick: () => dismiss(item.id) }, 'Dismiss')))))
      : el('p', {}, 'Nothing waits for you.'),
    next ? el('div', { class: 'actions' }, el('button', { type: 'button', onclick: () => more() }, 'Show more')) : null);
  };
  const load = async () => {
    const page = await ctx.rpc.call('inbox', { limit: 50 });
    items = page.items;
    next = page.next;
    render();
  };
  const more = async () => {
    const page = await ctx.rpc.call('inbox', { limit: 50, before: next });
    items = items.concat(page.items);
    next = page.next;
    render();
  };
  const dismiss = (id) => ctx.rpc.call('inbox/dismiss', { id })
    .then(() => { items = items.filter((item) => item.id !== id); render(); })
    .catch((error) => { said.textContent = `Not dismissed: ${error.message}`; load(); });
  const later = debounce(() => load().catch((error) => { said.textContent = error.message; }), 300);
  const stop = ctx.rpc.on('inbox/changed', later);
  fill(main, el('h1', {}, 'Inbox'), said, list);
  await load();
  return () => { later.cancel(); stop(); };
}
