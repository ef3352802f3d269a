// The one function, not the package's index: the SDK's browser bundle carries a third of the code.
import parseSemver from "semver/functions/parse.js";

/** The longest version string the registry accepts. */
export const MAX_VERSION_LENGTH = 64;

export interface ParsedVersion {
  readonly version: string;
  readonly isPrerelease: boolean;
  /**
   * A string whose byte order ("C" collation) is SemVer 2.0.0 precedence, so the database can
   * order and compare versions with a plain btree index.
   */
  readonly sortKey: string;
}

/**
 * Parses a strict SemVer 2.0.0 version without build metadata. Returns a reason instead of
 * throwing so callers can attach it to the field they were validating.
 */
export function parseVersion(version: string): ParsedVersion | { error: string } {
  if (version.length === 0) return { error: "is required" };
  if (version.length > MAX_VERSION_LENGTH) {
    return { error: `must be at most ${MAX_VERSION_LENGTH} characters` };
  }
  if (version.includes("+")) return { error: "build metadata (+...) is not allowed" };
  const parsed = parseSemver(version, { loose: false });
  // semver accepts a leading "v" or "=" and normalises it away; the registry wants the exact form.
  if (parsed === null || parsed.version !== version) {
    return { error: "must be a SemVer 2.0.0 version MAJOR.MINOR.PATCH[-prerelease]" };
  }
  return {
    version,
    isPrerelease: parsed.prerelease.length > 0,
    sortKey: versionSortKey(parsed.major, parsed.minor, parsed.patch, parsed.prerelease),
  };
}

/**
 * Encoding (all ASCII, compared bytewise):
 * - each number is its digit count as two digits followed by its digits, so longer numbers sort
 *   after shorter ones (SemVer forbids leading zeros, so this is numeric order);
 * - a release ends with "~", which sorts after "-", so 1.0.0 > 1.0.0-anything;
 * - a prerelease is "-" then, per identifier, "a"+number (numeric) or "b"+text (alphanumeric, so
 *   numeric < alphanumeric), each closed by "!" which sorts below every identifier character, so
 *   "alpha" < "alpha-1" and a shorter identifier list that is a prefix of a longer one sorts first.
 */
function versionSortKey(major: number, minor: number, patch: number, prerelease: ReadonlyArray<string | number>): string {
  const core = encodeNumber(major) + encodeNumber(minor) + encodeNumber(patch);
  if (prerelease.length === 0) return `${core}~`;
  const identifiers = prerelease.map((id) => (typeof id === "number" || /^[0-9]+$/.test(id) ? `a${encodeNumber(id)}!` : `b${id}!`));
  return `${core}-${identifiers.join("")}`;
}

function encodeNumber(value: number | string): string {
  const digits = String(value);
  return String(digits.length).padStart(2, "0") + digits;
}
