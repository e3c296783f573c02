import { strict as assert } from "node:assert";
import type { AddressInfo } from "node:net";
import Koa from "koa";
import { createOpenApiDocument } from "../../edge/http-api/openapi.ts";
import { apiDocs, apiDocsPaths, createApiDocsPage } from "../../edge/http-api/docs.ts";
import { serverUrl, version } from "./openapi-helpers.ts";

describe("http api: docs page", function () {
  this.timeout(30_000);
  const page = createApiDocsPage();

  it("loads the document from /api/http/openapi.json with no inline script, under a strict CSP", () => {
    assert.match(page.html, /data-spec-url="\/api\/http\/openapi\.json"/);
    const scripts = [...page.html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    assert.ok(scripts.length >= 2);
    for (const [, attributes, body] of scripts) {
      assert.match(attributes, /src="\/api\/http\/docs\/assets\//);
      assert.equal(body.trim(), "");
    }
    assert.ok(!/\sstyle=|<style/i.test(page.html), "inline style");
    assert.ok(!/https?:\/\//.test(page.html), "a remote URL in the page");
    assert.ok(!/unsafe-inline|unsafe-eval|\*/.test(page.contentSecurityPolicy), page.contentSecurityPolicy);
    assert.match(page.contentSecurityPolicy, /script-src 'self'/);
    for (const [, name] of page.html.matchAll(/\/api\/http\/docs\/assets\/([\w.-]+)\?v=/g)) assert.ok(page.assets.has(name), name);
    assert.match(page.assets.get("docs.js")!.body.toString(), /SwaggerUIBundle\(/);
    assert.ok(page.assets.get("swagger-ui-bundle.js")!.body.length > 500_000);
  });

  it("is served with the document and the assets by the middleware", async () => {
    const doc = createOpenApiDocument({ serverUrl, version });
    const app = new Koa();
    app.use(apiDocs({ document: doc, page }));
    app.use(async (ctx) => {
      ctx.status = 418;
    });
    const server = app.listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const json = await fetch(base + apiDocsPaths.document);
      assert.equal(json.status, 200);
      assert.match(json.headers.get("content-type") ?? "", /^application\/json/);
      assert.deepEqual(await json.json(), JSON.parse(JSON.stringify(doc)));
      const again = await fetch(base + apiDocsPaths.document, { headers: { "if-none-match": json.headers.get("etag")! } });
      assert.equal(again.status, 304);

      const html = await fetch(base + apiDocsPaths.page);
      assert.equal(html.status, 200);
      assert.match(html.headers.get("content-type") ?? "", /^text\/html/);
      assert.equal(html.headers.get("content-security-policy"), page.contentSecurityPolicy);
      assert.equal(await html.text(), page.html);

      for (const [name, asset] of page.assets) {
        const response = await fetch(`${base}${apiDocsPaths.assets}${name}?v=${asset.hash}`);
        assert.equal(response.status, 200, name);
        assert.equal(response.headers.get("content-type"), asset.contentType);
        assert.match(response.headers.get("cache-control") ?? "", /immutable/);
        assert.equal(Buffer.from(await response.arrayBuffer()).equals(asset.body), true, name);
      }
      assert.equal((await fetch(`${base}${apiDocsPaths.assets}..%2fpackage.json`)).status, 404);
      assert.equal((await fetch(`${base}${apiDocsPaths.assets}nope.js`)).status, 404);
      const post = await fetch(base + apiDocsPaths.document, { method: "POST" });
      assert.equal(post.status, 405);
      assert.equal(post.headers.get("allow"), "GET, HEAD");
      assert.equal((await fetch(`${base}/api/http/servers/listServers`)).status, 418, "other paths go on");
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
