import { fieldSpec, PUBLISHER_FIELDS } from "../domain/entry-fields.js";
import { validateEntry, type EntryInput as DomainEntryInput } from "../domain/entry-rules.js";
import { InvalidArgumentError } from "../errors.js";
import { RegistryClientError } from "../sdk/client-error.js";
import type { EntryInput } from "../sdk/registry-client.js";
import { ENTRY_PAYLOAD_TYPE_V2 } from "../domain/signing-payload.js";
import { signEntry, type KeyPair } from "../sdk/signing.js";

/** The fields publish sends: the signed publisher fields, and the signature over them. */
const SENT_FIELDS = PUBLISHER_FIELDS.filter((field) => fieldSpec(field).signed === true).map((field) => field.name);

/**
 * What `publish --dry-run` prints: the entry signed as publish signs it (payloadType v2 unless
 * set; only the signed fields, as the SDK sends only those), after checking it against the
 * registry's entry rules (domain/entry-rules.ts) here, with nothing sent. A rule broken is the
 * invalid_argument the registry would answer, naming each field. Which entry types the registry
 * accepts, and whether the name or version is free, only the registry can say.
 */
export async function dryRunEntry(entry: EntryInput, key: KeyPair): Promise<Record<string, unknown>> {
  const withPayloadType: Record<string, unknown> = { ...entry, payloadType: entry.payloadType ?? ENTRY_PAYLOAD_TYPE_V2 };
  const body: Record<string, unknown> = {};
  for (const name of SENT_FIELDS) if (withPayloadType[name] !== undefined) body[name] = withPayloadType[name];
  if (body.publisherDid !== key.did) {
    const description = `is not the DID of the signing key (${key.did})`;
    throw new RegistryClientError("invalid_argument", `publisherDid: ${description}`, {
      violations: [{ field: "publisherDid", description }],
    });
  }
  const signed: Record<string, unknown> = { ...body, signature: await signEntry(body as EntryInput, key.privateKey) };
  try {
    validateEntry(signed as DomainEntryInput, { entryTypes: [String(signed.entryType ?? "")], now: new Date() });
  } catch (error) {
    if (!(error instanceof InvalidArgumentError)) throw error;
    throw new RegistryClientError("invalid_argument", error.message, { violations: error.violations });
  }
  return signed;
}
