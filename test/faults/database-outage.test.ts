/**
 * PostgreSQL stopped for 10 s under load, in front of a real `outpost serve`: token exchanges, API
 * calls that write, and an agent's heartbeats keep coming. A TCP proxy between Outpost and the
 * database does what a stopped server does to its clients: the open connections drop and new ones
 * are refused.
 *
 * While it is down every request is answered promptly, 503 with Retry-After (never a hang, never a
 * 500), and /readyz says so. Within 5 s of its return everything works again by itself: the API,
 * readiness and the agent's server, online. Nothing is lost or done twice: each authorization code
 * gives tokens at most once, and every rename that was answered 200 is in the activity log. Console
 * commands sent all along run only when they are on record first (a 503 ran nothing), and each
 * that ran is settled as ran once the agent is back.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createTestDatabase, onPostgresServer, type TestDatabase } from "../support/database.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import { runCli, startServe, type ServeProcess } from "../support/process.ts";
import { startAgent, PlayerAuth, type Agent } from "../../agent/client.ts";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { firstPartyFlow, type Minted } from "../support/first-party.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const outageMs = 10_000;
const recoveryMs = 5_000;
/** A request still unanswered after this is a hang (the pool gives up connecting after 5 s). */
const hangMs = 8_000;
const redirectUri = "http://127.0.0.1:9/callback";

interface Answer {
  status: number;
  retryAfter: string | null;
  body: Json;
}

onPostgresServer(() =>
  describe("faults: PostgreSQL stops for 10 s under load", function () {
    this.timeout(120_000);
    let db: TestDatabase;
    let proxy: TcpProxy;
    let serve: ServeProcess;
    let agent: Agent | undefined;
    let base: string;
    let key: string;

    before(async () => {
      db = await createTestDatabase();
      proxy = await startTcpProxy(db.url);
      const env = { KEY_ENCRYPTION_KEY: randomBytes(32).toString("base64"), SIGN_UPS_PER_IP_PER_HOUR: "1000" };
      serve = await startServe({ ...env, DATABASE_URL: proxy.url, LOG_LEVEL: "info" });
      base = `http://127.0.0.1:${serve.port}`;
      const cli = (args: string[]) => runCli(args, { ...env, DATABASE_URL: db.url });
      assert.equal((await cli(["user", "create", "--email", "ops@example.com", "--password", "a long password 1", "--platform-admin"])).code, 0);
      key = (await cli(["api-key", "create", "--email", "ops@example.com", "--name", "faults"])).stdout.trim().split("\n").pop()!;
    });
    after(async () => {
      await agent?.stop();
      await serve?.stop();
      await proxy?.close();
      await db?.drop();
    });

    /** One request, answered or not within {@link hangMs}. */
    async function request(path: string, init: RequestInit = {}): Promise<Answer> {
      const res = await fetch(base + path, { ...init, redirect: "manual", signal: AbortSignal.timeout(hangMs) });
      const text = await res.text();
      let body: Json = text;
      try {
        body = JSON.parse(text);
      } catch {
        // Not JSON (a redirect): kept as text.
      }
      return { status: res.status, retryAfter: res.headers.get("retry-after"), body };
    }
    const api = (path: string, body?: unknown) =>
      request(`/api/http/${path}`, {
        method: body === undefined ? "GET" : "POST",
        headers: { "x-api-key": key, ...(body !== undefined && { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const ok = async (path: string, body?: unknown) => {
      const answer = await api(path, body);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      return answer.body;
    };

    it("answers 503 with Retry-After while it is down, recovers within 5 s, and loses nothing", async () => {
      await ok("organizations/createOrganization", { name: "Ops", slug: "ops" });
      const { server, agentKey } = await ok("servers/createServer", { organizationSlug: "ops", name: "Survival", game: "minecraft" });
      const ran: string[] = [];
      agent = startAgent({
        url: base,
        key: agentKey,
        game: Game.MINECRAFT,
        playerAuth: PlayerAuth.ONLINE,
        heartbeatMs: 500,
        backoff: { initialMs: 100, maxMs: 1000 },
        console: async (command) => (ran.push(command), { success: true, output: [`done: ${command}`] }),
      });
      await agent.connected(10_000);

      // Authorization codes of a first-party Account OAuth client, minted before the outage.
      const client = await ok("admin/createAccountOAuthClient", { name: "Wiki", redirectUris: [redirectUri], skipConsent: true });
      const flow = await firstPartyFlow(base, { ...client, redirectUri }, { email: "ops@example.com", password: "a long password 1" });
      const codes: Minted[] = [];
      for (let i = 0; i < 30; i++) codes.push(await flow.code());
      const basic = `Basic ${Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`).toString("base64")}`;
      // As flow.exchange does, but bounded like every request here.
      const exchange = ({ code, verifier }: Minted) =>
        request("/api/auth/oauth2/token", {
          method: "POST",
          headers: { authorization: basic, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: redirectUri, code_verifier: verifier }),
        });

      // The load: renames (each one an activity event when it is answered 200) and token exchanges
      // (each code tried until it gives tokens or is refused), until told to stop.
      const answers: Answer[] = [];
      const tokensByCode = new Map<Minted, number>();
      const renameAnswers = new Map<string, number>();
      let loading = true;
      const renames = (async () => {
        for (let i = 0; loading; i++) {
          const answer = await api("servers/updateServer", { serverId: server.id, name: `Survival ${i}` });
          answers.push(answer);
          renameAnswers.set(`Survival ${i}`, answer.status);
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      const commands = new Map<string, Answer>();
      const consoleLoad = (async () => {
        for (let i = 0; loading; i++) {
          const command = `say outage-${i}`;
          commands.set(command, await api("servers/executeConsoleCommand", { serverId: server.id, command }));
          await new Promise((r) => setTimeout(r, 150));
        }
      })();
      const exchanges = (async () => {
        for (const code of codes) {
          for (;;) {
            const answer = await exchange(code);
            answers.push(answer);
            if (answer.status === 200) tokensByCode.set(code, (tokensByCode.get(code) ?? 0) + 1);
            if (answer.status !== 503) break;
            await new Promise((r) => setTimeout(r, 200));
          }
          if (!loading) break;
          await new Promise((r) => setTimeout(r, 300));
        }
      })();

      await new Promise((r) => setTimeout(r, 1000));
      // PostgreSQL stops: its connections drop and new ones are refused.
      const logAtOutage = serve.output().length;
      proxy.refuse(true);
      proxy.cut();
      const outageEnds = Date.now() + outageMs;
      const during: Answer[] = [];
      while (Date.now() < outageEnds) {
        during.push(await api(`servers/listServers?organizationSlug=ops`));
        const ready = await request("/readyz");
        assert.equal(ready.status, 503, "/readyz reports the database gone");
        await new Promise((r) => setTimeout(r, 250));
      }
      assert.ok(during.length > 10);
      // Both issuers' sign-in pages say Outpost is unavailable for now (not "too many sign-ins").
      for (const authorize of [
        `http://127.0.0.1:${serve.gamePort}/oauth2/authorize?client_id=x&redirect_uri=${encodeURIComponent(redirectUri)}&response_type=code&scope=openid`,
        `${base}/api/auth/oauth2/authorize?client_id=x&redirect_uri=${encodeURIComponent(redirectUri)}&response_type=code&scope=openid`,
      ]) {
        const page = await fetch(authorize, { redirect: "manual", signal: AbortSignal.timeout(hangMs) });
        assert.equal(page.status, 503, `${authorize}: ${page.status}`);
        assert.ok(Number(page.headers.get("retry-after")) >= 1);
        assert.match(await page.text(), /cannot reach its database/);
      }
      for (const answer of during) {
        assert.equal(answer.status, 503, JSON.stringify(answer.body));
        assert.equal(answer.body.code, "unavailable");
        assert.ok(Number(answer.retryAfter) >= 1, "Retry-After says when to come back");
      }

      // PostgreSQL is back: within 5 s everything works again, by itself.
      const outageLog = serve.output().slice(logAtOutage);
      proxy.refuse(false);
      const back = Date.now();
      const eventually = async (what: string, check: () => Promise<boolean>) => {
        while (!(await check())) {
          assert.ok(Date.now() - back < recoveryMs, `${what} did not recover within ${recoveryMs} ms of the database's return`);
          await new Promise((r) => setTimeout(r, 100));
        }
      };
      await eventually("the API", async () => (await api(`servers/listServers?organizationSlug=ops`)).status === 200);
      await eventually("readiness", async () => (await request("/readyz")).status === 200);
      await eventually("the agent's server", async () => {
        const answer = await api(`servers/getServer?serverId=${server.id}`);
        return answer.status === 200 && answer.body.server.online === true;
      });
      await new Promise((r) => setTimeout(r, 1000));
      loading = false;
      await Promise.all([renames, exchanges, consoleLoad]);

      // No console command ran without its record: a 503 ran nothing, and each that ran is settled
      // as ran (its answer recorded, or sent again by the agent on its new connection).
      assert.ok(
        [...commands.values()].some((a) => a.status === 503),
        "commands met the outage",
      );
      for (const [command, answer] of commands) {
        const got = ran.filter((c) => c === command).length;
        assert.ok(got <= 1, `${command} ran ${got} times`);
        if (answer.status === 503) assert.equal(got, 0, `${command} was answered 503 and ran`);
        if (got === 0) continue;
        assert.ok(answer.status === 200 || answer.body.reason === "outcome_unknown", `${command} ran: ${answer.status} ${JSON.stringify(answer.body)}`);
        const requestId = answer.body.requestId ?? /request_id (\S+) tells/.exec(answer.body.message)?.[1];
        let record: Json;
        for (let i = 0; i < 50 && record?.status !== "ran"; i++) {
          record = (await ok(`servers/getConsoleCommand?serverId=${server.id}&requestId=${requestId}`)).command;
          if (record.status !== "ran") await new Promise((r) => setTimeout(r, 100));
        }
        assert.equal(record.status, "ran", `${command}: ${JSON.stringify(record)}`);
      }

      // Every answer under load was a success or an explained 503 (never a 500, never a hang), …
      for (const answer of answers) {
        if (answer.status === 503) assert.ok(Number(answer.retryAfter) >= 1, JSON.stringify(answer.body));
        else assert.ok(answer.status === 200 || answer.status === 400, `${answer.status} ${JSON.stringify(answer.body)}`);
      }
      assert.ok(
        answers.some((a) => a.status === 503),
        "the load met the outage",
      );
      // …no code gave tokens twice, most gave them once (one cut mid-exchange may be consumed
      // without its answer arriving: then it is refused as used, never honoured again), …
      for (const [minted, count] of tokensByCode) assert.equal(count, 1, `code ${minted.code} gave tokens ${count} times`);
      assert.ok(tokensByCode.size >= 5, `only ${tokensByCode.size} codes were exchanged`);
      // …and every rename answered 200 is on record. The one rename whose COMMIT was on its way
      // when the connection was cut may have committed with its answer lost: that one is 503 and
      // on record (its outcome is unknown to the caller, issue 33); no other is.
      const renamed: string[] = [];
      for (let before = ""; ;) {
        const page = await ok(`activity/listOrganizationActivity?organizationSlug=ops&action=server.renamed&limit=200${before && `&before=${before}`}`);
        renamed.push(...page.events.map((event: { details: { to: string } }) => event.details.to));
        if (page.events.length < 200) break;
        before = page.events.at(-1).id;
      }
      const answeredOk = [...renameAnswers].filter(([, status]) => status === 200).map(([name]) => name);
      assert.ok(answeredOk.length > 0);
      assert.deepEqual(
        answeredOk.filter((name) => !renamed.includes(name)),
        [],
        "every rename answered 200 is on record",
      );
      assert.equal(new Set(renamed).size, renamed.length, "one activity event per rename");
      // The outage is in the log a line or so per kind, not once per request, round or probe
      // (docs/operations.md: one warning a minute).
      const counts = new Map<string, number>();
      for (const line of outageLog.split("\n")) {
        if (!line.startsWith("{")) continue;
        const record = JSON.parse(line) as { level: number; msg: string };
        if (record.level >= 40) counts.set(record.msg, (counts.get(record.msg) ?? 0) + 1);
      }
      if (process.env.OUTAGE_LOG) console.log(outageLog);
      assert.ok(counts.size > 0, "the outage is in the log");
      assert.deepEqual(
        [...counts].filter(([, count]) => count > 1),
        [],
        "each warning at most once during 10 s of outage",
      );
      const inDoubt = renamed.filter((name) => renameAnswers.get(name) !== 200);
      assert.ok(
        inDoubt.length <= 1 && inDoubt.every((name) => renameAnswers.get(name) === 503),
        `renames on record whose caller got no 200: ${inDoubt.map((n) => `${n} (${renameAnswers.get(n)})`)}`,
      );
    });
  }),
);
