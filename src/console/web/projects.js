// The projects the person may open.
import { el, fill, link } from './dom.js';

export async function projectsView(ctx, main) {
  const projects = await ctx.rpc.call('getProjects');
  const list = projects.length
    ? el('ul', { class: 'cards' }, projects.map((project) => el('li', {},
      el('a', { href: link('p', project.name) }, project.name),
      el('div', { class: 'muted' }, project.projectRoot ?? ''))))
    : el('p', {}, 'No project you may open yet. A client creates one with init.');
  fill(main, el('h1', {}, 'Projects'), list);
  return () => {};
}
