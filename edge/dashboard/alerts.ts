/**
 * An organization's alert rules, the forms: add a rule, delete one. Each is a named action: read
 * the form → call core → the next page. The pages are in alerts-views.ts.
 */
import type { Router } from "@koa/router";
import { ActivityKind, ActivitySeverity } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { action, confirmed, done, page, type ActionHandler, type DashboardDeps } from "./context.ts";
import { formErrorsOrThrow, type FormErrors } from "./core.ts";
import { orgPath } from "./organizations.ts";
import { alertsPage, deliveriesPage, managedAlerts, type RuleValues } from "./alerts-views.ts";

/** Parse: the form's values as typed. */
function readRuleForm(form: URLSearchParams): RuleValues {
  const targets = form.getAll("integrationIds");
  return {
    name: (form.get("name") ?? "").trim(),
    serverId: form.get("serverId") ?? "",
    kinds: form.getAll("kinds"),
    severities: form.getAll("severities"),
    integrationIds: targets.filter((t) => t !== "dashboard"),
    notifyDashboard: targets.includes("dashboard"),
    quietStart: (form.get("quietStart") ?? "").trim(),
    quietEnd: (form.get("quietEnd") ?? "").trim(),
    timeZone: (form.get("timeZone") ?? "").trim(),
    maxPerHour: (form.get("maxPerHour") ?? "").trim(),
  };
}

const enumValue = (e: Record<string, string | number>, name: string) => Number(e[name.toUpperCase()] ?? -1);

/** Core's messages for the rule's fields (all under `spec`) shown at the top of the form, each naming its field. */
function asFormErrors(errors: FormErrors): FormErrors {
  return { form: [...errors.form, ...Object.values(errors.fields).flat()], fields: {} };
}

const createRule: ActionHandler = async (ctx, v, form) => {
  const org = managedAlerts(v, ctx.params.slug);
  const values = readRuleForm(form);
  const quiet = values.quietStart || values.quietEnd || values.timeZone;
  try {
    await v.core.alerts.createAlertRule({
      organizationSlug: org.slug,
      spec: {
        name: values.name,
        enabled: true,
        serverId: values.serverId || undefined,
        kinds: values.kinds.map((k) => enumValue(ActivityKind, k)),
        severities: values.severities.map((s) => enumValue(ActivitySeverity, s)),
        integrationIds: values.integrationIds,
        notifyDashboard: values.notifyDashboard,
        quietHours: quiet ? { start: values.quietStart, end: values.quietEnd, timeZone: values.timeZone } : undefined,
        maxDeliveriesPerHour: values.maxPerHour ? Math.trunc(Number(values.maxPerHour)) || -1 : 0,
      },
    });
    done(ctx, orgPath(org, "/alerts"), "alert-rule-created");
  } catch (error) {
    await alertsPage(ctx, v, { values, errors: asFormErrors(formErrorsOrThrow(error)) }, 400);
  }
};

const deleteRule: ActionHandler = async (ctx, v, form) => {
  const org = managedAlerts(v, ctx.params.slug);
  if (!confirmed(ctx, v, form, { title: "Delete this alert rule?", consequence: "Its deliveries not yet sent are dropped. This cannot be undone.", label: "Delete alert rule", cancel: orgPath(org, "/alerts"), org })) return;
  await v.core.alerts.deleteAlertRule({ organizationSlug: org.slug, ruleId: ctx.params.ruleId });
  done(ctx, orgPath(org, "/alerts"), "alert-rule-deleted");
};

export function alertRoutes(router: Router, deps: DashboardDeps): void {
  router.get("/app/o/:slug/alerts", page(deps, (ctx, v) => alertsPage(ctx, v)));
  router.get("/app/o/:slug/alerts/deliveries", page(deps, deliveriesPage));
  router.post("/app/o/:slug/alerts", action(deps, createRule));
  router.post("/app/o/:slug/alerts/:ruleId/delete", action(deps, deleteRule));
}
