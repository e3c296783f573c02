import assert from "node:assert/strict";
import { availableParallelism } from "node:os";
import { ConfigError, loadConfig } from "../../../server/config.ts";

describe("configuration", () => {
  it("takes the metrics' listener, token and the shutdown's bounds", () => {
    const config = loadConfig({
      METRICS_PORT: "9100",
      METRICS_HOST: "0.0.0.0",
      METRICS_TOKEN: "0123456789abcdef",
      SHUTDOWN_TIMEOUT_MS: "30000",
      SHUTDOWN_DELAY_MS: "5000",
    });
    assert.deepEqual(config.metrics, { port: 9100, host: "0.0.0.0", token: "0123456789abcdef" });
    assert.deepEqual(config.shutdown, { timeoutMs: 30_000, delayMs: 5_000 });
  });

  it("never repeats a malformed METRICS_TOKEN, a secret, in its message", () => {
    assert.throws(
      () => loadConfig({ METRICS_TOKEN: "secret value!" }),
      (error: Error) => !error.message.includes("secret value"),
    );
  });

  it("has working defaults for every variable", () => {
    const config = loadConfig({});
    assert.equal(config.port, 3000);
    assert.equal(config.gamePort, 3001);
    assert.equal(config.accountBaseUrl.origin, "http://localhost:3000");
    assert.equal(config.gameIssuerUrl.origin, "http://localhost:3001");
    assert.equal(config.databaseUrl, undefined);
    assert.match(config.dataDir, /\/data$/);
    assert.deepEqual(config.plans.free, { servers: 3, gameOAuthClients: 2, notes: 50, assistantQueriesPerDay: 50, assistantToolActionsPerDay: 20, emailsPerHour: 30 });
    assert.deepEqual(config.plans.pro, {
      servers: 25,
      gameOAuthClients: 20,
      notes: 1000,
      assistantQueriesPerDay: 1000,
      assistantToolActionsPerDay: 500,
      emailsPerHour: 30,
    });
    assert.equal(config.defaultPlan, "free");
    assert.equal(config.sessionTtlSeconds, 30 * 86_400);
    assert.equal(config.sessionIdleSeconds, 72 * 3600);
    assert.equal(config.keyEncryptionKey, undefined);
    assert.equal(config.signingKeyRotationDays, 30);
    assert.equal(config.allowInsecureGameServers, false, "only servers that prove who their players are sign them in");
    assert.equal(loadConfig({ ALLOW_INSECURE_GAME_SERVERS: "true" }).allowInsecureGameServers, true);
    // Outbound deliveries go to public https addresses only, and no email is sent, unless configured.
    assert.equal(config.allowLocalOutbound, false);
    assert.equal(loadConfig({ ALLOW_LOCAL_OUTBOUND: "true" }).allowLocalOutbound, true);
    assert.equal(config.smtp, undefined);
    // Metrics are off unless asked for, and their own listener stays on loopback.
    assert.deepEqual(config.metrics, { port: undefined, host: "127.0.0.1", token: undefined });
    assert.deepEqual(config.shutdown, { timeoutMs: 10_000, delayMs: 0 });
    // Tracing is off unless an OTLP endpoint is set.
    assert.equal(config.tracing, undefined);
    assert.equal(loadConfig({ OTEL_SERVICE_NAME: "edge-1" }).tracing, undefined);
    assert.ok(Object.isFrozen(config));
  });

  it("derives the VAPID subject from ACCOUNT_BASE_URL unless VAPID_SUBJECT is set", () => {
    assert.equal(loadConfig({}).vapidSubject, "mailto:outpost@localhost");
    assert.equal(loadConfig({ ACCOUNT_BASE_URL: "https://outpost.example.com" }).vapidSubject, "https://outpost.example.com");
    assert.equal(loadConfig({ VAPID_SUBJECT: "mailto:ops@example.com" }).vapidSubject, "mailto:ops@example.com");
    assert.equal(loadConfig({ VAPID_SUBJECT: "https://example.com/contact" }).vapidSubject, "https://example.com/contact");
  });

  const refuses: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: "http" }, /^PORT must be a whole number from 0 to 65535 \(got "http"\)$/],
    [{ GAME_PORT: "70000" }, /^GAME_PORT must be/],
    [{ ACCOUNT_BASE_URL: "localhost:3000" }, /^ACCOUNT_BASE_URL must use http or https/],
    [{ ACCOUNT_BASE_URL: "https://example.com/dashboard" }, /^ACCOUNT_BASE_URL must be an origin only/],
    [{ GAME_ISSUER_URL: "not a url" }, /^GAME_ISSUER_URL must be an absolute http\(s\) URL/],
    [{ DATABASE_URL: "mysql://x" }, /^DATABASE_URL must be a postgres:\/\/ URL$/],
    [{ ALLOW_INSECURE_GAME_SERVERS: "yes" }, /^ALLOW_INSECURE_GAME_SERVERS must be true or false \(got "yes"\)$/],
    [{ ALLOW_LOCAL_OUTBOUND: "1" }, /^ALLOW_LOCAL_OUTBOUND must be true or false \(got "1"\)$/],
    [{ SMTP_URL: "mail.example.com:25" }, /^SMTP_URL must be an smtp:\/\/ or smtps:\/\/ URL/],
    [{ SMTP_URL: "smtp://mail.example.com", SMTP_FROM: "not an address" }, /^SMTP_FROM must be an address or "Name <address>"/],
    [{ LOG_LEVEL: "loud" }, /^LOG_LEVEL must be one of/],
    [{ OCELOT_MODEL_URL: "models.example.com/v1", OCELOT_MODEL: "llama3.1" }, /^OCELOT_MODEL_URL must be an absolute http\(s\) URL, like http:\/\/127.0.0.1:11434\/v1/],
    [{ OCELOT_MODEL_URL: "ftp://models.example.com/v1", OCELOT_MODEL: "llama3.1" }, /^OCELOT_MODEL_URL must use http or https/],
    [{ OCELOT_MODEL_URL: "http://127.0.0.1:11434/v1?x=1", OCELOT_MODEL: "llama3.1" }, /^OCELOT_MODEL_URL must be a base URL without a query/],
    [{ OCELOT_MODEL_URL: "http://127.0.0.1:11434/v1" }, /^OCELOT_MODEL must name the model/],
    [{ OCELOT_MODEL_TIMEOUT_SECONDS: "0" }, /^OCELOT_MODEL_TIMEOUT_SECONDS must be a whole number from 1 to 600/],
    [{ PLANS: "{" }, /^PLANS must be JSON/],
    [{ PLANS: '{"free":{"servers":-1,"gameOAuthClients":2}}' }, /plan "free" is not/],
    [{ PLANS: '{"free":{"servers":1}}' }, /plan "free" is not/],
    [{ PLANS: '{"free":{"servers":1,"gameOAuthClients":1,"assistantQueriesPerDay":-1}}' }, /plan "free" is not/],
    [{ PLANS: '{"free":{"servers":1,"gameOAuthClients":1,"assistantToolActionsPerDay":1.5}}' }, /plan "free" is not/],
    [{ PLANS: '{"free":{"servers":1,"gameOAuthClients":1,"notAssistant":1}}' }, /plan "free" is not/],
    [{ PLANS: '{"free":[1]}' }, /plan "free" is not/],
    [{ PLANS: '{"free":{"servers":1,"gameOAuthClients":1,"notes":-1}}' }, /plan "free" is not/],
    [{ PLANS: '{"free":{"servers":1,"gameOAuthClients":1,"notes":"many"}}' }, /plan "free" is not/],
    [{ DEFAULT_PLAN: "gold" }, /^DEFAULT_PLAN must name a plan in PLANS/],
    [{ DEFAULT_PLAN: "constructor" }, /^DEFAULT_PLAN must name a plan in PLANS/],
    [{ DEFAULT_PLAN: "__proto__" }, /^DEFAULT_PLAN must name a plan in PLANS/],
    [{ SESSION_TTL_DAYS: "0" }, /^SESSION_TTL_DAYS must be/],
    [{ SESSION_IDLE_HOURS: "0" }, /^SESSION_IDLE_HOURS must be a whole number from 1 to 8760 \(got "0"\)$/],
    [
      { KEY_ENCRYPTION_KEY: "not base64!" },
      /^KEY_ENCRYPTION_KEY must be 32 random bytes in base64 \(44 characters\), e\.g\. from `openssl rand -base64 32` \(got 11 characters; a secret, so not shown\)$/,
    ],
    [{ KEY_ENCRYPTION_KEY: Buffer.alloc(16, 1).toString("base64") }, /^KEY_ENCRYPTION_KEY must be 32 random bytes/],
    [{ KEY_ENCRYPTION_KEY: Buffer.alloc(33, 1).toString("base64") }, /^KEY_ENCRYPTION_KEY must be 32 random bytes/],
    [{ SIGNING_KEY_ROTATION_DAYS: "0" }, /^SIGNING_KEY_ROTATION_DAYS must be a whole number from 1 to 365 \(got "0"\)$/],
    [{ SIGNING_KEY_ROTATION_DAYS: "7.5" }, /^SIGNING_KEY_ROTATION_DAYS must be/],
    [{ PASSWORD_HASH_CONCURRENCY: "0" }, /^PASSWORD_HASH_CONCURRENCY must be a whole number from 1 to 1024 \(got "0"\)$/],
    [{ PASSWORD_HASH_CONCURRENCY: "many" }, /^PASSWORD_HASH_CONCURRENCY must be a whole number/],
    [{ PASSWORD_HASH_QUEUE: "-1" }, /^PASSWORD_HASH_QUEUE must be a whole number from 0 to 100000/],
    [
      { TRUSTED_PROXIES: "proxy.internal" },
      /^TRUSTED_PROXIES must be IP addresses and CIDR ranges separated by commas \("proxy\.internal": not an IP address or a CIDR range/,
    ],
    [{ TRUSTED_PROXIES: "10.0.0.1, 10.0.0.0/33" }, /^TRUSTED_PROXIES must be .* \("10\.0\.0\.0\/33": the prefix length must be from 0 to 32\)$/],
    [{ TRUSTED_PROXIES: "fd00::/129" }, /\("fd00::\/129": the prefix length must be from 0 to 128\)$/],
    [{ TRUSTED_PROXIES: "10.0.0.0/" }, /\("10\.0\.0\.0\/": the prefix length/],
    [{ TRUSTED_PROXIES: "10.0.0.0/8/8" }, /\("10\.0\.0\.0\/8\/8": not an IP address/],
    [{ TRUSTED_PROXIES: "10.0.0.0-10.0.0.9" }, /not an IP address or a CIDR range/],
    [{ TRUSTED_PROXY_HEADER: "x-real-ip" }, /^TRUSTED_PROXY_HEADER must be x-forwarded-for or forwarded \(got "x-real-ip"\)$/],
    [{ METRICS_PORT: "metrics" }, /^METRICS_PORT must be a whole number from 0 to 65535 \(got "metrics"\)$/],
    [{ METRICS_PORT: "3000" }, /^METRICS_PORT must differ from PORT and GAME_PORT \(got 3000\)$/],
    [{ METRICS_PORT: "9100", GAME_PORT: "9100" }, /^METRICS_PORT must differ from PORT and GAME_PORT/],
    [{ METRICS_TOKEN: "short-secret" }, /^METRICS_TOKEN must be 16 to 256 printable characters without spaces, .* \(got 12 characters; a secret, so not shown\)$/],
    [{ METRICS_TOKEN: "a token with spaces in it" }, /^METRICS_TOKEN must be/],
    [{ SHUTDOWN_TIMEOUT_MS: "100" }, /^SHUTDOWN_TIMEOUT_MS must be a whole number from 1000 to 600000 \(got "100"\)$/],
    [{ SHUTDOWN_DELAY_MS: "10000" }, /^SHUTDOWN_DELAY_MS must be less than SHUTDOWN_TIMEOUT_MS \(10000; got 10000\)$/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, /^OTEL_EXPORTER_OTLP_ENDPOINT must use http or https \(got "collector:4318"\)$/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" }, /^OTEL_EXPORTER_OTLP_ENDPOINT must be an absolute http\(s\) URL, like http:\/\/collector:4318 \(got "not a url"\)$/],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "grpc://collector:4317" }, /^OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must use http or https/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SERVICE_NAME: " " }, /^OTEL_SERVICE_NAME must be 1 to 255 printable characters/],
    [{ VAPID_SUBJECT: "ops@example.com" }, /^VAPID_SUBJECT must be a mailto: address or an https: URL, like mailto:ops@example\.com \(got "ops@example\.com"\)$/],
    [{ VAPID_SUBJECT: "http://example.com" }, /^VAPID_SUBJECT must be a mailto: address or an https: URL/],
    [{ VAPID_SUBJECT: "mailto:nobody" }, /^VAPID_SUBJECT must be/],
  ];
  for (const [env, message] of refuses) {
    it(`refuses ${JSON.stringify(env)} with a clear message`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => error instanceof ConfigError && message.test(error.message),
      );
    });
  }

  it("never repeats a malformed KEY_ENCRYPTION_KEY, a secret, in its message", () => {
    const secret = "c2VjcmV0IHBhc3N3b3JkIG9mIHRoZSBvcGVyYXRvcg==";
    assert.throws(
      () => loadConfig({ KEY_ENCRYPTION_KEY: secret }),
      (error: unknown) => error instanceof ConfigError && !error.message.includes(secret),
    );
  });

  it("accepts a KEY_ENCRYPTION_KEY of 32 bytes in base64 or base64url, and a rotation period", () => {
    const key = Buffer.from(Array.from({ length: 32 }, (_, i) => 250 - i));
    assert.deepEqual(loadConfig({ KEY_ENCRYPTION_KEY: key.toString("base64") }).keyEncryptionKey, key);
    assert.deepEqual(loadConfig({ KEY_ENCRYPTION_KEY: key.toString("base64url") }).keyEncryptionKey, key);
    assert.equal(loadConfig({ SIGNING_KEY_ROTATION_DAYS: "90" }).signingKeyRotationDays, 90);
  });

  it("trusts no proxy by default; accepts addresses and CIDR ranges of both families, and either header", () => {
    assert.deepEqual(loadConfig({}).trustedProxies, { entries: [], header: "x-forwarded-for" });
    const config = loadConfig({ TRUSTED_PROXIES: " 10.0.0.0/8, 192.0.2.7 ,fd00::/8,::1,", TRUSTED_PROXY_HEADER: "Forwarded" });
    assert.deepEqual(config.trustedProxies, { entries: ["10.0.0.0/8", "192.0.2.7", "fd00::/8", "::1"], header: "forwarded" });
  });

  it("takes the SMTP server and its From, defaulting the From to the dashboard's host; never repeats the URL, which holds a password", () => {
    const config = loadConfig({ SMTP_URL: "smtps://outpost:hunter2@mail.example.com:465", ACCOUNT_BASE_URL: "https://outpost.example.com" });
    assert.deepEqual(config.smtp, { url: "smtps://outpost:hunter2@mail.example.com:465", from: "Outpost <outpost@outpost.example.com>" });
    assert.equal(loadConfig({ SMTP_URL: "smtp://mail.example.com:587", SMTP_FROM: "Alerts <alerts@example.com>" }).smtp?.from, "Alerts <alerts@example.com>");
    assert.throws(
      () => loadConfig({ SMTP_URL: "http://outpost:hunter2@mail" }),
      (error: Error) => !error.message.includes("hunter2"),
    );
  });

  it("takes the assistant's model endpoint; none by default; never repeats a malformed key", () => {
    assert.equal(loadConfig({}).assistantModel, undefined);
    const config = loadConfig({
      OCELOT_MODEL_URL: "http://127.0.0.1:11434/v1/",
      OCELOT_MODEL: "llama3.1",
      OCELOT_MODEL_API_KEY: "sk-local",
      OCELOT_MODEL_TIMEOUT_SECONDS: "5",
    });
    assert.deepEqual({ ...config.assistantModel }, { url: "http://127.0.0.1:11434/v1", model: "llama3.1", apiKey: "sk-local", timeoutSeconds: 5 });
    assert.equal(loadConfig({ OCELOT_MODEL_URL: "https://models.example.com/v1", OCELOT_MODEL: "m" }).assistantModel?.timeoutSeconds, 60);
    assert.throws(
      () => loadConfig({ OCELOT_MODEL_URL: "http://127.0.0.1/v1", OCELOT_MODEL: "m", OCELOT_MODEL_API_KEY: "secret with spaces" }),
      (error: Error) => {
        assert.equal(error.name, "ConfigError");
        assert.doesNotMatch(error.message, /secret with spaces/);
        return true;
      },
    );
  });

  it("accepts custom plans and a PostgreSQL URL", () => {
    const config = loadConfig({
      PLANS: '{"hobby":{"servers":1,"gameOAuthClients":1}}',
      DEFAULT_PLAN: "hobby",
      DATABASE_URL: "postgresql://u@db:5432/outpost",
    });
    assert.deepEqual(Object.keys(config.plans), ["hobby"]);
    assert.deepEqual(
      config.plans.hobby,
      { servers: 1, gameOAuthClients: 1, notes: 1000, assistantQueriesPerDay: 50, assistantToolActionsPerDay: 20, emailsPerHour: 30 },
      "notes, the assistant's limits and the email cap may be left out (a plan written before they existed keeps working)",
    );
    const named = loadConfig({
      PLANS: '{"hobby":{"servers":1,"gameOAuthClients":1,"notes":7,"assistantQueriesPerDay":7,"assistantToolActionsPerDay":3,"emailsPerHour":2}}',
      DEFAULT_PLAN: "hobby",
    });
    assert.deepEqual(named.plans.hobby, { servers: 1, gameOAuthClients: 1, notes: 7, assistantQueriesPerDay: 7, assistantToolActionsPerDay: 3, emailsPerHour: 2 });
    assert.equal(config.databaseUrl, "postgresql://u@db:5432/outpost");
  });

  it("traces to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else to OTEL_EXPORTER_OTLP_ENDPOINT's v1/traces", () => {
    const traces = (env: Record<string, string>) => loadConfig(env).tracing;
    assert.deepEqual(traces({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }), { url: "http://collector:4318/v1/traces", serviceName: "outpost" });
    assert.equal(traces({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://otel.example.com/otlp/" })?.url, "https://otel.example.com/otlp/v1/traces");
    assert.equal(traces({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://otel.example.com/otlp" })?.url, "https://otel.example.com/otlp/v1/traces");
    const both = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://b:4318/custom/traces" };
    assert.equal(traces(both)?.url, "http://b:4318/custom/traces");
    assert.equal(traces({ ...both, OTEL_SERVICE_NAME: "outpost-eu" })?.serviceName, "outpost-eu");
    // The specification's switch turns it off with the endpoint still set.
    assert.equal(traces({ ...both, OTEL_SDK_DISABLED: "true" }), undefined);
  });

  it("never repeats credentials written into a collector's URL", () => {
    assert.throws(
      () => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://user:hunter2@otel.example.com" }),
      (error: Error) => error instanceof ConfigError && /OTEL_EXPORTER_OTLP_HEADERS/.test(error.message) && !error.message.includes("hunter2"),
    );
  });

  it("caps password hashing at twice the cores, one below libuv's pool, unless told a number", () => {
    const cores = availableParallelism();
    assert.deepEqual(loadConfig({}).passwordHashing, { concurrency: Math.max(1, Math.min(2 * cores, 3)), queue: 32 });
    assert.equal(loadConfig({ UV_THREADPOOL_SIZE: "64" }).passwordHashing.concurrency, Math.min(2 * cores, 63));
    assert.deepEqual(loadConfig({ PASSWORD_HASH_CONCURRENCY: "2", PASSWORD_HASH_QUEUE: "0" }).passwordHashing, { concurrency: 2, queue: 0 });
  });
});
