import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createRegistryClient } from "../../src/sdk/node.js";
import { encodePrivateKey, generateKeyPair, type KeyPair } from "../../src/sdk/index.js";
import { childEnv, runCli, temporaryDirectory } from "../support/child-processes.js";
import { startPublishingRegistry, type PublishingSetup, type TestPublisher } from "../support/registry-fixture.js";

/**
 * The lifecycle and moderation commands (docs/cli.md, "After publishing"), run as
 * `node bin/registry.js ...` against a running registry: a publisher's sequence, then a
 * moderator's. Each CLI run is a node process compiling TypeScript, so the cases are few and long.
 */

const CASE_MS = 240_000;
const name = `actions-${randomBytes(4).toString("hex")}`;
const did = `did:reg:main:skill:${name}`;

let setup: PublishingSetup;
let scratch: { path: string; remove(): Promise<void> };
let publisher: TestPublisher;
let moderator: KeyPair;

beforeAll(async () => {
  setup = await startPublishingRegistry(["registry.publish.skill"]);
  publisher = setup.publisher;
  moderator = await generateKeyPair();
  scratch = await temporaryDirectory("cli-actions-");
  const client = createRegistryClient({ baseUrl: setup.registry.url });
  try {
    for (const version of ["1.0.0", "1.1.0"]) {
      const { signature: _, ...fields } = await publisher.entry(name, version);
      await client.publish(fields as never, { key: publisher.keys, token: setup.token });
    }
  } finally {
    client.close();
  }
}, CASE_MS);

afterAll(async () => {
  await setup?.close();
  await scratch?.remove();
});

/** The CLI as `who`: its own config directory (its login) and its key. */
function cli(who: "publisher" | "moderator", args: string[]) {
  const keys = who === "publisher" ? publisher.keys : moderator;
  return runCli(
    args,
    childEnv({
      REGISTRY_URL: setup.registry.url,
      REGISTRY_CONFIG_DIR: join(scratch.path, who),
      REGISTRY_SIGNING_KEY: encodePrivateKey(keys.privateKey),
      REGISTRY_ROOT_TOKEN: undefined,
    }),
  );
}

it(
  "a publisher deprecates, yanks, archives and undoes each, resolve says so on stderr, and moderation is refused",
  async () => {
    const root = await setup.registry.rootToken(publisher.did, ["registry.publish.skill"]);
    expect((await cli("publisher", ["login", "--root-token", root])).code).toBe(0);

    const deprecated = await cli("publisher", ["deprecate", `${did}@1.0.0`, "--reason", "use 1.1.0", "--replacement", `${did}@1.1.0`]);
    expect([deprecated.code, deprecated.stdout, deprecated.stderr]).toEqual([
      0,
      `deprecated ${did}@1.0.0 (replacement ${did}@1.1.0)\n`,
      "",
    ]);

    const yanked = await cli("publisher", ["yank", `${did}@1.0.0`, "--reason", "broken build", "--json"]);
    expect(yanked.code, yanked.stderr).toBe(0);
    const body = JSON.parse(yanked.stdout) as { entries: Record<string, any>[] };
    expect(Object.keys(body)).toEqual(["entries"]);
    expect(body.entries).toMatchObject([
      {
        entryDid: `${did}@1.0.0`,
        status: "yanked",
        deprecated: true,
        deprecation: { reason: "use 1.1.0", replacement: `${did}@1.1.0`, by: publisher.did },
        yank: { reason: "broken build", by: publisher.did },
      },
    ]);
    const { at } = body.entries[0]!.yank as { at: string };

    const resolved = await cli("publisher", ["resolve", `${did}@1.0.0`]);
    expect(resolved.code, resolved.stderr).toBe(0);
    expect(resolved.stdout).toMatch(new RegExp(`^${did}@1\\.0\\.0  yanked\\n`));
    expect(resolved.stdout).toContain(`  yanked      ${at}: broken build\n`);
    expect(resolved.stdout).toMatch(/^ {2}deprecated {2}\S+Z: use 1\.1\.0 \(replacement \S+@1\.1\.0\)$/m);
    expect(resolved.stderr).toBe(
      `registry: ${did}@1.0.0 is deprecated: use 1.1.0 (replacement ${did}@1.1.0)\nregistry: ${did}@1.0.0 is yanked: broken build\n`,
    );

    // Undoing what is not in place (1.1.0 was never deprecated) succeeds and changes nothing.
    const undeprecated = await cli("publisher", ["undeprecate", did]);
    expect(undeprecated.code, undeprecated.stderr).toBe(0);
    expect(lines(undeprecated.stdout)).toEqual([`undeprecated ${did}@1.0.0 (status yanked)`, `undeprecated ${did}@1.1.0 (status active)`]);
    const unyanked = await cli("publisher", ["unyank", `${did}@1.0.0`, "--reason", "fixed upstream"]);
    expect([unyanked.code, unyanked.stdout]).toEqual([0, `unyanked ${did}@1.0.0 (status active)\n`]);

    const [versioned, notAdmin] = await Promise.all([
      cli("publisher", ["archive", `${did}@1.0.0`, "--reason", "done"]),
      cli("publisher", ["quarantine", `${did}@1.0.0`, "--policy", "spam", "--note", "mine", "--json"]),
    ]);
    expect([versioned.code, versioned.stdout, versioned.stderr]).toEqual([
      2,
      "",
      `registry: archive acts on a name: give the bare DID ${did}, without @version\n`,
    ]);
    expect([notAdmin.code, notAdmin.stdout]).toEqual([4, ""]);
    expect(JSON.parse(notAdmin.stderr)).toMatchObject({ error: { code: "permission_denied" } });

    const archived = await cli("publisher", ["archive", did, "--reason", "moved to another name"]);
    expect(archived.code, archived.stderr).toBe(0);
    expect(lines(archived.stdout)).toEqual([`archived ${did}@1.0.0 (status active)`, `archived ${did}@1.1.0 (status active)`]);
    const unarchived = await cli("publisher", ["unarchive", did, "--json"]);
    expect(unarchived.code, unarchived.stderr).toBe(0);
    expect(JSON.parse(unarchived.stdout).entries.map((entry: Record<string, unknown>) => [entry.status, entry.archived])).toEqual([
      ["active", undefined],
      ["active", undefined],
    ]);
  },
  CASE_MS,
);

it(
  "a moderator with registry.admin quarantines, lifts it and removes, and resolve shows the removal",
  async () => {
    const root = await setup.registry.rootToken(moderator.did, ["registry.admin"]);
    expect((await cli("moderator", ["login", "--root-token", root, "--scopes", "registry.admin"])).code).toBe(0);

    const quarantined = await cli("moderator", ["quarantine", `${did}@1.1.0`, "--policy", "malware", "--note", "reported"]);
    expect([quarantined.code, quarantined.stdout, quarantined.stderr]).toEqual([0, `quarantined ${did}@1.1.0\n`, ""]);
    const lifted = await cli("moderator", ["unquarantine", `${did}@1.1.0`, "--note", "a false report"]);
    expect([lifted.code, lifted.stdout]).toEqual([0, `unquarantined ${did}@1.1.0 (status active)\n`]);

    const removed = await cli("moderator", ["remove", `${did}@1.0.0`, "--policy", "spam", "--note", "link farm", "--json"]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(JSON.parse(removed.stdout)).toMatchObject({
      entries: [{ entryDid: `${did}@1.0.0`, status: "removed", removal: { policy: "spam", note: "link farm", by: moderator.did } }],
    });

    const resolved = await cli("publisher", ["resolve", `${did}@1.0.0`]);
    expect(resolved.code, resolved.stderr).toBe(0);
    expect(resolved.stdout).toMatch(new RegExp(`^${did}@1\\.0\\.0  removed\\n`));
    expect(resolved.stdout).not.toContain("description");
    expect(resolved.stdout).toMatch(/^ {2}removed {5}\S+Z: link farm \(policy spam\)$/m);
    expect(resolved.stderr).toBe(`registry: ${did}@1.0.0 is removed: link farm (policy spam)\n`);
  },
  CASE_MS,
);

function lines(text: string): string[] {
  return text
    .split("\n")
    .filter((line) => line !== "")
    .sort();
}
