import { parseEntryDid } from "./entry-did.js";

/**
 * Which log records make up a DID's history (docs/transparency.md, "Histories"), one rule for the
 * registry that selects them and the clients that check the selection. Pure and browser-safe.
 *
 * Every record addresses one subject: a version (`name@version`) or a whole name (the bare DID).
 * A created or revoked record addresses its entry's version; a record of a signed request
 * (lifecycle, moderation and the kinds after them) carries the request, whose `subject` says.
 */

/** The kinds whose record holds an entry and addresses that entry's version. */
const ENTRY_KINDS: ReadonlySet<string> = new Set(["entry.created", "entry.revoked"]);

/** A record as parsed JSON, read only for what it addresses. */
interface AddressingRecord {
  readonly kind?: unknown;
  readonly entry?: unknown;
  readonly request?: unknown;
}

/** The DID a record addresses; undefined when it names none. */
export function recordSubject(record: AddressingRecord): string | undefined {
  const entryKind = ENTRY_KINDS.has(String(record.kind));
  const holder = entryKind ? record.entry : record.request;
  if (typeof holder !== "object" || holder === null) return undefined;
  const subject = (holder as Record<string, unknown>)[entryKind ? "entryDid" : "subject"];
  return typeof subject === "string" ? subject : undefined;
}

/** The history asked for: a whole name, or one version of it and the records about the whole name. */
export interface HistorySubject {
  /** The bare DID. */
  readonly name: string;
  /** `name@version` when a version was asked for. */
  readonly version?: string;
}

/** The subject of a history from the DID asked; the reason it is not one otherwise. */
export function historySubject(did: string): HistorySubject | { error: string } {
  const parsed = parseEntryDid(did);
  if ("error" in parsed) return parsed;
  if (parsed.version === undefined) return { name: parsed.baseDid };
  return { name: parsed.baseDid, version: `${parsed.baseDid}@${parsed.version.version}` };
}

/** Whether a record addressing `subject` belongs to the history of `asked`. */
export function belongsToHistory(subject: string | undefined, asked: HistorySubject): boolean {
  if (subject === undefined) return false;
  if (subject === asked.name) return true;
  return asked.version === undefined ? subject.startsWith(`${asked.name}@`) : subject === asked.version;
}
