// A project's webhooks, for admins (`webhooks/list`, `webhooks/add`, `webhooks/remove`,
// `webhooks/deliveries`): each with its URL, events, format and who added it when; a form
// adding one (its events as checkboxes, json or slack), after which its secret is shown this
// once with a Copy button; removal after a confirmation; each one's delivery log.
import { el, fill, link, field, longCell, confirmed } from './dom.js';
import { when } from './time.js';

const EVENTS = [
  ['approval.pending', 'a run waits for approval'],
  ['run.finished', 'a run finished'],
  ['run.failed', 'a run failed'],
  ['cap.warning', 'a spend cap passed its warning share'],
  ['cap.reached', 'a spend cap stopped a loop'],
];

// A delivery's attempts said in one line each: the last one's figures.
function lastAttempt(delivery) {
  return delivery.attempts[delivery.attempts.length - 1] ?? {};
}

export async function webhooksView(ctx, main, project) {
  const list = el('div');
  const log = el('section', { class: 'deliveries', 'aria-live': 'polite' });
  const secret = el('div', { class: 'secret' });
  const said = el('p', { class: 'muted', role: 'status' });
  const [urlLabel, url] = field('webhook-url', 'URL', { type: 'url', required: true, placeholder: 'https://chat.example.com/hooks/…' });
  const boxes = EVENTS.map(([name]) => el('input', { type: 'checkbox', id: `event-${name.replace('.', '-')}`, value: name }));
  const format = el('select', { id: 'webhook-format' },
    el('option', { value: 'json' }, 'json'), el('option', { value: 'slack' }, 'slack ({"text": …})'));
  const form = el('form', { class: 'form webhook' },
    el('h2', {}, 'Add a webhook'), urlLabel, url,
    el('fieldset', {}, el('legend', {}, 'Events'), EVENTS.map(([name, words], index) => el('div', { class: 'check' },
      boxes[index], el('label', { for: boxes[index].id }, name, ' ', el('span', { class: 'muted' }, words))))),
    el('label', { for: 'webhook-format' }, 'Format'), format,
    el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary' }, 'Add webhook')),
    said);

  const showSecret = (added) => {
    const copied = el('span', { class: 'muted', role: 'status' });
    const text = el('code', { id: 'webhook-secret' }, added.secret);
    const copy = () => navigator.clipboard.writeText(added.secret).then(
      () => { copied.textContent = 'Copied.'; },
      () => { getSelection().selectAllChildren(text); copied.textContent = 'Selected: copy it with your keyboard.'; });
    fill(secret, el('div', { class: 'banner-ok', role: 'alert' },
      el('p', {}, `The secret of the webhook to ${added.url}, to check its X-Rummy-Signature:`),
      el('p', {}, text, ' ', el('button', { type: 'button', onclick: copy }, 'Copy'), ' ', copied),
      el('p', {}, el('strong', {}, 'It will not be shown again: keep it now.'))));
  };

  const deliveries = async (hook) => {
    const { deliveries: rows } = await ctx.rpc.call('webhooks/deliveries', { id: hook.id, limit: 50 });
    fill(log, el('h2', {}, `Deliveries to ${hook.url} (${rows.length})`),
      el('div', { class: 'actions' }, el('button', { type: 'button', onclick: () => deliveries(hook).catch(failed) }, 'Refresh the log')),
      rows.length ? el('table', { class: 'deliveries' },
        el('thead', {}, el('tr', {}, ['Event', 'Run', 'State', 'Attempts', 'When', 'Duration', 'Status', 'Error']
          .map((name) => el('th', { scope: 'col' }, name)))),
        el('tbody', {}, rows.map((delivery) => {
          const last = lastAttempt(delivery);
          return el('tr', {},
            el('td', {}, delivery.event),
            el('td', {}, delivery.run ? el('a', { href: link('p', project, 'r', delivery.run) }, delivery.run) : ''),
            el('td', {}, delivery.state + (delivery.next ? ` (next try ${delivery.next})` : '')),
            el('td', {}, String(delivery.attempts.length)),
            el('td', {}, when(last.at ?? delivery.created)),
            el('td', {}, typeof last.durationMs === 'number' ? `${last.durationMs} ms` : ''),
            el('td', {}, last.status ? String(last.status) : ''),
            longCell(last.error ?? ''));
        })))
        : el('p', {}, 'Nothing delivered yet.'));
  };
  const failed = (error) => { said.textContent = error.message; };

  const refresh = async () => {
    const { webhooks } = await ctx.rpc.call('webhooks/list', {});
    fill(list, el('h2', {}, `Webhooks (${webhooks.length})`), webhooks.length ? el('table', { class: 'webhooks' },
      el('thead', {}, el('tr', {}, ['URL', 'Events', 'Format', 'Added by', 'Added', '']
        .map((name) => el('th', { scope: 'col' }, name)))),
      el('tbody', {}, webhooks.map((hook) => el('tr', {},
        longCell(hook.url), el('td', {}, hook.events.join(', ')), el('td', {}, hook.format),
        el('td', {}, hook.createdBy ?? 'operator'), el('td', {}, when(hook.created)),
        el('td', {}, el('div', { class: 'actions' },
          el('button', { type: 'button', 'aria-label': `Deliveries to ${hook.url}`, onclick: () => deliveries(hook).catch(failed) }, 'Deliveries'),
          confirmed({
            label: 'Remove',
            name: `Remove the webhook to ${hook.url}`,
            question: `Remove the webhook to ${hook.url}, its pending deliveries and its log?`,
            yes: 'Yes, remove',
            act: () => ctx.rpc.call('webhooks/remove', { id: hook.id }).then(() => { fill(log); return refresh(); }),
          })))))))
      : el('p', {}, 'No webhook: nobody is told of this project\'s events outside the console.'));
  };

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const events = boxes.filter((box) => box.checked).map((box) => box.value);
    if (!events.length) { said.textContent = 'Choose at least one event.'; return; }
    ctx.rpc.call('webhooks/add', { url: url.value.trim(), events, format: format.value })
      .then((added) => {
        showSecret(added);
        said.textContent = 'Added.';
        url.value = '';
        boxes.forEach((box) => { box.checked = false; });
        return refresh();
      })
      .catch((error) => { said.textContent = `Not added: ${error.message}`; });
  });
  fill(main, el('h1', {}, `Webhooks of ${project}`),
    el('p', { class: 'muted' }, 'Events of this project POSTed to other tools, signed with each webhook\'s secret.'),
    list, secret, form, log);
  await refresh();
  return () => {};
}
