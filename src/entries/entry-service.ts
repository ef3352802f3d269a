import { canPublish, isAdmin, type Principal } from "../auth/principal.js";
import { ed25519KeyFromDid } from "../domain/did-key.js";
import { createSignatureVerifier, parseSignature } from "../domain/ed25519-signature.js";
import { parseEntryDid, type EntryDid } from "../domain/entry-did.js";
import { validateEntry, type EntryInput } from "../domain/entry-rules.js";
import { textProblem } from "../domain/json-input.js";
import { entrySigningPayload, revocationSigningPayload } from "../domain/signing-payload.js";
import { InvalidArgumentError, NotFoundError, PermissionDeniedError, ViolationList } from "../errors.js";
import type { EntryRepository, EntryVersionSummary, StoredEntry } from "./entry-repository.js";

export const MAX_REASON_CHARS = 500;

export interface EntryServiceOptions {
  readonly repository: EntryRepository;
  /** The entry types this registry accepts. */
  readonly entryTypes: readonly string[];
  /** The registry's clock; injectable so tests can pin it. */
  readonly clock?: () => Date;
}

export interface RevokeRequest {
  /** The entry DID as addressed, with or without "@version". */
  readonly did: string;
  readonly reason: string;
  readonly signature: string;
}

export type EntryService = ReturnType<typeof createEntryService>;

/**
 * The entry lifecycle: publish, resolve, list versions, revoke. Callers pass an already
 * authenticated Principal for writes; checks then run in the contract's order: the request's own
 * validity and signature, the principal's authorization, then stored state.
 */
export function createEntryService(options: EntryServiceOptions) {
  const { repository, entryTypes } = options;
  const clock = options.clock ?? (() => new Date());
  const signatures = createSignatureVerifier();

  async function create(principal: Principal, input: EntryInput): Promise<StoredEntry> {
    const entry = validateEntry(input, { entryTypes, now: clock() });
    const payload = entrySigningPayload({ ...entry, publishedAt: entry.publishedAt.toISOString() });
    if (!(await signatures.verify(entry.publisherKey, payload, entry.signatureBytes))) {
      throw InvalidArgumentError.of("signature", "signature does not verify");
    }
    if (!canPublish(principal, entry.entryType)) {
      throw new PermissionDeniedError(`token lacks scope registry.publish.${entry.entryType} needed to publish this entry`);
    }
    if (principal.subject !== entry.publisherDid) {
      throw new PermissionDeniedError("token subject is not the entry's publisherDid");
    }
    return repository.createEntry(entry);
  }

  async function resolve(did: string): Promise<StoredEntry> {
    const parsed = parseDid("did", did);
    const entry =
      parsed.version === undefined
        ? await repository.findLatest(parsed.baseDid)
        : await repository.findVersion(parsed.baseDid, parsed.version.version);
    if (entry === undefined) throw new NotFoundError(`no entry ${did}`);
    return entry;
  }

  async function listVersions(did: string): Promise<EntryVersionSummary[]> {
    const parsed = parseDid("did", did);
    if (parsed.version !== undefined) {
      throw InvalidArgumentError.of("did", "must not include @version: versions are listed for the whole entry");
    }
    const versions = await repository.listVersions(parsed.baseDid);
    if (versions.length === 0) throw new NotFoundError(`no entry ${did}`);
    return versions;
  }

  async function revoke(principal: Principal, request: RevokeRequest): Promise<StoredEntry[]> {
    const parsed = await checkRevokeRequest(principal, request);
    const owner = await repository.findOwner(parsed.baseDid);
    if (owner === undefined) throw new NotFoundError(`no entry ${request.did}`);
    const mayRevoke = isAdmin(principal) || (principal.subject === owner.publisherDid && canPublish(principal, owner.entryType));
    if (!mayRevoke) {
      throw new PermissionDeniedError(
        `only the publisher with registry.publish.${owner.entryType}, or registry.admin, may revoke this entry`,
      );
    }
    const revoked = await repository.revoke(parsed.baseDid, parsed.version?.version, {
      reason: request.reason,
      revokedAt: clock(),
      did: request.did,
      signature: request.signature,
      signer: principal.subject,
    });
    if (revoked.length === 0) throw new NotFoundError(`no entry ${request.did}`);
    return revoked;
  }

  async function checkRevokeRequest(principal: Principal, request: RevokeRequest): Promise<EntryDid> {
    const violations = new ViolationList();
    const parsed = parseEntryDid(request.did);
    if ("error" in parsed) violations.add("did", parsed.error);
    const reasonChars = [...request.reason].length;
    const reasonProblem = textProblem(request.reason);
    if (reasonProblem !== undefined) violations.add("reason", reasonProblem);
    else if (reasonChars === 0) violations.add("reason", "is required");
    else if (reasonChars > MAX_REASON_CHARS) {
      violations.add("reason", `must be at most ${MAX_REASON_CHARS} characters`);
    }
    const signature = parseSignature(request.signature);
    if ("error" in signature) violations.add("signature", signature.error);
    violations.throwIfAny();

    const key = ed25519KeyFromDid(principal.subject);
    const payload = revocationSigningPayload(request.did, request.reason);
    if ("error" in key || !(await signatures.verify(key, payload, signature as Uint8Array))) {
      throw InvalidArgumentError.of("signature", "signature does not verify");
    }
    return parsed as EntryDid;
  }

  return { create, resolve, listVersions, revoke };
}

function parseDid(field: string, did: string): EntryDid {
  const parsed = parseEntryDid(did);
  if ("error" in parsed) throw InvalidArgumentError.of(field, parsed.error);
  return parsed;
}
