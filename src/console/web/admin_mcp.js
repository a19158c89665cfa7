// The MCP servers as one project sees them, for admins: each with its state and tools,
// Restart and Remove (which asks first), and a form adding one (`mcp/add`: a command with
// its arguments and env, or a URL with its headers; env values and headers are sent once
// and never shown again). `changed` is called after each change.
import { el, fill, field, longCell, confirmed } from './dom.js';

// `KEY=value` lines as an object (blank lines skipped).
function pairs(text) {
  const out = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf('=');
    if (line.trim() && at > 0) out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

export function mcpSection(ctx, changed) {
  const table = el('div');
  const said = el('p', { class: 'muted said', 'aria-live': 'polite' });
  const failed = (what) => (error) => { said.textContent = `${what}: ${error.message}`; };
  const [nameLabel, name] = field('mcp-name', 'Name (lowercase, digits, _)', { placeholder: 'github' });
  const [commandLabel, command] = field('mcp-command', 'Command (stdio)', { placeholder: 'github-mcp-server' });
  const [argsLabel, args] = field('mcp-args', 'Arguments (space-separated)', { placeholder: 'stdio' });
  const envLabel = el('label', { for: 'mcp-env' }, 'Env, KEY=value a line (secret)');
  const env = el('textarea', { id: 'mcp-env', rows: '2' });
  const [urlLabel, url] = field('mcp-url', 'or URL (streamable HTTP)', { placeholder: 'https://mcp.example.com/mcp' });
  const headersLabel = el('label', { for: 'mcp-headers' }, 'Headers, Name=value a line (secret)');
  const headers = el('textarea', { id: 'mcp-headers', rows: '2' });
  const [projectsLabel, projects] = field('mcp-projects', 'Projects (comma-separated; empty: all)', { placeholder: 'web, api-*' });
  const form = el('form', { class: 'form mcp-add' },
    el('h3', {}, 'Add a server'), nameLabel, name, commandLabel, command, argsLabel, args, envLabel, env,
    urlLabel, url, headersLabel, headers, projectsLabel, projects,
    el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary' }, 'Add server')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const params = { name: name.value.trim() };
    if (command.value.trim()) params.command = command.value.trim();
    if (args.value.trim()) params.args = args.value.trim().split(/\s+/);
    if (env.value.trim()) params.env = pairs(env.value);
    if (url.value.trim()) params.url = url.value.trim();
    if (headers.value.trim()) params.headers = pairs(headers.value);
    if (projects.value.trim()) params.projects = projects.value.split(',').map((p) => p.trim()).filter(Boolean);
    ctx.rpc.call('mcp/add', params)
      .then((added) => { said.textContent = `Server ${added.name} added.`; env.value = ''; headers.value = ''; changed(); return refresh(); })
      .catch(failed('Not added'));
  });

  async function refresh() {
    const servers = await ctx.rpc.call('getMcpServers', {});
    const restart = (server) => el('button', {
      type: 'button', 'aria-label': `Restart ${server.name}`,
      onclick: () => ctx.rpc.call('mcp/restart', { name: server.name })
        .then(() => { said.textContent = `${server.name} restarted.`; changed(); return refresh(); })
        .catch(failed('Not restarted')),
    }, 'Restart');
    const remove = (server) => confirmed({
      label: 'Remove', name: `Remove ${server.name}`,
      question: `Remove ${server.name} from mcp.toml and stop it?`, yes: 'Remove',
      act: () => ctx.rpc.call('mcp/remove', { name: server.name })
        .then(() => { said.textContent = `${server.name} removed.`; changed(); return refresh(); }),
    });
    const state = (server) => server.connected ? 'connected'
      : (server.error ? `down: ${server.error}` : 'connecting');
    fill(table, servers.length ? el('table', { class: 'mcp' },
      el('thead', {}, el('tr', {}, ['Server', 'Transport', 'For this project', 'State', 'Tools', '']
        .map((text) => el('th', { scope: 'col' }, text)))),
      el('tbody', {}, servers.map((server) => el('tr', { 'data-server': server.name },
        el('td', {}, server.name), el('td', {}, server.transport ?? ''),
        el('td', {}, server.enabled ? 'yes' : 'no'),
        longCell(state(server)),
        longCell((server.tools ?? []).map((tool) => tool.name).join(', ')),
        el('td', {}, restart(server), ' ', remove(server))))))
      : el('p', { class: 'muted' }, 'No MCP server is configured.'));
  }
  const node = el('div', {}, table, said, form);
  return { node, refresh };
}
