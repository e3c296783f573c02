/** The Web Push suites' core: a local push endpoint that checks every push, and alice and bob on a core that may send to it. */
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { startPushEndpoint, type PushEndpoint } from "../support/push-endpoint.ts";

export const subject = "mailto:ops@outpost.test";
// Local development: the local push endpoint is plain http on loopback.
export const config = testConfig;
/** The local push endpoint is http on loopback: local development, as ALLOW_LOCAL_OUTBOUND allows. */
export const local = { outbound: { allowLocal: true } };

export interface PushFixture {
  t: TestCore;
  push: PushEndpoint;
  alice: { token: string; userId: string };
  bob: { token: string; userId: string };
}

export async function startPushFixture(): Promise<PushFixture> {
  const push = await startPushEndpoint();
  let t: TestCore | undefined;
  try {
    t = await startTestCore(config, { ...local, vapidSubject: subject });
    const alice = await t.signUp("alice@example.com");
    const bob = await t.signUp("bob@example.com");
    return { t, push, alice, bob };
  } catch (error) {
    await t?.close();
    await push.close();
    throw error;
  }
}
