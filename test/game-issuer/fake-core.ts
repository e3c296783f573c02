/**
 * A small stand-in for core's GameOAuthService and KeysService, so the issuer's HTTP side is
 * tested alone (parsing, error shapes, headers). The real engine is exercised end to end in
 * game-issuer-flow.test.ts.
 */
import { randomUUID } from "node:crypto";
import { Code, ConnectError, createRouterTransport, type Transport } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { create } from "@bufbuild/protobuf";
import { OAuthErrorSchema } from "../../gen/outpost/oauth/v1/oauth_pb.js";
import { pino } from "pino";
import {
  AuthorizationStatus,
  GameOAuthService,
  type ExchangeCodeRequest,
  type GetUserInfoRequest,
  type StartAuthorizationRequest,
} from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { KeysService } from "../../gen/outpost/keys/v1/keys_service_pb.js";
import { Game, PlayerAuth } from "../../gen/outpost/servers/v1/resources_pb.js";
import type { VerifierServerSchema } from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";

type VerifierServerInit = MessageInitShape<typeof VerifierServerSchema>;
import { createGameIssuerApp } from "../../edge/game-issuer/app.ts";
import { listen, type Listener } from "../../edge/listen.ts";

/** An OAuth refusal as core makes one (core/oauth/oauth-failure.ts): a Connect error with an OAuthError detail. */
function refusal(code: Code, error: string, description: string): ConnectError {
  return new ConnectError(description, code, undefined, [{ desc: OAuthErrorSchema, value: create(OAuthErrorSchema, { error, description }) }]);
}

interface FakeSession {
  id: string;
  bindingHash: string;
  status: AuthorizationStatus;
  redirectUrl: string;
  changed: () => void;
  waiters: Array<() => void>;
}

export class FakeCore {
  starts: StartAuthorizationRequest[] = [];
  exchanges: ExchangeCodeRequest[] = [];
  userInfos: GetUserInfoRequest[] = [];
  sessions = new Map<string, FakeSession>();
  /** The servers each session lists (the hosted page shows them). */
  servers: VerifierServerInit[] = [
    { id: "srv-1", name: "Survival", game: Game.MINECRAFT, online: true, playerAuth: PlayerAuth.ONLINE, signInAllowed: true },
    { id: "srv-2", name: "Cracked", game: Game.MINECRAFT, online: true, playerAuth: PlayerAuth.OFFLINE, signInAllowed: false },
  ];
  /** Makes the next ExchangeCode throw a plain error (an unexpected failure). */
  failNextExchange = false;

  complete(sessionId: string, redirectUrl: string): void {
    const s = this.sessions.get(sessionId)!;
    s.status = AuthorizationStatus.COMPLETED;
    s.redirectUrl = redirectUrl;
    for (const w of s.waiters.splice(0)) w();
  }

  private view(s: FakeSession) {
    return {
      sessionId: s.id,
      loginCode: "K7QW-4MZX",
      command: "/outpost login K7QW-4MZX",
      clientName: "Demo <App>",
      anyServer: false,
      servers: this.servers,
      expiresAt: timestampFromDate(new Date(Date.now() + 600_000)),
      status: s.status,
      redirectUrl: s.redirectUrl,
      redirectHost: "app.example.com",
    };
  }

  private find(sessionId: string, hash: string): FakeSession {
    const s = this.sessions.get(sessionId);
    if (!s || s.bindingHash !== hash) throw new ConnectError("no such session", Code.NotFound);
    return s;
  }

  transport(): Transport {
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const fake = this;
    return createRouterTransport((router) => {
      router.service(KeysService, {
        getJwks: () => ({ keys: [{ kty: "RSA", n: "AQAB-n", e: "AQAB", kid: "k1", use: "sig", alg: "RS256" }] }),
        rotateKeys: () => ({}),
      });
      router.service(GameOAuthService, {
        startAuthorization(req) {
          fake.starts.push(req);
          if (req.clientId === "unknown") return { outcome: { case: "pageError", value: { error: "invalid_client", description: "unknown client <x>" } } };
          if (req.responseType !== "code") {
            // "ogc_app" belongs to a verified organization; any other client to one that is not.
            const error = { error: "unsupported_response_type", description: "response_type must be code" };
            return { outcome: req.clientId === "ogc_app" ? { case: "redirectError", value: error } : { case: "confirmRedirectError", value: error } };
          }
          const s: FakeSession = {
            id: randomUUID(),
            bindingHash: req.browserBindingHash,
            status: AuthorizationStatus.PENDING,
            redirectUrl: "",
            changed: () => {},
            waiters: [],
          };
          fake.sessions.set(s.id, s);
          return { outcome: { case: "session", value: fake.view(s) } };
        },
        getAuthorization(req) {
          return { session: fake.view(fake.find(req.sessionId, req.browserBindingHash)) };
        },
        async *watchAuthorization(req) {
          const s = fake.find(req.sessionId, req.browserBindingHash);
          yield { session: fake.view(s) };
          while (s.status === AuthorizationStatus.PENDING) {
            await new Promise<void>((resolve) => s.waiters.push(resolve));
            yield { session: fake.view(s) };
          }
        },
        exchangeCode(req) {
          fake.exchanges.push(req);
          if (fake.failNextExchange) {
            fake.failNextExchange = false;
            throw new Error("database exploded at 10.0.0.7");
          }
          if (req.grantType !== "authorization_code") throw refusal(Code.InvalidArgument, "unsupported_grant_type", "only authorization_code");
          if (req.clientSecret !== "right") throw refusal(Code.Unauthenticated, "invalid_client", "wrong client credentials");
          if (req.code !== "good") throw refusal(Code.InvalidArgument, "invalid_grant", "the code is not valid");
          return { tokens: { accessToken: "at", idToken: "id.token.sig", tokenType: "Bearer", expiresIn: 900, scope: "openid profile" } };
        },
        getUserInfo(req) {
          fake.userInfos.push(req);
          if (req.accessToken !== "good-token") throw refusal(Code.Unauthenticated, "invalid_token", "the access token is not valid");
          return {
            claims: {
              sub: "sub-1",
              preferredUsername: "Steve",
              game: "minecraft",
              gameAccountName: "Steve",
              gameAccountId: "uuid-1",
              organizationId: "org-1",
              verifiedByServerId: "srv-1",
            },
          };
        },
      });
    });
  }
}

export interface FakeIssuer {
  core: FakeCore;
  url: string;
  close(): Promise<void>;
}

/** The issuer app on an ephemeral port, its issuer URL that port (or `issuerUrl`), in front of a FakeCore. */
export async function startFakeIssuer(issuerUrl?: string, maxNumber = 2000): Promise<FakeIssuer> {
  const core = new FakeCore();
  // The app needs the listener's port (its issuer URL); the listener calls it only once it exists.
  const listener: Listener = await listen((req, res) => handler(req as never, res as never), 0, "127.0.0.1");
  const url = `http://127.0.0.1:${listener.port}`;
  const handler = createGameIssuerApp({
    issuerUrl: new URL(issuerUrl ?? url),
    transport: core.transport(),
    logger: pino({ level: "silent" }),
    botCheck: { maxNumber },
  }).callback();
  return { core, url, close: () => listener.close(500) };
}
