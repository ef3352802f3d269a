/**
 * The README walkthrough's REST calls as a program a client author would write: openapi-fetch
 * over the types openapi-typescript generates from docs/openapi.json (`./api.js`, beside it), the
 * SDK's signing helpers for what must be signed, and no casts. test/edge/openapi-typed-client.test.ts
 * writes it next to the generated types, type-checks it with tsc and runs it against a server.
 *
 * The annotated constants and the `@ts-expect-error` lines are the types' claims: answers carry
 * their always-present fields (not optional), `status` and `action` are enums, server-set fields
 * are read-only and absent from a create's body, and `data` takes any JSON object.
 */
export function walkthroughProgram(sdkModule: string): string {
  return `import createClient from "openapi-fetch";
import type { components, paths } from "./api.js";
import { generateKeyPair, signEntry, signLifecycle, signRevocation } from ${JSON.stringify(sdkModule)};

type Entry = components["schemas"]["registry.v1.Entry"];
type EntryInput = components["schemas"]["registry.v1.EntryInput"];
type Status = "active" | "deprecated" | "yanked" | "quarantined" | "revoked" | "removed";

const registryUrl = process.env.REGISTRY_URL ?? "";
const adminCredential = process.env.REGISTRY_ADMIN_CREDENTIAL ?? "";
const client = createClient<paths>({ baseUrl: registryUrl });

/** The answer's body, or a thrown error naming the call and the server's error body. */
function answered<T>(call: string, result: { data?: T; error?: unknown; response: Response }): T {
  if (result.data === undefined) throw new Error(call + ": " + result.response.status + " " + JSON.stringify(result.error));
  return result.data;
}

function check(condition: boolean, what: string): void {
  if (!condition) throw new Error("not as expected: " + what);
}

const keys = await generateKeyPair();
const name = "did:reg:main:skill:typed-search";
const did = name + "@1.3.0";

// Step 3: a root token through the admin API (what \`registry root-token create\` does), exchanged for an access token.
const created = answered(
  "create root token",
  await client.POST("/v1/admin/root-tokens", {
    headers: { authorization: "Bearer " + adminCredential },
    body: { subject: keys.did, scopes: ["registry.publish.skill"] },
  }),
);
const rootTokenId: string = created.rootToken?.id ?? "";
const issued = answered(
  "issue token",
  await client.POST("/v1/tokens", {
    headers: { authorization: "Bearer " + created.token },
    body: { scopes: ["registry.publish.skill"], ttlSeconds: 900 },
  }),
);
const authorization = "Bearer " + issued.accessToken;
const expiresAt: string = issued.expiresAt;

// Step 4: sign and publish.
const unsigned: Omit<EntryInput, "signature"> = {
  entryDid: did,
  entryType: "skill",
  version: "1.3.0",
  publisherDid: keys.did,
  publishedAt: new Date(Math.floor(Date.now() / 1000) * 1000).toISOString(),
  description: "Searches the web",
  tags: ["search", "web"],
  data: { license: "MIT", limits: { perMinute: 60 } },
  contentHash: "sha256:" + "ab".repeat(32),
  payloadType: "registry.entry.v2",
};
const entry: EntryInput = { ...unsigned, signature: await signEntry(unsigned, keys.privateKey) };
// @ts-expect-error status is the registry's to set: a create's body has no such member
const refused: EntryInput = { ...entry, status: "active" };
void refused;
const published: Entry = answered("publish", await client.POST("/v1/entries", { headers: { authorization }, body: entry }));
const sequence: string = published.sequence;
const publishedStatus: Status = published.status;
check(publishedStatus === "active" && published.isLatest, "a new version is active and latest");
const overwrite = () => {
  // @ts-expect-error sequence is read-only: the registry set it
  published.sequence = "0";
};
void overwrite;

// Step 5: resolve (latest and exact) and list the versions.
const latest = answered("resolve latest", await client.GET("/v1/entries/{did}", { params: { path: { did: name } } }));
const exact = answered("resolve exact", await client.GET("/v1/entries/{did}", { params: { path: { did } } }));
check(latest.entryDid === did && exact.sequence === sequence, "both resolves return the published version");
const license: unknown = exact.data?.license;
check(license === "MIT", "data comes back as published");
const versions = answered("versions", await client.GET("/v1/entries/{did}/versions", { params: { path: { did: name } } }));
const firstVersion: string | undefined = versions.versions[0]?.version;
check(firstVersion === "1.3.0", "the version is listed");

// Step 6: deprecate, signed.
const issuedAt = new Date().toISOString();
const reason = "1.3.1 ranks better";
const deprecated = answered(
  "deprecate",
  await client.POST("/v1/entries/{did}/lifecycle", {
    headers: { authorization },
    params: { path: { did } },
    body: {
      action: "deprecate",
      reason,
      issuedAt,
      signature: await signLifecycle({ subject: did, action: "deprecate", reason, by: keys.did, issuedAt }, keys.privateKey),
    },
  }),
);
const deprecatedStatus: Status | undefined = deprecated.entries[0]?.status;
check(deprecatedStatus === "deprecated" && deprecated.entries[0]?.deprecation?.reason === reason, "the version is deprecated");

// Step 7: revoke, signed.
const revoked = answered(
  "revoke",
  await client.DELETE("/v1/entries/{did}", {
    headers: { authorization },
    params: { path: { did } },
    body: { reason: "withdrawn", signature: await signRevocation(did, "withdrawn", keys.privateKey) },
  }),
);
check(revoked.entries[0]?.status === "revoked" && revoked.entries[0]?.revokedAt !== undefined, "the version is revoked");

// Step 8: discover, structured and in the query language.
const discovered = answered(
  "discover",
  await client.POST("/v1/discover", {
    body: {
      conditions: [
        { field: "tags", op: "CONTAINS", value: "search" },
        { field: "status", op: "IN", value: ["active", "revoked"] },
      ],
    },
  }),
);
const total: number = discovered.total;
check(total === 1 && discovered.entries[0]?.entryDid === did, "discovery finds the revoked version when asked");
const queried = answered(
  "query",
  await client.POST("/v1/discover/ql", {
    body: { query: "SELECT entry_did, version FROM entries WHERE status = 'revoked' ORDER BY version DESC" },
  }),
);
const row = queried.entries[0];
const rowDid: unknown = row?.entryDid;
check(rowDid === did && row?.version === "1.3.0", "the query's row has the selected columns");

// The token issuer's keys.
const jwks = answered("jwks", await client.GET("/.well-known/jwks.json"));
const kid: string | undefined = jwks.keys[0]?.kid;
check(kid !== undefined && kid !== "", "the issuer publishes a key");

console.log(JSON.stringify({ rootTokenId, expiresAt, sequence, status: revoked.entries[0]?.status, total, rows: queried.entries.length, kid }));
`;
}
