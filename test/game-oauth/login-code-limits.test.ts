import assert from "node:assert/strict";
import type { Agent } from "../../agent/client.ts";
import type { Limiter } from "../../core/ratelimit/limiter.ts";
import { globalLoginCodeKey } from "../../core/ratelimit/login-code-limits.ts";
import { command, createWorld, player, type World } from "./fixture.ts";

const noSignIn = "No sign-in is waiting for that code. Check it on the sign-in page, or start again from the app.";

/**
 * The wrong-code limits count one level at a time (player, server, organization, all servers) and
 * stop at the first that refuses: what one player, one server or one organization can spend further
 * up is bounded by its own limit. A world of its own, so that only these codes count.
 */
describe("Game OAuth: what a refused login code costs the limits above it", function () {
  this.timeout(120_000);
  let w: World;
  let guessed: { id: string; agent?: Agent };

  before(async () => {
    w = await createWorld();
    guessed = await w.createServer("Guessed");
  });
  after(async () => {
    await w?.close();
  });

  /** A key's count now: one probe counted and taken back. */
  async function countOf(limiter: Limiter, key: string): Promise<number> {
    const decision = await limiter.consume(key);
    await limiter.refund(key);
    return decision.consumed - 1;
  }
  const counts = async () => ({
    server: await countOf(w.t.rateLimits.loginCodePerServer, guessed.id),
    organization: await countOf(w.t.rateLimits.loginCodePerOrganization, w.organizationId),
    global: await countOf(w.t.rateLimits.loginCodeGlobal, globalLoginCodeKey),
  });

  /** `n` wrong codes from `who` on `agent`, a batch at a time; their replies. */
  async function guess(agent: Agent, who: { name: string; uuid: string }, n: number): Promise<string[]> {
    const replies: string[] = [];
    for (let i = 0; i < n; i += 50) {
      const batch = Array.from({ length: Math.min(50, n - i) }, (_, j) => agent.playCommand(who, `/outpost login ZZZZ-${String(2000 + ((i + j) % 7000))}`));
      replies.push(...(await Promise.all(batch)).map((r) => r.message));
    }
    return replies;
  }

  it("a player over their limit charges nothing further up: their further wrong codes leave the server, organization and global counts alone", async () => {
    const before = await counts();
    const replies = await guess(guessed.agent!, player("Guesser"), 40);
    assert.equal(replies.filter((m) => m === noSignIn).length, 5);
    assert.equal(replies.filter((m) => /^You have entered too many wrong codes/.test(m)).length, 35);
    const after = await counts();
    assert.deepEqual(
      { server: after.server - before.server, organization: after.organization - before.organization, global: after.global - before.global },
      { server: 5, organization: 5, global: 5 },
    );
    // So the server's limit (30) is far off: another player there is answered as ever.
    assert.equal((await guessed.agent!.playCommand(player("Honest"), "/outpost login ZZZZ-9999")).message, noSignIn);
  });

  it("one player on one server cannot pause in-game sign-in for another organization, however many codes they type", async () => {
    const flooder = player("Flooder");
    const replies = await guess(guessed.agent!, flooder, 1001);

    const elsewhere = await w.createServer("Elsewhere", { organizationSlug: "other" });
    const { session } = await w.start({ clientId: (await w.createClient({ name: "Other App", organizationSlug: "other" })).clientId });
    assert.equal((await elsewhere.agent!.playCommand(player(), "/outpost login ZZZZ-9998")).message, noSignIn);
    assert.ok((await elsewhere.agent!.playCommand(player(), command(session))).confirmation, "a real code still claims its sign-in");
    // Nor for the rest of their own organization.
    const sibling = await w.createServer("Sibling");
    assert.equal((await sibling.agent!.playCommand(player(), "/outpost login ZZZZ-9997")).message, noSignIn);
    // Every code past their fifth was refused as theirs, not as the server's or anyone else's.
    assert.equal(replies.filter((m) => m === noSignIn).length, 5);
    assert.equal(replies.filter((m) => /^You have entered too many wrong codes/.test(m)).length, 996);
  });

  it("a player's count is their organization's: wrong codes reported for a UUID in one organization do not limit it in another", async () => {
    // Anyone can make an organization, a server and an agent, and report any player's public UUID.
    const victim = player("Victim");
    const replies = await guess(guessed.agent!, victim, 6);
    assert.equal(replies.filter((m) => /^You have entered too many wrong codes/.test(m)).length, 1);

    const theirs = await w.createServer("Victim's server", { organizationSlug: "other" });
    assert.equal((await theirs.agent!.playCommand(victim, "/outpost login ZZZZ-9996")).message, noSignIn);
    const { session } = await w.start({ clientId: (await w.createClient({ name: "Victim's App", organizationSlug: "other" })).clientId });
    assert.ok((await theirs.agent!.playCommand(victim, command(session))).confirmation, "the victim still signs in");
    // In the organization that reported them, they stay limited.
    assert.match((await guessed.agent!.playCommand(victim, "/outpost login ZZZZ-9995")).message, /^You have entered too many wrong codes/);
  });
});
