/**
 * A small Markdown renderer for notes, safe by construction: every piece of the note's text goes
 * through the `html` template (escaped), and markup comes only from the templates here, so raw
 * HTML in a note is shown as text and cannot run. What it reads: ATX headings (`#`…, shifted one
 * level down, the page's own title being the h1), paragraphs, `-`/`*`/`+` and `1.` lists (one
 * level), `>` quotes, fenced code blocks, `---` rules, and inline `code`, **strong**, *emphasis*
 * (or _emphasis_) and [links](url) whose URL is http(s) or relative; any other link is its text.
 */
import { html, type Html, type HtmlValue } from "../html.ts";

/** Whether a link target is http(s) or relative (no `javascript:`, `data:`, …). */
export function safeHref(href: string): boolean {
  try {
    return ["http:", "https:"].includes(new URL(href, "https://relative.invalid/").protocol);
  } catch {
    return false;
  }
}

// Each part stops at the next delimiter of its own kind (a label at the next bracket), so a note
// of 100,000 unclosed delimiters is still read in linear time.
const inlinePattern = /`([^`\n]+)`|\[([^[\]\n]+)\]\(([^()\s]+)\)|\*\*([^*\n]+?)\*\*|\*([^*\n]+)\*|(?<![\p{L}\p{N}])_([^_\n]+)_(?![\p{L}\p{N}])/gu;

/** Inline markup of one block's text. */
export function inline(text: string): HtmlValue[] {
  const out: HtmlValue[] = [];
  let last = 0;
  for (const m of text.matchAll(inlinePattern)) {
    out.push(text.slice(last, m.index));
    last = m.index + m[0].length;
    const [, code, label, href, strong, em, em2] = m;
    if (code !== undefined) out.push(html`<code>${code}</code>`);
    else if (label !== undefined) out.push(safeHref(href) ? html`<a href="${href}" rel="noopener noreferrer nofollow">${inline(label)}</a>` : inline(label));
    else if (strong !== undefined) out.push(html`<strong>${inline(strong)}</strong>`);
    else out.push(html`<em>${inline(em ?? em2)}</em>`);
  }
  out.push(text.slice(last));
  return out;
}

const heading = /^(#{1,6})(?:[ \t]+(.*))?$/;
const fence = /^(`{3,}|~{3,})/;
const bullet = /^\s{0,3}[-*+]\s+(.*)$/;
const numbered = /^\s{0,3}\d{1,9}[.)]\s+(.*)$/;
const quote = /^\s{0,3}>\s?(.*)$/;
const rule = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;

const headingTag = (level: number, content: HtmlValue[]): Html => {
  switch (Math.min(level + 1, 6)) {
    case 2:
      return html`<h2>${content}</h2>`;
    case 3:
      return html`<h3>${content}</h3>`;
    case 4:
      return html`<h4>${content}</h4>`;
    case 5:
      return html`<h5>${content}</h5>`;
    default:
      return html`<h6>${content}</h6>`;
  }
};

/** A heading's text without the optional closing #s (a loop, not a backtracking pattern). */
function headingText(text: string): string {
  const trimmed = text.trimEnd();
  let end = trimmed.length;
  while (end > 0 && trimmed[end - 1] === "#") end--;
  return end === trimmed.length || end === 0 || /\s/.test(trimmed[end - 1]) ? trimmed.slice(0, end).trimEnd() : trimmed;
}

/** Quotes nest this deep; a deeper `>` is text (so a line of `>`s cannot exhaust the stack). */
const maxQuoteDepth = 4;

/** The note's Markdown as HTML blocks. */
export function renderMarkdown(source: string, depth = 0): Html {
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  const blocks: Html[] = [];
  let i = 0;
  const quotes = depth < maxQuoteDepth;
  const startsBlock = (line: string) =>
    heading.test(line) || fence.test(line) || bullet.test(line) || numbered.test(line) || (quotes && quote.test(line)) || rule.test(line);
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i++;
      continue;
    }
    const open = fence.exec(line);
    if (open) {
      const code: string[] = [];
      i++;
      while (i < lines.length && !lines[i].startsWith(open[1])) code.push(lines[i++]);
      i++; // the closing fence, or past the end
      blocks.push(html`<pre><code>${code.join("\n")}</code></pre>`);
      continue;
    }
    const h = heading.exec(line);
    if (h) {
      blocks.push(headingTag(h[1].length, inline(headingText(h[2] ?? ""))));
      i++;
      continue;
    }
    if (rule.test(line)) {
      blocks.push(html`<hr>`);
      i++;
      continue;
    }
    for (const [pattern, ordered] of [
      [bullet, false],
      [numbered, true],
    ] as const) {
      if (!pattern.test(lines[i] ?? "")) continue;
      const items: Html[] = [];
      while (i < lines.length && pattern.test(lines[i])) items.push(html`<li>${inline(pattern.exec(lines[i++])![1])}</li>`);
      blocks.push(ordered ? html`<ol>${items}</ol>` : html`<ul>${items}</ul>`);
    }
    if (quotes && i < lines.length && quote.test(lines[i])) {
      const quoted: string[] = [];
      while (i < lines.length && quote.test(lines[i])) quoted.push(quote.exec(lines[i++])![1]);
      blocks.push(html`<blockquote>${renderMarkdown(quoted.join("\n"), depth + 1)}</blockquote>`);
      continue;
    }
    if (i < lines.length && lines[i].trim() && !startsBlock(lines[i])) {
      const para: string[] = [];
      while (i < lines.length && lines[i].trim() && (para.length === 0 || !startsBlock(lines[i]))) para.push(lines[i++].trim());
      blocks.push(html`<p>${inline(para.join("\n"))}</p>`);
    }
  }
  return html`${blocks.map((b) => html`${b}\n`)}`;
}
