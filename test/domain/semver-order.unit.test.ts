import semver from "semver";
import { describe, expect, it } from "vitest";
import { MAX_VERSION_LENGTH, parseVersion, type ParsedVersion } from "../../src/domain/semver-order.js";
import { seededRandom } from "../support/seeded-random.js";

function parsed(version: string): ParsedVersion {
  const result = parseVersion(version);
  if ("error" in result) throw new Error(`${version}: ${result.error}`);
  return result;
}

/** Byte order of the sort keys (they are ASCII, so UTF-16 order is byte order, as under "C"). */
function keyCompare(a: string, b: string): number {
  const ka = parsed(a).sortKey;
  const kb = parsed(b).sortKey;
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

const ALPHANUMERIC = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-";

function randomVersions(count: number, seed: number): string[] {
  const next = seededRandom(seed);
  const pick = (n: number) => Math.floor(next() * n);
  /** Numbers of different lengths, no leading zeros, small ones common so ties happen. */
  const number = (): string => {
    const kind = pick(4);
    if (kind === 0) return String(pick(3));
    if (kind === 1) return String(pick(20));
    const digits = 1 + pick(kind === 2 ? 4 : 15);
    let text = String(1 + pick(9));
    for (let i = 1; i < digits; i++) text += String(pick(10));
    return text;
  };
  const alphanumeric = (): string => {
    const pool = ["alpha", "beta", "rc", "a", "A", "b", "-", "x-1", "0a", "Z9"];
    if (next() < 0.5) return pool[pick(pool.length)] as string;
    const length = 1 + pick(6);
    let text = "";
    for (let i = 0; i < length; i++) text += ALPHANUMERIC[pick(ALPHANUMERIC.length)];
    // At least one non-digit, so it is an alphanumeric identifier.
    return /^[0-9]+$/.test(text) ? `${text}x` : text;
  };
  const versions: string[] = [];
  while (versions.length < count) {
    let version = `${number()}.${number()}.${number()}`;
    if (next() < 0.7) {
      const ids = Array.from({ length: 1 + pick(4) }, () => (next() < 0.45 ? number() : alphanumeric()));
      version += `-${ids.join(".")}`;
    }
    if (version.length <= MAX_VERSION_LENGTH) versions.push(version);
  }
  return versions;
}

describe("the version sort key", () => {
  it("orders SemVer 2.0.0's own example chain (section 11)", () => {
    const chain = [
      "1.0.0-alpha",
      "1.0.0-alpha.1",
      "1.0.0-alpha.beta",
      "1.0.0-beta",
      "1.0.0-beta.2",
      "1.0.0-beta.11",
      "1.0.0-rc.1",
      "1.0.0",
      "2.0.0",
      "2.1.0",
      "2.1.1",
    ];
    const shuffled = [...chain].reverse();
    shuffled.push(...shuffled.splice(0, 4));
    expect([...shuffled].sort(keyCompare)).toEqual(chain);
    expect([...shuffled].sort(semver.compare)).toEqual(chain);
    for (let i = 1; i < chain.length; i++) {
      expect(keyCompare(chain[i - 1] as string, chain[i] as string), `${chain[i - 1]} < ${chain[i]}`).toBe(-1);
    }
  });

  it.each([
    ["1.9.0", "1.10.0"],
    ["1.0.9", "1.0.10"],
    ["9.0.0", "10.0.0"],
    ["1.0.0-alpha.9", "1.0.0-alpha.10"],
    ["1.0.0-alpha.10", "1.0.0-alpha.beta"],
    ["1.0.0-1", "1.0.0-a"],
    ["1.0.0-999", "1.0.0-0a"],
    ["1.0.0-alpha", "1.0.0-alpha-1"],
    ["1.0.0-alpha", "1.0.0-alpha.0"],
    ["1.0.0-a.1", "1.0.0-a-1"],
    ["1.0.0-A", "1.0.0-a"],
    ["1.0.0--", "1.0.0-0a"],
    ["1.0.0-rc.1", "1.0.0"],
    ["0.0.0", "0.0.1-0"],
    ["1.0.0", "1.0.1-alpha"],
    ["1.2.3-x.7.z.92", "1.2.3-x.7.z.93"],
  ])("puts %s before %s, as semver does", (lower, higher) => {
    expect(keyCompare(lower, higher)).toBe(-1);
    expect(keyCompare(higher, lower)).toBe(1);
    expect(semver.compare(lower, higher)).toBe(-1);
  });

  it("orders numeric prerelease identifiers beyond 2^53 exactly (where semver.compare rounds)", () => {
    expect(keyCompare("1.0.0-99999999999999999998", "1.0.0-99999999999999999999")).toBe(-1);
    expect(keyCompare("1.0.0-100000000000000000000", "1.0.0-99999999999999999999")).toBe(1);
  });

  it("orders exactly like semver.compare over 2000 random versions", () => {
    const versions = randomVersions(2000, 20260121);
    // Sanity of the generator: varied lengths, prereleases with both kinds of identifier.
    expect(new Set(versions).size).toBeGreaterThan(1500);
    expect(versions.some((v) => /-.*\b\d{6,}\b/.test(v))).toBe(true);
    expect(versions.some((v) => /-(.*\.)?[0-9]*[A-Za-z-]/.test(v))).toBe(true);
    expect(versions.some((v) => !v.includes("-"))).toBe(true);
    for (const version of versions) expect(semver.valid(version), version).toBe(version);

    const byKey = [...versions].sort(keyCompare);
    const bySemver = [...versions].sort(semver.compare);
    expect(byKey).toEqual(bySemver);

    // Pairwise, including ties: the sign of the comparison matches for random pairs and neighbours.
    const next = seededRandom(7);
    const pairs: [string, string][] = [];
    for (let i = 0; i < 20_000; i++) {
      pairs.push([versions[Math.floor(next() * versions.length)] as string, versions[Math.floor(next() * versions.length)] as string]);
    }
    for (let i = 1; i < bySemver.length; i++) pairs.push([bySemver[i - 1] as string, bySemver[i] as string]);
    const mismatches = pairs.filter(([a, b]) => keyCompare(a, b) !== semver.compare(a, b));
    expect(mismatches).toEqual([]);
  });

  it("gives equal versions equal keys and different versions different keys", () => {
    const versions = [...new Set(randomVersions(2000, 99))];
    const keys = new Set(versions.map((v) => parsed(v).sortKey));
    expect(keys.size).toBe(versions.length);
  });

  it("flags prereleases", () => {
    expect(parsed("1.0.0").isPrerelease).toBe(false);
    expect(parsed("1.0.0-0").isPrerelease).toBe(true);
    expect(parsed("1.0.0-rc.1").isPrerelease).toBe(true);
    expect(parsed("1.0.0-rc.1").version).toBe("1.0.0-rc.1");
  });
});

describe("parseVersion", () => {
  it.each([
    ["1.2.3+build", "build metadata"],
    ["1.2.3-rc.1+build.5", "build metadata"],
    ["1.2.3+", "build metadata"],
    ["v1.2.3", "SemVer"],
    ["=1.2.3", "SemVer"],
    ["V1.2.3", "SemVer"],
    ["01.2.3", "SemVer"],
    ["1.02.3", "SemVer"],
    ["1.2.03", "SemVer"],
    ["1.2.3-01", "SemVer"],
    ["1.2.3-rc.00", "SemVer"],
    ["1.2", "SemVer"],
    ["1", "SemVer"],
    ["1.2.3.4", "SemVer"],
    ["1.2.3-", "SemVer"],
    ["1.2.3-a..b", "SemVer"],
    ["1.2.3-a_b", "SemVer"],
    [" 1.2.3", "SemVer"],
    ["1.2.3 ", "SemVer"],
    ["-1.2.3", "SemVer"],
    ["1.2.x", "SemVer"],
    ["", "is required"],
  ])("rejects %j (%s)", (version, reason) => {
    const result = parseVersion(version);
    expect(result).toHaveProperty("error");
    expect((result as { error: string }).error).toContain(reason);
  });

  it("rejects more than 64 characters and accepts exactly 64", () => {
    const at64 = `1.0.0-${"a".repeat(58)}`;
    expect(at64).toHaveLength(64);
    expect(parseVersion(at64)).toMatchObject({ version: at64, isPrerelease: true });
    const at65 = `1.0.0-${"a".repeat(59)}`;
    expect(parseVersion(at65)).toEqual({ error: "must be at most 64 characters" });
  });

  it("accepts the strict forms", () => {
    for (const version of ["0.0.0", "1.2.3", "10.20.30", "1.0.0-0", "1.0.0-0.3.7", "1.0.0-x-y-z.--", "1.1.2-prerelease"]) {
      expect(parseVersion(version), version).toMatchObject({ version });
    }
  });
});
