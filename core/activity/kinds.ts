/**
 * The one table that gives every activity action its kind and severity. An event's kind and
 * severity are stored with it (filtered on, and what alert rules will match), and they are
 * decided here and nowhere else: a call site names only its action, and an action missing from
 * this table does not compile (`ActivityAction`). Migration 0014 filled in the rows written
 * before the columns existed from a copy of this table; a new action needs only a line here.
 *
 * Kinds: `status` (a server's agent came or went), `access` (who may do what in an organization
 * or on the platform), `player_admin` (acting on a game server: console commands, changes to its files), `oauth`
 * (both issuers' sign-ins, consents and clients), `security` (refusals, lockouts, code reuse,
 * keys and secrets), `account` (a user's own sign-ins, sessions and API keys), `configuration`
 * (organizations and servers made, renamed, deleted, their plan).
 * Severities: `info` (expected), `warning` (worth a look: a refusal, a lockout, a lost server),
 * `error` (something is wrong: an authorization code presented twice).
 */
export const activityKinds = ["status", "access", "player_admin", "oauth", "security", "account", "configuration"] as const;
export type ActivityKindName = (typeof activityKinds)[number];

export const activitySeverities = ["info", "warning", "error"] as const;
export type ActivitySeverityName = (typeof activitySeverities)[number];

type Class = readonly [ActivityKindName, ActivitySeverityName];

const clientVerbs = {
  created: ["oauth", "info"],
  updated: ["oauth", "info"],
  enabled: ["oauth", "info"],
  disabled: ["oauth", "info"],
  secret_rotated: ["security", "info"],
  deleted: ["oauth", "info"],
  grants_revoked: ["security", "info"],
} as const satisfies Record<string, Class>;

/** A verb of an OAuth client's events (either issuer's). */
export type ClientVerb = keyof typeof clientVerbs;

const prefixed = <P extends string>(prefix: P) =>
  Object.fromEntries(Object.entries(clientVerbs).map(([verb, c]) => [`${prefix}.${verb}`, c])) as Record<`${P}.${ClientVerb}`, Class>;

const table = {
  "server.agent_connected": ["status", "info"],
  "server.game_state_changed": ["status", "info"],
  "server.threshold_crossed": ["status", "warning"],
  "server.threshold_cleared": ["status", "info"],
  "server.game_crashed": ["status", "warning"],
  "server.agent_disconnected": ["status", "warning"],
  "server.agent_key_regenerated": ["security", "warning"],
  "server.console_command": ["player_admin", "info"],
  "server.console_command_settled": ["player_admin", "info"],
  "server.lifecycle": ["player_admin", "info"],
  "server.schedule_ran": ["player_admin", "info"],
  "server.schedule_skipped": ["player_admin", "warning"],
  "server.schedule_created": ["configuration", "info"],
  "server.schedule_updated": ["configuration", "info"],
  "server.schedule_deleted": ["configuration", "info"],
  "server.file_written": ["player_admin", "info"],
  "server.directory_created": ["player_admin", "info"],
  "server.file_moved": ["player_admin", "info"],
  "server.file_deleted": ["player_admin", "warning"],
  "server.plugin_enabled": ["player_admin", "info"],
  "server.plugin_disabled": ["player_admin", "info"],
  "server.file_restored": ["player_admin", "info"],
  "server.created": ["configuration", "info"],
  "server.renamed": ["configuration", "info"],
  "server.deleted": ["configuration", "warning"],
  "server.frozen": ["status", "warning"],
  "server.unfrozen": ["status", "info"],
  "organization.created": ["configuration", "info"],
  "organization.renamed": ["configuration", "info"],
  "organization.deleted": ["configuration", "warning"],
  "organization.plan_changed": ["configuration", "info"],
  "organization.verified": ["configuration", "info"],
  "organization.unverified": ["configuration", "info"],
  "member.added": ["access", "info"],
  "member.role_changed": ["access", "info"],
  "member.removed": ["access", "info"],
  "member.left": ["access", "info"],
  "access_grant.created": ["access", "info"],
  "access_grant.revoked": ["access", "info"],
  "access_grant.used_up": ["access", "info"],
  "access_request.created": ["access", "info"],
  "access_request.approved": ["access", "info"],
  "access_request.denied": ["access", "info"],
  "access_request.cancelled": ["access", "info"],
  "invitation.created": ["access", "info"],
  "invitation.revoked": ["access", "info"],
  "invitation.accepted": ["access", "info"],
  "organization_api_key.created": ["access", "info"],
  "organization_api_key.revoked": ["access", "info"],
  "user.platform_admin_granted": ["access", "warning"],
  "user.platform_admin_revoked": ["access", "info"],
  "user.created": ["account", "info"],
  "user.signed_up": ["account", "info"],
  "user.signed_in": ["account", "info"],
  "user.signed_out": ["account", "info"],
  "user.password_changed": ["account", "info"],
  "user.other_sessions_revoked": ["account", "info"],
  "user.email_verification_issued": ["account", "info"],
  "user.email_verified": ["account", "info"],
  "session.revoked": ["account", "info"],
  "api_key.created": ["account", "info"],
  "api_key.revoked": ["account", "info"],
  "user.sign_in_failed": ["security", "warning"],
  "user.sign_in_throttled": ["security", "warning"],
  "user.password_change_failed": ["security", "warning"],
  "rate_limit.locked_out": ["security", "warning"],
  "game_oauth.code_reused": ["security", "error"],
  "account_oauth.code_reused": ["security", "error"],
  "account_oauth.refresh_token_reused": ["security", "error"],
  "account_oauth.refresh_token_misused": ["security", "error"],
  "account_oauth.refresh_token_revoked": ["oauth", "info"],
  "account_oauth.access_token_revoked": ["oauth", "info"],
  "game_oauth.access_token_revoked": ["oauth", "info"],
  "signing_keys.created": ["security", "info"],
  "signing_keys.rotated": ["security", "info"],
  "signing_keys.purged": ["security", "warning"],
  "key_encryption_key.rotated": ["security", "info"],
  "game_oauth.sign_in": ["oauth", "info"],
  "game_oauth.sign_in_claimed": ["oauth", "info"],
  "game_oauth.sign_in_cancelled": ["oauth", "info"],
  "game_oauth.sign_in_claim_expired": ["oauth", "info"],
  "game_oauth.sign_in_refused": ["oauth", "warning"],
  "account_oauth.sign_in": ["oauth", "info"],
  "account_consent.granted": ["oauth", "info"],
  "account_consent.denied": ["oauth", "info"],
  "account_consent.revoked": ["oauth", "info"],
  "integration.created": ["configuration", "info"],
  "integration.updated": ["configuration", "info"],
  "integration.deleted": ["configuration", "warning"],
  "integration.secret_rotated": ["security", "info"],
  "integration.tested": ["configuration", "info"],
  "alert_rule.created": ["configuration", "info"],
  "alert_rule.updated": ["configuration", "info"],
  "alert_rule.deleted": ["configuration", "warning"],
  "ocelot.config_updated": ["configuration", "info"],
  "ocelot.emergency_stop_on": ["security", "warning"],
  "ocelot.emergency_stop_off": ["security", "info"],
  "ocelot.break_glass_on": ["security", "warning"],
  "ocelot.break_glass_off": ["security", "warning"],
  "ocelot.break_glass_expired": ["security", "info"],
  "ocelot_tool.authorized": ["player_admin", "info"],
  "ocelot_tool.confirmed": ["player_admin", "info"],
  "ocelot_tool.denied": ["player_admin", "info"],
  "ocelot_tool.completed": ["player_admin", "info"],
  "ocelot_tool.failed": ["player_admin", "warning"],
  "ocelot_tool.released": ["player_admin", "info"],
  "ocelot_tool.expired": ["player_admin", "info"],
  "ocelot_tool.stopped": ["player_admin", "warning"],
  "knowledge.note_created": ["configuration", "info"],
  "knowledge.note_updated": ["configuration", "info"],
  "knowledge.note_deleted": ["configuration", "info"],
  "push_subscription.created": ["account", "info"],
  "push_subscription.deleted": ["account", "info"],
  "push_subscription.moved": ["security", "warning"],
  ...prefixed("game_oauth_client"),
  ...prefixed("oauth_provider_client"),
} as const satisfies Record<string, Class>;

/** Every action an activity event may have: "<target>.<verb>". */
export type ActivityAction = keyof typeof table;

/** Every action with its kind and severity (for the docs, the migration's copy and tests). */
export const activityClasses: ReadonlyMap<ActivityAction, Class> = new Map(Object.entries(table) as Array<[ActivityAction, Class]>);

/** The kind and severity of an action; throws for an action outside the table (a programming error). */
export function classifyAction(action: ActivityAction): { kind: ActivityKindName; severity: ActivitySeverityName } {
  const found = activityClasses.get(action);
  if (!found) throw new Error(`activity action ${action} has no kind: add it to core/activity/kinds.ts`);
  return { kind: found[0], severity: found[1] };
}
