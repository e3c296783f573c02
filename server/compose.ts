/**
 * The composition root: configuration → database → ORM → core → edge → listeners. Nothing else
 * builds these pieces, and each gets what it needs as arguments.
 */
import type { Logger } from "pino";
import { setTimeout as sleep } from "node:timers/promises";
import { systemClock, type Clock } from "../core/deps.ts";
import { derivedSecret } from "../core/keys/key-encryption.ts";
import { startPresenceSweep } from "../core/agents/presence.ts";
import { startClaimSweep } from "../core/game-oauth/login-claims.ts";
import { startFlowCleanup } from "../core/oauth/cleanup.ts";
import { startExpiringKeyNotices } from "../core/notifications/expiring-keys.ts";
import { startScheduleRunner } from "../core/servers/schedule-runner.ts";
import { startStatsFolding } from "../core/stats/rollup.ts";
import { startThresholdChecks } from "../core/alerts/thresholds.ts";
import { createAlertWorker } from "../core/alerts/worker.ts";
import { jobFailureLog } from "../core/log-throttle.ts";
import { createEdgeApp } from "../edge/app.ts";
import { createGameIssuerApp } from "../edge/game-issuer/app.ts";
import { listenAll, type Listener } from "../edge/listen.ts";
import type { Config } from "./config.ts";
import { createRpcHandler } from "./rpc-handler.ts";
import { createMetricsApp } from "../edge/metrics-endpoint.ts";
import { openRuntime, type Runtime } from "./runtime.ts";

/** How often serving instances look for a signing key due for rotation. */
const keyRotationCheckMs = 3_600_000;
/** How often serving instances compare their cached signing keys with the stored ones (a purge elsewhere). */
const keyRefreshMs = 2_000;

export interface Outpost {
  /** The port the dashboard, HTTP API and Connect services listen on. */
  port: number;
  /** The port the Game OAuth issuer (GAME_ISSUER_URL) listens on. */
  gamePort: number;
  /** The port of the /metrics listener, when METRICS_PORT is set. */
  metricsPort: number | undefined;
  runtime: Runtime;
  /**
   * Shuts down gracefully (docs/operations.md): /readyz unready for SHUTDOWN_DELAY_MS, then no new
   * connections, streams ended with a reconnect hint, requests in flight finished (or cut as the
   * shutdown's bound nears), the database closed.
   */
  stop(): Promise<void>;
}

/** The edge, the Game OAuth issuer and (METRICS_PORT) the metrics' app, with where each listens. */
function createApps(config: Config, logger: Logger, runtime: Runtime, lifecycle: { shutdown: AbortSignal; draining: () => boolean }) {
  const metrics = runtime.metrics!;
  const endpoint = { scrape: metrics.scrape, token: config.metrics.token };
  // A proxy probes /readyz every few seconds: an outage is one warning a minute, not one a probe.
  const notReady = jobFailureLog(logger, "not ready", "warn");
  const app = createEdgeApp({
    accountBaseUrl: config.accountBaseUrl,
    gameIssuerUrl: config.gameIssuerUrl,
    logger,
    transport: runtime.core.transport(),
    rpcHandler: createRpcHandler(runtime.core.publicRoutes, runtime.core.interceptors),
    trustedProxies: config.trustedProxies,
    metrics: { ...endpoint, request: metrics.request },
    shutdown: lifecycle.shutdown,
    draining: lifecycle.draining,
    fileTransferMaxBytes: config.fileTransferMaxBytes,
    ready: async () => {
      try {
        await runtime.orm.em.fork().getConnection().execute("select 1");
      } catch (error) {
        notReady(error);
        throw error;
      }
    },
  });
  const gameIssuer = createGameIssuerApp({
    issuerUrl: config.gameIssuerUrl,
    transport: runtime.core.transport(),
    logger,
    trustedProxies: config.trustedProxies,
    // Every instance sharing the KEK verifies the others' challenges (browser and agent may
    // reach different instances; so may the page and its challenge check).
    botCheck: { hmacKey: derivedSecret(runtime.keyEncryptionKey(), "hosted page proof of work") },
    metrics,
    shutdown: lifecycle.shutdown,
  });
  return [
    { app, port: config.port, host: config.host },
    { app: gameIssuer, port: config.gamePort, host: config.host },
    ...(config.metrics.port === undefined ? [] : [{ app: createMetricsApp(endpoint), port: config.metrics.port, host: config.metrics.host }]),
  ];
}

/** Starts the whole service in this process; `localClock` is this machine's (the database's sets it). */
export async function startOutpost(config: Config, logger: Logger, localClock: Clock = systemClock): Promise<Outpost> {
  const runtime = await openRuntime(config, logger, "serve", localClock);
  const clock = runtime.clock;
  // Aborted when streams must end (the shutdown, after its delay); `draining` turns /readyz unready first.
  const shutdown = new AbortController();
  let draining = false;
  let listeners: Listener[];
  try {
    // Rotates a key that is due, and stops start-up if KEY_ENCRYPTION_KEY does not open the stored keys.
    await runtime.signingKeys.rotateDue();
    listeners = await listenAll(createApps(config, logger, runtime, { shutdown: shutdown.signal, draining: () => draining }));
  } catch (error) {
    await runtime.close();
    throw error;
  }
  const [listener, gameListener, metricsListener] = listeners;
  logger.info(
    {
      port: listener.port,
      gamePort: gameListener.port,
      metricsPort: metricsListener?.port,
      accountBaseUrl: config.accountBaseUrl.origin,
      gameIssuerUrl: config.gameIssuerUrl.origin,
      database: runtime.database.kind,
    },
    "Outpost is serving",
  );
  let rotating: Promise<unknown> = Promise.resolve();
  const rotationFailed = jobFailureLog(logger, "scheduled signing-key rotation failed");
  const rotationTimer = setInterval(() => {
    rotating = runtime.signingKeys.rotateDue().catch(rotationFailed);
  }, keyRotationCheckMs).unref();
  let refreshing: Promise<unknown> = Promise.resolve();
  const refreshFailed = jobFailureLog(logger, "re-reading the signing keys failed", "warn");
  const refreshTimer = setInterval(() => {
    refreshing = runtime.signingKeys.refresh().catch(refreshFailed);
  }, keyRefreshMs).unref();
  const presenceSweep = startPresenceSweep({ orm: runtime.orm, clock, logger });
  const flowCleanup = startFlowCleanup({ orm: runtime.orm, statements: runtime.deps.statements, clock, logger });
  const claimSweep = startClaimSweep({ orm: runtime.orm, clock, logger, events: runtime.events });
  const keyNotices = startExpiringKeyNotices({ orm: runtime.orm, statements: runtime.deps.statements, notifier: runtime.deps.notifier, clock, logger });
  const schedules = startScheduleRunner({ ...runtime.deps, clock, logger });
  const statsFolding = startStatsFolding({ orm: runtime.orm, clock, logger, retention: config.statsRetention });
  const thresholds = startThresholdChecks({ orm: runtime.orm, clock, logger });
  const alertWorker = createAlertWorker({ ...runtime.deps, clock, logger });
  alertWorker.start();
  let stopping: Promise<void> | undefined;
  return {
    port: listener.port,
    gamePort: gameListener.port,
    metricsPort: metricsListener?.port,
    runtime,
    stop() {
      stopping ??= (async () => {
        const started = Date.now();
        const { timeoutMs, delayMs } = config.shutdown;
        // A proxy that polls /readyz stops sending new requests here while they are still served.
        draining = true;
        if (delayMs > 0) await sleep(delayMs);
        clearInterval(rotationTimer);
        clearInterval(refreshTimer);
        shutdown.abort();
        // Requests in flight get what is left of the bound, less a moment kept for closing the database.
        const graceMs = Math.max(0, timeoutMs - (Date.now() - started) - Math.min(2_000, timeoutMs / 4));
        // Agents' streams would hold their connections open: end them (each records its server
        // offline, and the agent reconnects elsewhere) while the listeners stop taking new ones.
        await Promise.all([
          ...listeners.map((l) => l.close(graceMs)),
          runtime.agents.close(),
          presenceSweep.stop(),
          flowCleanup.stop(),
          claimSweep.stop(),
          keyNotices.stop(),
          schedules.stop(),
          statsFolding.stop(),
          thresholds.stop(),
          alertWorker.stop(),
        ]);
        await Promise.all([rotating, refreshing]);
        await runtime.close();
        logger.info({ ms: Date.now() - started }, "Outpost stopped");
      })();
      return stopping;
    },
  };
}
