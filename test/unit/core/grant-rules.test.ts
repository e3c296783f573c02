/**
 * A server access grant's terms (core/grant-rules.ts), alone: when it ends (its expiry, its
 * duration after first use, the earlier of the two), when its uses are spent, what it refuses and
 * why, and how far an approval may narrow a request. test/organizations proves them through the
 * service on a database; here are their edges, in milliseconds.
 */
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { AccessGrantState, GrantConstraintsSchema, ServerAction } from "../../../gen/outpost/organizations/v1/resources_pb.js";
import {
  actionsFromProto,
  actionsToProto,
  grantEndsAt,
  grantRefusal,
  grantState,
  limitsFromProto,
  limitsToProto,
  serverActions,
  stateToProto,
  termsFromProto,
  wideningProblem,
  type GrantFacts,
  type GrantLimits,
} from "../../../core/grant-rules.ts";
import { DomainError } from "../../../core/errors.ts";

const now = new Date("2026-03-01T12:00:00.000Z");
const at = (ms: number) => new Date(now.getTime() + ms);
const minute = 60_000;

/** A grant with no limits, holding every action, never used; `over` changes what the test is about. */
const grant = (over: Partial<GrantFacts> = {}): GrantFacts => ({
  actions: serverActions,
  uses: 0,
  firstUsedAt: null,
  expiresAt: null,
  maxUses: null,
  durationSeconds: null,
  filePaths: [],
  ...over,
});

const noLimits: GrantLimits = { expiresAt: null, maxUses: null, durationSeconds: null, filePaths: [] };

describe("unit: grant terms", () => {
  describe("actions", () => {
    it("stores the actions a request names with view added, in the one order, each once", () => {
      assert.deepEqual(actionsFromProto([]), ["view"]);
      assert.deepEqual(actionsFromProto([ServerAction.SIGN_IN_VERIFICATION, ServerAction.CONSOLE_READ, ServerAction.CONSOLE_READ]), [
        "view",
        "console_read",
        "sign_in_verification",
      ]);
      assert.deepEqual(actionsFromProto([ServerAction.VIEW]), ["view"]);
    });

    it("shows stored actions in the one order and leaves out a name it does not know", () => {
      assert.deepEqual(actionsToProto(["manage_players", "view", "shutdown"]), [ServerAction.VIEW, ServerAction.MANAGE_PLAYERS]);
      assert.deepEqual(actionsFromProto(actionsToProto(serverActions)), [...serverActions]);
    });

    it("adds files_read to files_write, and nothing to files_read", () => {
      assert.deepEqual(actionsFromProto([ServerAction.FILES_WRITE]), ["view", "files_read", "files_write"]);
      assert.deepEqual(actionsFromProto([ServerAction.FILES_READ]), ["view", "files_read"]);
      assert.deepEqual(actionsToProto(["view", "files_read", "files_write"]), [ServerAction.VIEW, ServerAction.FILES_READ, ServerAction.FILES_WRITE]);
    });
  });

  describe("when a grant ends", () => {
    it("never, without an expiry or a duration; at its expiry when it has one", () => {
      assert.equal(grantEndsAt(grant()), null);
      assert.deepEqual(grantEndsAt(grant({ expiresAt: at(minute) })), at(minute));
    });

    it("counts a duration from the first use only: unused, the duration does not end it", () => {
      assert.equal(grantEndsAt(grant({ durationSeconds: 60 })), null);
      assert.deepEqual(grantEndsAt(grant({ durationSeconds: 60, expiresAt: at(minute) })), at(minute));
      assert.deepEqual(grantEndsAt(grant({ durationSeconds: 90, firstUsedAt: at(-minute) })), at(30_000));
    });

    it("at the earlier of its expiry and its duration after first use, whichever that is", () => {
      const firstUsedAt = at(-minute);
      assert.deepEqual(grantEndsAt(grant({ durationSeconds: 3600, firstUsedAt, expiresAt: at(minute) })), at(minute), "the expiry first");
      assert.deepEqual(grantEndsAt(grant({ durationSeconds: 120, firstUsedAt, expiresAt: at(3600_000) })), at(minute), "the duration first");
    });
  });

  describe("a grant's state", () => {
    it("is expired from the instant it ends, and active the millisecond before", () => {
      assert.equal(grantState(grant({ expiresAt: now }), now), "expired");
      assert.equal(grantState(grant({ expiresAt: at(1) }), now), "active");
      assert.equal(grantState(grant({ durationSeconds: 60, firstUsedAt: at(-minute) }), now), "expired");
      assert.equal(grantState(grant({ durationSeconds: 60, firstUsedAt: at(-minute + 1) }), now), "active");
    });

    it("is used up once its uses reach the most it allows, not before; without a most, never", () => {
      assert.equal(grantState(grant({ maxUses: 3, uses: 2 }), now), "active");
      assert.equal(grantState(grant({ maxUses: 3, uses: 3 }), now), "used_up");
      assert.equal(grantState(grant({ maxUses: 1, uses: 5 }), now), "used_up");
      assert.equal(grantState(grant({ uses: 1_000_000 }), now), "active");
    });

    it("says expired rather than used up when it is both", () => {
      assert.equal(grantState(grant({ maxUses: 1, uses: 1, expiresAt: at(-1) }), now), "expired");
    });

    it("maps each state to the contract's", () => {
      assert.deepEqual(stateToProto, { active: AccessGrantState.ACTIVE, expired: AccessGrantState.EXPIRED, used_up: AccessGrantState.USED_UP });
    });
  });

  describe("what a grant refuses, and why", () => {
    it("allows an action it holds while active", () => {
      assert.equal(grantRefusal(grant({ actions: ["view", "console_read"] }), "console_read", now), undefined);
      assert.equal(grantRefusal(grant({ actions: ["view"], maxUses: 2, uses: 1 }), "view", now), undefined);
    });

    it("refuses an action it does not hold, naming it", () => {
      assert.equal(
        grantRefusal(grant({ actions: ["view", "console_read"] }), "console_command", now),
        "your access grant to this server does not allow console_command; request it from an owner or admin",
      );
    });

    it("refuses every action once expired, saying when it ended (the earlier end)", () => {
      const g = grant({ expiresAt: at(-1), durationSeconds: 60, firstUsedAt: at(-2 * minute) });
      assert.equal(grantRefusal(g, "view", now), `your access grant to this server expired at ${at(-minute).toISOString()}; ask an owner or admin for a new one`);
    });

    it("refuses every action once used up, saying how many uses it had, before looking at the action", () => {
      const g = grant({ actions: ["view"], maxUses: 4, uses: 4 });
      const used = "your access grant to this server has used all 4 uses; ask an owner or admin for a new one";
      assert.equal(grantRefusal(g, "view", now), used);
      assert.equal(grantRefusal(g, "console_command", now), used);
    });
  });

  describe("constraints from a request", () => {
    it("are no limits when none are given", () => {
      assert.deepEqual(limitsFromProto(undefined, now), noLimits);
      assert.deepEqual(limitsFromProto(create(GrantConstraintsSchema), now), noLimits);
    });

    it("take the limits as given, with a future expiry", () => {
      const c = create(GrantConstraintsSchema, { expiresAt: timestampFromDate(at(1000)), maxUses: 5, durationSeconds: 600 });
      assert.deepEqual(limitsFromProto(c, now), { expiresAt: at(1000), maxUses: 5, durationSeconds: 600, filePaths: [] });
    });

    it("keep file paths normalized (a trailing / dropped) and once each", () => {
      const c = create(GrantConstraintsSchema, { filePaths: ["plugins/Essentials/", "plugins/*.jar", "plugins/Essentials"] });
      assert.deepEqual(limitsFromProto(c, now).filePaths, ["plugins/Essentials", "plugins/*.jar"]);
    });

    it("refuse file paths that are not selectors, naming each, as field problems of constraints", () => {
      const c = create(GrantConstraintsSchema, { filePaths: ["ok", "/etc", "a/../b"] });
      assert.throws(
        () => limitsFromProto(c, now),
        (e: unknown) =>
          e instanceof DomainError &&
          e.reason === "invalid_argument" &&
          e.message ===
            `constraints: file_paths[1] "/etc" must be relative to the server's directory, without a leading /; constraints: file_paths[2] "a/../b" has a "." or ".." segment`,
      );
    });

    it("refuse an expiry that is now or past, as a field problem of constraints", () => {
      for (const expiresAt of [now, at(-1)]) {
        const c = create(GrantConstraintsSchema, { expiresAt: timestampFromDate(expiresAt) });
        assert.throws(
          () => limitsFromProto(c, now),
          (e: unknown) => e instanceof DomainError && e.reason === "invalid_argument" && e.message === "constraints: expires_at must be in the future",
        );
      }
    });

    it("and actions make a request's terms", () => {
      const c = create(GrantConstraintsSchema, { maxUses: 2 });
      assert.deepEqual(termsFromProto({ actions: [ServerAction.CONSOLE_COMMAND], constraints: c }, now), {
        actions: ["view", "console_command"],
        expiresAt: null,
        maxUses: 2,
        durationSeconds: null,
        filePaths: [],
      });
    });

    it("go back to the contract as they came, and no limit as an absent field", () => {
      const back = limitsToProto({ expiresAt: at(1000), maxUses: 7, durationSeconds: 60, filePaths: ["plugins"] });
      assert.deepEqual([timestampDate(back.expiresAt!), back.maxUses, back.durationSeconds, back.filePaths], [at(1000), 7, 60, ["plugins"]]);
      const none = limitsToProto(noLimits);
      assert.deepEqual([none.expiresAt, none.maxUses, none.durationSeconds, none.filePaths], [undefined, undefined, undefined, []]);
    });
  });

  describe("an approval narrowing a request", () => {
    const draft = { actions: ["view", "console_read", "console_command"], expiresAt: at(3600_000), maxUses: 10, durationSeconds: 600, filePaths: [] };

    it("may keep it as it is, remove actions and tighten every limit", () => {
      assert.equal(wideningProblem(draft, draft), undefined);
      assert.equal(wideningProblem(draft, { actions: ["view"], expiresAt: at(1000), maxUses: 1, durationSeconds: 60, filePaths: [] }), undefined);
    });

    it("may not add an action, and says which, before anything else", () => {
      assert.deepEqual(wideningProblem(draft, { ...draft, actions: ["view", "manage_players", "sign_in_verification"], maxUses: null }), {
        field: "actions",
        message: "the request did not ask for manage_players, sign_in_verification",
      });
    });

    it("may not move the expiry later or drop it", () => {
      const problem = { field: "constraints", message: `the request expires at ${draft.expiresAt.toISOString()}; an approval may only keep or bring that forward` };
      assert.deepEqual(wideningProblem(draft, { ...draft, expiresAt: at(3600_001) }), problem);
      assert.deepEqual(wideningProblem(draft, { ...draft, expiresAt: null }), problem);
    });

    it("may not raise the uses or drop their limit", () => {
      const problem = { field: "constraints", message: "the request asked for at most 10 uses; an approval may only keep or lower that" };
      assert.deepEqual(wideningProblem(draft, { ...draft, maxUses: 11 }), problem);
      assert.deepEqual(wideningProblem(draft, { ...draft, maxUses: null }), problem);
    });

    it("may not lengthen the duration after first use or drop it", () => {
      const problem = { field: "constraints", message: "the request asked for at most 600 seconds after first use; an approval may only keep or shorten that" };
      assert.deepEqual(wideningProblem(draft, { ...draft, durationSeconds: 601 }), problem);
      assert.deepEqual(wideningProblem(draft, { ...draft, durationSeconds: null }), problem);
    });

    it("may add a limit the request did not have", () => {
      const open = { actions: ["view"], ...noLimits };
      assert.equal(wideningProblem(open, { actions: ["view"], expiresAt: at(1000), maxUses: 3, durationSeconds: 60, filePaths: ["plugins"] }), undefined);
    });

    it("may keep or narrow the file paths asked for, never widen or drop them", () => {
      const files = { actions: ["view", "files_read", "files_write"], ...noLimits, filePaths: ["plugins/Essentials", "plugins/*.jar"] };
      assert.equal(wideningProblem(files, files), undefined);
      assert.equal(wideningProblem(files, { ...files, actions: ["view", "files_read"], filePaths: ["plugins/Essentials/config.yml"] }), undefined);
      assert.deepEqual(wideningProblem(files, { ...files, filePaths: ["plugins/Essentials", "plugins"] }), {
        field: "constraints",
        message: `the file path "plugins" is not within one the request asked for (plugins/Essentials, plugins/*.jar)`,
      });
      assert.deepEqual(wideningProblem(files, { ...files, filePaths: [] }), {
        field: "constraints",
        message: "the request asked for files at plugins/Essentials, plugins/*.jar only; an approval may only keep or narrow those paths",
      });
    });
  });
});
