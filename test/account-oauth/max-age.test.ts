import assert from "node:assert/strict";
import { AccountOAuthService } from "../../gen/outpost/accountoauth/v1/account_oauth_service_pb.js";
import { AdminService } from "../../gen/outpost/admin/v1/admin_service_pb.js";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { startTestCore, type TestCore } from "../support/core.ts";

const redirectUri = "https://wiki.example.com/callback";

/**
 * max_age against the sign-in's time, in core with a clock the test sets: counted in whole
 * seconds, as the ID token's auth_time is (the HTTP suite drives max_age=0 through the pages).
 */
describe("Account OAuth: max_age counts whole seconds", () => {
  let t: TestCore;
  let clientId: string;
  let user: { token: string; userId: string };

  before(async () => {
    t = await startTestCore();
    const identity = t.client(IdentityService);
    await identity.createUser({ email: "root@example.com", password: "a long admin password", name: "Root", platformAdmin: true });
    const admin = (await identity.signIn({ email: "root@example.com", password: "a long admin password" })).sessionToken;
    const created = await t.client(AdminService, { session: admin }).createAccountOAuthClient({ name: "Wiki", redirectUris: [redirectUri], skipConsent: true });
    clientId = created.clientId;
    user = await t.signUp("reader@example.com");
  });
  after(async () => {
    await t?.close();
  });

  /** Sets the clock to half past a second S, and the user's sign-in to (S - 1 s) + `fraction` ms. */
  async function signedInAt(fraction: number, secondsBefore = 1): Promise<void> {
    const target = Math.ceil(t.clock.now().getTime() / 1000) * 1000 + 500;
    t.clock.advance(target - t.clock.now().getTime());
    const signIn = new Date(target - 500 - secondsBefore * 1000 + fraction);
    await t.orm.em.fork().getConnection().execute(`update sessions set created_at = ? where user_id = ?`, [signIn, user.userId], "run");
  }

  const start = (maxAge: string) =>
    t.client(AccountOAuthService, { session: user.token }).startAuthorization({
      responseType: "code",
      clientId,
      redirectUri,
      state: "s",
      scope: "openid",
      maxAge,
    });

  it("a sign-in 1.499 s ago (auth_time one second back) meets max_age=1", async () => {
    await signedInAt(1);
    const res = await start("1");
    assert.equal(res.next?.step.case, "redirectUrl", `went to ${res.next?.step.case}`);
    assert.ok(new URL(res.next!.step.value as string).searchParams.get("code"));
  });

  it("a sign-in whose auth_time is two seconds back does not", async () => {
    await signedInAt(999, 2);
    const res = await start("1");
    assert.equal(res.next?.step.case, "signIn");
    assert.equal((res.next!.step.value as { reason: string }).reason, "max_age");
  });
});
