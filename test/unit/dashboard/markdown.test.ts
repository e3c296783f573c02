import assert from "node:assert/strict";
import { renderMarkdown, safeHref } from "../../../edge/dashboard/markdown.ts";

const md = (source: string) => renderMarkdown(source).toString();

/** The notes' Markdown: what it renders, that a note's text never becomes markup, and that no input is slow. */
describe("dashboard: markdown", () => {
  it("renders headings one level down, paragraphs, lists, quotes, code and rules", () => {
    assert.equal(md("# Title #\n## Sub"), "<h2>Title</h2>\n<h3>Sub</h3>\n");
    assert.equal(md("###### Six"), "<h6>Six</h6>\n");
    assert.equal(md("#hashtag"), "<p>#hashtag</p>\n");
    assert.equal(md("one\ntwo\n\nthree"), "<p>one\ntwo</p>\n<p>three</p>\n");
    assert.equal(md("- a\n* b\n1. c\n2) d"), "<ul><li>a</li><li>b</li></ul>\n<ol><li>c</li><li>d</li></ol>\n");
    assert.equal(md("> quoted\n> - item"), "<blockquote><p>quoted</p>\n<ul><li>item</li></ul>\n</blockquote>\n");
    assert.equal(md("```sh\nnpm start\n\n*not em*\n```\nafter"), "<pre><code>npm start\n\n*not em*</code></pre>\n<p>after</p>\n");
    assert.equal(md("```\nunclosed"), "<pre><code>unclosed</code></pre>\n");
    assert.equal(md("---"), "<hr>\n");
    assert.equal(md("a `b` **c** *d* _e_ snake_case_name"), "<p>a <code>b</code> <strong>c</strong> <em>d</em> <em>e</em> snake_case_name</p>\n");
  });

  it("escapes every piece of the note's text, and keeps only http(s) and relative links", () => {
    assert.equal(md("<script>alert(1)</script>"), "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n");
    assert.equal(md("# <img src=x onerror=alert(1)>"), "<h2>&lt;img src=x onerror=alert(1)&gt;</h2>\n");
    assert.equal(md("`<b>`"), "<p><code>&lt;b&gt;</code></p>\n");
    assert.equal(md('[x](https://a.example/?q="1"&r=2)'), '<p><a href="https://a.example/?q=&quot;1&quot;&amp;r=2" rel="noopener noreferrer nofollow">x</a></p>\n');
    assert.equal(
      md("[rel](/app/o/acme) [frag](#top)"),
      '<p><a href="/app/o/acme" rel="noopener noreferrer nofollow">rel</a> <a href="#top" rel="noopener noreferrer nofollow">frag</a></p>\n',
    );
    assert.equal(md("[x](javascript:alert`1`)"), "<p>x</p>\n");
    for (const href of ["javascript:alert(1)", "JaVaScRiPt:alert(1)", " javascript:x", "data:text/html,<b>", "vbscript:x", "java\tscript:x", "file:///etc/passwd"]) {
      assert.equal(safeHref(href), false, href);
    }
    for (const href of ["https://example.com", "http://example.com/a", "/x", "x/y", "#a", "?q=1", "//example.com/x"]) assert.equal(safeHref(href), true, href);
  });

  it("renders 100,000 characters of unclosed delimiters, deep quotes and long heading tails quickly", () => {
    const n = 100_000;
    for (const source of [
      "[".repeat(n),
      "[a".repeat(n / 2),
      "**a".repeat(n / 3),
      "_a".repeat(n / 2),
      "`".repeat(n),
      `# ${" ".repeat(n)}x`,
      `# x${" ".repeat(n)}`,
      ">".repeat(n),
      "- ".repeat(n / 2),
      "](".repeat(n / 2),
      `${"> ".repeat(n / 2)}x`,
    ]) {
      const started = performance.now();
      const out = md(source);
      const ms = performance.now() - started;
      assert.ok(ms < 1000, `${JSON.stringify(source.slice(0, 12))}…: ${Math.round(ms)} ms`);
      assert.ok(!/<(?!\/?(p|h[2-6]|ul|ol|li|blockquote|pre|code|strong|em|a|hr)\b)/.test(out));
    }
  });
});
