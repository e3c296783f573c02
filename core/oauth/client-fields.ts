/**
 * What the two issuers' clients have in common — Game OAuth clients (an organization's) and
 * Account OAuth clients (the platform's): a name, registered redirect URIs, a disabled flag and a
 * secret kept as a hash. One implementation of each rule, so the two kinds cannot drift apart.
 */
import { timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { issueSecret } from "../../contract/secrets.ts";
import type { CoreConfig } from "../deps.ts";
import { fieldFail, type FieldProblem } from "../errors.ts";
import { normalizeRedirectUri } from "./redirect-uris.ts";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { UserCaller } from "../context.ts";
import { recordActivity } from "../activity/record.ts";
import type { ClientVerb } from "../activity/kinds.ts";
import { defaultSigningAlg, isSigningAlg, type SigningAlg } from "../../contract/issuers.ts";

/** The columns every OAuth client row has. */
export interface OAuthClientRow {
  clientId: string;
  name: string;
  redirectUris: string[];
  disabled: boolean;
  createdAt: Date;
  secretHash: string;
  secretPrefix: string;
  idTokenSignedResponseAlg: SigningAlg;
}

/** The secret kinds that are client secrets. */
export type ClientSecretKind = "gameClientSecret" | "accountClientSecret";

/** A new client secret: the value, shown to the caller once, and the columns that keep its hash. */
export interface IssuedClientSecret {
  value: string;
  columns: { secretHash: string; secretPrefix: string };
}

/**
 * The URIs normalized (core/oauth/redirect-uris.ts), or invalid_argument naming every bad one by
 * its index, `redirectUris[i]`, including one that is the same as an earlier one once normalized.
 * How many there may be is the contract's rule (1 to 16), checked before the handler runs.
 */
export function normalizeRedirectUris(raw: readonly string[], config: Pick<CoreConfig, "allowInsecureRedirectUris">, field = "redirect_uris"): string[] {
  const problems: FieldProblem[] = [];
  const uris: string[] = [];
  raw.forEach((uri, index) => {
    const result = normalizeRedirectUri(uri, { allowInsecure: config.allowInsecureRedirectUris });
    if (!result.ok) return problems.push({ field, index, message: result.reason });
    const same = uris.indexOf(result.uri);
    if (same >= 0)
      return problems.push({
        field,
        index,
        message: `is the same as ${field.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())}[${same}] once normalized (${result.uri})`,
      });
    uris.push(result.uri);
  });
  if (problems.length) throw fieldFail(problems);
  return uris;
}

/** A new secret of this kind; only its hash and display prefix are stored. */
export function issueClientSecret(kind: ClientSecretKind): IssuedClientSecret {
  const secret = issueSecret(kind);
  return { value: secret.value, columns: { secretHash: secret.hash, secretPrefix: secret.displayPrefix } };
}

/** Gives the client a new secret (the old one stops matching at once); returns it, to show once. */
export function replaceClientSecret(client: OAuthClientRow, kind: ClientSecretKind): string {
  const secret = issueClientSecret(kind);
  Object.assign(client, secret.columns);
  return secret.value;
}

/** The fields both clients' proto messages share (same names in both); never the secret. */
export function commonClientFields(client: OAuthClientRow): {
  clientId: string;
  name: string;
  redirectUris: string[];
  disabled: boolean;
  createdAt: Timestamp;
  clientSecretPrefix: string;
  idTokenSignedResponseAlg: string;
} {
  return {
    clientId: client.clientId,
    name: client.name,
    redirectUris: client.redirectUris,
    disabled: client.disabled,
    createdAt: timestampFromDate(client.createdAt),
    clientSecretPrefix: client.secretPrefix,
    idTokenSignedResponseAlg: client.idTokenSignedResponseAlg,
  };
}

/** The algorithm of a new client's ID tokens: the request's (the contract allows only known ones), or RS256. */
export function idTokenAlgOf(requested: string | undefined): SigningAlg {
  if (requested === undefined) return defaultSigningAlg;
  if (!isSigningAlg(requested)) throw fieldFail([{ field: "id_token_signed_response_alg", message: "must be RS256, ES256 or EdDSA" }]);
  return requested;
}

/** Sets the ID tokens' algorithm if given and different, noting it in `changed` for the activity log. */
export function applyIdTokenAlg(client: OAuthClientRow, requested: string | undefined, changed: Record<string, string>): void {
  if (requested === undefined) return;
  const alg = idTokenAlgOf(requested);
  if (alg === client.idTokenSignedResponseAlg) return;
  client.idTokenSignedResponseAlg = alg;
  changed.idTokenSignedResponseAlg = alg;
}

export const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Applies a new name and redirect URI list (already normalized) where given and different, and
 * notes each change in `changed` for the activity log: the old name as `previousName`, the new
 * list space-separated as `redirectUris`.
 */
export function applyNameAndRedirectUris(client: OAuthClientRow, update: { name?: string; redirectUris?: string[] }, changed: Record<string, string>): void {
  if (update.name !== undefined && update.name !== client.name) {
    changed.previousName = client.name;
    client.name = update.name;
  }
  if (update.redirectUris && !sameList(update.redirectUris, client.redirectUris)) {
    client.redirectUris = update.redirectUris;
    changed.redirectUris = update.redirectUris.join(" ");
  }
}

/** The details of an "updated" activity event: the changes, and `changed` naming the fields. */
export function updatedDetails(changed: Record<string, string>): Record<string, string> {
  const fields = Object.keys(changed).map((key) => (key === "previousName" ? "name" : key));
  return { ...changed, changed: fields.join(" ") };
}

/**
 * Sets the disabled flag if given and different; returns the activity verb for the change
 * ("disabled" or "enabled"), or undefined when nothing changed.
 */
export function applyDisabled(client: OAuthClientRow, disabled: boolean | undefined): "disabled" | "enabled" | undefined {
  if (disabled === undefined || disabled === client.disabled) return undefined;
  client.disabled = disabled;
  return disabled ? "disabled" : "enabled";
}

/**
 * Records `<targetType>.<verb>` about a client of either issuer, in the transaction `tx`: the
 * client is named by its public client_id, and the details always carry it and its name.
 */
export function recordClientActivity(
  tx: EntityManager,
  caller: UserCaller,
  target: { type: "game_oauth_client" | "oauth_provider_client"; organizationId: string | null },
  client: Pick<OAuthClientRow, "clientId" | "name">,
  verb: ClientVerb,
  details: Record<string, string> = {},
): void {
  recordActivity(tx, caller, {
    organizationId: target.organizationId,
    action: `${target.type}.${verb}`,
    targetType: target.type,
    targetId: client.clientId,
    details: { clientId: client.clientId, name: client.name, ...details },
  });
}
