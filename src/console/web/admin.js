// For admins: the model catalogue with its prices (added, tested and removed: setup.js), the
// people and their roles (never a token; changed in `people.js`), the spend caps set at run
// time and the audit of admins' changes (`admin_caps.js`), and the MCP servers with their
// state, as one project sees them, added, restarted and removed (`admin_mcp.js`).
import { el, fill } from './dom.js';
import { modelsSection } from './setup.js';
import { peopleSection } from './people.js';
import { capsSection, changesSection } from './admin_caps.js';
import { mcpSection } from './admin_mcp.js';

export async function adminView(ctx, main, bind) {
  const [models, projects] = await Promise.all([
    modelsSection(ctx),
    ctx.rpc.call('getProjects', {}),
  ]);
  const changes = changesSection(ctx);
  const changed = () => { changes.refresh().catch(() => {}); };
  const people = peopleSection(ctx, changed);
  const caps = capsSection(ctx, changed);
  const servers = mcpSection(ctx, changed);
  const mcp = el('div');
  const which = el('select', { id: 'mcp-project' }, projects.map((project) => el('option', { value: project.name }, project.name)));
  const showMcp = async () => {
    if (!which.value) { fill(mcp, el('p', { class: 'muted' }, 'No project yet.')); return; }
    await bind(which.value);
    fill(mcp, servers.node);
    await servers.refresh();
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
