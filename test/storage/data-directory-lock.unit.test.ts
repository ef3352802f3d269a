import { describe, expect, it } from "vitest";
import { parseLock } from "../../src/storage/data-directory-lock.js";

/** What a lock file's text says about its holder: this build's JSON, an older build's bare pid, or nothing. */
describe("parseLock", () => {
  it("reads an older build's bare pid", () => {
    expect(parseLock("4242\n")).toEqual({ pid: 4242 });
  });

  it("reads this build's JSON, keeping only the members it knows, as text", () => {
    const text = JSON.stringify({
      pid: 7,
      hostname: "registry-1",
      bootId: "3fe024fa-8062-4980-85ed-7c076997a851",
      pidNamespace: "pid:[4026531836]",
      startTicks: "114811",
      since: "2026-11-27T12:08:56.313Z",
      extra: "ignored",
    });
    expect(parseLock(text)).toEqual({
      pid: 7,
      hostname: "registry-1",
      bootId: "3fe024fa-8062-4980-85ed-7c076997a851",
      pidNamespace: "pid:[4026531836]",
      startTicks: "114811",
      since: "2026-11-27T12:08:56.313Z",
    });
    expect(parseLock(JSON.stringify({ pid: 7, hostname: 3, startTicks: 114811 }))).toEqual({
      pid: 7,
      hostname: undefined,
      bootId: undefined,
      pidNamespace: undefined,
      startTicks: undefined,
      since: undefined,
    });
  });

  it("takes anything else for a lock that names no holder (pid 0), which a start takes over", () => {
    for (const text of ["", "\n", "not a lock", "-12", "12.5", '{"pid":-1}', '{"pid":"12"}', '{"hostname":"h"}', "[1]", '{"pid":1e400}'])
      expect(parseLock(text), JSON.stringify(text)).toEqual({ pid: 0 });
  });
});
