/**
 * Client authentication at the token, revocation and introspection endpoints (RFC 6749 §2.3.1):
 * `client_secret_basic` or `client_secret_post`, exactly one, or a `client_id` alone (a public
 * client, `none`). Only parsing: whether the client may authenticate so is core's decision.
 */
import { ClientAuthMethod } from "../../gen/outpost/oauth/v1/oauth_pb.js";
import { InvalidClient, InvalidRequest } from "./oauth-errors.ts";

export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
  method: ClientAuthMethod;
}

/** application/x-www-form-urlencoded decoding of one Basic credential part ("+" is a space). */
function formDecode(part: string): string {
  try {
    return decodeURIComponent(part.replace(/\+/g, " "));
  } catch {
    throw new InvalidClient("the Basic credentials are not form-urlencoded");
  }
}

/** The id and secret of an `Authorization: Basic` header, each form-urlencoded before base64 (RFC 6749 §2.3.1). */
export function parseBasic(header: string): { clientId: string; clientSecret: string } {
  const match = /^Basic[ ]+([A-Za-z0-9+/]+={0,2})[ ]*$/i.exec(header);
  if (!match) throw new InvalidClient("the Authorization header is not valid Basic credentials");
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) throw new InvalidClient("the Basic credentials have no colon between id and secret");
  const clientId = formDecode(decoded.slice(0, colon));
  const clientSecret = formDecode(decoded.slice(colon + 1));
  if (!clientId || !clientSecret) throw new InvalidClient("the Basic credentials lack an id or a secret");
  return { clientId, clientSecret };
}

/**
 * The client's credentials from the Authorization header or the form. Both methods at once is
 * invalid_request; no client_id at all is invalid_client. A form `client_id` beside Basic is allowed when it
 * names the same client.
 */
export function clientCredentials(authorization: string | undefined, form: Map<string, string>): ClientCredentials {
  const formId = form.get("client_id");
  const formSecret = form.get("client_secret");
  if (authorization !== undefined && authorization !== "") {
    if (!/^Basic\b/i.test(authorization)) throw new InvalidClient("use HTTP Basic or client_secret_post to authenticate the client");
    const basic = parseBasic(authorization);
    if (formSecret !== undefined) throw new InvalidRequest("the client authenticated twice: Basic and client_secret in the body; use one");
    if (formId !== undefined && formId !== basic.clientId) throw new InvalidRequest("client_id in the body differs from the Basic credentials");
    return { ...basic, method: ClientAuthMethod.CLIENT_SECRET_BASIC };
  }
  if (!formId) throw new InvalidClient("client authentication is required (client_secret_basic, client_secret_post, or client_id for a public client)");
  // A client_id alone is a public client (token_endpoint_auth_method "none"); core decides
  // whether this client is one.
  if (formSecret === undefined) return { clientId: formId, clientSecret: "", method: ClientAuthMethod.NONE };
  if (!formSecret) throw new InvalidClient("client_secret is empty");
  return { clientId: formId, clientSecret: formSecret, method: ClientAuthMethod.CLIENT_SECRET_POST };
}
