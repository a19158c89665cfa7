// The turn under way as the model writes it: the page watches the run with its deltas
// (`run/watch {run, deltas: true}`, which also shows the page in the run's presence) and
// shows each turn's words as they come (`run/delta`) under the run's progress; once the
// turn is recorded (its `run/state`) they give way to its reply as recorded, the newest
// `<update>` or `<summarize>` text of the run's log, which the conversation shows: the
// part hides, holding that text.
import { el } from './dom.js';

// The message entries of a run's log, whose text is the model's reply to the person.
const REPLIES = ['update', 'summarize'];

// Watches run `alias` with its deltas, showing them just after `anchor`; resolves to how to
// stop.
export async function watchLive(ctx, alias, anchor) {
  const shown = el('pre', { class: 'live', 'aria-live': 'polite', 'aria-label': 'The model writes', hidden: true });
  anchor.after(shown);
  // The loop and turn whose words are shown while they come.
  let writing = null;
  const stops = [
    ctx.rpc.on('run/delta', (params) => {
      if (params.run !== alias || typeof params.text !== 'string') return;
      const turn = `${params.loop}/${params.turn}`;
      if (turn !== writing) {
        writing = turn;
        shown.replaceChildren();
        shown.classList.remove('recorded');
      }
      shown.append(params.text);
      shown.hidden = false;
    }),
    ctx.rpc.on('run/state', (params) => {
      if (params.run !== alias || writing === null || !writing.endsWith(`/${params.turn}`)) return;
      writing = null;
      const reply = (params.history ?? []).findLast((entry) => REPLIES.includes(entry.tool));
      if (reply) shown.textContent = reply.body;
      shown.classList.add('recorded');
      shown.hidden = true;
    }),
  ];
  await ctx.rpc.call('run/watch', { run: alias, deltas: true });
  return () => stops.forEach((stop) => stop());
}
