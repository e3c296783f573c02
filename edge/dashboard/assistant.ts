/**
 * The assistant's settings, the forms: save the settings, press or release the emergency stop.
 * Each is a named action: read the form → call core → the next page. The page is in
 * assistant-views.ts.
 */
import type { Router } from "@koa/router";
import { Code, ConnectError } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { OcelotSettingsSchema, ResponseStyle } from "../../gen/outpost/ocelot/v1/resources_pb.js";
import { managedOrgOf, action, done, page, type ActionHandler, type DashboardDeps, type Viewer } from "./context.ts";
import { formErrorsOrThrow, hasCode } from "./core.ts";
import { assistantPage, familyFields, settingsPath, type SettingsValues } from "./assistant-views.ts";

const styles: Record<string, ResponseStyle> = { concise: ResponseStyle.CONCISE, detailed: ResponseStyle.DETAILED, friendly: ResponseStyle.FRIENDLY };

/** Parse: the form's values as typed (a number that is not one goes to core as -1, which refuses it by name). */
function readSettingsForm(form: URLSearchParams): SettingsValues {
  const ticked = new Set(form.getAll("tools"));
  const number = (name: string) => {
    const raw = (form.get(name) ?? "").trim();
    return raw === "" ? 0 : /^\d{1,6}$/.test(raw) ? Number(raw) : -1;
  };
  return {
    settings: create(OcelotSettingsSchema, {
      enabled: form.get("enabled") === "yes",
      tools: Object.fromEntries(familyFields.map(([field]) => [field, ticked.has(field)])),
      dailyQueryCap: number("dailyQueryCap"),
      responseStyle: styles[form.get("responseStyle") ?? ""] ?? ResponseStyle.UNSPECIFIED,
      customInstructions: (form.get("customInstructions") ?? "").replace(/\r\n/g, "\n"),
    }),
    breakGlass: form.get("breakGlass") === "yes",
    breakGlassMinutes: (form.get("breakGlassMinutes") ?? "").trim(),
    version: Number(form.get("version") ?? "0") || 0,
  };
}

function managed(v: Viewer, slug: string) {
  return managedOrgOf(v, slug, "change the assistant's settings");
}

const saveSettings: ActionHandler = async (ctx, v, form) => {
  const org = managed(v, ctx.params.slug);
  const values = readSettingsForm(form);
  const minutes = values.breakGlassMinutes === "" ? 0 : /^\d{1,4}$/.test(values.breakGlassMinutes) ? Number(values.breakGlassMinutes) : -1;
  try {
    await v.core.ocelot.updateOcelotConfig({
      organizationSlug: org.slug,
      version: values.version,
      settings: values.settings,
      breakGlass: values.breakGlass,
      breakGlassMinutes: minutes,
    });
    done(ctx, settingsPath(org), "assistant-saved");
  } catch (error) {
    // Someone saved in between: the form comes back with what was typed and says so.
    const errors = hasCode(error, Code.Aborted) ? { fields: {}, form: [(error as ConnectError).rawMessage] } : formErrorsOrThrow(error);
    await assistantPage(ctx, v, { values, errors }, hasCode(error, Code.Aborted) ? 409 : 400);
  }
};

const emergencyStop: ActionHandler = async (ctx, v, form) => {
  const org = managed(v, ctx.params.slug);
  const on = form.get("on") === "yes";
  await v.core.ocelot.setOcelotEmergencyStop({ organizationSlug: org.slug, on });
  done(ctx, settingsPath(org), on ? "assistant-stopped" : "assistant-released");
};

export function assistantRoutes(router: Router, deps: DashboardDeps): void {
  router.get(
    "/app/o/:slug/assistant/settings",
    page(deps, (ctx, v) => assistantPage(ctx, v)),
  );
  router.post("/app/o/:slug/assistant/settings", action(deps, saveSettings));
  router.post("/app/o/:slug/assistant/emergency-stop", action(deps, emergencyStop));
}
