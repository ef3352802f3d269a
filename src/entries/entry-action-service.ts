import { canPublish, isAdmin, type Principal } from "../auth/principal.js";
import type { ActionKind, SignedRequest } from "./entry-repository.js";
import {
  LIFECYCLE_PAYLOAD_TYPE,
  lifecycleSigningPayload,
  MODERATION_PAYLOAD_TYPE,
  moderationSigningPayload,
} from "../domain/action-payloads.js";
import {
  assertLaterIssuedAt,
  validateLifecycleRequest,
  validateModerationRequest,
  type LifecycleRequestInput,
  type ModerationRequestInput,
  type ValidLifecycleRequest,
  type ValidModerationRequest,
} from "../domain/action-rules.js";
import { ed25519KeyFromDid } from "../domain/did-key.js";
import { createSignatureVerifier, parseSignature } from "../domain/ed25519-signature.js";
import { parseEntryDid } from "../domain/entry-did.js";
import type { MarkValue } from "../domain/entry-fields.js";
import {
  applyArchive,
  applyLifecycle,
  applyModeration,
  REMOVAL_WITHHELD_FIELDS,
  stateOfStored,
  storedMark,
  WITHHELD_VALUES,
  type Archive,
  type VersionState,
} from "../domain/version-state.js";
import { FailedPreconditionError, InvalidArgumentError, NotFoundError, PermissionDeniedError } from "../errors.js";
import type { ActionOutcome, ActionTarget, EntryOwner, EntryRepository, StoredEntry, VersionColumnChanges } from "./entry-repository.js";

export interface EntryActionServiceOptions {
  readonly repository: EntryRepository;
  /** The registry's clock; injectable so tests can pin it. */
  readonly clock?: () => Date;
}

/** A request as it arrives: every member may be missing or malformed. */
export type LifecycleInput = LifecycleRequestInput & { readonly signature?: string };
export type ModerationInput = ModerationRequestInput & { readonly signature?: string };

export type EntryActionService = ReturnType<typeof createEntryActionService>;

/**
 * What happens after publishing (docs/lifecycle.md): a controller's lifecycle actions and a
 * moderator's decisions, each signed and checked in the contract's order: the request's own
 * validity and signature, the caller's authority, then stored state. The rules of each mark are
 * the pure ones of src/domain/version-state.ts; this module turns them into one stored change.
 */
export function createEntryActionService(options: EntryActionServiceOptions) {
  const { repository } = options;
  const clock = options.clock ?? (() => new Date());
  const signatures = createSignatureVerifier();

  async function changeLifecycle(principal: Principal, input: LifecycleInput): Promise<StoredEntry[]> {
    const now = clock();
    const request = validateLifecycleRequest(input, { now });
    const signature = parsedSignature(input.signature);
    const signed = { ...request, by: principal.subject };
    await checkSignature(principal.subject, lifecycleSigningPayload(signed), signature);
    if (!canPublish(principal, request.did.entryType)) {
      throw new PermissionDeniedError(`token lacks scope registry.publish.${request.did.entryType} needed to act on this entry`);
    }
    const requireController = (owner: EntryOwner) => {
      if (owner.publisherDid !== principal.subject) {
        throw new PermissionDeniedError(`only a controller of ${request.did.baseDid} may change its lifecycle`);
      }
    };
    // A replacement is state, checked after authority (403) as every write orders its checks.
    if (request.replacement !== "") {
      const owner = await repository.findOwner(request.did.baseDid);
      if (owner === undefined) throw new NotFoundError(`no entry ${request.subject}`);
      requireController(owner);
      await requireExisting(request.replacement);
    }
    const record = lifecycleRequestRecord(request, principal.subject, input);
    const action = signedAction("entry.lifecycle", LIFECYCLE_PAYLOAD_TYPE, request, record);
    return act(request, action, (target) => {
      requireController(target.owner);
      requireVersions(target, request);
      assertLaterIssuedAt(request.issuedAt, target.lastIssuedAt?.toISOString());
      return lifecycleOutcome(target, request, { at: now, by: principal.subject });
    });
  }

  async function moderate(principal: Principal, input: ModerationInput): Promise<StoredEntry[]> {
    const now = clock();
    const request = validateModerationRequest(input, { now });
    const signature = parsedSignature(input.signature);
    await checkSignature(principal.subject, moderationSigningPayload({ ...request, by: principal.subject }), signature);
    if (!isAdmin(principal)) throw new PermissionDeniedError("moderation needs a token with registry.admin");
    const action = signedAction(
      "entry.moderation",
      MODERATION_PAYLOAD_TYPE,
      request,
      moderationRequestRecord(request, principal.subject, input),
    );
    return act(request, action, (target) => {
      requireVersions(target, request);
      assertLaterIssuedAt(request.issuedAt, target.lastIssuedAt?.toISOString());
      return moderationOutcome(target, request, { at: now, by: principal.subject });
    });
  }

  async function act(
    request: ValidLifecycleRequest | ValidModerationRequest,
    action: ReturnType<typeof signedAction>,
    decide: (target: ActionTarget) => ActionOutcome,
  ): Promise<StoredEntry[]> {
    const entries = await repository.applyAction(request.did.baseDid, request.did.version?.version, action, decide);
    if (entries === undefined) throw new NotFoundError(`no entry ${request.subject}`);
    return entries;
  }

  async function checkSignature(signer: string, payload: Uint8Array, signature: Uint8Array): Promise<void> {
    const key = ed25519KeyFromDid(signer);
    if ("error" in key || !(await signatures.verify(key, payload, signature))) {
      throw InvalidArgumentError.of("signature", "signature does not verify");
    }
  }

  /** A replacement must name an entry that exists: the version, or any version of the name. */
  async function requireExisting(replacement: string): Promise<void> {
    const did = parseEntryDid(replacement);
    if ("error" in did) return;
    const found =
      did.version === undefined ? await repository.findOwner(did.baseDid) : await repository.findVersion(did.baseDid, did.version.version);
    if (found === undefined) throw new FailedPreconditionError(`replacement: no entry ${replacement}`);
  }

  return { changeLifecycle, moderate };
}

/** An existing name whose addressed version does not exist: 404, once authority was checked. */
function requireVersions(target: ActionTarget, request: { readonly subject: string }): void {
  if (target.versions.length === 0) throw new NotFoundError(`no entry ${request.subject}`);
}

function parsedSignature(text: string | undefined): Uint8Array {
  const signature = parseSignature(text ?? "");
  if ("error" in signature) throw InvalidArgumentError.of("signature", signature.error);
  return signature;
}

function signedAction(kind: ActionKind, payloadType: string, request: { readonly issuedAt: string }, record: SignedRequest) {
  return { kind, payloadType, issuedAt: new Date(request.issuedAt), request: record };
}

/** The request as the log keeps it: the payload's members as signed, and the signature. */
function lifecycleRequestRecord(request: ValidLifecycleRequest, by: string, input: LifecycleInput): SignedRequest {
  const { subject, action, reason, replacement, issuedAt } = request;
  return Object.freeze({
    payloadType: LIFECYCLE_PAYLOAD_TYPE,
    subject,
    action,
    reason,
    replacement,
    by,
    issuedAt,
    signature: input.signature ?? "",
  });
}

function moderationRequestRecord(request: ValidModerationRequest, by: string, input: ModerationInput): SignedRequest {
  const { subject, action, policy, note, issuedAt } = request;
  return Object.freeze({
    payloadType: MODERATION_PAYLOAD_TYPE,
    subject,
    action,
    policy,
    note,
    by,
    issuedAt,
    signature: input.signature ?? "",
  });
}

interface Actor {
  readonly at: Date;
  readonly by: string;
}

function lifecycleOutcome(target: ActionTarget, request: ValidLifecycleRequest, actor: Actor): ActionOutcome {
  if (request.action === "archive" || request.action === "unarchive") {
    const archive = applyArchive(archiveOf(target.archive), { action: request.action, reason: request.reason, ...actor });
    return { versions: [], ...(archive.changed ? { archive: archive.state === undefined ? null : storedMark(archive.state) } : {}) };
  }
  const change = { action: request.action, reason: request.reason, replacement: request.replacement, ...actor };
  return outcomeOf(target, request, (state) => applyLifecycle(state, change));
}

function moderationOutcome(target: ActionTarget, request: ValidModerationRequest, actor: Actor): ActionOutcome {
  return outcomeOf(target, request, (state) => applyModeration(state, { ...request, ...actor }));
}

/**
 * Each addressed version through the transition. A removed version addressed by its own DID is
 * refused; addressed through the bare DID it is passed over, since a request on a name acts on
 * every version that is not removed.
 */
function outcomeOf(
  target: ActionTarget,
  request: { readonly did: { readonly version?: unknown } },
  transition: (state: VersionState) => ReturnType<typeof applyLifecycle>,
): ActionOutcome {
  const versions: { sequence: bigint; columns: VersionColumnChanges }[] = [];
  for (const entry of target.versions) {
    const state = stateOfStored(entry);
    if (state.removal !== undefined && request.did.version === undefined) continue;
    const result = transition(state);
    if ("error" in result) throw new FailedPreconditionError(`${entry.entryDid}: ${result.error}`);
    if (result.changed) versions.push({ sequence: entry.sequence, columns: columnsOf(result.state, state) });
  }
  return { versions };
}

/** The columns that differ between two states, and a new removal's withheld fields. */
function columnsOf(after: VersionState, before: VersionState): VersionColumnChanges {
  const columns: Record<string, unknown> = {};
  for (const member of ["deprecation", "yank", "quarantine", "removal"] as const) {
    if (after[member] !== before[member]) columns[member] = after[member] === undefined ? null : storedMark(after[member]);
  }
  if (after.removal !== undefined && before.removal === undefined) {
    for (const field of REMOVAL_WITHHELD_FIELDS) columns[field] = WITHHELD_VALUES[field];
  }
  return columns as VersionColumnChanges;
}

function archiveOf(mark: MarkValue | null): Archive | undefined {
  if (mark === null) return undefined;
  return { reason: mark.reason ?? "", at: new Date(mark.at ?? 0), by: mark.by ?? "" };
}
