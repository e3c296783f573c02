/**
 * An organization's alert rules, the forms: add a rule, edit, pause, resume or delete one. Each is a named action: read
 * the form → call core → the next page. The pages are in alerts-views.ts.
 */
import type { Router } from "@koa/router";
import { ActivityKind, ActivitySeverity } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { AlertCondition } from "../../gen/outpost/alerts/v1/alerts_service_pb.js";
import { action, confirmed, done, page, type ActionHandler, type DashboardDeps } from "./context.ts";
import { allMessages, formErrorsOrThrow, type FormErrors } from "./core.ts";
import { orgPath } from "./paths.ts";
import { alertsPage, deliveriesPage, editRulePage, managedAlerts, ruleOf, type RuleValues } from "./alerts-views.ts";

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
    condition: form.get("condition") ?? "",
    thresholdValue: (form.get("thresholdValue") ?? "").trim(),
    minutes: (form.get("minutes") ?? "").trim(),
  };
}

const enumValue = (e: Record<string, string | number>, name: string) => Number(e[name.toUpperCase()] ?? -1);

/** Core's messages for the rule's fields (all under `spec`) shown at the top of the form, each naming its field. */
function asFormErrors(errors: FormErrors): FormErrors {
  return { form: allMessages(errors), fields: {} };
}

/** The spec core takes, from the form's values. */
function specOf(values: RuleValues, enabled: boolean) {
  const quiet = values.quietStart || values.quietEnd || values.timeZone;
  return {
    name: values.name,
    enabled,
    serverId: values.serverId || undefined,
    kinds: values.kinds.map((k) => enumValue(ActivityKind, k)),
    severities: values.severities.map((s) => enumValue(ActivitySeverity, s)),
    integrationIds: values.integrationIds,
    notifyDashboard: values.notifyDashboard,
    quietHours: quiet ? { start: values.quietStart, end: values.quietEnd, timeZone: values.timeZone } : undefined,
    maxDeliveriesPerHour: values.maxPerHour ? Math.trunc(Number(values.maxPerHour)) || -1 : 0,
    threshold: values.condition
      ? {
          condition: enumValue(AlertCondition, values.condition),
          // Text that is no number goes out of range: core says what the field takes.
          value: values.thresholdValue ? Number(values.thresholdValue.replace(",", ".")) || -1 : 0,
          minutes: values.minutes ? Math.min(Math.max(Math.trunc(Number(values.minutes)) || 1_000_000, 0), 1_000_000) : 0,
        }
      : undefined,
  };
}

const createRule: ActionHandler = async (ctx, v, form) => {
  const org = managedAlerts(v, ctx.params.slug);
  const values = readRuleForm(form);
  try {
    await v.core.alerts.createAlertRule({ organizationSlug: org.slug, spec: specOf(values, true) });
    done(ctx, orgPath(org, "/alerts"), "alert-rule-created");
  } catch (error) {
    await alertsPage(ctx, v, { values, errors: asFormErrors(formErrorsOrThrow(error)) }, 400);
  }
};

/** Saving an edited rule keeps it paused or running as it was. */
const updateRule: ActionHandler = async (ctx, v, form) => {
  const org = managedAlerts(v, ctx.params.slug);
  const rule = await ruleOf(v, org, ctx.params.ruleId);
  const values = readRuleForm(form);
  try {
    await v.core.alerts.updateAlertRule({ organizationSlug: org.slug, ruleId: rule.id, spec: specOf(values, rule.spec!.enabled) });
    done(ctx, orgPath(org, "/alerts"), "alert-rule-updated");
  } catch (error) {
    await editRulePage(ctx, v, { values, errors: asFormErrors(formErrorsOrThrow(error)) }, 400);
  }
};

const setRuleEnabled =
  (enabled: boolean): ActionHandler =>
  async (ctx, v) => {
    const org = managedAlerts(v, ctx.params.slug);
    const rule = await ruleOf(v, org, ctx.params.ruleId);
    await v.core.alerts.updateAlertRule({ organizationSlug: org.slug, ruleId: rule.id, spec: { ...rule.spec!, enabled } });
    done(ctx, orgPath(org, "/alerts"), enabled ? "alert-rule-resumed" : "alert-rule-paused");
  };

const deleteRule: ActionHandler = async (ctx, v, form) => {
  const org = managedAlerts(v, ctx.params.slug);
  if (
    !confirmed(ctx, v, form, {
      title: "Delete this alert rule?",
      consequence: "Its deliveries not yet sent are dropped. This cannot be undone.",
      label: "Delete alert rule",
      cancel: orgPath(org, "/alerts"),
      org,
    })
  )
    return;
  await v.core.alerts.deleteAlertRule({ organizationSlug: org.slug, ruleId: ctx.params.ruleId });
  done(ctx, orgPath(org, "/alerts"), "alert-rule-deleted");
};

export function alertRoutes(router: Router, deps: DashboardDeps): void {
  router.get(
    "/app/o/:slug/alerts",
    page(deps, (ctx, v) => alertsPage(ctx, v)),
  );
  router.get("/app/o/:slug/alerts/deliveries", page(deps, deliveriesPage));
  router.post("/app/o/:slug/alerts", action(deps, createRule));
  router.get(
    "/app/o/:slug/alerts/:ruleId/edit",
    page(deps, (ctx, v) => editRulePage(ctx, v)),
  );
  router.post("/app/o/:slug/alerts/:ruleId", action(deps, updateRule));
  router.post("/app/o/:slug/alerts/:ruleId/pause", action(deps, setRuleEnabled(false)));
  router.post("/app/o/:slug/alerts/:ruleId/resume", action(deps, setRuleEnabled(true)));
  router.post("/app/o/:slug/alerts/:ruleId/delete", action(deps, deleteRule));
}
