/**
 * The members suites' core and helpers: organizations made fresh per test, colleagues made
 * verified and visible, people joining as a new person does, and who holds which role.
 */
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { startTestCore, type TestCore } from "../support/core.ts";
import { joinOrganization, type Account } from "../support/fixtures.ts";

/** Starts a core in the calling suite's `before` and closes it in its `after`; the helpers use it. */
export function useMembersCore() {
  let t: TestCore;
  const orgs = (who: Account) => t.client(OrganizationsService, { session: who.token });
  const roles = async (who: Account, slug: string) => new Map((await orgs(who).listMembers({ organizationSlug: slug })).members.map((m) => [m.email, m.role]));

  /** `who` joins as a new person does: verified, invited by `by`, accepting. */
  const join = (by: Account, slug: string, who: Account, role: Role) => joinOrganization(t, by, slug, who, role);
  /**
   * Makes `people` verified colleagues of `of` (in a small organization of theirs), whom `of` can
   * already see in a members list and so may add at once.
   */
  let lobbies = 0;
  async function colleagues(of: Account, ...people: Account[]): Promise<void> {
    const slug = `lobby-${++lobbies}`;
    await orgs(of).createOrganization({ name: `Lobby ${lobbies}`, slug });
    for (const who of people) await join(of, slug, who, Role.MEMBER);
  }

  /** A fresh organization owned by a fresh account, so each test starts from a known state. */
  let counter = 0;
  async function organization(): Promise<{ slug: string; owner: Account }> {
    const n = ++counter;
    const owner = await t.signUp(`owner${n}@example.com`);
    const slug = `team-${n}`;
    await orgs(owner).createOrganization({ name: `Team ${n}`, slug });
    return { slug, owner };
  }

  before(async () => {
    t = await startTestCore();
  });
  after(async () => {
    await t?.close();
  });

  return { core: () => t, orgs, roles, join, colleagues, organization };
}
