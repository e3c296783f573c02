import { Role as RoleEnum } from "../gen/outpost/organizations/v1/resources_pb.js";

export type Role = "owner" | "admin" | "member";

const toEnum: Record<Role, RoleEnum> = { owner: RoleEnum.OWNER, admin: RoleEnum.ADMIN, member: RoleEnum.MEMBER };

export function roleToProto(role: string): RoleEnum {
  return toEnum[role as Role] ?? RoleEnum.UNSPECIFIED;
}

/** The stored role for a proto role; validation has already excluded UNSPECIFIED. */
export function roleFromProto(role: RoleEnum): Role {
  const found = (Object.keys(toEnum) as Role[]).find((r) => toEnum[r] === role);
  if (!found) throw new Error(`role ${role} has no stored form`);
  return found;
}

/** Owners and admins manage an organization and see all its servers. */
export function isManager(role: Role): boolean {
  return role === "owner" || role === "admin";
}
