import { create, fromJson, type JsonObject, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { createClient, type Transport } from "@connectrpc/connect";
import { TokenService } from "../../gen/auth/v1/token_service_pb.js";
import type { Entry, EntryVersion } from "../../gen/registry/v1/entry_pb.js";
import { EntrySchema } from "../../gen/registry/v1/entry_pb.js";
import { RegistryService } from "../../gen/registry/v1/registry_service_pb.js";
import { TransparencyLogService } from "../../gen/registry/v1/transparency_log_service_pb.js";
import { parseLogKey, verifyEntryProof, type LogRecord, type VerifiedCheckpoint } from "./log-verifier.js";
import { fetchVerifiedHistory, type VerifiedHistory } from "./history-verifier.js";
import { fieldSpec, PUBLISHER_FIELDS, type FieldKind } from "../domain/entry-fields.js";
import { ENTRY_PAYLOAD_TYPE_V2, type EntrySigningFields } from "../domain/signing-payload.js";
import { createAccessTokens, type RegistryAuth } from "./access-tokens.js";
import { mappingErrors, RegistryClientError } from "./client-error.js";
import { keyPairFromSeed, signEntry, signLifecycle, signModeration, signRevocation, type KeyPair } from "./signing.js";
import type { LifecycleAction, ModerationAction, ModerationPolicy } from "../domain/action-payloads.js";

/** The options every entry point of the SDK shares; each adds the transports it can offer. */
export interface RegistryClientBaseOptions {
  /** The registry's URL, e.g. `https://registry.example.com`. */
  readonly baseUrl: string;
  /** Headers sent on every call (a user agent, a tracing header). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Deadline of each call, sent to the registry so it stops working on it too. */
  readonly timeoutMs?: number;
  /** Credentials for writes: an access token, or a root token to exchange. Reads need none. */
  readonly auth?: RegistryAuth;
  /** Milliseconds since the epoch; decides when an exchanged token is refreshed. `Date.now` by default. */
  readonly clock?: () => number;
}

/**
 * The fields a publisher sets: what the signature covers. Nothing is filled in for the caller but
 * `payloadType`, which is `registry.entry.v2` unless set.
 */
export type EntryInput = EntrySigningFields;

/** The key that signs: a key pair, or its 32-byte private seed. */
export type SigningKey = KeyPair | Uint8Array;

/** Per-call options. */
export interface CallOptions {
  readonly signal?: AbortSignal;
}

/** Options of a write. */
export interface WriteOptions extends CallOptions {
  /** The key that signs the entry or revocation. */
  readonly key: SigningKey;
  /** An access token for this write alone, used instead of the client's `auth`. */
  readonly token?: string;
}

export interface LifecycleOptions extends WriteOptions {
  /** Why: 1-500 characters; may be empty for the undo actions. */
  readonly reason?: string;
  /** Only with `deprecate`: the entry DID to use instead. */
  readonly replacement?: string;
}

export interface ModerationOptions extends WriteOptions {
  /** The policy the decision applies; may be empty only for `unquarantine`. */
  readonly policy?: ModerationPolicy | "";
  /** The public note: 1-1,000 characters. */
  readonly note: string;
}

/** A structured discovery (docs/api.md, "Discovery"); conditions are ANDed. */
export interface DiscoverRequest {
  readonly entryType?: string;
  readonly conditions?: readonly DiscoverConditionInput[];
  /** Entries per page: the registry's default (20) when unset, at most 100. */
  readonly pageSize?: number;
}

/** One condition: `{ field: "tags", op: "CONTAINS", value: "search" }`. */
export interface DiscoverConditionInput {
  readonly field: string;
  readonly op: string;
  readonly value: JsonValue;
}

/** One page of a structured discovery. */
export interface DiscoverPage {
  readonly entries: Entry[];
  /** Matches in all, exact up to the registry's count limit (then `totalIsLowerBound`). */
  readonly total: number;
  readonly totalIsLowerBound: boolean;
  /** Pass as `cursor` for the next page; undefined on the last page. */
  readonly nextCursor: string | undefined;
}

/** One page of a query-language discovery: rows with the selected columns only. */
export interface QueryPage {
  readonly rows: JsonObject[];
  readonly nextCursor: string | undefined;
}

/** Options of a query-language discovery. */
export interface QueryOptions extends CallOptions {
  /** Rows per page: the registry's default (min(LIMIT, 20)) when unset, at most 100. */
  readonly pageSize?: number;
}

/** Options of a ranked search (docs/api.md, "Search"). */
export interface SearchOptions extends CallOptions {
  /** Only entries of this type. */
  readonly entryType?: string;
  /** Entries per page: the registry's default (20) when unset, at most 100. */
  readonly pageSize?: number;
  /** The nextCursor of the previous page, with the same text and type. */
  readonly cursor?: string;
}

/** One page of a ranked search: the latest version of each matching name, best match first. */
export interface SearchPage {
  readonly entries: Entry[];
  /** Pass as `cursor` for the next page; undefined on the last page. */
  readonly nextCursor: string | undefined;
}

/** A typed client of one registry. Every failure is a RegistryClientError. */
export interface RegistryClient {
  /** Signs `entry` with `key` and publishes it; returns the entry as stored (with its sequence). */
  publish(entry: EntryInput, options: WriteOptions): Promise<Entry>;
  /** One version (`did@version`), or the latest without `@`; revoked versions come with their status. */
  resolve(did: string, options?: CallOptions): Promise<Entry>;
  /** Every version of an entry DID (without `@version`), highest precedence first. */
  versions(did: string, options?: CallOptions): Promise<EntryVersion[]>;
  /** Revokes one version (`did@version`) or every active one; returns the entries revoked. */
  revoke(did: string, options: { readonly reason: string } & WriteOptions): Promise<Entry[]>;
  /**
   * A signed lifecycle action (docs/lifecycle.md) on one version (`did@version`), every version
   * of a name, or a name (`archive`, `unarchive`); returns the versions addressed, in their new
   * state. The key's DID must be the subject of the token.
   */
  changeLifecycle(did: string, action: LifecycleAction, options: LifecycleOptions): Promise<Entry[]>;
  /** A moderator's signed decision (docs/lifecycle.md); the token needs `registry.admin`. */
  moderate(did: string, action: ModerationAction, options: ModerationOptions): Promise<Entry[]>;
  /** Every matching entry, newest first, fetching pages as the iteration goes. */
  discover(request?: DiscoverRequest, options?: CallOptions): AsyncIterable<Entry>;
  /** One page of a structured discovery, for callers that keep the cursor themselves. */
  discoverPage(request: DiscoverRequest & { readonly cursor?: string }, options?: CallOptions): Promise<DiscoverPage>;
  /** Every row of a query (docs/query-language.md), fetching pages as the iteration goes. */
  query(ql: string, options?: QueryOptions): AsyncIterable<JsonObject>;
  /** One page of a query, for callers that keep the cursor themselves. */
  queryPage(ql: string, options?: QueryOptions & { readonly cursor?: string }): Promise<QueryPage>;
  /** One page of a ranked search for `text` (names first, then tags, then descriptions). */
  search(text: string, options?: SearchOptions): Promise<SearchPage>;
  /** Exchanges a root token for an access token (TokenService.IssueToken). */
  issueToken(
    rootToken: string,
    request: { readonly scopes: readonly string[]; readonly ttlSeconds?: number },
    options?: CallOptions,
  ): Promise<{ accessToken: string; expiresAt: string; scopes: string[]; subject: string }>;
  /**
   * Proves an entry version's current state from the transparency log (docs/transparency.md):
   * fetches its record, inclusion proof and the latest checkpoint, and checks all of it with
   * `verifyEntryProof` against `logKey`, the log's verifier key pinned by the caller. Without
   * `logKey` the server's own key is used and `pinned` is false: that proves consistency with what
   * this server says, not that this is the log everyone else sees. A proof that does not verify
   * throws LogVerificationError naming what failed; a failed call, RegistryClientError.
   */
  proveEntry(
    did: string,
    options?: CallOptions & { readonly logKey?: string },
  ): Promise<{ record: LogRecord; checkpoint: VerifiedCheckpoint; logKey: string; pinned: boolean }>;
  /**
   * Every log record about a name (bare DID) or a version and its name, oldest first, fetched page
   * by page against one checkpoint and checked with `fetchVerifiedHistory` (the checkpoint's
   * signature by `logKey`, each inclusion proof, each record's subject and signatures). `logKey`
   * and `pinned` as for proveEntry. Records the checkpoint does not hold yet are not in it.
   */
  history(
    did: string,
    options?: CallOptions & { readonly logKey?: string },
  ): Promise<VerifiedHistory & { logKey: string; pinned: boolean }>;
  /** Releases the transport's connections (the gRPC transport's HTTP/2 session); a no-op otherwise. */
  close(): void;
}

/**
 * A client over an already built transport. The entry points (index.ts for browsers and Node,
 * node.ts for Node's gRPC) choose the transport; everything else is here, once.
 */
export function createClientOverTransport(
  transport: Transport,
  options: RegistryClientBaseOptions,
  close: () => void = () => {},
): RegistryClient {
  const registry = createClient(RegistryService, transport);
  const tokens = createClient(TokenService, transport);
  const log = createClient(TransparencyLogService, transport);
  const clock = options.clock ?? Date.now;

  function callOptions(call: CallOptions | undefined, bearer?: string) {
    const headers: Record<string, string> = { ...options.headers };
    if (bearer !== undefined) {
      // A write's own token wins over any authorization among the fixed headers, in any letter case.
      for (const name of Object.keys(headers)) if (name.toLowerCase() === "authorization") delete headers[name];
      headers.authorization = `Bearer ${bearer}`;
    }
    return { headers, signal: call?.signal, timeoutMs: options.timeoutMs };
  }

  async function issueToken(
    rootToken: string,
    request: { readonly scopes: readonly string[]; readonly ttlSeconds?: number },
    call?: CallOptions,
  ) {
    return mappingErrors(async () => {
      const issued = await tokens.issueToken({ scopes: [...request.scopes], ttlSeconds: request.ttlSeconds }, callOptions(call, rootToken));
      return { accessToken: issued.accessToken, expiresAt: issued.expiresAt, scopes: issued.scopes, subject: issued.subject };
    });
  }

  const accessTokens = createAccessTokens(
    options.auth,
    (rootToken, scopes, ttlSeconds) => issueToken(rootToken, { scopes, ttlSeconds }),
    clock,
  );

  async function discoverPage(request: DiscoverRequest & { readonly cursor?: string }, call?: CallOptions) {
    return mappingErrors(async () => {
      const page = await registry.discoverEntries(
        {
          entryType: request.entryType ?? "",
          conditions: (request.conditions ?? []).map(({ field, op, value }) => ({
            field,
            op,
            value: fromJson(ValueSchema, value),
          })),
          limit: request.pageSize ?? 0,
          cursor: request.cursor ?? "",
        },
        callOptions(call),
      );
      return {
        entries: page.entries,
        total: page.total,
        totalIsLowerBound: page.totalIsLowerBound,
        nextCursor: presentCursor(page.nextCursor),
      };
    });
  }

  async function queryPage(ql: string, call?: QueryOptions & { readonly cursor?: string }) {
    return mappingErrors(async () => {
      const page = await registry.queryEntries({ query: ql, limit: call?.pageSize ?? 0, cursor: call?.cursor ?? "" }, callOptions(call));
      return { rows: page.entries, nextCursor: presentCursor(page.nextCursor) };
    });
  }

  return {
    async publish(input, call) {
      const entry: EntryInput = { ...input, payloadType: input.payloadType ?? ENTRY_PAYLOAD_TYPE_V2 };
      const privateKey = signingSeed(call.key, entry.publisherDid);
      const signature = await signEntry(entry, privateKey);
      const bearer = call.token ?? (await accessTokens.forEntryType(() => entry.entryType));
      return mappingErrors(async () => {
        const created = await registry.createEntry({ entry: entryMessage(entry, signature) }, callOptions(call, bearer));
        return created.entry ?? create(EntrySchema);
      });
    },
    resolve: (did, call) =>
      mappingErrors(async () => {
        const resolved = await registry.resolveEntry({ did }, callOptions(call));
        return resolved.entry ?? create(EntrySchema);
      }),
    versions: (did, call) => mappingErrors(async () => (await registry.listEntryVersions({ did }, callOptions(call))).versions),
    async revoke(did, call) {
      const privateKey = signingSeed(call.key, undefined);
      const signature = await signRevocation(did, call.reason, privateKey);
      const bearer = call.token ?? (await accessTokens.forEntryType(() => entryTypeOfDid(did)));
      return mappingErrors(async () => {
        const revoked = await registry.revokeEntry({ did, reason: call.reason, signature }, callOptions(call, bearer));
        return revoked.entries;
      });
    },
    async changeLifecycle(did, action, call) {
      const { privateKey, by } = await signer(call.key);
      const fields = { subject: did, action, reason: call.reason ?? "", replacement: call.replacement ?? "", by, issuedAt: issuedAt() };
      const signature = await signLifecycle(fields, privateKey);
      const bearer = call.token ?? (await accessTokens.forEntryType(() => entryTypeOfDid(did)));
      return mappingErrors(async () => {
        const { reason, replacement } = fields;
        const request = { did, action, reason, replacement, issuedAt: fields.issuedAt, signature };
        const answer = await registry.changeLifecycle(request, callOptions(call, bearer));
        return answer.entries;
      });
    },
    async moderate(did, action, call) {
      const { privateKey, by } = await signer(call.key);
      const fields = { subject: did, action, policy: call.policy ?? "", note: call.note, by, issuedAt: issuedAt() };
      const signature = await signModeration(fields, privateKey);
      const bearer = call.token ?? (await accessTokens.forEntryType(() => entryTypeOfDid(did)));
      return mappingErrors(async () => {
        const { policy, note } = fields;
        const answer = await registry.moderateEntry(
          { did, action, policy, note, issuedAt: fields.issuedAt, signature },
          callOptions(call, bearer),
        );
        return answer.entries;
      });
    },
    discover: (request = {}, call) =>
      followCursors((cursor) => discoverPage({ ...request, cursor }, call).then((page) => [page.entries, page.nextCursor])),
    discoverPage,
    query: (ql, call) => followCursors((cursor) => queryPage(ql, { ...call, cursor }).then((page) => [page.rows, page.nextCursor])),
    queryPage,
    search: (text, call) =>
      mappingErrors(async () => {
        const request = { q: text, entryType: call?.entryType ?? "", limit: call?.pageSize ?? 0, cursor: call?.cursor ?? "" };
        const page = await registry.searchEntries(request, callOptions(call));
        return { entries: page.entries, nextCursor: presentCursor(page.nextCursor) };
      }),
    issueToken,
    async proveEntry(did, call) {
      const { logKey, answer } = await mappingErrors(async () => ({
        logKey: call?.logKey ?? (await log.getLogKey({}, callOptions(call))).verifierKey,
        answer: await log.getEntryProof({ did }, callOptions(call)),
      }));
      const verified = await verifyEntryProof(did, answer, parseLogKey(logKey));
      return { ...verified, logKey, pinned: call?.logKey !== undefined };
    },
    async history(did, call) {
      const logKey = call?.logKey ?? (await mappingErrors(async () => (await log.getLogKey({}, callOptions(call))).verifierKey));
      const page = (after: bigint | undefined, treeSize: bigint) =>
        mappingErrors(() => log.getEntryHistory({ did, after, treeSize }, callOptions(call)));
      const verified = await fetchVerifiedHistory(did, parseLogKey(logKey), page);
      return { ...verified, logKey, pinned: call?.logKey !== undefined };
    },
    close,
  };
}

/** Yields every item of every page, asking for the next page only when the last one is used up. */
async function* followCursors<T>(
  page: (cursor: string | undefined) => Promise<[T[], string | undefined]>,
): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined;
  do {
    const [items, next] = await page(cursor);
    yield* items;
    cursor = next;
  } while (cursor !== undefined);
}

function presentCursor(cursor: string | undefined): string | undefined {
  return cursor === undefined || cursor === "" ? undefined : cursor;
}

/** The Entry message a publish sends: every signed field (absent ones as the registry signs them), and the signature. */
function entryMessage(entry: EntryInput, signature: string): MessageInitShape<typeof EntrySchema> {
  const message: Record<string, unknown> = { signature };
  for (const field of SIGNED_FIELDS) {
    const value: unknown = entry[field.name as keyof EntryInput];
    message[field.name] = Array.isArray(value) ? [...value] : (value ?? ABSENT[field.kind]);
  }
  return message as MessageInitShape<typeof EntrySchema>;
}

const SIGNED_FIELDS = PUBLISHER_FIELDS.filter((field) => fieldSpec(field).signed === true);
/** What an absent optional field is sent as: the value it is signed as (data stays unset). */
const ABSENT: Partial<Record<FieldKind, unknown>> = { text: "", amount: "", tags: [] };

/** The seed and DID of a signing key: the DID is the payload's `by`. */
async function signer(key: SigningKey): Promise<{ privateKey: Uint8Array; by: string }> {
  const pair = key instanceof Uint8Array ? await keyPairFromSeed(key) : key;
  return { privateKey: pair.privateKey, by: pair.did };
}

let lastIssuedAt = 0;

/**
 * Now, as `toISOString()` writes it, and later than any issuedAt this process made before: the
 * registry accepts a request on a name only if it is strictly later than the last it accepted.
 */
function issuedAt(): string {
  lastIssuedAt = Math.max(Date.now(), lastIssuedAt + 1);
  return new Date(lastIssuedAt).toISOString();
}

/**
 * The private seed of `key`. A key pair whose DID is not the entry's publisher could only make a
 * signature the registry refuses, so that is reported before anything is sent.
 */
function signingSeed(key: SigningKey, publisherDid: string | undefined): Uint8Array {
  if (key instanceof Uint8Array) return key;
  if (publisherDid !== undefined && key.did !== publisherDid) {
    throw new RegistryClientError("invalid_argument", `publisherDid: is not the DID of the signing key (${key.did})`, {
      violations: [{ field: "publisherDid", description: `is not the DID of the signing key (${key.did})` }],
    });
  }
  return key.privateKey;
}

/**
 * The entryType segment of `did:<method>:<network>:<entryType>:<name>[@<version>]`, which decides
 * the publish scope a revocation needs when the client exchanges a root token. A DID without one
 * could not be revoked anyway, so it is refused here as the registry would refuse it.
 */
function entryTypeOfDid(did: string): string {
  const entryType = did.split(":")[3];
  if (entryType === undefined || entryType === "") {
    throw new RegistryClientError("invalid_argument", "did: is not an entry DID", {
      violations: [{ field: "did", description: "is not an entry DID (did:<method>:<network>:<entryType>:<name>)" }],
    });
  }
  return entryType;
}
