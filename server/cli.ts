/**
 * `outpost`: serve, migrate, and the operator's commands. Errors print one line and exit non-zero.
 */
import { parseArgs } from "node:util";
import { createClient, ConnectError } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Logger } from "pino";
import { createLogger } from "./logger.ts";
import { IdentityService } from "../gen/outpost/identity/v1/identity_service_pb.js";
import { Issuer, KeysService } from "../gen/outpost/keys/v1/keys_service_pb.js";
import { ConfigError, loadConfig, type Config } from "./config.ts";
import { readVariable } from "./config-variables.ts";
import { DatabaseBusyError } from "./database.ts";
import { startOutpost } from "./compose.ts";
import { openRuntime, type Runtime } from "./runtime.ts";
import { rotateKek } from "./kek-rotation.ts";
import { startTracing } from "./tracing.ts";
import { PromptAborted, readPassword } from "./password-prompt.ts";

const usage = `usage: outpost <command>

  serve                                   run the service (what npm start runs)
  migrate                                 apply pending database migrations
  user create --email E [--name N] [--platform-admin]
                                          asks for the password twice, not echoed; piped,
                                          reads it from stdin (one line). --password P
                                          works too, but shows it in ps and npm's banner
  user verify-email EMAIL                 mark the account's address verified (what its
                                          mailed link does): the way with no SMTP_URL, as
                                          with the embedded default
  api-key create --email E --name N [--expires-in-days D]
  keys rotate --issuer game|account [--purge]
                                          rotate an issuer's signing keys now; --purge
                                          withdraws every key at once (a compromised key)
  keys rotate-kek [--new-key-file PATH]   re-encrypt the signing keys under a new
                                          KEY_ENCRYPTION_KEY (from the file, else from
                                          NEW_KEY_ENCRYPTION_KEY); run it with Outpost stopped

Configuration comes from the environment; see the README.`;

class UsageError extends Error {}

function options<T extends Record<string, { type: "string" | "boolean" }>>(args: string[], spec: T) {
  try {
    return parseArgs({ args, options: spec, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function required(value: string | boolean | undefined, flag: string): string {
  if (typeof value !== "string" || value === "") throw new UsageError(`${flag} is required`);
  return value;
}

/**
 * `user create`'s password: `--password` as given (kept for scripts that pass it, though npm's
 * banner and `ps` show it), else asked for at the terminal or read from stdin (server/password-prompt.ts).
 */
async function userPassword(flag: string | boolean | undefined): Promise<string> {
  if (flag !== undefined) return required(flag, "--password");
  const password = await readPassword(process.stdin, process.stderr);
  if (password === "") {
    throw new UsageError(`a password is needed: type it when asked (in a terminal), or pipe it on stdin: printf '%s\\n' "$PASSWORD" | outpost user create --email …`);
  }
  return password;
}

/** Runs `work` with the database opened beside (or through) a serving process. */
async function withRuntime<T>(config: Config, logger: Logger, work: (runtime: Runtime) => Promise<T>): Promise<T> {
  const runtime = await openRuntime(config, logger, "borrow");
  try {
    return await work(runtime);
  } finally {
    await runtime.close();
  }
}

/**
 * Serves until SIGTERM or SIGINT, then shuts down gracefully (Outpost.stop). The process exits
 * within SHUTDOWN_TIMEOUT_MS whatever hangs (with 1 then), and at once on a second signal.
 */
async function serve(config: Config, logger: Logger): Promise<void> {
  // Before anything that makes spans is built; the shutdown sends the last ones.
  const tracing = config.tracing && startTracing(config.tracing, logger);
  // Listening for the signals before the start: one that comes while starting stops the service
  // once it is up (and the bound applies from the signal on).
  const starting = startOutpost(config, logger);
  let signalled = false;
  const shutdown = (signal: string) => {
    if (signalled) {
      logger.warn({ signal }, "stopping at once");
      process.exit(1);
    }
    signalled = true;
    logger.info({ signal, timeoutMs: config.shutdown.timeoutMs }, "shutting down");
    setTimeout(() => {
      logger.error({ timeoutMs: config.shutdown.timeoutMs }, "the shutdown did not finish in time; exiting");
      process.exit(1);
    }, config.shutdown.timeoutMs).unref();
    starting
      .then((outpost) => outpost.stop())
      .then(() => tracing?.shutdown())
      .then(
        () => process.exit(0),
        (error) => {
          logger.error({ err: error }, "shutdown failed");
          process.exit(1);
        },
      );
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
  await starting;
}

async function keysRotateKek(config: Config, logger: Logger, args: string[]): Promise<void> {
  const o = options(args, { "new-key-file": { type: "string" } });
  const file = o["new-key-file"];
  if (file === "") throw new UsageError("--new-key-file needs a path");
  const outcome = await rotateKek(config, logger, { file, value: readVariable(process.env, "NEW_KEY_ENCRYPTION_KEY") });
  if (outcome.resealed > 0) {
    console.log(`re-encrypted ${outcome.resealed} signing keys from key-encryption key ${outcome.from} to ${outcome.to}`);
  } else {
    console.log(`every signing key (${outcome.alreadyNew}) is already under key-encryption key ${outcome.to}; nothing to do`);
  }
  console.log(
    outcome.replacedFile
      ? `${outcome.replacedFile} now holds the new key`
      : `start Outpost with KEY_ENCRYPTION_KEY set to the new key (id ${outcome.to}); it no longer starts with the old one`,
  );
}

/** `user verify-email EMAIL`: as if the account had opened its verification link (an activity event). */
async function userVerifyEmail(config: Config, logger: Logger, args: string[]): Promise<void> {
  const [email, ...extra] = args;
  if (!email || email.startsWith("-") || extra.length) throw new UsageError("user verify-email takes one email address");
  const res = await withRuntime(config, logger, (runtime) => createClient(IdentityService, runtime.core.transport()).markEmailVerified({ email }));
  console.log(res.alreadyVerified ? `${res.user!.email} was verified already` : `verified ${res.user!.email} (${res.user!.id})`);
}

/** `migrate`: opening the runtime migrates; say what that applied. */
async function migrate(config: Config, logger: Logger): Promise<void> {
  await withRuntime(config, logger, async (runtime) => {
    const applied = runtime.migrationsApplied;
    console.log(applied.length ? `applied ${applied.join(", ")}` : "the database is up to date");
  });
}

/** `user create --email … [--password …] [--name …] [--platform-admin]`. */
async function userCreate(config: Config, logger: Logger, args: string[]): Promise<void> {
  const o = options(args, {
    email: { type: "string" },
    password: { type: "string" },
    name: { type: "string" },
    "platform-admin": { type: "boolean" },
  });
  const email = required(o.email, "--email");
  const password = await userPassword(o.password);
  const res = await withRuntime(config, logger, (runtime) =>
    createClient(IdentityService, runtime.core.transport()).createUser({
      email,
      password,
      name: typeof o.name === "string" ? o.name : "",
      platformAdmin: o["platform-admin"] === true,
    }),
  );
  console.log(`created user ${res.user!.email} (${res.user!.id})${res.user!.platformAdmin ? ", platform admin" : ""}`);
}

/** `api-key create --email … --name … [--expires-in-days N]`: the key is printed once. */
async function apiKeyCreate(config: Config, logger: Logger, args: string[]): Promise<void> {
  const o = options(args, { email: { type: "string" }, name: { type: "string" }, "expires-in-days": { type: "string" } });
  let expiresAt: Date | undefined;
  if (o["expires-in-days"] !== undefined) {
    const days = Number(o["expires-in-days"]);
    if (!/^\d+$/.test(String(o["expires-in-days"])) || days < 1 || days > 3650) {
      throw new UsageError("--expires-in-days must be a whole number from 1 to 3650");
    }
    expiresAt = new Date(Date.now() + days * 86_400_000);
  }
  const res = await withRuntime(config, logger, (runtime) =>
    createClient(IdentityService, runtime.core.transport()).issueApiKey({
      email: required(o.email, "--email"),
      name: required(o.name, "--name"),
      expiresAt: expiresAt && timestampFromDate(expiresAt),
    }),
  );
  const key = res.apiKey!;
  console.log(`created API key "${key.name}" (${key.id}), ${expiresAt ? `expires ${expiresAt.toISOString()}` : "never expires"}`);
  console.log("store it now; it is not shown again:");
  console.log(res.key);
}

/** `keys rotate --issuer game|account [--purge]`. */
async function keysRotate(config: Config, logger: Logger, args: string[]): Promise<void> {
  const o = options(args, { issuer: { type: "string" }, purge: { type: "boolean" } });
  const issuers: Record<string, Issuer> = { game: Issuer.GAME, account: Issuer.ACCOUNT };
  const issuer = required(o.issuer, "--issuer");
  if (!Object.hasOwn(issuers, issuer)) throw new UsageError(`--issuer must be game or account (got "${issuer}")`);
  const res = await withRuntime(config, logger, (runtime) =>
    createClient(KeysService, runtime.core.transport()).rotateKeys({ issuer: issuers[issuer], purge: o.purge === true }),
  );
  if (o.purge) {
    console.log(`purged the ${issuer} issuer's signing keys; tokens they signed no longer verify`);
    console.log(`withdrawn ${res.withdrawnKids.join(" ") || "(none)"}`);
  } else {
    console.log(`rotated the ${issuer} issuer's signing keys`);
  }
  for (const keys of res.algorithms) {
    console.log(`${keys.alg} current ${keys.currentKid}`);
    console.log(`${keys.alg} next ${keys.nextKid}`);
    if (!o.purge) console.log(`${keys.alg} previous ${keys.previousKid}`);
  }
}

/** One case per command, each a function above. */
async function main(argv: string[]): Promise<void> {
  const [command, sub, ...rest] = argv;
  if (!command || command === "help" || command === "--help" || command === "-h") {
    console.log(usage);
    return;
  }
  const config = loadConfig();
  // Commands other than serve keep the log quiet: their output is for people and scripts.
  const logger = createLogger(command === "serve" ? config.logLevel : "warn");
  const unknown = () => new UsageError(`unknown command: ${command} ${sub ?? ""}`.trim());

  switch (command) {
    case "serve":
      return serve(config, logger);
    case "migrate":
      return migrate(config, logger);
    case "user":
      if (sub === "verify-email") return userVerifyEmail(config, logger, rest);
      if (sub === "create") return userCreate(config, logger, rest);
      throw unknown();
    case "api-key":
      if (sub === "create") return apiKeyCreate(config, logger, rest);
      throw unknown();
    case "keys":
      if (sub === "rotate-kek") return keysRotateKek(config, logger, rest);
      if (sub === "rotate") return keysRotate(config, logger, rest);
      throw unknown();
    default:
      throw new UsageError(`unknown command: ${command}`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof PromptAborted) {
    console.error(`error: ${error.message}`);
    process.exit(130);
  }
  if (error instanceof UsageError) {
    console.error(`error: ${error.message}\n\n${usage}`);
    process.exit(2);
  }
  const message =
    error instanceof ConfigError || error instanceof DatabaseBusyError
      ? error.message
      : error instanceof ConnectError
        ? error.rawMessage
        : `${(error as Error)?.message ?? error}`;
  console.error(`error: ${message}`);
  process.exit(1);
});
