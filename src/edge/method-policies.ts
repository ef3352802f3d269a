import type { DescMethod } from "@bufbuild/protobuf";
import { AdminService } from "../../gen/auth/v1/admin_service_pb.js";
import { TokenService } from "../../gen/auth/v1/token_service_pb.js";
import { ChangeFeedService } from "../../gen/registry/v1/change_feed_service_pb.js";
import { RegistryService } from "../../gen/registry/v1/registry_service_pb.js";
import { TransparencyLogService } from "../../gen/registry/v1/transparency_log_service_pb.js";
import { parseEntryDid } from "../domain/entry-did.js";
import type { AddressLimit } from "./rate-limit-interceptor.js";
import type { KeptRead } from "./read-answers.js";

/**
 * Which RPCs need a credential, which are rate-limited and which have their answers kept, declared once: app.ts wires the limits
 * from here, and the OpenAPI document describes credentials and RateLimit headers from here. The
 * protos carry no option for either. test/edge/openapi.test.ts checks the declarations against a
 * running server's answers (401s, RateLimit headers), so they cannot drift from what the handlers do.
 */

/**
 * The limits keyed by client address, with the methods they apply to: reads (CONTRACT 9) and
 * token issuance. Every read counts, one token a call: entries, discovery, change pages, and the
 * transparency log (whose tlog-tiles paths, GET /checkpoint and /tile/..., draw from the same
 * bucket in log-files.ts). A WatchChanges stream draws one token when it opens.
 */
export const ADDRESS_LIMITS: readonly AddressLimit[] = [
  {
    policy: "reads",
    methods: [
      RegistryService.method.resolveEntry,
      RegistryService.method.listEntryVersions,
      RegistryService.method.discoverEntries,
      RegistryService.method.queryEntries,
      RegistryService.method.searchEntries,
      ChangeFeedService.method.listChanges,
      ChangeFeedService.method.watchChanges,
      ...Object.values(TransparencyLogService.method),
    ],
  },
  { policy: "tokens", methods: [TokenService.method.issueToken] },
];

/**
 * Methods limited per publisher (the "writes" policy), drawn in their handlers once the token is
 * verified (createWriteLimit), since the publisher is known only then.
 */
export const PUBLISHER_LIMITED: readonly DescMethod[] = [
  RegistryService.method.createEntry,
  RegistryService.method.revokeEntry,
  RegistryService.method.changeLifecycle,
  RegistryService.method.moderateEntry,
];

/**
 * The bearer credential a method needs: an access token (JWT) for writes, a root token to get
 * one, and the server's admin credential (from its data directory) to manage root tokens.
 */
export type BearerScheme = "accessToken" | "rootToken" | "adminCredential";

const BEARER: ReadonlyMap<DescMethod, BearerScheme> = new Map<DescMethod, BearerScheme>([
  [RegistryService.method.createEntry, "accessToken"],
  [RegistryService.method.revokeEntry, "accessToken"],
  [RegistryService.method.changeLifecycle, "accessToken"],
  [RegistryService.method.moderateEntry, "accessToken"],
  [TokenService.method.issueToken, "rootToken"],
  [AdminService.method.createRootToken, "adminCredential"],
  [AdminService.method.listRootTokens, "adminCredential"],
  [AdminService.method.revokeRootToken, "adminCredential"],
]);

const LIMITED: ReadonlySet<DescMethod> = new Set([...ADDRESS_LIMITS.flatMap(({ methods }) => methods), ...PUBLISHER_LIMITED]);

/** The credential `method` needs, or undefined when anyone may call it. */
export function bearerSchemeOf(method: DescMethod): BearerScheme | undefined {
  return BEARER.get(method);
}

/** Whether answers to `method` can carry RateLimit headers (and a 429), when limits are configured. */
export function isRateLimited(method: DescMethod): boolean {
  return LIMITED.has(method);
}

/** The entry name `did` reads, with or without "@version": what a publish or revocation under it changes. */
function entryNameOf(did: string): string | undefined {
  const parsed = parseEntryDid(did);
  return "error" in parsed ? undefined : parsed.baseDid;
}

/**
 * Reads whose answers are kept (read-answers.ts) until the entry they read changes: a publish or a
 * revocation of any of its versions, which is what the entry cache hears of, by name.
 */
export const KEPT_READS: readonly KeptRead[] = [
  { method: RegistryService.method.resolveEntry, tagOf: (request: { did: string }) => entryNameOf(request.did) },
  { method: RegistryService.method.listEntryVersions, tagOf: (request: { did: string }) => entryNameOf(request.did) },
];
