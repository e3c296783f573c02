/** Grant actions as tests pass them: every action core knows, for tests about something else than grants. */
import { actionsToProto, serverActions } from "../../core/grant-rules.ts";

export const allActions = actionsToProto(serverActions);
/** The same, as the HTTP API takes them. */
export const allActionNames: string[] = [...serverActions];
