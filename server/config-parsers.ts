/**
 * The kinds of value a variable holds, each a parser from the variable's text to its value that
 * refuses with one line naming the variable, what it must be and what it was. `name` is the name
 * the value was read under (a renamed variable's old name, when that is what was set). A secret's
 * parser never repeats the value.
 */
import { resolve } from "node:path";
import { proxyEntryProblem, proxyHeaders, type ProxyHeader, type TrustedProxies } from "../edge/client-address.ts";
import { ConfigError } from "./config-error.ts";

/** Reads a variable's text (its default's when unset or empty) as its value. */
export type Parser<T> = (raw: string, name: string) => T;

/** Unset (or empty) is undefined, anything else goes to `parse`. */
export const optional =
  <T>(parse: Parser<T>): Parser<T | undefined> =>
  (raw, name) =>
    raw === "" ? undefined : parse(raw, name);

/** The text as it is. */
export const text: Parser<string> = (raw) => raw;

/** A path, made absolute against the working directory. */
export const path: Parser<string> = (raw) => resolve(raw);

export const wholeNumber =
  (min: number, max: number): Parser<number> =>
  (raw, name) => {
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || value < min || value > max) {
      throw new ConfigError(`${name} must be a whole number from ${min} to ${max} (got "${raw}")`);
    }
    return value;
  };

export const trueOrFalse: Parser<boolean> = (raw, name) => {
  if (raw !== "true" && raw !== "false") throw new ConfigError(`${name} must be true or false (got "${raw}")`);
  return raw === "true";
};

/** One of `values`, as written. */
export const oneOf =
  <T extends string>(values: readonly T[]): Parser<T> =>
  (raw, name) => {
    if (!(values as readonly string[]).includes(raw)) throw new ConfigError(`${name} must be one of ${values.join(", ")} (got "${raw}")`);
    return raw as T;
  };

/** An absolute http(s) URL; `example` shows what one looks like. */
export const httpUrl =
  (example = ""): Parser<URL> =>
  (raw, name) => {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new ConfigError(`${name} must be an absolute http(s) URL${example && `, like ${example}`} (got "${raw}")`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new ConfigError(`${name} must use http or https (got "${raw}")`);
    }
    return url;
  };

/** A public origin: an http(s) URL with nothing after the host and port. */
export const origin: Parser<URL> = (raw, name) => {
  const url = httpUrl()(raw, name);
  if (url.pathname !== "/" || url.search || url.hash || url.username || url.password) {
    throw new ConfigError(`${name} must be an origin only, like https://outpost.example.com (got "${raw}")`);
  }
  return url;
};

/** An OpenTelemetry collector's URL: absolute http(s), no credentials in it (headers carry those). */
export const collectorUrl: Parser<URL> = (raw, name) => {
  const url = httpUrl("http://collector:4318")(raw, name);
  if (url.username || url.password) {
    throw new ConfigError(`${name} must not carry credentials; put them in OTEL_EXPORTER_OTLP_HEADERS (got a URL with a user or password; not shown)`);
  }
  return url;
};

export const postgresUrl: Parser<string> = (raw, name) => {
  if (!/^postgres(ql)?:\/\//.test(raw)) throw new ConfigError(`${name} must be a postgres:// URL`);
  return raw;
};

/**
 * A key-encryption key as text: 32 bytes in base64 (or base64url), from `name` (a variable or a
 * file). A secret, so no message repeats it.
 */
export function parseKeyEncryptionKey(raw: string, name: string): Buffer {
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(raw)) {
    throw new ConfigError(
      `${name} must be 32 random bytes in base64 (44 characters), e.g. from \`openssl rand -base64 32\` (got ${raw.length} characters; a secret, so not shown)`,
    );
  }
  return Buffer.from(raw, "base64");
}

/** A number, or "auto" (the caller decides what auto is). */
export const autoOr =
  (number: Parser<number>): Parser<number | "auto"> =>
  (raw, name) =>
    raw === "auto" ? "auto" : number(raw, name);

/** TRUSTED_PROXIES: addresses and CIDR ranges, comma-separated; empty entries are skipped. */
export const proxyEntries: Parser<readonly string[]> = (raw, name) => {
  const entries = raw
    .split(",")
    .map((e) => e.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const problem = proxyEntryProblem(entry);
    if (problem) throw new ConfigError(`${name} must be IP addresses and CIDR ranges separated by commas ("${entry}": ${problem})`);
  }
  return Object.freeze(entries);
};

/** The header trusted proxies write, in any case. */
export const proxyHeader: Parser<TrustedProxies["header"]> = (raw, name) => {
  const header = raw.toLowerCase();
  if (!(proxyHeaders as readonly string[]).includes(header)) throw new ConfigError(`${name} must be x-forwarded-for or forwarded (got "${header}")`);
  return header as ProxyHeader;
};

export const smtpUrl: Parser<string> = (raw, name) => {
  if (!/^smtps?:\/\/[^/?#]+/.test(raw)) {
    throw new ConfigError(`${name} must be an smtp:// or smtps:// URL, like smtps://user:password@mail.example.com:465 (a secret, so not shown)`);
  }
  return raw;
};

/** An email address, or "Name <address>". */
export const mailbox: Parser<string> = (raw, name) => {
  if (!/^([^<>\r\n]*<)?[^\s<>@]+@[^\s<>@]+>?$/.test(raw) || raw.length > 320) {
    throw new ConfigError(`${name} must be an address or "Name <address>" (got "${raw}")`);
  }
  return raw;
};

/** Printable characters without spaces, `min` to `max` of them, as a secret: `shape` says what it must be. */
export const secretToken =
  (min: number, max: number, shape: string): Parser<string> =>
  (raw, name) => {
    if (raw.length < min || raw.length > max || !/^[\x21-\x7e]*$/.test(raw)) {
      throw new ConfigError(`${name} must be ${shape} (got ${raw.length} characters; a secret, so not shown)`);
    }
    return raw;
  };

/** OTEL_SERVICE_NAME: what every span says it came from. */
export const serviceName: Parser<string> = (raw, name) => {
  if (!/^[\x21-\x7e][\x20-\x7e]{0,254}$/.test(raw)) throw new ConfigError(`${name} must be 1 to 255 printable characters (got "${raw}")`);
  return raw;
};

/** The OpenTelemetry specification's boolean: "true" in any case and spacing; anything else is false. */
export const otelBoolean: Parser<boolean> = (raw) => raw.trim().toLowerCase() === "true";

/** VAPID_SUBJECT: how a push service can reach whoever runs this deployment (RFC 8292 `sub`). */
export const vapidSubject: Parser<string> = (raw, name) => {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  const ok = url && ((url.protocol === "mailto:" && /^[^@\s]+@[^@\s]+$/.test(url.pathname)) || (url.protocol === "https:" && !url.username && !url.password));
  if (!ok) throw new ConfigError(`${name} must be a mailto: address or an https: URL, like mailto:ops@example.com (got "${raw}")`);
  return raw;
};

/** OCELOT_MODEL_URL: an OpenAI-compatible endpoint's base URL (http and loopback are fine: the operator chose it). */
export const modelUrl: Parser<URL> = (raw, name) => {
  const url = httpUrl("http://127.0.0.1:11434/v1")(raw, name);
  if (url.search || url.hash) throw new ConfigError(`${name} must be a base URL without a query or fragment, like http://127.0.0.1:11434/v1 (got "${url.href}")`);
  return url;
};

/** OCELOT_MODEL: the model's name, needed once a model URL is set. */
export const modelName: Parser<string> = (raw, name) => {
  if (!/^[\x21-\x7e]{1,200}$/.test(raw)) {
    throw new ConfigError(`${name} must name the model (1 to 200 printable characters without spaces, like llama3.1) when OCELOT_MODEL_URL is set (got "${raw}")`);
  }
  return raw;
};
