/**
 * servers/createFileAccessRequest: a member asks for the file actions at one or two paths of a
 * server. It is an access request like any other (organizations/listAccessRequests shows it,
 * approveAccessRequest decides it), made by the same code path; only the address (the server, as
 * every call about one names it) and the terms (file actions, file paths) are its own.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { CreateFileAccessRequestResponseSchema, ServersService, type CreateFileAccessRequestRequest } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { entityManager, requireUser } from "../context.ts";
import { requireServerMembership } from "../access.ts";
import { fieldFail, type FieldProblem } from "../errors.ts";
import { parseFileSelector } from "../file-paths.ts";
import { actionsFromProto } from "../grant-rules.ts";
import type { GrantTerms } from "../organizations/access-grant-methods.ts";
import { submitAccessRequest, type RequestDeps } from "../organizations/access-request-methods.ts";

type ServersImpl = ServiceImpl<typeof ServersService>;

/** The file actions asked for (view and, with files_write, files_read implied) at the paths asked for, without other limits. */
function fileTerms(req: CreateFileAccessRequestRequest): GrantTerms {
  const asked: [string, string][] = [["primary_path", req.primaryPath]];
  if (req.secondaryPath !== undefined) asked.push(["secondary_path", req.secondaryPath]);
  const filePaths: string[] = [];
  const problems: FieldProblem[] = [];
  for (const [field, text] of asked) {
    const parsed = parseFileSelector(text);
    if ("problem" in parsed) problems.push({ field, message: `${JSON.stringify(text)} ${parsed.problem}` });
    else if (!filePaths.includes(parsed.selector)) filePaths.push(parsed.selector);
  }
  if (problems.length) throw fieldFail(problems);
  return { actions: actionsFromProto(req.actions), expiresAt: null, maxUses: null, durationSeconds: null, filePaths };
}

export function fileAccessRequestMethods(deps: RequestDeps): Pick<ServersImpl, "createFileAccessRequest"> {
  return {
    async createFileAccessRequest(req, ctx) {
      const caller = requireUser(ctx);
      const em = entityManager(ctx);
      const terms = fileTerms(req);
      const { organization } = await requireServerMembership(deps.statements.on(em), caller, req);
      const asked = { organizationSlug: String(organization.slug), serverId: req.serverId, terms, reason: req.reason };
      const accessRequest = await submitAccessRequest(deps, em, caller, asked, deps.clock.now());
      return create(CreateFileAccessRequestResponseSchema, { accessRequest });
    },
  };
}
