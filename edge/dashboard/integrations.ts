/**
 * An organization's integrations, the forms: add (a Discord channel, a webhook, email), edit,
 * send a test, rotate a webhook's secret, enable or disable, delete. Each is a named action: read the
 * form → call core → the next page. The pages are in integrations-views.ts.
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CreateIntegrationRequestSchema } from "../../gen/outpost/integrations/v1/integrations_service_pb.js";
import { action, confirmed, done, page, type ActionHandler, type DashboardDeps, type Viewer } from "./context.ts";
import { formErrorsOrThrow, type FormErrors } from "./core.ts";
import { orgPath } from "./paths.ts";
import { IntegrationKind } from "../../gen/outpost/integrations/v1/integrations_service_pb.js";
import { editIntegrationPage, integrationOf, integrationSecretPage, integrationsPage, managedIntegrations, type IntegrationValues } from "./integrations-views.ts";

type Target = MessageInitShape<typeof CreateIntegrationRequestSchema>["target"];

/** Parse: the form's values as typed, and the target as core takes it (of `kind` when the form has none: an edit keeps its kind). */
function readIntegrationForm(form: URLSearchParams, kind = form.get("kind") ?? ""): { values: IntegrationValues; target: Target } {
  const values: IntegrationValues = {
    name: (form.get("name") ?? "").trim(),
    kind,
    url: (form.get("url") ?? "").trim(),
    recipients: form.get("recipients") ?? "",
  };
  const recipients = values.recipients
    .split(/[\r\n,]+/)
    .map((r) => r.trim())
    .filter(Boolean);
  const target: Target =
    values.kind === "discord"
      ? { case: "discord", value: { url: values.url } }
      : values.kind === "webhook"
        ? { case: "webhook", value: { url: values.url } }
        : values.kind === "email"
          ? { case: "email", value: { recipients } }
          : { case: undefined };
  return { values, target };
}

/** Core names a target's problems by the oneof's field (discord, webhook, email): shown next to the URL or the recipients. */
function byFormField(errors: FormErrors): FormErrors {
  const { discord = [], webhook = [], email = [], target = [], ...rest } = errors.fields;
  const strip = (m: string) => m.replace(/^url: /, "");
  return {
    form: errors.form,
    fields: { ...rest, url: [...discord, ...webhook].map(strip), recipients: email, ...(target.length && { kind: target }) },
  };
}

const createIntegration: ActionHandler = async (ctx, v, form) => {
  const org = managedIntegrations(v, ctx.params.slug);
  const { values, target } = readIntegrationForm(form);
  try {
    const res = await v.core.integrations.createIntegration({ organizationSlug: org.slug, name: values.name, target });
    if (res.secret) return integrationSecretPage(ctx, v, org, res.integration!, res.secret, true);
    done(ctx, orgPath(org, "/integrations"), "integration-created");
  } catch (error) {
    await integrationsPage(ctx, v, { values, errors: byFormField(formErrorsOrThrow(error)) }, 400);
  }
};

const ids = (ctx: Context, v: Viewer) => ({ organizationSlug: managedIntegrations(v, ctx.params.slug).slug, integrationId: ctx.params.integrationId });

const testIntegration: ActionHandler = async (ctx, v) => {
  const request = ids(ctx, v);
  const result = await v.core.integrations.testIntegration(request);
  const { integrations } = await v.core.integrations.listIntegrations({ organizationSlug: request.organizationSlug });
  const name = integrations.find((i) => i.id === request.integrationId)?.name ?? "the integration";
  await integrationsPage(ctx, v, { tested: { name, result } });
};

/** The confirmation page of a destructive action, until the form says confirmed. */
function confirmedOn(ctx: Context, v: Viewer, form: URLSearchParams, question: { title: string; consequence: string; label: string }): boolean {
  const org = managedIntegrations(v, ctx.params.slug);
  return confirmed(ctx, v, form, { ...question, cancel: orgPath(org, "/integrations"), org });
}

const rotateSecret: ActionHandler = async (ctx, v, form) => {
  if (
    !confirmedOn(ctx, v, form, {
      title: "Rotate the signing secret?",
      consequence: "Deliveries are signed with the new secret at once; the receiver needs it to verify them.",
      label: "Rotate secret",
    })
  )
    return;
  const res = await v.core.integrations.rotateIntegrationSecret(ids(ctx, v));
  integrationSecretPage(ctx, v, managedIntegrations(v, ctx.params.slug), res.integration!, res.secret, false);
};

const setEnabled =
  (enabled: boolean): ActionHandler =>
  async (ctx, v) => {
    const request = ids(ctx, v);
    await v.core.integrations.updateIntegration({ ...request, enabled });
    done(ctx, orgPath(managedIntegrations(v, ctx.params.slug), "/integrations"), enabled ? "integration-enabled" : "integration-disabled");
  };

/** Saves a new name and, when given, a new URL or the recipients; the kind stays. */
const updateIntegration: ActionHandler = async (ctx, v, form) => {
  const org = managedIntegrations(v, ctx.params.slug);
  const current = await integrationOf(v, org, ctx.params.integrationId);
  const kind = current.kind === IntegrationKind.DISCORD ? "discord" : current.kind === IntegrationKind.WEBHOOK ? "webhook" : "email";
  const { values, target } = readIntegrationForm(form, kind);
  const keepsUrl = kind !== "email" && !values.url;
  try {
    await v.core.integrations.updateIntegration({ ...ids(ctx, v), name: values.name, target: keepsUrl ? { case: undefined } : target });
    done(ctx, orgPath(org, "/integrations"), "integration-updated");
  } catch (error) {
    await editIntegrationPage(ctx, v, { values, errors: byFormField(formErrorsOrThrow(error)), integration: current }, 400);
  }
};

const deleteIntegration: ActionHandler = async (ctx, v, form) => {
  if (!confirmedOn(ctx, v, form, { title: "Delete this integration?", consequence: "Nothing more is sent to it. This cannot be undone.", label: "Delete integration" }))
    return;
  await v.core.integrations.deleteIntegration(ids(ctx, v));
  done(ctx, orgPath(managedIntegrations(v, ctx.params.slug), "/integrations"), "integration-deleted");
};

export function integrationRoutes(router: Router, deps: DashboardDeps): void {
  router.get(
    "/app/o/:slug/integrations",
    page(deps, (ctx, v) => integrationsPage(ctx, v)),
  );
  router.post("/app/o/:slug/integrations", action(deps, createIntegration));
  router.get(
    "/app/o/:slug/integrations/:integrationId/edit",
    page(deps, (ctx, v) => editIntegrationPage(ctx, v)),
  );
  router.post("/app/o/:slug/integrations/:integrationId", action(deps, updateIntegration));
  router.post("/app/o/:slug/integrations/:integrationId/test", action(deps, testIntegration));
  router.post("/app/o/:slug/integrations/:integrationId/rotate-secret", action(deps, rotateSecret));
  router.post("/app/o/:slug/integrations/:integrationId/enable", action(deps, setEnabled(true)));
  router.post("/app/o/:slug/integrations/:integrationId/disable", action(deps, setEnabled(false)));
  router.post("/app/o/:slug/integrations/:integrationId/delete", action(deps, deleteIntegration));
}
