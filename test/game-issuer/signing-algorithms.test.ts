import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import * as oidc from "openid-client";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { signInInGame } from "../support/agent.ts";
import { appSignIn, openHostedPage, seedGameOAuth, type Seeded } from "../support/game-oauth.ts";

const redirectUri = "http://127.0.0.1:9/callback";

/** The algorithm a compact JWS's header names. */
const algOf = (jws: string) => (JSON.parse(Buffer.from(jws.split(".")[0], "base64url").toString()) as { alg: string }).alg;

/**
 * Game OAuth clients registered for ES256 and EdDSA ID tokens: a player signs in through the
 * hosted page and the real `outpost-agent simulate`, and openid-client, told the client's
 * algorithm, checks the ID token's signature against the issuer's JWKS.
 */
describe("game issuer: ID tokens in the client's algorithm", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let seeded: Seeded;

  before(async () => {
    t = await startTestOutpost();
    seeded = await seedGameOAuth(t.baseUrl, [redirectUri]);
  });
  after(() => t?.close());

  /** A whole sign-in for the seeded client, as an app that registered `alg`; answers the tokens. */
  async function signIn(alg: string) {
    const app = await appSignIn(t.gameIssuerUrl, seeded, redirectUri, alg);
    const page = await openHostedPage(app.url);
    const player = { name: "Alex", uuid: randomUUID() };
    const played = await signInInGame(t.baseUrl, seeded.agentKey, player, page.command.toLowerCase());
    assert.equal(played.code, 0, played.stdout + played.stderr);
    const tokens = await oidc.authorizationCodeGrant(app.config, await page.redirect, {
      pkceCodeVerifier: app.verifier,
      expectedState: app.state,
      expectedNonce: app.nonce,
      idTokenExpected: true,
    });
    assert.equal(tokens.claims()!.game_account_id, player.uuid);
    return tokens;
  }

  for (const alg of ["ES256", "EdDSA"] as const) {
    it(`signs a player in for a client registered for ${alg}, openid-client checking the signature against the JWKS`, async () => {
      const updated = await seeded.api("POST", "organizations/updateGameOAuthClient", { clientId: seeded.clientId, idTokenSignedResponseAlg: alg });
      assert.equal(updated.client.idTokenSignedResponseAlg, alg);
      const { events } = await seeded.api("GET", "activity/listOrganizationActivity?organizationSlug=acme&action=game_oauth_client.updated");
      assert.deepEqual(
        { changed: events[0].details.changed, alg: events[0].details.idTokenSignedResponseAlg },
        { changed: "idTokenSignedResponseAlg", alg },
        "the change is in the activity log",
      );
      const tokens = await signIn(alg);
      assert.equal(algOf(tokens.id_token!), alg);
      const kid = JSON.parse(Buffer.from(tokens.id_token!.split(".")[0], "base64url").toString()).kid;
      const jwks = (await (await fetch(`${t.gameIssuerUrl}/oauth2/jwks`)).json()) as { keys: Array<{ kid: string; alg: string }> };
      assert.equal(jwks.keys.find((key) => key.kid === kid)?.alg, alg, "a published key of that algorithm");
    });
  }

  it("creates a client with an algorithm, shows it, and refuses one Outpost has no keys for", async () => {
    const refused = await fetch(`${t.baseUrl}/api/http/organizations/createGameOAuthClient`, {
      method: "POST",
      headers: { "x-api-key": seeded.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ organizationSlug: "acme", name: "App", redirectUris: [redirectUri], verifierPolicy: "any_server", idTokenSignedResponseAlg: "HS256" }),
    });
    assert.equal(refused.status, 400);
    assert.match(((await refused.json()) as { message: string }).message, /id_token_signed_response_alg: must be in list \[RS256, ES256, EdDSA\]/);
    const created = await seeded.api("POST", "organizations/createGameOAuthClient", {
      organizationSlug: "acme",
      name: "Shop",
      redirectUris: [redirectUri],
      verifierPolicy: "any_server",
      idTokenSignedResponseAlg: "EdDSA",
    });
    assert.equal(created.client.idTokenSignedResponseAlg, "EdDSA");
    const shown = await seeded.api("GET", `organizations/getGameOAuthClient?clientId=${created.client.clientId}`);
    assert.equal(shown.client.idTokenSignedResponseAlg, "EdDSA");
  });

  it("back on RS256, the next sign-in's ID token is RS256 again", async () => {
    await seeded.api("POST", "organizations/updateGameOAuthClient", { clientId: seeded.clientId, idTokenSignedResponseAlg: "RS256" });
    assert.equal(algOf((await signIn("RS256")).id_token!), "RS256");
  });
});
