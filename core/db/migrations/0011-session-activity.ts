import { Migration } from "@mikro-orm/migrations";

/**
 * Sessions learn when they were last used (for the idle timeout, SESSION_IDLE_HOURS) and where
 * they were opened from (shown on Account → Security). Sessions open before this have no known
 * last use: they count as used now, so none ends at the upgrade; their address is unknown.
 */
export class Migration0011SessionActivity extends Migration {
  override name = "0011_session_activity";

  override async up(): Promise<void> {
    this.addSql(`alter table "sessions" add column "last_used_at" timestamptz not null default now();`);
    this.addSql(`alter table "sessions" alter column "last_used_at" drop default;`);
    this.addSql(`alter table "sessions" add column "ip" varchar(64) null;`);
    this.addSql(`alter table "sessions" add column "user_agent" varchar(512) null;`);
  }
}
