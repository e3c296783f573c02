import { Migration0001Initial } from "./0001-initial.ts";
import { Migration0002RateLimits } from "./0002-rate-limits.ts";
import { Migration0003GameOAuthClients } from "./0003-game-oauth-clients.ts";
import { Migration0004SigningKeys } from "./0004-signing-keys.ts";
import { Migration0005AgentPresence } from "./0005-agent-presence.ts";
import { Migration0006GameOAuthFlow } from "./0006-game-oauth-flow.ts";
import { Migration0007AccountOAuth } from "./0007-account-oauth.ts";
import { Migration0008ExchangeCost } from "./0008-exchange-cost.ts";
import { Migration0009SealedRedirect } from "./0009-sealed-redirect.ts";
import { Migration0010LoginCodeConfirmation } from "./0010-login-code-confirmation.ts";
import { Migration0011SessionActivity } from "./0011-session-activity.ts";
import { Migration0012OrganizationVerified } from "./0012-organization-verified.ts";
import { Migration0013RealGameServers } from "./0013-real-game-servers.ts";
import { Migration0014ActivityKinds } from "./0014-activity-kinds.ts";
import { Migration0015Integrations } from "./0015-integrations.ts";
import { Migration0016PushSubscriptions } from "./0016-push-subscriptions.ts";
import { Migration0017AccountOAuthClientOptions } from "./0017-account-oauth-client-options.ts";
import { Migration0018Notifications } from "./0018-notifications.ts";
import { Migration0019Alerts } from "./0019-alerts.ts";
import { Migration0023Knowledge } from "./0023-knowledge.ts";
import { Migration0024Ocelot } from "./0024-ocelot.ts";
import { Migration0026Chat } from "./0026-chat.ts";

/** Every migration, in order. Append; never edit one that has shipped. */
export const migrations = [
  { name: "0001_initial", class: Migration0001Initial },
  { name: "0002_rate_limits", class: Migration0002RateLimits },
  { name: "0003_game_oauth_clients", class: Migration0003GameOAuthClients },
  { name: "0004_signing_keys", class: Migration0004SigningKeys },
  { name: "0005_agent_presence", class: Migration0005AgentPresence },
  { name: "0006_game_oauth_flow", class: Migration0006GameOAuthFlow },
  { name: "0007_account_oauth", class: Migration0007AccountOAuth },
  { name: "0008_exchange_cost", class: Migration0008ExchangeCost },
  { name: "0009_sealed_redirect", class: Migration0009SealedRedirect },
  { name: "0010_login_code_confirmation", class: Migration0010LoginCodeConfirmation },
  { name: "0011_session_activity", class: Migration0011SessionActivity },
  { name: "0012_organization_verified", class: Migration0012OrganizationVerified },
  { name: "0013_real_game_servers", class: Migration0013RealGameServers },
  { name: "0014_activity_kinds", class: Migration0014ActivityKinds },
  { name: "0015_integrations", class: Migration0015Integrations },
  { name: "0016_push_subscriptions", class: Migration0016PushSubscriptions },
  { name: "0017_account_oauth_client_options", class: Migration0017AccountOAuthClientOptions },
  { name: "0018_notifications", class: Migration0018Notifications },
  { name: "0019_alerts", class: Migration0019Alerts },
  { name: "0023_knowledge", class: Migration0023Knowledge },
  { name: "0024_ocelot", class: Migration0024Ocelot },
  { name: "0026_chat", class: Migration0026Chat },
];
