/**
 * Game OAuth clients of an organization, the forms: create (redirect URIs one per line, the
 * verifier policy with a server picker), edit, rotate the secret, disable/enable, delete. Each is
 * a named action: read the form → call core → the next page (a refused form comes back with the
 * API's messages next to its fields). The pages are in game-oauth-views.ts.
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import { Code } from "@connectrpc/connect";
import { VerifierPolicy } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { action, confirmed, done, page, type ActionHandler, type DashboardDeps, type Viewer } from "./context.ts";
import { formErrorsOrThrow, hasCode } from "./core.ts";
import { defaultSigningAlg } from "../../contract/issuers.ts";
import { orgPath } from "./paths.ts";
import { clientPage, listPage, managed, secretPage, type ClientValues } from "./game-oauth-views.ts";

const policies: Record<string, VerifierPolicy> = { any_server: VerifierPolicy.ANY_SERVER, selected_servers: VerifierPolicy.SELECTED_SERVERS };

/** Parse: the form's values as typed, and as core takes them. */
function readClientForm(form: URLSearchParams): { values: ClientValues; policy: VerifierPolicy; redirectUris: string[] } {
  const values: ClientValues = {
    name: (form.get("name") ?? "").trim(),
    redirectUris: form.get("redirectUris") ?? "",
    policy: form.get("verifierPolicy") ?? "any_server",
    servers: form.getAll("allowedServerIds"),
    idTokenAlg: form.get("idTokenSignedResponseAlg") ?? defaultSigningAlg,
  };
  const redirectUris = values.redirectUris
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
  return { values, policy: policies[values.policy] ?? VerifierPolicy.UNSPECIFIED, redirectUris };
}

const createClient: ActionHandler = async (ctx, v, form) => {
  const org = managed(v, ctx.params.slug);
  const { values, policy, redirectUris } = readClientForm(form);
  try {
    const res = await v.core.organizations.createGameOAuthClient({
      organizationSlug: org.slug,
      name: values.name,
      redirectUris,
      verifierPolicy: policy,
      allowedServerIds: policy === VerifierPolicy.SELECTED_SERVERS ? values.servers : [],
      idTokenSignedResponseAlg: values.idTokenAlg,
    });
    secretPage(ctx, v, org, res.client!, res.clientSecret, true);
  } catch (error) {
    await listPage(ctx, v, values, formErrorsOrThrow(error), 400);
  }
};

const updateClient: ActionHandler = async (ctx, v, form) => {
  const org = managed(v, ctx.params.slug);
  const { values, policy, redirectUris } = readClientForm(form);
  try {
    await v.core.organizations.updateGameOAuthClient({
      clientId: ctx.params.clientId,
      name: values.name,
      redirectUris: { uris: redirectUris },
      verifierPolicy: policy,
      ...(policy === VerifierPolicy.SELECTED_SERVERS && { allowedServerIds: { ids: values.servers } }),
      idTokenSignedResponseAlg: values.idTokenAlg,
    });
    done(ctx, orgPath(org, `/clients/${ctx.params.clientId}`), "client-updated");
  } catch (error) {
    if (hasCode(error, Code.NotFound)) throw error;
    await clientPage(ctx, v, values, formErrorsOrThrow(error), 400);
  }
};

/** The confirmation page of a destructive action on the client, until the form says confirmed. */
function confirmedOnClient(ctx: Context, v: Viewer, form: URLSearchParams, question: { title: string; consequence: string; label: string }): boolean {
  const org = managed(v, ctx.params.slug);
  return confirmed(ctx, v, form, { ...question, cancel: orgPath(org, `/clients/${ctx.params.clientId}`), org });
}

const rotateSecret: ActionHandler = async (ctx, v, form) => {
  const org = managed(v, ctx.params.slug);
  if (
    !confirmedOnClient(ctx, v, form, {
      title: "Rotate the client secret?",
      consequence: "The current secret stops working at once; your app needs the new one.",
      label: "Rotate secret",
    })
  )
    return;
  const res = await v.core.organizations.rotateGameOAuthClientSecret({ clientId: ctx.params.clientId });
  const { client } = await v.core.organizations.getGameOAuthClient({ clientId: res.clientId });
  secretPage(ctx, v, org, client!, res.clientSecret, false);
};

const setDisabled =
  (disabled: boolean): ActionHandler =>
  async (ctx, v, form) => {
    const org = managed(v, ctx.params.slug);
    if (
      disabled &&
      !confirmedOnClient(ctx, v, form, {
        title: "Disable this client?",
        consequence: "It starts no new sign-ins and exchanges no codes until you enable it again.",
        label: "Disable client",
      })
    )
      return;
    await v.core.organizations.updateGameOAuthClient({ clientId: ctx.params.clientId, disabled });
    done(ctx, orgPath(org, `/clients/${ctx.params.clientId}`), disabled ? "client-disabled" : "client-enabled");
  };

const deleteClient: ActionHandler = async (ctx, v, form) => {
  const org = managed(v, ctx.params.slug);
  if (
    !confirmedOnClient(ctx, v, form, {
      title: "Delete this client?",
      consequence: "Apps using it can no longer sign players in. This cannot be undone.",
      label: "Delete client",
    })
  )
    return;
  await v.core.organizations.deleteGameOAuthClient({ clientId: ctx.params.clientId });
  done(ctx, orgPath(org, "/clients"), "client-deleted");
};

export function gameOAuthRoutes(router: Router, deps: DashboardDeps): void {
  router.get(
    "/app/o/:slug/clients",
    page(deps, (ctx, v) => listPage(ctx, v)),
  );
  router.post("/app/o/:slug/clients", action(deps, createClient));
  router.get(
    "/app/o/:slug/clients/:clientId",
    page(deps, (ctx, v) => clientPage(ctx, v)),
  );
  router.post("/app/o/:slug/clients/:clientId", action(deps, updateClient));
  router.post("/app/o/:slug/clients/:clientId/rotate-secret", action(deps, rotateSecret));
  router.post("/app/o/:slug/clients/:clientId/disable", action(deps, setDisabled(true)));
  router.post("/app/o/:slug/clients/:clientId/enable", action(deps, setDisabled(false)));
  router.post("/app/o/:slug/clients/:clientId/delete", action(deps, deleteClient));
}
