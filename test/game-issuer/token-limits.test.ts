/** The Game OAuth token endpoint's limits per client address (the suite is test/support/token-limits.ts, shared with the Account OAuth issuer). */
import { seedGameOAuth } from "../support/game-oauth.ts";
import { describeTokenLimits, redirectUri } from "../support/token-limits.ts";

describeTokenLimits("game issuer", {
  tokenUrl: (t) => `${t.gameIssuerUrl}/oauth2/token`,
  register: (t) => seedGameOAuth(t.baseUrl, [redirectUri]),
  badCode: "gac_not-a-code",
  wrongSecret: (i) => `gcs_wrong-${i}`,
  unknownClient: ["gci_unknown", "gcs_other"],
});
