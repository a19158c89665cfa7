// A first run without an editor (admins): the model catalogue with its prices, a form that
// adds a model with its provider, URL, key and price, a one-call test of each model, and a
// form that makes a project of a folder. A key is sent once and never shown again: the
// catalogue says only whether its provider has one.
import { el, fill, link, dollars, field, confirmed } from './dom.js';

const PROVIDERS = [
  ['openai', 'OpenAI-compatible (llama.cpp, vLLM, …)'],
  ['ollama', 'Ollama'],
  ['openrouter', 'OpenRouter'],
  ['xai', 'xAI'],
];

// The Admin page's Models section, drawn again after each change.
export async function modelsSection(ctx) {
  const section = el('section', { id: 'models' });
  const tested = el('div', { id: 'model-test', role: 'status', 'aria-live': 'polite' });
  const draw = async () => {
    const models = await ctx.rpc.call('getModels', {});
    fill(section,
      el('h2', {}, `Models (${models.length})`),
      models.length ? el('table', { class: 'models' },
        el('thead', {}, el('tr', {}, ['Alias', 'Provider model', 'Key', 'Context', 'Input $/M', 'Cached $/M', 'Output $/M', '']
          .map((name) => el('th', { scope: 'col' }, name)))),
        el('tbody', {}, models.map((model) => el('tr', {},
          el('td', {}, model.alias), el('td', {}, model.actual),
          el('td', {}, model.keySet ? 'key set' : 'no key'),
          el('td', {}, model.context_length ? String(model.context_length) : ''),
          el('td', {}, dollars(model.price?.input)), el('td', {}, dollars(model.price?.cached_input)),
          el('td', {}, dollars(model.price?.output)),
          el('td', {},
            el('button', { type: 'button', 'aria-label': `Test ${model.alias}`, onclick: () => test(model.alias) }, 'Test'), ' ',
            confirmed({ label: 'Remove', name: `Remove ${model.alias}`, question: `Remove ${model.alias}?`, yes: 'Remove',
              act: () => ctx.rpc.call('removeModel', { alias: model.alias }).then(draw) }))))))
        : el('p', { class: 'muted' }, 'No model yet: add one below.'),
      tested,
      addModelForm(ctx, draw));
  };
  const test = async (alias) => {
    fill(tested, el('p', { class: 'muted' }, `Testing ${alias}…`));
    try {
      const result = await ctx.rpc.call('model/test', { alias });
      fill(tested, result.ok
        ? el('div', { class: 'tested ok' },
          el('p', {}, `${alias} answered in ${result.latencyMs} ms (${result.promptTokens} tokens in, ${result.completionTokens} out):`),
          el('blockquote', {}, result.reply))
        : el('p', { class: 'error', role: 'alert' }, `${alias} failed after ${result.latencyMs} ms: ${result.error}`));
    } catch (error) {
      fill(tested, el('p', { class: 'error', role: 'alert' }, error.message));
    }
  };
  await draw();
  return section;
}

function addModelForm(ctx, added) {
  const provider = el('select', { id: 'model-provider' }, PROVIDERS.map(([value, words]) => el('option', { value }, words)));
  const [nameLabel, name] = field('model-name', 'Model (the provider\'s name for it)', { required: true, placeholder: 'qwen3-8b' });
  const [aliasLabel, alias] = field('model-alias', 'Alias (what people pick)', { required: true, placeholder: 'local' });
  const [urlLabel, url] = field('model-url', 'Base URL (empty: the server\'s setting)', { type: 'url', placeholder: 'http://127.0.0.1:8080' });
  const [keyLabel, key] = field('model-key', 'API key (empty: keep the one set)', { type: 'password', autocomplete: 'off' });
  const [contextLabel, context] = field('model-context', 'Context (tokens; empty: ask the provider)', { type: 'number', min: 1 });
  const [inputLabel, input] = field('model-input-price', 'Input $ per million tokens', { type: 'number', min: 0, step: 'any', value: '0' });
  const [outputLabel, output] = field('model-output-price', 'Output $ per million tokens', { type: 'number', min: 0, step: 'any', value: '0' });
  const said = el('p', { class: 'muted', role: 'status' });
  const form = el('form', { class: 'form add-model' },
    el('h3', {}, 'Add a model'),
    el('label', { for: 'model-provider' }, 'Provider'), provider,
    nameLabel, name, aliasLabel, alias, urlLabel, url, keyLabel, key, contextLabel, context,
    el('div', { class: 'row' }, el('div', {}, inputLabel, input), el('div', {}, outputLabel, output)),
    el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary' }, 'Add model')),
    said);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const params = {
      provider: provider.value, actual: name.value.trim(), alias: alias.value.trim(),
      price: { input: Number(input.value || 0), output: Number(output.value || 0) },
    };
    if (url.value.trim()) params.baseUrl = url.value.trim();
    if (key.value) params.apiKey = key.value;
    if (context.value) params.contextLength = Number(context.value);
    key.value = '';
    try {
      await ctx.rpc.call('addModel', params);
      said.textContent = `Added ${params.alias}.`;
      await added();
    } catch (error) {
      said.textContent = `Not added: ${error.message}`;
    }
  });
  return form;
}

// The Projects page's form (admins): a folder under the projects directories, or on a
// server with none any existing folder, made a project and opened.
export async function newProjectForm(ctx) {
  const offered = await ctx.rpc.call('projects/folders', {});
  const [nameLabel, name] = field('project-name', 'Name', { required: true });
  const said = el('p', { class: 'muted', role: 'status' });
  let where;
  let path;
  if (offered.anyFolder) {
    const [pathLabel, typed] = field('project-path', 'Folder (absolute path of an existing directory)', { required: true, placeholder: '/home/me/code/app' });
    typed.addEventListener('change', () => { if (!name.value) name.value = typed.value.replace(/\/+$/, '').split('/').pop(); });
    where = [pathLabel, typed];
    path = () => typed.value.trim();
  } else if (offered.folders.length) {
    const folder = el('select', { id: 'project-folder' }, offered.folders.map((entry) => el('option', { value: entry.path }, entry.path)));
    const named = () => { name.value = offered.folders.find((entry) => entry.path === folder.value)?.name ?? ''; };
    folder.addEventListener('change', named);
    named();
    where = [el('label', { for: 'project-folder' }, 'Folder'), folder];
    path = () => folder.value;
  } else {
    return el('p', { class: 'muted' }, `No free folder under ${offered.projectsDirs.join(', ')}: make one there to create a project.`);
  }
  const form = el('form', { class: 'form new-project' },
    el('h2', {}, 'New project'), ...where, nameLabel, name,
    el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary' }, 'Create project')),
    said);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const created = await ctx.rpc.call('projects/create', { name: name.value.trim(), path: path() });
      location.hash = link('p', created.name);
    } catch (error) {
      said.textContent = `Not created: ${error.message}`;
    }
  });
  return form;
}
