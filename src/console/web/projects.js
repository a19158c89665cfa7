// The projects the person may open, and (admins) a form that makes a folder a project.
import { el, fill, link } from './dom.js';
import { newProjectForm } from './setup.js';

export async function projectsView(ctx, main) {
  const projects = await ctx.rpc.call('getProjects');
  const list = projects.length
    ? el('ul', { class: 'cards' }, projects.map((project) => el('li', {},
      el('a', { href: link('p', project.name) }, project.name),
      el('div', { class: 'muted' }, project.projectRoot ?? ''))))
    : el('p', {}, ctx.me.role === 'admin'
      ? 'No project yet: create one from a folder below.'
      : 'No project you may open yet. An admin creates one here, or a client with init.');
  const create = ctx.me.role === 'admin' ? await newProjectForm(ctx) : null;
  fill(main, el('h1', {}, 'Projects'), list, create);
  return () => {};
}
