import childProcess from "node:child_process";
import { syncBuiltinESMExports } from "node:module";
import net from "node:net";
import { vi } from "vitest";

/**
 * Setup file of the unit lane (vitest.config.ts): a unit test runs pure code, so opening a socket
 * (a server, an HTTP request, a Postgres or Redis client), starting a process or an embedded
 * database throws here instead of slowing the lane down unnoticed.
 */

export const UNIT_LANE_REFUSAL = "a unit test (*.unit.test.ts) may not";

function refuse(what: string): never {
  throw new Error(`${UNIT_LANE_REFUSAL} ${what}: name the file *.test.ts to run it as an integration test`);
}

net.Server.prototype.listen = function listen(): never {
  refuse("listen on a socket");
};
net.Socket.prototype.connect = function connect(): never {
  refuse("open a connection");
};

const PROCESS_STARTERS = ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"] as const;
for (const name of PROCESS_STARTERS) {
  (childProcess as unknown as Record<string, unknown>)[name] = () => refuse(`start a process (child_process.${name})`);
}
// Named imports of a builtin (`import { spawn } from "node:child_process"`) see the change only after this.
syncBuiltinESMExports();

vi.mock("@electric-sql/pglite", () => {
  class RefusedPGlite {
    constructor() {
      refuse("start an embedded database (PGlite)");
    }
    static create(): never {
      refuse("start an embedded database (PGlite)");
    }
  }
  return { PGlite: RefusedPGlite };
});
