// Markdown as DOM nodes, safe: every text goes in through text nodes, so no HTML of the text
// passes through (a `<script>` shows as the characters it is). Headings, paragraphs,
// emphasis, inline code, fenced code blocks, lists and block quotes; links only to http(s)
// addresses, opened apart (rel=noopener noreferrer); images never load (their text shows);
// a paragraph too long to lay out quickly is shown as preformatted text.
// Never innerHTML.

// The safe link target of a markdown link, or null.
function safeHref(href) {
  try {
    const url = new URL(href);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

function node(tag, ...children) {
  const made = document.createElement(tag);
  for (const child of children) made.append(child);
  return made;
}

// Inline markdown of one text: `code`, **strong**, *em* / _em_, [text](http…) links.
const INLINE = /`([^`]+)`|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|\b_([^_\s][^_]*)_\b|!?\[([^\]]*)\]\(([^)\s]+)\)/g;

export function inline(text) {
  const out = [];
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    if (match.index > last) out.push(text.slice(last, match.index));
    const [whole, code, strong, strong2, em, em2, label, href] = match;
    if (code !== undefined) out.push(node('code', code));
    else if (strong !== undefined || strong2 !== undefined) out.push(node('strong', ...inline(strong ?? strong2)));
    else if (em !== undefined || em2 !== undefined) out.push(node('em', ...inline(em ?? em2)));
    else {
      const target = whole.startsWith('!') ? null : safeHref(href);
      if (target) {
        const link = node('a', ...inline(label));
        link.setAttribute('href', target);
        link.setAttribute('rel', 'noopener noreferrer');
        link.setAttribute('target', '_blank');
        out.push(link);
      } else out.push(whole);
    }
    last = match.index + whole.length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

// A paragraph longer than this is shown as preformatted text: Chromium lays out a paragraph
// a megabyte long in a proportional font for most of a minute, in monospace at once.
const LONGEST_PARAGRAPH = 20000;
const FENCE = /^\s*(```|~~~)/;
const HEADING = /^(#{1,6})\s+(.*)$/;
const BULLET = /^\s*[-*+]\s+(.*)$/;
const NUMBERED = /^\s*\d+[.)]\s+(.*)$/;
const QUOTE = /^\s*>\s?(.*)$/;

// The markdown `text` as a <div class="markdown"> of block nodes.
export function markdown(text) {
  const root = node('div');
  root.className = 'markdown';
  const lines = String(text ?? '').split('\n');
  let paragraph = [];
  let list = null;
  const flush = () => {
    const text = paragraph.join(' ');
    if (text.length > LONGEST_PARAGRAPH) root.append(node('pre', text));
    else if (text) root.append(node('p', ...inline(text)));
    paragraph = [];
  };
  const endList = () => { list = null; };
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index];
    const fence = line.match(FENCE);
    if (fence) {
      flush(); endList();
      const body = [];
      for (index++; index < lines.length && !lines[index].trim().startsWith(fence[1]); index++) body.push(lines[index]);
      root.append(node('pre', node('code', body.join('\n'))));
      continue;
    }
    if (!line.trim()) { flush(); endList(); continue; }
    const heading = line.match(HEADING);
    if (heading) {
      flush(); endList();
      // Headings of a reply sit below the page's own (h1, h2): h4 to h6.
      root.append(node(`h${Math.min(6, heading[1].length + 3)}`, ...inline(heading[2])));
      continue;
    }
    const bullet = line.match(BULLET);
    const numbered = bullet ? null : line.match(NUMBERED);
    if (bullet || numbered) {
      flush();
      const tag = bullet ? 'ul' : 'ol';
      if (!list || list.tagName.toLowerCase() !== tag) { list = node(tag); root.append(list); }
      list.append(node('li', ...inline((bullet ?? numbered)[1])));
      continue;
    }
    const quote = line.match(QUOTE);
    if (quote) {
      flush(); endList();
      root.append(node('blockquote', ...inline(quote[1])));
      continue;
    }
    endList();
    paragraph.push(line.trim());
  }
  flush();
  return root;
}
