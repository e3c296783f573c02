import assert from "node:assert/strict";
import { html, Html, jsonScript, scriptJson } from "../../../edge/html.ts";
import { page } from "../../../edge/pages.ts";

const text = (fragment: Html) => fragment.toString();

describe("html: the one template every page is written with", () => {
  it("escapes text content", () => {
    assert.equal(text(html`<p>${"Tom & Jerry <3"}</p>`), "<p>Tom &amp; Jerry &lt;3</p>");
  });

  it("escapes both kinds of quote in attribute values", () => {
    assert.equal(text(html`<input value="${`say "hi"`}" title='${"it's"}'>`), `<input value="say &quot;hi&quot;" title='it&#39;s'>`);
  });

  it("keeps a value that tries to close its attribute inside it", () => {
    const value = `x" onmouseover="alert(1)`;
    const out = text(html`<a href="/p" title="${value}">link</a>`);
    assert.equal(out, `<a href="/p" title="x&quot; onmouseover=&quot;alert(1)">link</a>`);
    assert.equal(out.split('"').length - 1, 4, "only the template's own quotes remain");
  });

  it("turns a script a value carries into text", () => {
    const out = text(html`<p>${"</p><script>alert(document.cookie)</script>"}</p>`);
    assert.equal(out, "<p>&lt;/p&gt;&lt;script&gt;alert(document.cookie)&lt;/script&gt;</p>");
    assert.ok(!out.includes("<script"));
  });

  it("embeds nested fragments as they are, and escapes the values inside them once", () => {
    const item = html`<li>${"a<b"}</li>`;
    assert.equal(text(html`<ul>${item}</ul>`), "<ul><li>a&lt;b</li></ul>");
    assert.equal(text(html`<div>${html`<ul>${item}</ul>`}</div>`), "<div><ul><li>a&lt;b</li></ul></div>");
  });

  it("joins arrays with nothing between, escaping strings in them and nesting arrays", () => {
    const names = ["Ann", "<Bo>"];
    assert.equal(text(html`<ul>${names.map((n) => html`<li>${n}</li>`)}</ul>`), "<ul><li>Ann</li><li>&lt;Bo&gt;</li></ul>");
    assert.equal(text(html`${["<", [html`<br>`, "&"]]}`), "&lt;<br>&amp;");
    assert.equal(text(html`<ul>${[]}</ul>`), "<ul></ul>");
  });

  it("renders undefined, null and booleans as nothing, and numbers as text", () => {
    const missing: string | undefined = undefined;
    assert.equal(text(html`[${missing}${null}${false}${true}]`), "[]");
    assert.equal(text(html`<input maxlength="${64}" data-n="${10n}" data-zero="${0}">`), `<input maxlength="64" data-n="10" data-zero="0">`);
    const open = false;
    assert.equal(text(html`<details${open && html` open`}>`), "<details>");
  });

  it("does not take an object that only looks like a fragment for one", () => {
    const forged = JSON.parse(`{"markup":"<script>x</script>","value":"<script>x</script>"}`) as unknown as Html;
    assert.equal(Html.is(forged), false);
    assert.ok(!text(html`<p>${forged}</p>`).includes("<script>"));
    assert.equal(Html.is(html`<b>ok</b>`), true);
  });

  it("page: one head with linked styles and deferred scripts, the body as given, the title escaped", () => {
    const out = text(
      page({
        title: "A </title><script>x</script>",
        stylesheets: ["/a.css?v=1"],
        scripts: ["/a.js?v=1&x=2"],
        icon: { href: "/i.svg", type: "image/svg+xml" },
        body: html`<main>${"<hi>"}</main>`,
      }),
    );
    assert.ok(out.startsWith('<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<meta name="viewport"'));
    assert.ok(out.includes("<title>A &lt;/title&gt;&lt;script&gt;x&lt;/script&gt;</title>"));
    assert.ok(out.includes('<link rel="icon" href="/i.svg" type="image/svg+xml">\n<link rel="stylesheet" href="/a.css?v=1">\n'));
    assert.ok(out.includes('<script src="/a.js?v=1&amp;x=2" defer></script>\n</head>'));
    assert.ok(out.includes("<body>\n<main>&lt;hi&gt;</main>\n</body>"));
    assert.equal(out.match(/<script/g)?.length, 1, "no inline script: only the linked one");
    assert.ok(!out.includes("<style"));
  });
});

describe("page: an import map before the scripts, and modules after them", () => {
  it("puts the import map first among the scripts, so that it applies to every module", () => {
    const out = page({
      title: "t",
      stylesheets: [],
      scripts: ["/a.js"],
      modules: ["/m.js"],
      importMap: jsonScript("importmap", { imports: { x: "/x.js" } }),
      body: html``,
    }).toString();
    const map = out.indexOf('<script type="importmap">');
    assert.ok(
      map > 0 && map < out.indexOf('<script src="/a.js" defer>') && out.indexOf('<script src="/a.js" defer>') < out.indexOf('<script type="module" src="/m.js">'),
    );
  });
});

describe("jsonScript: JSON data in a script element", () => {
  it("escapes what could end the element or open a comment, and stays the same JSON", () => {
    const value = { text: "</script><script>alert(1)</script><!-- & \u2028" };
    const out = jsonScript("importmap", value).toString();
    assert.ok(out.startsWith('<script type="importmap">') && out.endsWith("</script>"));
    const inner = out.slice('<script type="importmap">'.length, -"</script>".length);
    assert.equal(inner, scriptJson(value));
    assert.doesNotMatch(inner, /[<>&\u2028]/);
    assert.deepEqual(JSON.parse(inner), value);
  });
});
