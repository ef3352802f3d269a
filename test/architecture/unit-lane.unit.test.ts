import { execFile, spawn } from "node:child_process";
import http from "node:http";
import net from "node:net";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../src/storage/database.js";
import { UNIT_LANE_REFUSAL } from "../support/unit-lane-guard.js";

/** The unit lane stays pure code: what would reach a socket, a process or a database fails loudly. */
describe("the unit lane", () => {
  it("refuses to listen, for a net or an HTTP server", () => {
    expect(() => net.createServer().listen(0, "127.0.0.1")).toThrow(UNIT_LANE_REFUSAL);
    expect(() => http.createServer().listen(0, "127.0.0.1")).toThrow(UNIT_LANE_REFUSAL);
  });

  it("refuses to connect, for a socket or fetch", async () => {
    expect(() => net.connect(5432, "127.0.0.1")).toThrow(UNIT_LANE_REFUSAL);
    const failure = await fetch("http://127.0.0.1:8080/").catch((error: Error) => error);
    expect(String((failure as Error & { cause?: unknown }).cause)).toContain(UNIT_LANE_REFUSAL);
  });

  it("refuses to start a process", () => {
    expect(() => spawn(process.execPath, ["--version"])).toThrow(UNIT_LANE_REFUSAL);
    expect(() => execFile(process.execPath, ["--version"])).toThrow(UNIT_LANE_REFUSAL);
  });

  it("refuses to open a database, embedded or on a server", async () => {
    await expect(openDatabase({ dataDir: "memory://" })).rejects.toThrow(UNIT_LANE_REFUSAL);
    // No connect timeout: pg's timer would outlive the refused connection and fire in a later file.
    const postgres = await openDatabase({
      databaseUrl: "postgres://postgres@127.0.0.1:5432/test",
      dataDir: "",
      databaseConnectTimeoutMs: 0,
    });
    try {
      await expect(postgres.ping(2_000)).rejects.toThrow(UNIT_LANE_REFUSAL);
    } finally {
      await postgres.close();
    }
  });
});
