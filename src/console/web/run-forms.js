// The forms that go on with a run: inject a message, continue with ask or act.
import { el, field, statusWords } from './dom.js';

// Adds a message to the run's work (run/inject): taken in by the running loop, or starting
// one when none runs.
export function injectForm(ctx, alias, changed) {
  const [label, message] = field('inject', 'Inject a message', { rows: 2 });
  const said = el('p', { class: 'muted', role: 'status' });
  const form = el('form', { class: 'form' }, label, message,
    el('div', { class: 'actions' }, el('button', { type: 'submit' }, 'Inject')), said);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const text = message.value.trim();
    if (!text) return;
    message.value = '';
    ctx.rpc.call('run/inject', { run: alias, message: text })
      .then(() => { said.textContent = 'Injected.'; changed(); })
      .catch((error) => { said.textContent = `Not injected: ${error.message}`; });
  });
  return form;
}

// Goes on with the run: a new ask or act on it, with its model.
export function continueForm(ctx, alias, current, changed) {
  const [label, prompt] = field('continue', 'Continue the run', { rows: 2 });
  const mode = el('select', { id: 'continue-mode' }, el('option', { value: 'ask' }, 'ask'), el('option', { value: 'act' }, 'act'));
  const said = el('p', { class: 'muted', role: 'status' });
  const form = el('form', { class: 'form' }, label, prompt,
    el('label', { for: 'continue-mode' }, 'Mode'), mode,
    el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary' }, 'Continue')), said);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const text = prompt.value.trim();
    const run = current();
    if (!text || !run) return;
    prompt.value = '';
    said.textContent = 'Sent; the run goes on.';
    ctx.rpc.call(mode.value, { model: run.model, prompt: text, run: alias })
      .then((outcome) => { said.textContent = `The loop ended: ${statusWords(outcome.status)}.`; changed(); })
      .catch((error) => { said.textContent = `Not sent: ${error.message}`; });
    changed();
  });
  return form;
}
