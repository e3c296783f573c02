/** The assistant's settings between their stored columns and the contract's messages. */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { OcelotConfigSchema, ResponseStyle, type OcelotConfig, type OcelotSettings } from "../../gen/outpost/ocelot/v1/resources_pb.js";
import { isManager, type Role } from "../roles.ts";
import { type ConfigRow, type ResponseStyleName, type SettingsColumns } from "./ocelot-queries.ts";

const styles: Record<ResponseStyleName, ResponseStyle> = {
  concise: ResponseStyle.CONCISE,
  detailed: ResponseStyle.DETAILED,
  friendly: ResponseStyle.FRIENDLY,
};

function styleName(style: ResponseStyle): ResponseStyleName {
  return (Object.keys(styles) as ResponseStyleName[]).find((name) => styles[name] === style) ?? "concise";
}

const ts = (date: Date | null) => (date ? timestampFromDate(new Date(date)) : undefined);

/**
 * The settings as `role` may see them: members get everything but the custom instructions
 * (which may say how the organization runs its servers); break-glass shows off once expired.
 */
export function configToProto(row: ConfigRow, role: Role): OcelotConfig {
  const manager = isManager(role);
  const glass = row.break_glass_active;
  return create(OcelotConfigSchema, {
    organizationId: row.organization_id,
    settings: {
      enabled: row.enabled,
      tools: {
        consoleRead: row.console_read,
        consoleCommand: row.console_command,
        players: row.players,
        knowledgeRead: row.knowledge_read,
        knowledgeWrite: row.knowledge_write,
        serverLifecycle: row.server_lifecycle,
        files: row.files,
      },
      dailyQueryCap: row.daily_query_cap,
      responseStyle: styles[row.response_style] ?? ResponseStyle.CONCISE,
      customInstructions: manager ? row.custom_instructions : "",
    },
    customInstructionsHidden: !manager,
    emergencyStop: {
      on: row.emergency_stop,
      setByUserId: row.emergency_stop_by ?? "",
      setByEmail: row.emergency_stop_by_email ?? "",
      setAt: ts(row.emergency_stop_at),
    },
    breakGlass: {
      on: glass,
      setByUserId: row.break_glass_by ?? "",
      setByEmail: row.break_glass_by_email ?? "",
      setAt: ts(row.break_glass_at),
      expiresAt: glass ? ts(row.break_glass_expires_at) : undefined,
    },
    version: row.version,
    updatedAt: ts(row.updated_at),
  });
}

/** The columns a settings message is stored as. */
export function settingsColumns(settings: OcelotSettings): SettingsColumns {
  const t = settings.tools!;
  return {
    console_read: t.consoleRead,
    console_command: t.consoleCommand,
    players: t.players,
    knowledge_read: t.knowledgeRead,
    knowledge_write: t.knowledgeWrite,
    server_lifecycle: t.serverLifecycle,
    files: t.files,
    enabled: settings.enabled,
    daily_query_cap: settings.dailyQueryCap,
    response_style: styleName(settings.responseStyle),
    custom_instructions: settings.customInstructions,
  };
}
