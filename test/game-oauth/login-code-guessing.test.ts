import assert from "node:assert/strict";
import type { Agent } from "../../agent/client.ts";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { globalLoginCodeKey } from "../../core/ratelimit/login-code-limits.ts";
import { loginCodePolicies } from "../../core/ratelimit/policies.ts";
import { command, createWorld, player, type World } from "./fixture.ts";

/**
 * Guessing login codes in game: what a wrong code tells the guesser (nothing), and the limits that
 * hold against an agent that invents its players and an operator with many servers. A world of its
 * own, so that no other suite's wrong codes count here.
 */
describe("Game OAuth: guessing login codes in game", function () {
  this.timeout(60_000);
  let w: World;
  let agent: Agent;

  before(async () => {
    w = await createWorld();
    agent = (await w.createServer("Guessed")).agent!;
  });
  after(async () => {
    await w?.close();
  });

  it("answers a live code of another organization, an expired code and an unknown code byte for byte alike", async () => {
    const foreignClient = await w.createClient({ name: "Foreign App", organizationSlug: "other" });
    const { session: foreign } = await w.start({ clientId: foreignClient.clientId });
    const { session: lapsed } = await w.start({ clientId: (await w.createClient({ name: "Lapsed App" })).clientId });
    const unknown = foreign.loginCode === "ABCD-2345" ? "ABCD-2346" : "ABCD-2345";

    const otherOrganization = await agent.playCommand(player(), command(foreign));
    const neverIssued = await agent.playCommand(player(), `/outpost login ${unknown}`);
    w.t.clock.advance(600_001);
    let expired;
    try {
      expired = await agent.playCommand(player(), command(lapsed));
    } finally {
      w.t.clock.advance(-600_001);
    }
    assert.equal(otherOrganization.accepted, false);
    assert.deepEqual(otherOrganization, neverIssued);
    assert.deepEqual(expired, neverIssued);
    assert.ok(!neverIssued.message.includes(unknown.slice(0, 4)), "the reply does not repeat the code");
  });

  it("refuses any code once an organization's servers took 100 wrong ones, from whichever servers and players; other organizations go on", async () => {
    const { limit } = loginCodePolicies.loginCodePerOrganization;
    assert.equal(limit, 100);
    // An organization of its own, so that only these codes count. Four servers, 25 players each,
    // one wrong code per player: under the per-server and per-player limits.
    await w.t.client(OrganizationsService, { session: w.session }).createOrganization({ name: "Guessers", slug: "guessers" });
    const inGuessers = { organizationSlug: "guessers" };
    const servers = await Promise.all(["Guess 1", "Guess 2", "Guess 3", "Guess 4"].map((name) => w.createServer(name, inGuessers)));
    const replies = await Promise.all(
      servers.map(async ({ agent: a }) => {
        const out = [];
        for (let i = 0; i < 25; i++) out.push(await a!.playCommand(player(`P${i}`), `/outpost login ZZZZ-${String(2000 + i)}`));
        return out;
      }),
    );
    assert.equal(replies.flat().filter((r) => /^No sign-in is waiting/.test(r.message)).length, limit);

    const fresh = await w.createServer("Fresh server", inGuessers);
    const refused = await fresh.agent!.playCommand(player("Newcomer"), "/outpost login ZZZZ-3000");
    assert.match(refused.message, /^Too many wrong codes have been entered on this organization's servers\. Try again in (10|9) minutes\.$/);
    // Even a right code, until the window ends: the count comes before the lookup.
    const { session } = await w.start({ clientId: (await w.createClient({ name: "Blocked App", organizationSlug: "guessers" })).clientId });
    assert.match((await fresh.agent!.playCommand(player(), command(session))).message, /^Too many wrong codes/);

    const elsewhere = await w.createServer("Elsewhere", { organizationSlug: "other" });
    const other = await elsewhere.agent!.playCommand(player(), "/outpost login ZZZZ-3001");
    assert.match(other.message, /^No sign-in is waiting/, "another organization keeps its own count");
  });

  it("pauses in-game sign-in everywhere once 1,000 wrong codes were entered across organizations", async () => {
    const { limit } = loginCodePolicies.loginCodeGlobal;
    assert.equal(limit, 1000);
    // The wrong codes of every organization, as a flood would have left the shared count.
    await Promise.all(Array.from({ length: limit }, () => w.t.rateLimits.loginCodeGlobal.consume(globalLoginCodeKey)));
    const server = await w.createServer("Anywhere", { organizationSlug: "other" });
    const refused = await server.agent!.playCommand(player(), "/outpost login YYYY-2000");
    assert.match(refused.message, /^Too many wrong codes are being entered; in-game sign-in is paused\. Try again in (10|9) minutes\.$/);
  });
});
