import { parseVersion, type ParsedVersion } from "./semver-order.js";

/** The longest entry DID the registry accepts, version included. */
export const MAX_ENTRY_DID_LENGTH = 512;

/** An entry DID, split into its parts. */
export interface EntryDid {
  readonly method: string;
  readonly network: string;
  readonly entryType: string;
  readonly name: string;
  /** The DID without "@version": the identity shared by every version of the entry. */
  readonly baseDid: string;
  /** Present when the DID named a version. */
  readonly version?: ParsedVersion;
}

const ENTRY_DID = /^did:([a-z0-9]+):([a-z0-9][a-z0-9-]*):([a-z0-9][a-z0-9._-]*):([^@]*)(?:@(.*))?$/s;
const NAME = /^[a-z0-9][a-z0-9._-]{0,127}$/;

/**
 * Parses `did:<method>:<network>:<entryType>:<name>[@<version>]`. Returns the reason it is not one
 * rather than throwing, so the caller can name the field that carried it.
 */
export function parseEntryDid(did: string): EntryDid | { error: string } {
  if (did.length === 0) return { error: "is required" };
  if (did.length > MAX_ENTRY_DID_LENGTH) {
    return { error: `must be at most ${MAX_ENTRY_DID_LENGTH} characters` };
  }
  const match = ENTRY_DID.exec(did);
  if (match === null) {
    return { error: "must look like did:<method>:<network>:<entryType>:<name>@<version>" };
  }
  const [, method = "", network = "", entryType = "", name = "", versionText] = match;
  if (!NAME.test(name)) {
    return {
      error: "name must be 1-128 characters of [a-z0-9._-] starting with a letter or digit",
    };
  }
  const baseDid = `did:${method}:${network}:${entryType}:${name}`;
  if (versionText === undefined) return { method, network, entryType, name, baseDid };
  const version = parseVersion(versionText);
  if ("error" in version) return { error: `version ${version.error}` };
  return { method, network, entryType, name, baseDid, version };
}
