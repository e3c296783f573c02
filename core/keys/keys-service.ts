import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { GetJwksResponseSchema, Issuer as IssuerProto, KeysService, RotateKeysResponseSchema } from "../../gen/outpost/keys/v1/keys_service_pb.js";
import type { CoreDeps } from "../deps.ts";
import { fail } from "../errors.ts";
import { KeyEncryptionError } from "./key-encryption.ts";
import type { Issuer } from "./signing-keys.ts";
import { signingAlgs } from "../../contract/issuers.ts";

function issuerOf(issuer: IssuerProto): Issuer {
  switch (issuer) {
    case IssuerProto.GAME:
      return "game";
    case IssuerProto.ACCOUNT:
      return "account";
    default:
      throw fail("invalid_argument", "issuer must be ISSUER_GAME or ISSUER_ACCOUNT"); // validation refuses it first
  }
}

/**
 * The issuers' keys for the edge (JWKS documents) and the operator (rotation). A KEK that does not
 * open the keys is the operator's to fix, so its message is theirs to see.
 */
export function createKeysService({ signingKeys }: CoreDeps): ServiceImpl<typeof KeysService> {
  return {
    async getJwks(req) {
      const { keys } = await signingKeys.jwks(issuerOf(req.issuer));
      return create(GetJwksResponseSchema, { keys });
    },

    async rotateKeys(req) {
      try {
        const issuer = issuerOf(req.issuer);
        const { stages, withdrawn } = req.purge ? await signingKeys.purge(issuer) : { stages: await signingKeys.rotate(issuer), withdrawn: [] };
        const { RS256 } = stages;
        return create(RotateKeysResponseSchema, {
          currentKid: RS256.current,
          nextKid: RS256.next,
          previousKid: RS256.previous ?? "",
          withdrawnKids: withdrawn,
          algorithms: signingAlgs.map((alg) => ({ alg, currentKid: stages[alg].current, nextKid: stages[alg].next, previousKid: stages[alg].previous ?? "" })),
        });
      } catch (error) {
        if (error instanceof KeyEncryptionError) throw fail("failed_precondition", error.message);
        throw error;
      }
    },
  };
}
