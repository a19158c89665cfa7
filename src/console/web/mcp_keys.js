// The Keys page's "MCP servers" part: the signed-in person's own credentials for the MCP
// servers that take each person's own (`mcpCredentials/list`, `mcpCredentials/set`,
// `mcpCredentials/remove`), a row per such server: when set and last used, never the value
// (no method returns it); a field sets or replaces it, Remove forgets it after a
// confirmation. No such server: the part says so.
import { el, fill, confirmed } from './dom.js';
import { when } from './time.js';

// What is known of a stored credential, in words.
function standing(credential) {
  if (!credential) return 'not set';
  return ['set on ', when(credential.updatedAt), ', ', credential.lastUsedAt ? ['last used ', when(credential.lastUsedAt)] : 'not used yet'];
}

export async function mcpCredentialsSection(ctx) {
  const said = el('p', { class: 'muted said', 'aria-live': 'polite' });
  const table = el('div');
  const failed = (what) => (error) => { said.textContent = `${what}: ${error.message}`; };
  const refresh = async () => {
    const { servers, credentials } = await ctx.rpc.call('mcpCredentials/list', {});
    const stored = new Map(credentials.map((credential) => [credential.server, credential]));
    if (!servers.length) {
      fill(table, el('p', {}, 'No MCP server here takes each person\'s own credential.'));
      return;
    }
    fill(table, el('table', { class: 'keys mcp-credentials' },
      el('thead', {}, el('tr', {}, ['Server', 'Your credential', 'New credential', '']
        .map((name) => el('th', { scope: 'col' }, name)))),
      el('tbody', {}, servers.map((server) => row(server, stored.get(server))))));
  };
  const row = (server, credential) => {
    const id = `mcp-credential-${server}`;
    const input = el('input', { id, type: 'password', autocomplete: 'off', required: true });
    const verb = credential ? 'Replace' : 'Set';
    const form = el('form', { class: 'inline' },
      el('label', { for: id, class: 'muted' }, `New ${server} credential `), input, ' ',
      el('button', { type: 'submit', class: 'primary', 'aria-label': `${verb} ${server} credential` }, verb));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const value = input.value;
      input.value = '';
      ctx.rpc.call('mcpCredentials/set', { server, value })
        .then(() => { said.textContent = `Your ${server} credential is ${credential ? 'replaced' : 'set'}.`; return refresh(); })
        .catch(failed(server));
    });
    return el('tr', { 'data-server': server },
      el('th', { scope: 'row' }, server),
      el('td', {}, standing(credential)),
      el('td', {}, form),
      el('td', {}, credential ? confirmed({
        label: 'Remove',
        name: `Remove ${server} credential`,
        question: `Forget your ${server} credential? Your runs will not reach ${server} until you add one.`,
        yes: 'Yes, forget it',
        act: () => ctx.rpc.call('mcpCredentials/remove', { server })
          .then(() => { said.textContent = `Your ${server} credential is removed.`; return refresh(); }),
      }) : null));
  };
  await refresh();
  return el('section', { class: 'mcp-credentials', 'aria-labelledby': 'mcp-credentials-heading' },
    el('h2', { id: 'mcp-credentials-heading' }, 'MCP servers'),
    el('p', { class: 'muted' }, 'Your own credentials for the MCP servers that take each person\'s own: the runs you start reach them with yours. Sealed on the server, never shown again.'),
    table, said);
}
