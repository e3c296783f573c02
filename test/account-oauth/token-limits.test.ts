/** The Account OAuth token endpoint's limits per client address (the suite is test/support/token-limits.ts, shared with the Game OAuth issuer). */
import { adminApiKey, registerApp } from "../support/account-oauth.ts";
import { describeTokenLimits, redirectUri } from "../support/token-limits.ts";

describeTokenLimits("account issuer", {
  tokenUrl: (t) => `${t.baseUrl}/api/auth/oauth2/token`,
  register: async (t) => registerApp(t, await adminApiKey(t), [redirectUri]),
  badCode: "not-a-code",
  wrongSecret: (i) => `wrong-${i}`,
  unknownClient: ["unknown-client", "other"],
});
