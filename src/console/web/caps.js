// The spend caps the signed-in person's calls count against in the bound project
// (`usage/caps`), and a banner when one is reached or passes 80 % (`usage/capReached`,
// `usage/capWarning`, sent to the project's clients).
import { el, fill, dollars, count } from './dom.js';
import { when, localText } from './time.js';

function amount(unit, value) {
  return unit === 'dollars' ? dollars(value) : `${count(value)} tokens`;
}

// Which cap, what it allows and what was spent: `run fake_1: 1,010 tokens of 1,000 tokens per
// day`.
export function said(cap) {
  const whose = cap.scope === 'server' ? 'the server' : `${cap.scope} ${cap.subject}`;
  return `${whose}: ${amount(cap.unit, cap.spent)} of ${amount(cap.unit, cap.limit)} per ${cap.period}`;
}

// A section listing the caps (nothing when none holds), kept current; returns {node, stop}.
export function capsPanel(ctx) {
  const node = el('section', { class: 'caps', 'aria-label': 'Spend caps' });
  const banner = el('p', { class: 'banner', role: 'alert' });
  const refresh = async () => {
    const { caps } = await ctx.rpc.call('usage/caps', {});
    fill(node, caps.length ? [
      el('h2', {}, 'Spend caps'),
      el('ul', { class: 'caps' }, caps.map((cap) => el('li', {},
        said(cap), el('span', { class: 'muted' }, ` — ${amount(cap.unit, cap.left)} left, resets `, when(cap.resets))))),
    ] : [], banner.textContent ? banner : null);
  };
  const shout = (text) => (cap) => {
    banner.textContent = `${text} ${said(cap)}; it resets at ${localText(cap.resets)}.`;
    refresh().catch(() => {});
  };
  const stops = [
    ctx.rpc.on('usage/capReached', shout('A spend cap is reached:')),
    ctx.rpc.on('usage/capWarning', shout('Past the warning share of a spend cap:')),
  ];
  refresh().catch(() => {});
  return { node, stop: () => stops.forEach((stop) => stop()) };
}
