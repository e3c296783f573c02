/**
 * The integration delivery suites' core: acme with its cast on a core that sends to local
 * receivers (local development), a second instance on the same database that does not (as
 * production runs), a plain HTTP receiver, a Discord stand-in and an SMTP server.
 */
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { acmeWithMembers, type AcmeCast } from "../support/fixtures.ts";
import { startDiscordReceiver, startHttpReceiver, startSmtpReceiver, type HttpReceiver, type SmtpReceiver } from "../support/receivers.ts";

export interface IntegrationsFixture {
  t: TestCore;
  /** A second instance on the same database without local development, as production runs. */
  strict: TestCore;
  cast: AcmeCast;
  receiver: HttpReceiver;
  /** Checks each body as Discord does, and answers 400 as Discord does to one it refuses. */
  discord: HttpReceiver;
  smtp: SmtpReceiver;
  close(): Promise<void>;
}

export async function startIntegrationsFixture(): Promise<IntegrationsFixture> {
  // Closed newest first, also when a later step fails.
  const started: Array<{ close(): Promise<void> }> = [];
  const opened = <T extends { close(): Promise<void> }>(thing: T) => (started.unshift(thing), thing);
  const close = async () => {
    for (const thing of started) await thing.close();
  };
  try {
    const receiver = opened(await startHttpReceiver());
    const discord = opened(await startDiscordReceiver());
    const smtp = opened(await startSmtpReceiver());
    const t = opened(
      await startTestCore(testConfig, { outbound: { allowLocal: true, timeoutMs: 1000 }, smtp: { url: smtp.url, from: "Outpost <outpost@example.test>" } }),
    );
    const resolve = async (host: string) => (host === "hooks.example.test" ? [{ address: "127.0.0.1", family: 4 }] : [{ address: "93.184.216.34", family: 4 }]);
    const strict = opened(await startTestCore(testConfig, { database: t.database, outbound: { allowLocal: false, resolve } }));
    const cast = await acmeWithMembers(t);
    return { t, strict, cast, receiver, discord, smtp, close };
  } catch (error) {
    await close();
    throw error;
  }
}
