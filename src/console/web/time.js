// Times and durations as people read them: the server's UTC times (`YYYY-MM-DD HH:MM:SS`,
// or ISO 8601) shown in the browser's local time, the UTC time in the title (on hover);
// durations in words ("2 min 13 s").
import { el } from './dom.js';

// The Date of a server time (or of ms since the epoch), or null for anything else.
export function parsed(text) {
  if (typeof text === 'number') return new Date(text);
  if (typeof text !== 'string' || !text) return null;
  const iso = /^\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?$/.test(text) ? `${text.replace(' ', 'T')}Z` : text;
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? null : date;
}

const LOCAL = { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' };

// A server time as a <time> element: local time shown, UTC in its title; other text as is.
export function when(text) {
  const date = parsed(text);
  if (!date) return el('span', {}, text ?? '');
  const utc = `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
  return el('time', { datetime: date.toISOString(), title: utc }, date.toLocaleString(undefined, LOCAL));
}

// A server time as local text with its UTC time after it, for plain text (a banner).
export function localText(text) {
  const date = parsed(text);
  return date ? `${date.toLocaleString(undefined, LOCAL)} (${date.toISOString().slice(0, 16).replace('T', ' ')} UTC)` : String(text ?? '');
}

// Milliseconds in words: "45 s", "2 min 13 s", "3 h 5 min", "2 d 4 h".
export function duration(ms) {
  const seconds = Math.max(0, Math.round((Number(ms) || 0) / 1000));
  const [d, h, m, s] = [Math.floor(seconds / 86400), Math.floor(seconds / 3600) % 24, Math.floor(seconds / 60) % 60, seconds % 60];
  if (d) return `${d} d${h ? ` ${h} h` : ''}`;
  if (h) return `${h} h${m ? ` ${m} min` : ''}`;
  if (m) return `${m} min${s ? ` ${s} s` : ''}`;
  return `${s} s`;
}

// How long a run took: from `start` to `end` (server times or ms), or to now while it goes.
export function took(start, end, going) {
  const from = parsed(start);
  const to = going ? new Date() : parsed(end);
  return from && to ? duration(to - from) : '';
}
