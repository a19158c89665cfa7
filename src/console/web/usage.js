// What model calls used and cost: the caller's own runs' calls, or everyone's for admins,
// summed per day (with a bar chart drawn as SVG elements), person, project and model, over
// the last 30 days or a range the person picks.
import { el, fill, dollars, count, field } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';
const BY = [['day', 'Per day'], ['person', 'Per person'], ['project', 'Per project'], ['model', 'Per model']];

function svg(tag, attributes, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  for (const child of children) node.append(child instanceof Node ? child : String(child));
  return node;
}

function isoDay(date) {
  return date.toISOString().slice(0, 10);
}

// Bars of each day of the range, `first` to `last` (YYYY-MM-DD): its cost (tokens when
// nothing cost money), each labelled for screen readers.
function chart(rows, first, last) {
  const byCost = rows.some((row) => row.cost_micros > 0);
  const value = (row) => (row ? (byCost ? row.cost_micros : row.total_tokens) : 0);
  const found = new Map(rows.map((row) => [row.key, row]));
  const days = [];
  for (let day = new Date(`${first}T00:00:00Z`); isoDay(day) <= last; day = new Date(day.getTime() + 86400000)) {
    days.push(isoDay(day));
  }
  const highest = Math.max(1, ...rows.map(value));
  const width = 600;
  const height = 140;
  const slot = width / Math.max(days.length, 1);
  const bar = Math.max(2, slot * 0.7);
  const said = byCost ? 'cost' : 'tokens';
  return svg('svg', { viewBox: `0 0 ${width} ${height + 20}`, role: 'img', class: 'chart',
    'aria-label': `Usage per day from ${first} to ${last}, ${said}` },
  svg('title', {}, `Usage per day, ${said}`),
  ...days.filter((day) => found.has(day)).map((day) => {
    const row = found.get(day);
    const tall = Math.round((value(row) / highest) * height);
    return svg('rect', { x: days.indexOf(day) * slot + (slot - bar) / 2, y: height - tall, width: bar, height: Math.max(tall, 1), class: 'bar' },
      svg('title', {}, `${day}: ${byCost ? dollars(row.cost) : count(row.total_tokens) + ' tokens'}`));
  }),
  svg('line', { x1: 0, y1: height + 0.5, x2: width, y2: height + 0.5, class: 'axis' }),
  svg('text', { x: 0, y: height + 16, class: 'tick' }, first),
  svg('text', { x: width, y: height + 16, class: 'tick', 'text-anchor': 'end' }, last));
}

export async function usageView(ctx, main) {
  const today = new Date();
  const monthAgo = new Date(today.getTime() - 29 * 86400000);
  const [fromLabel, from] = field('usage-from', 'From (UTC day)', { type: 'date', value: isoDay(monthAgo) });
  const [toLabel, to] = field('usage-to', 'To (UTC day, included)', { type: 'date', value: isoDay(today) });
  const said = el('p', { class: 'muted', role: 'status' });
  const report = el('div');
  const form = el('form', { class: 'filters' },
    el('div', {}, fromLabel, from), el('div', {}, toLabel, to),
    el('div', {}, el('button', { type: 'submit' }, 'Show')));

  const refresh = async () => {
    const end = new Date(`${to.value}T00:00:00Z`);
    const range = { from: from.value, to: isoDay(new Date(end.getTime() + 86400000)) };
    const reports = await Promise.all(BY.map(([by]) => ctx.rpc.call('usage/report', { by, ...range })));
    const total = reports[0].total;
    said.textContent = ctx.me.role === 'admin' ? 'Everyone\'s calls.' : 'The calls of the runs you started.';
    fill(report,
      el('dl', { class: 'meta' },
        [['Calls', count(total.calls)], ['Tokens', count(total.total_tokens)], ['Cost', dollars(total.cost)]]
          .map(([name, value]) => el('div', {}, el('dt', {}, name), el('dd', {}, value)))),
      reports[0].rows.length ? chart(reports[0].rows, from.value, to.value) : el('p', {}, 'No model calls in this range.'),
      BY.map(([, title], index) => el('section', {},
        el('h2', {}, title),
        el('table', { class: 'usage' },
          el('thead', {}, el('tr', {}, ['', 'Calls', 'Prompt', 'Cached', 'Completion', 'Cost']
            .map((name) => el('th', { scope: 'col' }, name)))),
          el('tbody', {}, reports[index].rows.map((row) => el('tr', {},
            el('th', { scope: 'row' }, row.key ?? (BY[index][0] === 'person' ? 'operator' : '—')),
            el('td', {}, count(row.calls)), el('td', {}, count(row.prompt_tokens)),
            el('td', {}, count(row.cached_tokens)), el('td', {}, count(row.completion_tokens)),
            el('td', {}, dollars(row.cost)))))))));
  };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    refresh().catch((error) => { said.textContent = error.message; });
  });
  fill(main, el('h1', {}, 'Usage'), said, form, report);
  await refresh();
  return () => {};
}
