// What waits for you across your projects (`inbox`): runs waiting for your approval, and the
// runs you asked for that a cap stopped, that failed or that finished, newest first; each
// with a link to its run and a Dismiss button. Live: `inbox/changed` reads it again. The
// count is also said in the tab's title, and, once the person turns them on from this page,
// each item that comes while the page is open is a browser notification.
import { el, fill, link, debounce, status } from './dom.js';
import { when } from './time.js';

const WHY = {
  approval: 'Waiting for approval',
  capped: 'Stopped by a spend cap',
  failed: 'Failed',
  finished: 'Finished',
};

// The tab's title with nothing waiting.
const TITLE = document.title;
// Where the person's choice of browser notifications is kept ('on' or 'off').
const ALERTS = 'rummy.inboxNotifications';
// The ids of the items already told of (or there when the page loaded), for whom.
let known = null;
let knownFor = null;

// Whether the person turned browser notifications on and the browser allows them.
function alertsOn() {
  return 'Notification' in window && Notification.permission === 'granted'
    && localStorage.getItem(ALERTS) === 'on';
}

// A browser notification for each of `items` not seen before: none for the items there when
// the page loaded (the first read), nor when the person has not turned them on.
function alertNew(ctx, items) {
  if (knownFor !== ctx.me) {
    known = null;
    knownFor = ctx.me;
  }
  const first = known === null;
  known ??= new Set();
  for (const item of items) {
    if (known.has(item.id)) continue;
    known.add(item.id);
    if (first || !alertsOn()) continue;
    const shown = new Notification(WHY[item.why] ?? item.why,
      { body: `${item.project} / ${item.run}: ${item.title}`, tag: item.id });
    shown.onclick = () => { window.focus(); location.hash = link('p', item.project, 'r', item.run); };
  }
}

// The number of items waiting, for the header's badge (`200+` past a page), also said in the
// tab's title ("(3) rummy console"); new items are notified (`alertNew`).
export async function inboxCount(ctx) {
  const page = await ctx.rpc.call('inbox', { limit: 200 });
  const count = page.next ? `${page.items.length}+` : String(page.items.length);
  document.title = page.items.length ? `(${count}) ${TITLE}` : TITLE;
  alertNew(ctx, page.items);
  return count;
}

// The opt-in to browser notifications: a button that asks the browser's permission (only
// when clicked) and keeps the person's choice in this browser.
function notificationsChoice() {
  const box = el('div', { class: 'actions', id: 'inbox-notifications' });
  const render = (said) => {
    if (!('Notification' in window)) {
      fill(box, el('p', { class: 'muted' }, 'This browser cannot show notifications.'));
      return;
    }
    const on = alertsOn();
    fill(box,
      el('p', { class: 'muted', role: 'status' }, said ?? (on
        ? 'Browser notifications are on: you are told when something new waits for you.'
        : 'Browser notifications are off.')),
      el('button', { type: 'button', onclick: () => (on ? turnOff() : turnOn()) },
        on ? 'Stop notifying me' : 'Notify me when something waits'));
  };
  const turnOn = async () => {
    const answer = await Notification.requestPermission();
    if (answer === 'granted') {
      localStorage.setItem(ALERTS, 'on');
      render();
    } else {
      render('The browser does not allow notifications from this page (its site settings can).');
    }
  };
  const turnOff = () => {
    localStorage.setItem(ALERTS, 'off');
    render();
  };
  render();
  return box;
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
      el('p', { class: 'muted' }, 'since ', when(item.since)),
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
  fill(main, el('h1', {}, 'Inbox'), notificationsChoice(), said, list);
  await load();
  return () => { later.cancel(); stop(); };
}
