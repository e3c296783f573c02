/** The Account OAuth client suites' core: a platform admin (root) and a normal user on it. */
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { startTestCore, type TestCore } from "../support/core.ts";
import type { Account } from "../support/fixtures.ts";

export const callback = "https://app.example.com/callback";

export interface AdminFixture {
  t: TestCore;
  /** A platform admin, made by createUser and signed in. */
  root: Account;
  user: Account;
}

export async function startAdminFixture(): Promise<AdminFixture> {
  const t = await startTestCore();
  try {
    const identity = t.client(IdentityService);
    const password = "root password 123";
    const created = await identity.createUser({ email: "root@example.com", password, name: "Root", platformAdmin: true });
    const signedIn = await identity.signIn({ email: "root@example.com", password });
    const root = { token: signedIn.sessionToken, userId: created.user!.id, email: "root@example.com" };
    const user = await t.signUp("user@example.com");
    return { t, root, user };
  } catch (error) {
    await t.close();
    throw error;
  }
}
