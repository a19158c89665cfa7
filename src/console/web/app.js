// The console: sign-in, then views chosen by the URL's fragment (#/ projects,
// #/p/<project> its runs, #/p/<project>/r/<run> a run, #/p/<project>/memory its memory,
// #/usage, #/keys, #/admin, #/inbox) over one JSON-RPC connection bound to the project shown. The
// header's Inbox says how many things wait for the person, live (`inbox/changed`).
import { Rpc } from './rpc.js';
import { el, fill, link, debounce } from './dom.js';
import { projectsView } from './projects.js';
import { runsView } from './runs.js';
import { runView } from './run.js';
import { memoryView } from './memory.js';
import { usageView } from './usage.js';
import { adminView } from './admin.js';
import { tokensView } from './tokens.js';
import { inboxView, inboxCount } from './inbox.js';
import { webhooksView } from './webhooks.js';
import { keysView } from './keys.js';

const main = document.getElementById('main');
const who = document.getElementById('who');
const linkState = document.getElementById('link');
const crumbs = document.getElementById('crumbs');
const signOutButton = document.getElementById('sign-out');
const pages = document.getElementById('pages');

const ctx = { rpc: null, me: null, canChange: false, bound: null };
let leave = () => {};
let shown = 0;

// The identity provider the sign-in page offers (`{name, start}`), when the server has one.
let provider = null;

async function session() {
  const response = await fetch('session', { headers: { accept: 'application/json' } });
  if (response.status === 401) {
    provider = (await response.json().catch(() => ({}))).provider ?? null;
    return null;
  }
  if (!response.ok) throw new Error(`the server answered ${response.status}`);
  return response.json();
}

function signInView(message) {
  leave();
  leave = () => {};
  who.textContent = '';
  signOutButton.hidden = true;
  fill(crumbs);
  fill(pages);
  const token = el('input', { id: 'token', type: 'password', autocomplete: 'current-password', required: true });
  const error = el('p', { class: 'error', role: 'alert' }, message ?? '');
  const form = el('form', { class: 'form', id: 'sign-in' },
    el('h1', {}, 'Sign in'),
    provider ? el('div', { class: 'actions' },
      el('button', { type: 'button', class: 'primary', onclick: () => window.location.assign(provider.start) },
        `Sign in with ${provider.name}`)) : null,
    el('label', { for: 'token' }, provider ? 'Or your token' : 'Your token'), token,
    el('p', { class: 'muted' }, 'The token of the users file, or the server\'s shared token.'),
    el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary' }, 'Sign in')),
    error);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const response = await fetch('session', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ token: token.value }),
    });
    token.value = '';
    if (response.ok) {
      start(await response.json());
    } else {
      const body = await response.json().catch(() => ({}));
      error.textContent = body.error ?? `Not signed in (${response.status}).`;
    }
  });
  fill(main, form);
  token.focus();
}

function start(me) {
  ctx.me = me;
  ctx.canChange = me.role !== 'viewer';
  ctx.bound = null;
  who.textContent = `${me.person ?? 'operator'} (${me.role})`;
  signOutButton.hidden = false;
  const waiting = el('span', { class: 'badge', id: 'inbox-count', 'aria-live': 'polite' });
  fill(pages, el('ul', {},
    el('li', {}, el('a', { href: '#/' }, 'Projects')),
    el('li', {}, el('a', { href: '#/inbox' }, 'Inbox ', waiting)),
    el('li', {}, el('a', { href: '#/usage' }, 'Usage')),
    me.person ? el('li', {}, el('a', { href: '#/tokens' }, 'Tokens')) : null,
    me.person ? el('li', {}, el('a', { href: '#/keys' }, 'Keys')) : null,
    me.role === 'admin' ? el('li', {}, el('a', { href: '#/admin' }, 'Admin')) : null));
  ctx.rpc = new Rpc();
  const counted = debounce(() => inboxCount(ctx).then((count) => { waiting.textContent = count; }, () => {}), 300);
  ctx.rpc.on('inbox/changed', counted);
  counted();
  let opened = false;
  ctx.rpc.addEventListener('open', async () => {
    linkState.textContent = '';
    if (!opened) { opened = true; return; }
    // Back after a drop (a laptop that slept): bind again, then hand the views what they
    // missed.
    ctx.bound = null;
    counted();
    await show();
    await ctx.rpc?.replay();
  });
  ctx.rpc.addEventListener('close', async () => {
    linkState.textContent = 'reconnecting…';
    const still = await session().catch(() => ctx.me);
    if (!still && ctx.rpc) {
      ctx.rpc.close();
      ctx.rpc = null;
      signInView('Your session ended; sign in again.');
    }
  });
  show();
}

async function signOut() {
  await fetch('session', { method: 'DELETE' });
  ctx.rpc?.close();
  ctx.rpc = null;
  await session().catch(() => null);
  signInView('Signed out.');
}

// Binds the connection to `name` (at the root the server knows), once per connection.
async function bind(name) {
  if (ctx.bound === name) return;
  const projects = await ctx.rpc.call('getProjects');
  const project = projects.find((candidate) => candidate.name === name);
  if (!project) throw new Error(`No project '${name}' you may open.`);
  await ctx.rpc.call('init', { name, projectRoot: project.projectRoot, client: { name: 'console', kind: 'console' } });
  ctx.bound = name;
}

function breadcrumbs(parts) {
  const items = [el('li', {}, el('a', { href: '#/' }, 'Projects'))];
  if (parts.project) items.push(el('li', {}, el('a', { href: link('p', parts.project) }, parts.project)));
  if (parts.run) items.push(el('li', { 'aria-current': 'page' }, parts.run));
  if (parts.memory) items.push(el('li', { 'aria-current': 'page' }, 'Memory'));
  if (parts.webhooks) items.push(el('li', { 'aria-current': 'page' }, 'Webhooks'));
  if (parts.page) items.push(el('li', { 'aria-current': 'page' }, parts.page));
  fill(crumbs, el('ol', {}, items));
}

// What the fragment shows: {page} (usage, keys, admin, inbox, tokens), {project, run?, memory?, webhooks?}
// or {} (projects).
function route() {
  const [, kind, project, sub, run] = location.hash.split('/').map((part) => decodeURIComponent(part ?? ''));
  if (kind === 'usage') return { page: 'Usage' };
  if (kind === 'admin') return { page: 'Admin' };
  if (kind === 'tokens') return { page: 'Tokens' };
  if (kind === 'keys') return { page: 'Keys' };
  if (kind === 'inbox') return { page: 'Inbox' };
  if (kind !== 'p' || !project) return {};
  return { project, run: sub === 'r' ? run : null, memory: sub === 'memory', webhooks: sub === 'webhooks' };
}

async function show() {
  if (!ctx.rpc) return;
  const turn = ++shown;
  leave();
  leave = () => {};
  const parts = route();
  breadcrumbs(parts);
  try {
    let stop;
    if (parts.page === 'Usage') {
      stop = await usageView(ctx, main);
    } else if (parts.page === 'Inbox') {
      stop = await inboxView(ctx, main);
    } else if (parts.page === 'Tokens') {
      stop = await tokensView(ctx, main);
    } else if (parts.page === 'Keys') {
      stop = await keysView(ctx, main, bind);
    } else if (parts.page === 'Admin') {
      stop = await adminView(ctx, main, bind);
    } else if (parts.run) {
      await bind(parts.project);
      stop = await runView(ctx, main, parts.project, parts.run);
    } else if (parts.webhooks) {
      await bind(parts.project);
      stop = await webhooksView(ctx, main, parts.project);
    } else if (parts.memory) {
      await bind(parts.project);
      stop = await memoryView(ctx, main, parts.project);
    } else if (parts.project) {
      await bind(parts.project);
      stop = await runsView(ctx, main, parts.project);
    } else {
      stop = await projectsView(ctx, main);
    }
    if (turn === shown) leave = stop; else stop();
  } catch (error) {
    if (turn === shown) fill(main, el('p', { class: 'error', role: 'alert' }, error.message));
  }
  if (turn === shown) main.focus({ preventScroll: true });
}

signOutButton.addEventListener('click', signOut);
window.addEventListener('hashchange', show);
session().then((me) => (me ? start(me) : signInView()), (error) => signInView(error.message));
