import assert from "node:assert/strict";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { startFakeIssuer, type FakeIssuer } from "../game-issuer/fake-core.ts";

const getSession = "/api/rpc/outpost.auth.v1.AuthService/GetSession";
const attributes = "Path=/; Max-Age=\\d+; HttpOnly; SameSite=Lax; Secure";
const cookieOf = (res: Response, name: string) => res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));

/**
 * On an https deployment every cookie is `__Host-` prefixed (so Secure, Path=/, no Domain: no
 * subdomain or plain-http page can set or shadow it), and only the prefixed name is read. On http
 * the names stay bare (edge.test.ts, game-issuer/authorize.test.ts).
 */
describe("cookies on https: the __Host- prefix", () => {
  describe("the dashboard and its sign-in", () => {
    let t: TestOutpost;
    const origin = "https://outpost.example.com";
    before(async () => {
      t = await startTestOutpost({ ACCOUNT_BASE_URL: origin });
    });
    after(async () => {
      await t?.close();
    });

    it("sets the session as __Host-outpost_session (and the known device as __Host-outpost_device), and reads only that name", async () => {
      const res = await fetch(t.baseUrl + "/sign-up", {
        method: "POST",
        headers: { "content-type": "application/json", origin },
        body: JSON.stringify({ email: "host@example.com", password: "a long password", name: "Host" }),
      });
      assert.equal(res.status, 201);
      const set = cookieOf(res, "__Host-outpost_session")!;
      assert.match(set, new RegExp(`^__Host-outpost_session=ops_[0-9A-Za-z]{40}; ${attributes}$`));
      assert.match(cookieOf(res, "__Host-outpost_device")!, new RegExp(`^__Host-outpost_device=opd_[\\w.-]+; ${attributes}$`));
      assert.deepEqual(
        res.headers.getSetCookie().filter((c) => /Domain=/i.test(c) || !c.startsWith("__Host-")),
        [],
      );
      const token = /=([^;]+)/.exec(set)![1];
      const call = (cookie: string) => fetch(t.baseUrl + getSession, { method: "POST", headers: { "content-type": "application/json", origin, cookie }, body: "{}" });
      assert.equal((await call(`__Host-outpost_session=${token}`)).status, 200);
      assert.equal((await call(`outpost_session=${token}`)).status, 401, "the bare name is not the session cookie on https");
      const api = await fetch(t.baseUrl + "/api/http/organizations/listOrganizations", { headers: { cookie: `__Host-outpost_session=${token}` } });
      assert.equal(api.status, 200);
      const page = await fetch(t.baseUrl + "/app", { headers: { cookie: `__Host-outpost_session=${token}` }, redirect: "manual" });
      assert.notEqual(page.headers.get("location")?.startsWith("/sign-in"), true, "the dashboard knows the prefixed session");
    });

    it("signs in and out with the page's forms: the form token cookie is prefixed too", async () => {
      const page = await fetch(t.baseUrl + "/sign-in");
      const formCookie = cookieOf(page, "__Host-outpost_form")!;
      assert.match(formCookie, new RegExp(`^__Host-outpost_form=[A-Za-z0-9_-]{43}; ${attributes}$`));
      const formToken = /name="form_token" value="([^"]+)"/.exec(await page.text())![1];
      const post = (path: string, cookie: string, fields: Record<string, string>) =>
        fetch(t.baseUrl + path, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", origin, cookie },
          body: new URLSearchParams({ ...fields, form_token: formToken }),
          redirect: "manual",
        });
      const credentials = { email: "host@example.com", password: "a long password" };
      const bare = await post("/sign-in", `outpost_form=${formToken}`, credentials);
      assert.equal(bare.status, 403, "a form token under the bare name is not this browser's");
      const signedIn = await post("/sign-in", formCookie.split(";")[0], credentials);
      assert.equal(signedIn.status, 303);
      const session = cookieOf(signedIn, "__Host-outpost_session")!;
      assert.match(session, new RegExp(`^__Host-outpost_session=ops_\\w{40}; ${attributes}$`));
      const signedOut = await post("/sign-out", `${formCookie.split(";")[0]}; ${session.split(";")[0]}`, {});
      assert.equal(signedOut.status, 303);
      assert.match(cookieOf(signedOut, "__Host-outpost_session")!, /^__Host-outpost_session=; Path=\/; Max-Age=0; HttpOnly; SameSite=Lax; Secure$/);
      const after = await fetch(t.baseUrl + getSession, {
        method: "POST",
        headers: { "content-type": "application/json", origin, cookie: session.split(";")[0] },
        body: "{}",
      });
      assert.equal(after.status, 401);
    });

    it("names the prefixed cookie in the OpenAPI document", async () => {
      const doc = (await (await fetch(t.baseUrl + "/api/http/openapi.json")).json()) as { components: { securitySchemes: { session: { name: string } } } };
      assert.equal(doc.components.securitySchemes.session.name, "__Host-outpost_session");
    });
  });

  describe("the game issuer's browser binding", () => {
    let t: FakeIssuer;
    before(async () => {
      t = await startFakeIssuer("https://games.example.com");
    });
    after(async () => {
      await t?.close();
    });

    it("binds the browser with __Host-outpost_game_binding and reads only that name", async () => {
      const query = new URLSearchParams({
        response_type: "code",
        client_id: "ogc_app",
        redirect_uri: "https://app.example/cb",
        state: "s",
        code_challenge: "x".repeat(43),
        code_challenge_method: "S256",
      });
      const res = await fetch(`${t.url}/oauth2/authorize?${query}`, { redirect: "manual" });
      assert.equal(res.status, 200);
      const set = res.headers.get("set-cookie")!;
      assert.match(set, new RegExp(`^__Host-outpost_game_binding=[A-Za-z0-9_-]{43}; ${attributes}$`));
      const secret = /=([^;]+)/.exec(set)![1];
      const session = /data-session="([^"]+)"/.exec(await res.text())![1];
      const events = (cookie: string) => fetch(`${t.url}/oauth2/authorize/events?session=${session}`, { headers: { cookie } });
      const bare = await events(`outpost_game_binding=${secret}`);
      assert.equal(bare.status, 403);
      const bound = await events(`__Host-outpost_game_binding=${secret}`);
      assert.equal(bound.status, 200);
      await bound.body?.cancel();
    });
  });
});
