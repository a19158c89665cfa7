// Builds the page from data as text only: no HTML string from anywhere is ever parsed.

// el('a', {href: '#/p/x', class: 'c'}, 'text', childNode): strings become text nodes;
// `on<event>` props add listeners; `href` takes only the console's own routes.
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (key === 'href') node.setAttribute('href', route(value));
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// Replaces `node`'s children with `children`, leaving out the absent ones (null, false).
export function fill(node, ...children) {
  node.replaceChildren(...children.flat().filter((child) => child !== undefined && child !== null && child !== false));
}

// A link target the console made itself (`#/...`); anything else goes to the start.
function route(value) {
  return typeof value === 'string' && value.startsWith('#/') ? value : '#/';
}

// `#/` followed by each part, escaped.
export function link(...parts) {
  return '#/' + parts.map(encodeURIComponent).join('/');
}

// Calls `fn` once, `ms` after the last of a burst of calls.
export function debounce(fn, ms) {
  let timer = null;
  const call = () => { clearTimeout(timer); timer = setTimeout(fn, ms); };
  call.cancel = () => clearTimeout(timer);
  return call;
}

// A status in words, as a person reads it (the code itself only in details views).
const STATUS = {
  100: 'Queued', 102: 'Running', 200: 'Done', 202: 'Waiting for approval',
  204: 'Done', 400: 'Refused', 402: 'Paused at a cap', 403: 'Rejected', 404: 'Not found',
  409: 'Conflict', 413: 'Too large', 422: 'Limit reached', 499: 'Aborted', 500: 'Failed',
  504: 'Timed out',
};

// A status code in words.
export function statusWords(code) {
  return STATUS[code] ?? (code >= 400 ? 'Failed' : 'Done');
}

// A table cell of free text (a summary, an error, a list): one line cut short with an
// ellipsis, the whole text in its title (shown on hover) and in the cell while it has focus.
// Every other cell keeps to one line at its full width (style.css).
export function longCell(text, props = {}) {
  const value = text ?? '';
  return el('td', { ...props, class: 'long', title: value || null, tabindex: value ? 0 : null }, value);
}

// A run's or an entry's status, as a labelled element.
export function status(code) {
  const bad = code >= 400 ? ' bad' : '';
  return el('span', { class: `status s${code}${bad}`, 'data-code': code }, statusWords(code));
}

// Whether a run with this status may still change by itself.
export function active(code) {
  return code === 100 || code === 102;
}

// US dollars as people read them: cents above a dollar, four places below.
export function dollars(amount) {
  const value = Number(amount) || 0;
  return '$' + value.toFixed(value >= 1 ? 2 : 4);
}

// A whole number with thousands separators.
export function count(value) {
  return (Number(value) || 0).toLocaleString('en-US');
}

// A labelled text field (or `textarea` when `rows` is given) and its label, as [label, field].
export function field(id, text, props = {}) {
  const tag = props.rows ? 'textarea' : 'input';
  return [el('label', { for: id }, text), el(tag, { id, ...props })];
}

// A button that asks before it acts: `label` turns into `question` with a button `yes` and
// Keep; `yes` runs `act` (a promise), whose refusal is said in words where the buttons were.
// `name` is the first button's accessible name (the thing it acts on).
export function confirmed({ label, name, question, yes, act }) {
  const box = el('span', { class: 'confirm' });
  const idle = () => fill(box, el('button', { type: 'button', class: 'danger', 'aria-label': name, onclick: ask }, label));
  function ask() {
    fill(box, el('span', { role: 'alert' }, question), ' ',
      el('button', { type: 'button', class: 'danger', onclick: go }, yes), ' ',
      el('button', { type: 'button', onclick: idle }, 'Keep'));
  }
  function go() {
    fill(box, el('span', { class: 'muted', role: 'status' }, 'Working…'));
    act().catch((error) => {
      idle();
      box.append(' ', el('span', { class: 'error', role: 'alert' }, error.message));
    });
  }
  idle();
  return box;
}
