// For admins: the model catalogue with its prices (added, tested and removed: setup.js), the
// people and their roles (never a token; changed in `people.js`), the spend caps set at run
// time and the audit of admins' changes (`admin_caps.js`), and the MCP servers with their
// state, as one project sees them.
import { el, fill, longCell } from './dom.js';
import { modelsSection } from './setup.js';
import { peopleSection } from './people.js';
import { capsSection, changesSection } from './admin_caps.js';

export async function adminView(ctx, main, bind) {
  const [models, projects] = await Promise.all([
    modelsSection(ctx),
    ctx.rpc.call('getProjects', {}),
  ]);
  const changes = changesSection(ctx);
  const changed = () => { changes.refresh().catch(() => {}); };
  const people = peopleSection(ctx, changed);
  const caps = capsSection(ctx, changed);
  const mcp = el('div');
  const which = el('select', { id: 'mcp-project' }, projects.map((project) => el('option', { value: project.name }, project.name)));
  const showMcp = async () => {
    if (!which.value) { fill(mcp, el('p', { class: 'muted' }, 'No project yet.')); return; }
    await bind(which.value);
    const servers = await ctx.rpc.call('getMcpServers', {});
    fill(mcp, servers.length ? el('table', { class: 'mcp' },
      el('thead', {}, el('tr', {}, ['Server', 'Transport', 'For this project', 'State', 'Tools']
        .map((name) => el('th', { scope: 'col' }, name)))),
      el('tbody', {}, servers.map((server) => el('tr', {},
        el('td', {}, server.name), el('td', {}, server.transport ?? ''),
        el('td', {}, server.enabled ? 'yes' : 'no'),
        longCell(server.connected ? 'connected' : (server.error ? `down: ${server.error}` : 'connecting')),
        longCell((server.tools ?? []).map((tool) => tool.name).join(', '))))))
      : el('p', { class: 'muted' }, 'No MCP server is configured.'));
  };
  which.addEventListener('change', () => showMcp().catch((error) => fill(mcp, el('p', { class: 'error' }, error.message))));
  fill(main,
    el('h1', {}, 'Admin'),
    models,
    people.node,
    caps.node,
    el('h2', {}, 'MCP servers'),
    el('div', { class: 'filters' }, el('div', {}, el('label', { for: 'mcp-project' }, 'As the project'), which)),
    mcp,
    changes.node);
  await Promise.all([people.refresh(), caps.refresh(), changes.refresh(), showMcp()]);
  return () => {};
}
