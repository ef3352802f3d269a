import { describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../../src/errors.js";
import {
  CURSOR_ERRORS,
  DEFAULT_CURSOR_TTL_MS,
  MAX_CURSOR_LENGTH,
  createCursorCodec,
  cursorBinding,
  type CursorScalar,
} from "../../src/discovery/page-cursor.js";

const SECRET = "s".repeat(32);
const OTHER_SECRET = new Uint8Array(32).fill(7);
const T0 = Date.UTC(2026, 0, 1);
const BINDING = cursorBinding({ endpoint: "discover", conditions: [{ field: "name", op: "=", value: "x" }], order: "sequence DESC" });
const BASE64URL_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

function clockAt(start: number): { now: number; clock: () => number } {
  const state = { now: start, clock: () => state.now };
  return state;
}

/** The reason decode gave, so each test shows which check fired. */
function rejection(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidArgumentError);
    const violations = (error as InvalidArgumentError).violations;
    expect(violations).toHaveLength(1);
    expect(violations[0]?.field).toBe("cursor");
    return violations[0]?.description ?? "";
  }
  throw new Error("expected the cursor to be rejected");
}

describe("page cursor round trip", () => {
  const codec = createCursorCodec({ secret: SECRET, clock: () => T0 });
  const positions: CursorScalar[][] = [
    ["18446744073709551615"],
    ["2026-01-01T00:00:00.000Z", "did:entry:abc", "42"],
    [1.5, -3, 0, Number.MAX_SAFE_INTEGER],
    [null, "x", true, false],
    ['unicode ✓ "quotes" \\ ', ""],
    [],
  ];

  it.each(positions.map((p) => [JSON.stringify(p), p] as const))("keeps position %s", (_, position) => {
    const cursor = codec.encode({ binding: BINDING, position });
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(codec.decode(cursor, BINDING)).toEqual({ position });
  });

  it("keeps remaining, including zero", () => {
    for (const remaining of [0, 1, 9_980]) {
      const cursor = codec.encode({ binding: BINDING, position: ["7"], remaining });
      expect(codec.decode(cursor, BINDING)).toEqual({ position: ["7"], remaining });
    }
  });

  it("keeps the listing's total next to remaining, each independently optional", () => {
    const both = codec.encode({ binding: BINDING, position: ["7"], remaining: 3, total: 4_000_000_000 });
    expect(codec.decode(both, BINDING)).toEqual({ position: ["7"], remaining: 3, total: 4_000_000_000 });
    const totalOnly = codec.decode(codec.encode({ binding: BINDING, position: ["7"], total: 0 }), BINDING);
    expect(totalOnly).toEqual({ position: ["7"], total: 0 });
    expect(() => codec.encode({ binding: BINDING, position: [], total: 2 ** 32 })).toThrow(RangeError);
  });

  it("leaves remaining out when it was not given", () => {
    const decoded = codec.decode(codec.encode({ binding: BINDING, position: ["7"] }), BINDING);
    expect("remaining" in decoded).toBe(false);
  });

  it("carries nothing readable in the clear", () => {
    const cursor = codec.encode({ binding: BINDING, position: ["did:entry:secret-looking"] });
    expect(cursor).not.toContain("did");
  });

  it("refuses positions it could not carry faithfully", () => {
    expect(() => codec.encode({ binding: BINDING, position: [2 ** 63] })).toThrow(TypeError);
    expect(() => codec.encode({ binding: BINDING, position: [Number.NaN] })).toThrow(TypeError);
    expect(() => codec.encode({ binding: BINDING, position: [{} as unknown as CursorScalar] })).toThrow(TypeError);
    expect(() => codec.encode({ binding: BINDING, position: ["x".repeat(MAX_CURSOR_LENGTH)] })).toThrow(RangeError);
    expect(() => codec.encode({ binding: BINDING, position: [], remaining: -1 })).toThrow(RangeError);
  });
});

describe("page cursor rejection", () => {
  const codec = createCursorCodec({ secret: SECRET, clock: () => T0 });
  const cursor = codec.encode({ binding: BINDING, position: ["2026-01-01T00:00:00Z", "123456789012345678"], remaining: 50 });

  it("rejects a cursor from another query", () => {
    const other = cursorBinding({ endpoint: "discover", conditions: [{ field: "name", op: "=", value: "y" }], order: "sequence DESC" });
    expect(rejection(() => codec.decode(cursor, other))).toBe(CURSOR_ERRORS.binding);
    expect(CURSOR_ERRORS.binding).toBe("belongs to another query");
  });

  it("rejects every single-character change", () => {
    let checked = 0;
    for (let i = 0; i < cursor.length; i++) {
      for (const c of `${BASE64URL_ALPHABET}=.+/ `) {
        if (c === cursor[i]) continue;
        const changed = cursor.slice(0, i) + c + cursor.slice(i + 1);
        expect([CURSOR_ERRORS.malformed, CURSOR_ERRORS.signature]).toContain(rejection(() => codec.decode(changed, BINDING)));
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(cursor.length * 60);
  });

  it("rejects a flipped payload byte as a bad signature", () => {
    const bytes = Buffer.from(cursor, "base64url");
    bytes[10] = (bytes[10] ?? 0) ^ 1;
    expect(rejection(() => codec.decode(bytes.toString("base64url"), BINDING))).toBe(CURSOR_ERRORS.signature);
  });

  it("rejects truncated and extended cursors", () => {
    for (let cut = 1; cut < cursor.length; cut++) {
      expect([CURSOR_ERRORS.malformed, CURSOR_ERRORS.signature]).toContain(
        rejection(() => codec.decode(cursor.slice(0, cursor.length - cut), BINDING)),
      );
    }
    for (const suffix of ["A", "AA", "AAA", "AAAA", "=", "=="]) {
      expect([CURSOR_ERRORS.malformed, CURSOR_ERRORS.signature]).toContain(rejection(() => codec.decode(cursor + suffix, BINDING)));
    }
  });

  it("rejects garbage as malformed", () => {
    for (const garbage of ["", " ", "not a cursor", "%%%", "abc", "A", "eyJ0eXAiOiJKV1QifQ", `${cursor}\n`]) {
      expect(rejection(() => codec.decode(garbage, BINDING))).toBe(CURSOR_ERRORS.malformed);
    }
    expect(rejection(() => codec.decode(42 as unknown as string, BINDING))).toBe(CURSOR_ERRORS.malformed);
  });

  it("rejects an over-long cursor before decoding it, without echoing it", () => {
    const long = "A".repeat(MAX_CURSOR_LENGTH + 1);
    const error = (() => {
      try {
        codec.decode(long, BINDING);
      } catch (e) {
        return e as Error;
      }
      throw new Error("expected rejection");
    })();
    expect(rejection(() => codec.decode(long, BINDING))).toBe(CURSOR_ERRORS.tooLong);
    expect(error.message).not.toContain("AAAA");
    // At exactly the limit, shape checks pass and the signature is what fails.
    expect(rejection(() => codec.decode("A".repeat(MAX_CURSOR_LENGTH), BINDING))).toBe(CURSOR_ERRORS.signature);
  });

  it("never echoes the cursor in a tamper rejection", () => {
    const changed = cursor.slice(0, 20) + (cursor[20] === "A" ? "B" : "A") + cursor.slice(21);
    try {
      codec.decode(changed, BINDING);
    } catch (e) {
      expect((e as Error).message).not.toContain(changed.slice(0, 12));
      return;
    }
    throw new Error("expected rejection");
  });
});

describe("page cursor expiry", () => {
  it("accepts a cursor until just before its ttl and rejects it from then on", () => {
    const time = clockAt(T0);
    const codec = createCursorCodec({ secret: SECRET, clock: time.clock });
    const cursor = codec.encode({ binding: BINDING, position: ["1"] });
    time.now = T0 + DEFAULT_CURSOR_TTL_MS - 1;
    expect(codec.decode(cursor, BINDING)).toEqual({ position: ["1"] });
    time.now = T0 + DEFAULT_CURSOR_TTL_MS;
    expect(rejection(() => codec.decode(cursor, BINDING))).toBe(CURSOR_ERRORS.expired);
    time.now = T0 + 10 * DEFAULT_CURSOR_TTL_MS;
    expect(rejection(() => codec.decode(cursor, BINDING))).toBe(CURSOR_ERRORS.expired);
  });

  it("honours a custom ttl", () => {
    const time = clockAt(T0);
    const codec = createCursorCodec({ secret: SECRET, clock: time.clock, ttlMs: 1000 });
    const cursor = codec.encode({ binding: BINDING, position: ["1"] });
    time.now = T0 + 999;
    expect(codec.decode(cursor, BINDING).position).toEqual(["1"]);
    time.now = T0 + 1000;
    expect(rejection(() => codec.decode(cursor, BINDING))).toBe(CURSOR_ERRORS.expired);
  });

  it("rejects a cursor issued more than a minute in the future, tolerating replica clock skew", () => {
    const issuer = createCursorCodec({ secret: SECRET, clock: () => T0 });
    const cursor = issuer.encode({ binding: BINDING, position: ["1"] });
    const skewed = createCursorCodec({ secret: SECRET, clock: () => T0 - 60_000 });
    expect(skewed.decode(cursor, BINDING).position).toEqual(["1"]);
    const behind = createCursorCodec({ secret: SECRET, clock: () => T0 - 60_001 });
    expect(rejection(() => behind.decode(cursor, BINDING))).toBe(CURSOR_ERRORS.future);
  });
});

describe("page cursor secrets", () => {
  const issuedWithOld = createCursorCodec({ secret: OTHER_SECRET, clock: () => T0 }).encode({ binding: BINDING, position: ["9"] });

  it("rejects a cursor signed with another secret", () => {
    const codec = createCursorCodec({ secret: SECRET, clock: () => T0 });
    expect(rejection(() => codec.decode(issuedWithOld, BINDING))).toBe(CURSOR_ERRORS.signature);
  });

  it("accepts it after rotation through previousSecrets, and signs new cursors with the new secret", () => {
    const rotated = createCursorCodec({ secret: SECRET, previousSecrets: [OTHER_SECRET], clock: () => T0 });
    expect(rotated.decode(issuedWithOld, BINDING)).toEqual({ position: ["9"] });
    const fresh = rotated.encode({ binding: BINDING, position: ["10"] });
    const oldOnly = createCursorCodec({ secret: OTHER_SECRET, clock: () => T0 });
    expect(rejection(() => oldOnly.decode(fresh, BINDING))).toBe(CURSOR_ERRORS.signature);
  });

  it("treats a string secret as its UTF-8 bytes", () => {
    const fromString = createCursorCodec({ secret: SECRET, clock: () => T0 });
    const fromBytes = createCursorCodec({ secret: Buffer.from(SECRET, "utf8"), clock: () => T0 });
    expect(fromBytes.decode(fromString.encode({ binding: BINDING, position: ["1"] }), BINDING).position).toEqual(["1"]);
  });

  it("refuses short secrets and bad ttls at construction", () => {
    expect(() => createCursorCodec({ secret: "s".repeat(31) })).toThrow(/at least 32 bytes/);
    expect(() => createCursorCodec({ secret: new Uint8Array(31) })).toThrow(/at least 32 bytes/);
    expect(() => createCursorCodec({ secret: SECRET, previousSecrets: ["short"] })).toThrow(/previousSecrets\[0\].*at least 32 bytes/);
    expect(() => createCursorCodec({ secret: SECRET, ttlMs: 0 })).toThrow(/ttlMs/);
  });
});

describe("cursorBinding", () => {
  it("is stable under key order at every depth", () => {
    const a = cursorBinding({ order: [{ col: "sequence", dir: "DESC" }], conditions: [{ field: "name", op: "=", value: { b: 1, a: 2 } }] });
    const b = cursorBinding({ conditions: [{ value: { a: 2, b: 1 }, op: "=", field: "name" }], order: [{ dir: "DESC", col: "sequence" }] });
    expect(a).toBe(b);
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("differs for a different order or different conditions", () => {
    const base = { conditions: [{ field: "name", op: "=", value: "x" }], order: "sequence DESC" };
    const bindings = new Set([
      cursorBinding(base),
      cursorBinding({ ...base, order: "sequence ASC" }),
      cursorBinding({ ...base, conditions: [{ field: "name", op: "=", value: "y" }] }),
      cursorBinding({ ...base, conditions: [{ field: "name", op: "!=", value: "x" }] }),
      cursorBinding({ ...base, conditions: [{ field: "name", op: "=", value: 1 }] }),
      cursorBinding({ ...base, conditions: [] }),
      cursorBinding({ ...base, limit: 10 }),
    ]);
    expect(bindings.size).toBe(7);
  });

  it("ignores undefined members as JSON does", () => {
    expect(cursorBinding({ a: 1, b: undefined })).toBe(cursorBinding({ a: 1 }));
  });
});
