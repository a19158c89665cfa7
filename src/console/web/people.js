// The people of the users file, for admins (`getPeople`, `people/add`, `people/update`,
// `people/remove`, `people/token`): each person's role and projects editable in place; a
// form adding one, after which their token is shown this once with a Copy button; a new
// token for someone, shown the same way; removal after a confirmation. Without a users file
// the section says so, and which setting makes one. `changed` is called after each change.
import { el, fill, field, confirmed } from './dom.js';

const ROLES = ['viewer', 'member', 'admin'];

function roleSelect(id, current) {
  return el('select', { id }, ROLES.map((role) => el('option', { value: role, selected: role === current }, role)));
}

// "web, api-*" as the list the users file keeps.
function patterns(text) {
  return text.split(',').map((part) => part.trim()).filter(Boolean);
}

export function peopleSection(ctx, changed) {
  const node = el('section', { class: 'people', 'aria-label': 'People' });
  const token = el('div', { class: 'secret' });
  const said = el('p', { class: 'muted said', 'aria-live': 'polite' });
  const failed = (what) => (error) => { said.textContent = `${what}: ${error.message}`; };

  const showToken = (name, value) => {
    const copied = el('span', { class: 'muted', role: 'status' });
    const text = el('code', { id: 'person-token' }, value);
    const copy = () => navigator.clipboard.writeText(value).then(
      () => { copied.textContent = 'Copied.'; },
      () => { getSelection().selectAllChildren(text); copied.textContent = 'Selected: copy it with your keyboard.'; });
    fill(token, el('div', { class: 'banner-ok', role: 'alert' },
      el('p', {}, `The token of ${name}, to sign in with:`),
      el('p', {}, text, ' ', el('button', { type: 'button', onclick: copy }, 'Copy'), ' ', copied),
      el('p', {}, el('strong', {}, 'It will not be shown again: give it to them now.'))));
  };

  const after = (words) => () => { said.textContent = words; changed(); return refresh(); };

  const row = (person) => {
    const role = roleSelect(`role-${person.name}`, person.role);
    const projects = el('input', { id: `projects-${person.name}`, value: person.projects.join(', ') });
    const hidden = (control, text) => [el('label', { for: control.id, class: 'visually-hidden' }, text), control];
    const save = () => ctx.rpc.call('people/update', { name: person.name, role: role.value, projects: patterns(projects.value) })
      .then(after(`${person.name} saved.`)).catch(failed(`${person.name} not saved`));
    const renew = () => ctx.rpc.call('people/token', { name: person.name })
      .then((renewed) => { showToken(renewed.name, renewed.token); return after(`${person.name} has a new token.`)(); })
      .catch(failed(`No new token for ${person.name}`));
    return el('tr', {},
      el('td', {}, person.name), el('td', {}, hidden(role, `Role of ${person.name}`)),
      el('td', {}, hidden(projects, `Projects of ${person.name}`)),
      el('td', {}, el('div', { class: 'actions' },
        el('button', { type: 'button', 'aria-label': `Save ${person.name}`, onclick: save }, 'Save'),
        el('button', { type: 'button', 'aria-label': `New token for ${person.name}`, onclick: renew }, 'New token'),
        confirmed({
          label: 'Remove',
          name: `Remove ${person.name}`,
          question: `Remove ${person.name} from the users file? Their connections can do nothing more.`,
          yes: 'Yes, remove',
          act: () => ctx.rpc.call('people/remove', { name: person.name }).then(after(`${person.name} removed.`)),
        }))));
  };

  const [nameLabel, name] = field('person-name', 'Name', { required: true, placeholder: 'olga' });
  const [projectsLabel, projects] = field('person-projects', 'Projects (names or globs, comma-separated; * is every project)', { placeholder: 'web, api-*' });
  const role = roleSelect('person-role', 'member');
  const form = el('form', { class: 'form person' },
    el('h3', {}, 'Add a person'), nameLabel, name,
    el('label', { for: 'person-role' }, 'Role'), role, projectsLabel, projects,
    el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary' }, 'Add person')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    ctx.rpc.call('people/add', { name: name.value.trim(), role: role.value, projects: patterns(projects.value) })
      .then((added) => {
        showToken(added.name, added.token);
        name.value = ''; projects.value = '';
        return after(`${added.name} added.`)();
      })
      .catch(failed('Not added'));
  });

  async function refresh() {
    const people = await ctx.rpc.call('getPeople', {});
    if (!people.length) {
      fill(node, el('h2', {}, 'People'),
        el('p', { class: 'muted' }, 'No users file: everyone with the shared token acts as the operator. '
          + 'Set RUMMY_USERS_FILE to a users file (and restart the server) to add people and roles here.'));
      return;
    }
    fill(node, el('h2', {}, `People (${people.length})`),
      el('table', { class: 'people' },
        el('thead', {}, el('tr', {}, ['Name', 'Role', 'Projects', ''].map((text) => el('th', { scope: 'col' }, text)))),
        el('tbody', {}, people.map(row))),
      token, said, form);
  }
  return { node, refresh };
}
