import { afterAll, beforeAll, expect, it } from "vitest";
import { ENTRY_ACTION_COMMANDS, type EntryActionCommand } from "../../src/cli/commands/entry-action-table.js";
import { childEnv, REGISTRY_DEV_BIN, runCli, temporaryDirectory } from "../support/child-processes.js";
import { seededDataDirectory } from "../support/test-database.js";

/**
 * Asking for help must never act: `issuer-key rotate --help` once rotated the issuer's key and
 * `migrate --help` ran the migrations. Each command here would change the embedded database in
 * `dataDir` if it ran, so the directory staying empty proves it did not.
 */

let dataDir: { path: string; remove(): Promise<void> };
beforeAll(async () => {
  dataDir = await temporaryDirectory("help-never-acts-");
});
afterAll(() => dataDir.remove());

const env = () => childEnv({ DATABASE_URL: "", REGISTRY_DATA_DIR: `${dataDir.path}/data` });

it.each<[string[], string]>([
  [["issuer-key", "rotate", "--help"], "issuer-key rotate"],
  [["migrate", "--help"], "migrate"],
  [
    [
      "root-token",
      "create",
      "--subject",
      "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
      "--scopes",
      "registry.publish.skill",
      "-h",
    ],
    "root-token create",
  ],
  [["serve", "--help"], "serve"],
  [["key", "generate", "--out", "KEY_FILE", "--help"], "key generate"],
  [["publish", "manifest.json", "--help"], "publish"],
  [["revoke", "did:reg:main:skill:x@1.0.0", "--reason", "r", "-h"], "revoke"],
  [["login", "--root-token", "rt_x", "--help"], "login"],
  [["wait", "--help"], "wait"],
  [["search", "pdf", "--help"], "search"],
  [["logout", "--help"], "logout"],
  [["publish", "manifest.json", "--dry-run", "--help"], "publish"],
  [["mirror", "--from", "http://127.0.0.1:9", "--help"], "mirror"],
  ...ENTRY_ACTION_COMMANDS.map((command): [string[], string] => [actionArgs(command), command.name]),
  [["help"], ""],
  [["--help"], ""],
  [["-h"], ""],
])("%j shows the usage, exits 0 and runs nothing", async (given, command) => {
  // A key file asked for with --out would land in dataDir too.
  const args = given.map((word) => (word === "KEY_FILE" ? `${dataDir.path}/key.json` : word));
  const result = await runCli(args, env());
  expect(result.code, result.stderr).toBe(0);
  expect(result.stdout.split("\n")[0]).toMatch(new RegExp(`^Usage: registry ${command === "" ? "" : `${command} `}\\[options\\]`));
  const { readdir } = await import("node:fs/promises");
  expect(await readdir(dataDir.path)).toEqual([]);
});

/** A whole command line of a lifecycle or moderation command, every mandatory option given, then -h. */
function actionArgs(command: EntryActionCommand): string[] {
  const target = command.nameOnly ? "did:reg:main:skill:x" : "did:reg:main:skill:x@1.0.0";
  const options = command.options.filter((option) => option.mandatory).flatMap((option) => [option.long!, option.argChoices?.[0] ?? "r"]);
  return [command.name, target, ...options, "-h"];
}

it("lists the commands and the exit codes in the top-level help", async () => {
  const result = await runCli(["--help"], env());
  const actions = ENTRY_ACTION_COMMANDS.map((command) => command.name);
  for (const command of [
    "serve",
    "login",
    "publish",
    "resolve",
    "versions",
    "revoke",
    ...actions,
    "discover",
    "query",
    "search",
    "whoami",
    "logout",
    "completion",
    "wait",
  ]) {
    expect(result.stdout).toMatch(new RegExp(`^  ${command} `, "m"));
  }
  expect(result.stdout).toContain("Exit codes:");
});

it("prints the version with --version", async () => {
  const result = await runCli(["--version"], env());
  expect(result.code).toBe(0);
  expect(result.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
});

it("prints the same version from the development runner, which runs the sources through tsx", async () => {
  const [built, sources] = await Promise.all([runCli(["--version"], env()), runCli(["--version"], env(), undefined, REGISTRY_DEV_BIN)]);
  expect(sources.code, sources.stderr).toBe(0);
  expect(sources.stdout).toBe(built.stdout);
});

it("refuses an unknown command with exit code 2, naming it", async () => {
  const result = await runCli(["frobnicate"], env());
  expect(result.code).toBe(2);
  expect(result.stderr).toMatch(/unknown command 'frobnicate'/);
});

it("says in one line that a busy port is busy, and how to choose another", { timeout: 60_000 }, async () => {
  const net = await import("node:net");
  // The server opens its database before it listens: a copy of the migrated template skips initdb.
  const busyDataDir = await seededDataDirectory("help-never-acts-busy-");
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
  const port = (blocker.address() as import("node:net").AddressInfo).port;
  try {
    const result = await runCli(
      ["serve"],
      childEnv({ DATABASE_URL: "", REGISTRY_DATA_DIR: busyDataDir.path, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "silent" }),
    );
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(`registry: 127.0.0.1:${port} is already in use; set PORT (and HOST) to listen elsewhere`);
  } finally {
    blocker.close();
    await busyDataDir.remove();
  }
});
