/**
 * The Prometheus metrics of one serving process: a Registry of its own (never prom-client's
 * global one), what core and the edge report through their interfaces, gauges read at each scrape
 * from the pieces that hold the facts, and prom-client's default process metrics. docs/operations.md
 * lists them.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { PostgreSqlConnection } from "@mikro-orm/postgresql";
import type { Metrics, PoolUse } from "../core/metrics.ts";
import type { Orm } from "../core/db/orm.ts";
import type { AgentConnections } from "../core/agents/connections.ts";
import type { Bus } from "../core/bus.ts";
import type { RateLimits } from "../core/ratelimit/limits.ts";
import type { RequestMetrics } from "../edge/request-log.ts";
import type { Scrape } from "../edge/metrics-endpoint.ts";

/** What the gauges read when scraped. */
export interface MetricSources {
  /** Agent streams holding their server on this instance. */
  agentsConnected(): number;
  /** Bus messages waiting to be sent to the other instances. */
  busPending(): number;
  /** Connection pools by name; undefined when the pool is not open (yet). */
  pools: Record<string, () => PoolUse | undefined>;
}

export interface PrometheusMetrics extends Metrics, RequestMetrics {
  readonly registry: Registry;
  scrape(): Promise<Scrape>;
}

/** Seconds: from a cached discovery document to a token exchange that waits on the database. */
const latencyBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The gauges, each read from `sources` when scraped. */
function registerGauges(registers: Registry[], sources: MetricSources): void {
  new Gauge({
    name: "outpost_agents_connected",
    help: "Game-server agents whose stream holds their server on this instance.",
    registers,
    collect() {
      this.set(sources.agentsConnected());
    },
  });
  new Gauge({
    name: "outpost_bus_pending_messages",
    help: "Messages waiting to be sent to the other instances over LISTEN/NOTIFY (0 on the embedded database).",
    registers,
    collect() {
      this.set(sources.busPending());
    },
  });
  new Gauge({
    name: "outpost_db_pool_connections",
    help: "Database connections of a pool (orm, rate_limits), by state: open (total) or idle.",
    labelNames: ["pool", "state"],
    registers,
    collect() {
      this.reset();
      for (const [pool, use] of Object.entries(sources.pools)) {
        const now = use();
        if (!now) continue;
        this.set({ pool, state: "total" }, now.total);
        this.set({ pool, state: "idle" }, now.idle);
      }
    },
  });
  new Gauge({
    name: "outpost_db_pool_waiting",
    help: "Queries waiting for a free connection of a pool.",
    labelNames: ["pool"],
    registers,
    collect() {
      this.reset();
      for (const [pool, use] of Object.entries(sources.pools)) {
        const now = use();
        if (now) this.set({ pool }, now.waiting);
      }
    },
  });
}

export function createPrometheusMetrics(sources: MetricSources): PrometheusMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const requests = new Counter({
    name: "outpost_http_requests_total",
    help: "HTTP responses, by listener, method, route template and status.",
    labelNames: ["server", "method", "route", "status"],
    registers,
  });
  const duration = new Histogram({
    name: "outpost_http_request_duration_seconds",
    help: "Time from a request's arrival to the end of its response (streams: their whole life).",
    labelNames: ["server", "method", "route", "status"],
    buckets: latencyBuckets,
    registers,
  });
  const exchanges = new Counter({
    name: "outpost_token_exchanges_total",
    help: "Token endpoint exchanges, by issuer (game, account) and outcome (issued, an OAuth error, or error).",
    labelNames: ["issuer", "outcome"],
    registers,
  });
  const signInsStarted = new Counter({ name: "outpost_game_sign_ins_started_total", help: "Hosted Game OAuth sign-ins opened.", registers });
  const signInsCompleted = new Counter({
    name: "outpost_game_sign_ins_completed_total",
    help: "Hosted Game OAuth sign-ins confirmed in game (an authorization code issued).",
    registers,
  });
  const refusals = new Counter({
    name: "outpost_rate_limit_refusals_total",
    help: "Requests and attempts a rate limit refused, by the limit's name.",
    labelNames: ["limit"],
    registers,
  });
  registerGauges(registers, sources);
  return {
    registry,
    async scrape() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
    request({ server, method, route, status, seconds }) {
      const labels = { server, method, route, status: String(status) };
      requests.inc(labels);
      duration.observe(labels, seconds);
    },
    tokenExchanged: (issuer, outcome) => exchanges.inc({ issuer, outcome }),
    signInStarted: () => signInsStarted.inc(),
    signInCompleted: () => signInsCompleted.inc(),
    rateLimitRefused: (limit) => refusals.inc({ limit }),
  };
}

/** A serving process's metrics, reading the ORM's pg pool (connected by the migration), the rate limits' and the bus. */
export async function openMetrics(orm: Orm, agents: AgentConnections, bus: Bus, rateLimits: RateLimits): Promise<PrometheusMetrics> {
  const pool = await (orm.em.getConnection() as PostgreSqlConnection).getNativeClient();
  return createPrometheusMetrics({
    agentsConnected: () => agents.connected(),
    busPending: () => bus.pending,
    pools: {
      orm: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
      ...(rateLimits.poolUse && { rate_limits: rateLimits.poolUse }),
    },
  });
}
