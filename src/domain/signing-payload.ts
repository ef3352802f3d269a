import canonicalize from "canonicalize";

/**
 * The canonical bytes publishers sign. Runs in browsers as well as Node (no Node imports), so the
 * client SDK and the server share one definition and cannot drift apart.
 */

export const ENTRY_PAYLOAD_TYPE = "registry.entry.v1";
export const REVOKE_PAYLOAD_TYPE = "registry.revoke.v1";

/** The publisher-set fields of an entry, as covered by its signature. */
export interface EntrySigningFields {
  readonly entryDid: string;
  readonly entryType: string;
  readonly version: string;
  readonly publisherDid: string;
  /** Any RFC 3339 form; it is signed as `Date.prototype.toISOString()` writes it. */
  readonly publishedAt: string;
  readonly description?: string;
  readonly tags?: readonly string[];
  readonly data?: Readonly<Record<string, unknown>>;
  readonly contentHash: string;
  readonly bondAmount?: string;
}

/** RFC 8785 (JCS) canonical JSON of the create payload, as UTF-8 bytes. */
export function entrySigningPayload(fields: EntrySigningFields): Uint8Array {
  return utf8(
    canonicalJson({
      payloadType: ENTRY_PAYLOAD_TYPE,
      entryDid: fields.entryDid,
      entryType: fields.entryType,
      version: fields.version,
      publisherDid: fields.publisherDid,
      publishedAt: new Date(fields.publishedAt).toISOString(),
      description: fields.description ?? "",
      tags: fields.tags ?? [],
      data: fields.data ?? {},
      contentHash: fields.contentHash,
      bondAmount: fields.bondAmount ?? "",
    }),
  );
}

/**
 * RFC 8785 canonical JSON of the revocation payload. `entryDid` is the DID exactly as addressed
 * (decoded from the path, with or without "@version").
 */
export function revocationSigningPayload(entryDid: string, reason: string): Uint8Array {
  return utf8(canonicalJson({ payloadType: REVOKE_PAYLOAD_TYPE, entryDid, reason }));
}

function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError("payload cannot be canonicalized");
  return text;
}

function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}
