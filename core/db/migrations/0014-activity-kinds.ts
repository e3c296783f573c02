import { Migration } from "@mikro-orm/migrations";

/**
 * Activity events get a kind and a severity (core/activity/kinds.ts decides them for new events;
 * the rows already written get them from the copy of that table below, as it stood) and can be
 * acknowledged by an owner or admin (who, by id and email, and when). An action the copy does
 * not know reads as security/warning: better looked at than missed. The index serves the
 * organization log filtered by server.
 */
export class Migration0014ActivityKinds extends Migration {
  override name = "0014_activity_kinds";

  override async up(): Promise<void> {
    this.addSql(`alter table "activity_events"
      add column "kind" varchar(16) not null default 'security',
      add column "severity" varchar(8) not null default 'warning',
      add column "acknowledged_at" timestamptz null,
      add column "acknowledged_by_user_id" uuid null,
      add column "acknowledged_by_email" varchar(254) null;`);
    this.addSql(`update "activity_events" e set "kind" = c.kind, "severity" = c.severity from (values
      ('server.agent_connected', 'status', 'info'),
      ('server.agent_disconnected', 'status', 'warning'),
      ('server.agent_key_regenerated', 'security', 'warning'),
      ('server.console_command', 'player_admin', 'info'),
      ('server.created', 'configuration', 'info'),
      ('server.renamed', 'configuration', 'info'),
      ('server.deleted', 'configuration', 'warning'),
      ('organization.created', 'configuration', 'info'),
      ('organization.renamed', 'configuration', 'info'),
      ('organization.deleted', 'configuration', 'warning'),
      ('organization.plan_changed', 'configuration', 'info'),
      ('organization.verified', 'configuration', 'info'),
      ('organization.unverified', 'configuration', 'info'),
      ('member.added', 'access', 'info'),
      ('member.role_changed', 'access', 'info'),
      ('member.removed', 'access', 'info'),
      ('member.left', 'access', 'info'),
      ('access_grant.created', 'access', 'info'),
      ('access_grant.revoked', 'access', 'info'),
      ('user.platform_admin_granted', 'access', 'warning'),
      ('user.platform_admin_revoked', 'access', 'info'),
      ('user.created', 'account', 'info'),
      ('user.signed_up', 'account', 'info'),
      ('user.signed_in', 'account', 'info'),
      ('user.signed_out', 'account', 'info'),
      ('user.password_changed', 'account', 'info'),
      ('user.other_sessions_revoked', 'account', 'info'),
      ('session.revoked', 'account', 'info'),
      ('api_key.created', 'account', 'info'),
      ('api_key.revoked', 'account', 'info'),
      ('user.sign_in_failed', 'security', 'warning'),
      ('user.sign_in_throttled', 'security', 'warning'),
      ('user.password_change_failed', 'security', 'warning'),
      ('rate_limit.locked_out', 'security', 'warning'),
      ('game_oauth.code_reused', 'security', 'error'),
      ('account_oauth.code_reused', 'security', 'error'),
      ('signing_keys.created', 'security', 'info'),
      ('signing_keys.rotated', 'security', 'info'),
      ('signing_keys.purged', 'security', 'warning'),
      ('key_encryption_key.rotated', 'security', 'info'),
      ('game_oauth.sign_in', 'oauth', 'info'),
      ('game_oauth.sign_in_claimed', 'oauth', 'info'),
      ('game_oauth.sign_in_cancelled', 'oauth', 'info'),
      ('game_oauth.sign_in_claim_expired', 'oauth', 'info'),
      ('game_oauth.sign_in_refused', 'oauth', 'warning'),
      ('account_oauth.sign_in', 'oauth', 'info'),
      ('account_consent.granted', 'oauth', 'info'),
      ('account_consent.denied', 'oauth', 'info'),
      ('account_consent.revoked', 'oauth', 'info'),
      ('game_oauth_client.created', 'oauth', 'info'),
      ('game_oauth_client.updated', 'oauth', 'info'),
      ('game_oauth_client.enabled', 'oauth', 'info'),
      ('game_oauth_client.disabled', 'oauth', 'info'),
      ('game_oauth_client.secret_rotated', 'security', 'info'),
      ('game_oauth_client.deleted', 'oauth', 'info'),
      ('oauth_provider_client.created', 'oauth', 'info'),
      ('oauth_provider_client.updated', 'oauth', 'info'),
      ('oauth_provider_client.enabled', 'oauth', 'info'),
      ('oauth_provider_client.disabled', 'oauth', 'info'),
      ('oauth_provider_client.secret_rotated', 'security', 'info'),
      ('oauth_provider_client.deleted', 'oauth', 'info')
    ) as c(action, kind, severity) where e.action = c.action;`);
    this.addSql(`alter table "activity_events" alter column "kind" drop default, alter column "severity" drop default;`);
    this.addSql(`create index "activity_events_server_created_idx" on "activity_events" ("server_id", "created_at") where "server_id" is not null;`);
  }
}
