// A person's personal access tokens (`tokens/mint`, `tokens/list`, `tokens/revoke`): a form
// minting one for an editor (name, days until it expires, read-only, one project), after
// which the token is shown this once with a Copy button; the person's tokens (never the
// token: its first characters), when each was made, expires and was last used, each with
// Revoke after a confirmation. An admin also sees everyone's tokens and revokes any. The
// operator (the shared token) has no tokens: the page says to sign in as a person.
import { el, fill, field, confirmed } from './dom.js';
import { when } from './time.js';

// Unix seconds as the time element the rest of the console shows.
const at = (seconds) => (seconds == null ? '—' : when(seconds * 1000));

const STATES = { live: 'live', expired: 'expired', revoked: 'revoked' };

function table(tokens, withPerson, revoke) {
  if (!tokens.length) return el('p', { class: 'muted' }, 'No tokens yet.');
  const heads = [withPerson ? 'Person' : null, 'Name', 'Starts with', 'Scope', 'Made', 'Expires', 'Last used', 'State', '']
    .filter((text) => text !== null);
  return el('table', { class: 'tokens' },
    el('thead', {}, el('tr', {}, heads.map((text) => el('th', { scope: 'col' }, text)))),
    el('tbody', {}, tokens.map((token) => el('tr', { 'data-token': token.id },
      withPerson ? el('td', {}, token.person) : null,
      el('td', {}, token.name), el('td', {}, el('code', {}, `${token.prefix}…`)),
      el('td', {}, [token.readOnly ? 'read-only' : 'read-write', token.project ? `project ${token.project}` : 'all projects'].join(', ')),
      el('td', {}, at(token.createdAt)), el('td', {}, at(token.expiresAt)), el('td', {}, at(token.lastUsedAt)),
      el('td', {}, STATES[token.state] ?? token.state),
      el('td', {}, token.state === 'live' ? confirmed({
        label: 'Revoke',
        name: `Revoke ${token.person}'s token ${token.name}`,
        question: `Revoke ${token.name}? It opens nothing more, and its connections can do nothing more.`,
        yes: 'Yes, revoke',
        act: () => revoke(token),
      }) : null)))));
}

export async function tokensView(ctx, main) {
  if (!ctx.me.person) {
    fill(main, el('h2', {}, 'Tokens'),
      el('p', {}, 'The operator (the shared token) has no personal tokens: sign in with a person\'s token to mint some.'));
    return () => {};
  }
  const secret = el('div', { class: 'secret' });
  const said = el('p', { class: 'muted said', 'aria-live': 'polite' });
  const mine = el('section', { 'aria-label': 'Your tokens' });
  const everyone = el('section', { 'aria-label': 'Everyone\'s tokens' });
  const failed = (what) => (error) => { said.textContent = `${what}: ${error.message}`; };

  const showToken = (minted) => {
    const copied = el('span', { class: 'muted', role: 'status' });
    const text = el('code', { id: 'minted-token' }, minted.token);
    const copy = () => navigator.clipboard.writeText(minted.token).then(
      () => { copied.textContent = 'Copied.'; },
      () => { getSelection().selectAllChildren(text); copied.textContent = 'Selected: copy it with your keyboard.'; });
    const hide = () => fill(secret);
    fill(secret, el('div', { class: 'banner-ok', role: 'alert' },
      el('p', {}, `Your token ${minted.name}, for your editor (rummy acp --url … with it in its token file, or a WebSocket's Authorization: Bearer):`),
      el('p', {}, text, ' ', el('button', { type: 'button', onclick: copy }, 'Copy'), ' ', copied),
      el('p', {}, el('strong', {}, 'It will not be shown again: copy it now.'), ' ',
        el('button', { type: 'button', onclick: hide }, 'Done'))));
  };

  const revoke = (token) => ctx.rpc.call('tokens/revoke', { id: token.id })
    .then(() => { said.textContent = `${token.name} revoked.`; return refresh(); });

  const [nameLabel, name] = field('token-name', 'Name', { required: true, maxlength: '64', placeholder: 'laptop' });
  const [daysLabel, days] = field('token-days', 'Expires in (days, 1 to 366)', { type: 'number', min: '1', max: '366', value: '30', required: true });
  const readOnly = el('input', { id: 'token-read-only', type: 'checkbox' });
  const project = el('select', { id: 'token-project' }, el('option', { value: '' }, 'All my projects'));
  const form = el('form', { class: 'form token' },
    el('h3', {}, 'Mint a token'), nameLabel, name, daysLabel, days,
    el('label', { for: 'token-read-only' }, readOnly, ' Read-only (acts as a viewer)'),
    el('label', { for: 'token-project' }, 'Project'), project,
    el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary' }, 'Mint token')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const params = { name: name.value.trim(), expiresInDays: Number(days.value), readOnly: readOnly.checked };
    if (project.value) params.project = project.value;
    ctx.rpc.call('tokens/mint', params)
      .then((minted) => { showToken(minted); name.value = ''; said.textContent = `${minted.name} minted.`; return refresh(); })
      .catch(failed('Not minted'));
  });

  async function refresh() {
    const { tokens } = await ctx.rpc.call('tokens/list', {});
    fill(mine, el('h2', {}, 'Your tokens'), table(tokens, false, revoke));
    if (ctx.me.role === 'admin') {
      const all = await ctx.rpc.call('tokens/list', { all: true });
      fill(everyone, el('h2', {}, 'Everyone\'s tokens'), table(all.tokens, true, revoke));
    }
  }

  const projects = await ctx.rpc.call('getProjects');
  projects.forEach((known) => project.append(el('option', { value: known.name }, known.name)));
  fill(main, el('h2', {}, 'Tokens'),
    el('p', { class: 'muted' }, 'Personal access tokens open rummy for your editors as you, within what you give each: read-only, one project, until it expires or you revoke it.'),
    secret, said, form, mine, everyone);
  await refresh();
  return () => {};
}
