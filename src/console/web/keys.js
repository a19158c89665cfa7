// Keys (#/keys): the signed-in person's own provider keys (`keys/list`, `keys/set`,
// `keys/remove`), a row per provider that takes one: when it was set and last used, never
// the key (no method returns it); a field sets or replaces it, Remove forgets it after a
// confirmation. For admins, each project's "personal keys required" (`keys/required`, read
// and set with the project bound).
import { el, fill, confirmed } from './dom.js';
import { when } from './time.js';
import { mcpCredentialsSection } from './mcp_keys.js';

// The providers that take a key (src/llm: ollama takes none).
const PROVIDERS = ['openai', 'openrouter', 'xai'];

// What is known of a stored key, in words: `set on …, last used …`.
function standing(key) {
  if (!key) return 'not set';
  return ['set on ', when(key.updatedAt), ', ', key.lastUsedAt ? ['last used ', when(key.lastUsedAt)] : 'not used yet'];
}

export async function keysView(ctx, main, bind) {
  const said = el('p', { class: 'muted said', 'aria-live': 'polite' });
  const table = el('div');
  const failed = (what) => (error) => { said.textContent = `${what}: ${error.message}`; };
  const refresh = async () => {
    const { keys } = await ctx.rpc.call('keys/list', {});
    const stored = new Map(keys.map((key) => [key.provider, key]));
    fill(table, el('table', { class: 'keys' },
      el('thead', {}, el('tr', {}, ['Provider', 'Your key', 'New key', '']
        .map((name) => el('th', { scope: 'col' }, name)))),
      el('tbody', {}, PROVIDERS.map((provider) => row(provider, stored.get(provider))))));
  };
  const row = (provider, key) => {
    const id = `key-${provider}`;
    const input = el('input', { id, type: 'password', autocomplete: 'off', required: true });
    const form = el('form', { class: 'inline' },
      el('label', { for: id, class: 'muted' }, `New ${provider} key `), input, ' ',
      el('button', { type: 'submit', class: 'primary', 'aria-label': `${key ? 'Replace' : 'Set'} ${provider} key` }, key ? 'Replace' : 'Set'));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const value = input.value;
      input.value = '';
      ctx.rpc.call('keys/set', { provider, key: value })
        .then(() => { said.textContent = `Your ${provider} key is ${key ? 'replaced' : 'set'}.`; return refresh(); })
        .catch(failed(provider));
    });
    return el('tr', { 'data-provider': provider },
      el('th', { scope: 'row' }, provider),
      el('td', {}, standing(key)),
      el('td', {}, form),
      el('td', {}, key ? confirmed({
        label: 'Remove',
        name: `Remove ${provider} key`,
        question: `Forget your ${provider} key? Your runs will use the server's, where the project allows it.`,
        yes: 'Yes, forget it',
        act: () => ctx.rpc.call('keys/remove', { provider })
          .then(() => { said.textContent = `Your ${provider} key is removed.`; return refresh(); }),
      }) : null));
  };
  await refresh();
  fill(main,
    el('h1', {}, 'Keys'),
    el('p', { class: 'muted' }, 'Your own provider keys: the runs you start call their provider with yours. Sealed on the server, never shown again.'),
    table, said,
    await mcpCredentialsSection(ctx),
    ctx.me.role === 'admin' ? await requiredSection(ctx, bind) : null);
  return () => {};
}

// For admins: a checkbox per project, "personal keys required" (each read and set with the
// project bound, as the method needs).
async function requiredSection(ctx, bind) {
  const projects = await ctx.rpc.call('getProjects', {});
  const said = el('p', { class: 'muted said', 'aria-live': 'polite' });
  const rows = [];
  for (const project of projects) {
    await bind(project.name);
    const { required } = await ctx.rpc.call('keys/required', {});
    const id = `keys-required-${project.name}`;
    const box = el('input', { id, type: 'checkbox', checked: required });
    box.addEventListener('change', () => {
      const wanted = box.checked;
      bind(project.name)
        .then(() => ctx.rpc.call('keys/required', { required: wanted }))
        .then(({ required: now }) => {
          box.checked = now;
          said.textContent = `${project.name}: personal keys ${now ? 'required' : 'not required'}.`;
        })
        .catch((error) => { box.checked = !wanted; said.textContent = `${project.name}: ${error.message}`; });
    });
    rows.push(el('li', {}, box, ' ', el('label', { for: id }, `Personal keys required in ${project.name}`)));
  }
  return el('section', { class: 'keys-required', 'aria-labelledby': 'keys-required-heading' },
    el('h2', { id: 'keys-required-heading' }, 'Personal keys required'),
    el('p', { class: 'muted' }, 'Where required, a run whose starter has no key of their own for its provider stops before any model call; elsewhere it uses the server\'s.'),
    projects.length ? el('ul', {}, rows) : el('p', {}, 'No project yet.'),
    said);
}
