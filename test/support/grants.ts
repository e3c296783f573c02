/** Grant actions as tests pass them: every action, for tests about something else than grants. */
import { ServerAction } from "../../gen/outpost/organizations/v1/resources_pb.js";

export const allActions = [ServerAction.VIEW, ServerAction.CONSOLE_READ, ServerAction.CONSOLE_COMMAND, ServerAction.MANAGE_PLAYERS, ServerAction.SIGN_IN_VERIFICATION];
/** The same, as the HTTP API takes them. */
export const allActionNames = ["view", "console_read", "console_command", "manage_players", "sign_in_verification"];
