import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readdir, readFile, writeFile } from "node:fs/promises";
import net from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PROJECT_ROOT, temporaryDirectory } from "../support/child-processes.js";
import { copyWorkingTree, untrackedFiles, walkthroughScript } from "./walkthrough-script.js";

/**
 * README.md's walkthrough, pasted whole into a fresh bash on a fresh clone, twice: the second paste,
 * in the same directory, must still work (same key, nothing locked out). The script is the
 * walkthrough's `sh` blocks in order (walkthroughScript says which blocks). It runs with plain
 * `bash`, not `bash -e`, as a paste does: a failing step does not stop it, so each step is judged
 * by its output in the transcript. The walkthrough uses port 8080 as written, so that port must be free.
 */

const PORT = 8080;
/** The first paste compiles dist/ (npm start), on a machine other tests share. */
const PASTE_MS = 6 * 60_000;

const ENTRY = "did:reg:main:skill:web-search";

interface Paste {
  readonly code: number | null;
  readonly transcript: string;
  /** Whether any process the paste started (the server, npm) was still alive when bash exited. */
  readonly leftRunning: boolean;
  /** The server's log, which the walkthrough sends to registry.log. */
  readonly serverLog: string;
}

let workspace: { path: string; remove(): Promise<void> };
let clone: string;
let home: string;
let scriptPath: string;
let copied: string[];
let running: number | undefined;

beforeAll(async () => {
  if (!(await portIsFree(PORT))) {
    throw new Error(
      `port ${PORT} is in use: the README walkthrough starts the registry on it, so stop whatever listens there and run this test again`,
    );
  }
  workspace = await temporaryDirectory("readme-walkthrough-");
  clone = join(workspace.path, "open-registry");
  home = join(workspace.path, "home");
  copied = await copyWorkingTree(PROJECT_ROOT, clone);
  scriptPath = join(workspace.path, "walkthrough.sh");
  await writeFile(scriptPath, walkthroughScript(await readFile(join(clone, "README.md"), "utf8")));
}, 60_000);

afterAll(async () => {
  // A paste that failed midway may have left its server running: it is in bash's process group.
  if (running !== undefined) killGroup(running);
  await workspace?.remove();
});

let firstDid = "";

it(
  "runs pasted whole into a fresh shell on a fresh clone: every step shows its result, and the server is stopped",
  async () => {
    const paste = await pasteWalkthrough();
    const { transcript } = paste;
    await expectCleanRun(paste);

    expect(transcript).toContain('"file": "publisher.json"');
    const did = publisherDid(transcript);
    firstDid = did;
    expect(transcript).toMatch(new RegExp(`^created root token rt_[0-9a-f]{16} for ${did} \\(registry\\.publish\\.skill\\)$`, "m"));
    expect(transcript).toContain(`logged in to http://127.0.0.1:${PORT} as ${did} (registry.publish.skill)`);
    expect(transcript).toContain(`published ${ENTRY}@1.2.0 (sequence 1)\n`);

    // resolve (latest, then @1.2.0): both the active 1.2.0, with the hash of the --content directory.
    const contentHash = await directoryHash(join(clone, "web-search", "dist"));
    const active = `${ENTRY}@1.2.0  active\n  publisher   ${did}\n  published   `;
    expect(transcript.split(active)).toHaveLength(3);
    expect(transcript).toContain(`  content     ${contentHash}\n  description Searches the web\n  tags        search, web\n`);
    expect(transcript).toMatch(/^1\.2\.0\tactive\t\S+Z$/m);

    // Deprecated and yanked: resolve shows both marks, and says them on stderr (which a paste's
    // transcript interleaves with stdout, so each is looked for on its own).
    expect(transcript).toContain(`deprecated ${ENTRY}@1.2.0\nyanked ${ENTRY}@1.2.0\n`);
    expect(transcript).toContain(`${ENTRY}@1.2.0  yanked\n  publisher   ${did}\n`);
    expect(transcript.match(/^ {2}deprecated {2}\S+Z: 1\.2\.1 ranks better$/gm)).toHaveLength(2);
    expect(transcript).toMatch(/^ {2}yanked {6}\S+Z: breaks on empty queries$/m);
    expect(transcript).toContain(`registry: ${ENTRY}@1.2.0 is yanked: breaks on empty queries\n`);
    expect(transcript).toContain(`unyanked ${ENTRY}@1.2.0 (status deprecated)\n`);

    expect(transcript).toContain(`\nrevoked ${ENTRY}@1.2.0\n`);
    expect(transcript).toContain(`${ENTRY}@1.2.0  revoked\n  publisher   ${did}\n`);
    expect(transcript).toMatch(/^ {2}revoked {5}\S+Z: superseded by 1\.2\.1$/m);
    expect(transcript).toContain(`registry: ${ENTRY}@1.2.0 is revoked: superseded by 1.2.1\n`);

    // discover --tag search finds no entry (its one match is revoked) and says why on stderr;
    // --include-revoked shows it; the query naming status finds it too.
    const afterRevocation = transcript.slice(transcript.lastIndexOf("superseded by 1.2.1\n") + "superseded by 1.2.1\n".length);
    expect(afterRevocation.slice(0, afterRevocation.indexOf("{"))).toBe(
      `no active entries match (revoked entries are hidden: --include-revoked shows them)\n${ENTRY}@1.2.0\trevoked\tSearches the web\n${ENTRY}@1.2.0\trevoked\n`,
    );

    const [created, latest, version, versions, revoked, discovered, queried, jwks, ...rest] = jsonLines(transcript);
    expect(rest).toEqual([]);
    expect(created).toMatchObject({ entryDid: `${ENTRY}@1.3.0`, publisherDid: did, sequence: "2", status: "active", isLatest: true });
    expect(created?.signature).toMatch(/^ed25519:/);
    expect(latest).toMatchObject({ entryDid: `${ENTRY}@1.3.0`, status: "active" });
    expect(version).toEqual(latest);
    expect(versions).toMatchObject({
      versions: [
        { version: "1.3.0", status: "active" },
        { version: "1.2.0", status: "revoked" },
      ],
    });
    expect(revoked).toMatchObject({ entries: [{ entryDid: `${ENTRY}@1.3.0`, status: "revoked", revocationReason: "withdrawn" }] });
    expect(discovered).toMatchObject({ total: 2, entries: [{ entryDid: `${ENTRY}@1.3.0` }, { entryDid: `${ENTRY}@1.2.0` }] });
    expect(queried).toEqual({
      entries: [
        { entryDid: `${ENTRY}@1.3.0`, version: "1.3.0" },
        { entryDid: `${ENTRY}@1.2.0`, version: "1.2.0" },
      ],
    });
    expect(jwks).toMatchObject({ keys: [{ kty: "OKP", crv: "Ed25519", alg: "EdDSA" }] });

    // buf curl's gRPC resolve, pretty-printed: the latest, 1.3.0, now revoked.
    expect(transcript).toMatch(/"entry": \{\n\s+"entryDid": "did:reg:main:skill:web-search@1\.3\.0",[\s\S]*"status": "revoked"/);

    expect(untrackedFiles(clone, copied)).toEqual([]);
  },
  PASTE_MS,
);

it(
  "runs pasted again in the same directory: same key, a fresh root token works, publish says the version exists, resolve still works",
  async () => {
    if (firstDid === "") throw new Error("the first paste did not get as far as a DID");
    const paste = await pasteWalkthrough();
    const { transcript } = paste;
    await expectCleanRun(paste);

    expect(transcript).not.toContain('"file": "publisher.json"');
    expect(publisherDid(transcript)).toBe(firstDid);
    expect(transcript).toMatch(new RegExp(`^created root token rt_[0-9a-f]{16} for ${firstDid} `, "m"));
    expect(transcript).toContain(`logged in to http://127.0.0.1:${PORT} as ${firstDid}`);
    expect(transcript).toContain(`registry: already_exists: ${ENTRY}@1.2.0 was already published`);
    expect(transcript).toContain(`${ENTRY}@1.2.0  revoked\n  publisher   ${firstDid}\n`);
    // A revoked version may still be deprecated and yanked; its status stays revoked.
    expect(transcript).toContain(`yanked ${ENTRY}@1.2.0 (status revoked)\n`);
    expect(transcript).toContain(`unyanked ${ENTRY}@1.2.0 (status revoked)\n`);
    expect(transcript).toMatch(/^1\.3\.0\trevoked\t\S+Z\n1\.2\.0\trevoked\t\S+Z$/m);

    const [created, latest] = jsonLines(transcript);
    expect(created).toMatchObject({ code: "already_exists" });
    expect(latest).toMatchObject({ entryDid: `${ENTRY}@1.3.0`, status: "revoked" });

    expect(untrackedFiles(clone, copied)).toEqual([]);
  },
  PASTE_MS,
);

/** Runs the walkthrough as one pasted script in the clone, with a clean environment: PATH and a HOME of its own. */
async function pasteWalkthrough(): Promise<Paste> {
  const bash = spawn("bash", [scriptPath], {
    cwd: clone,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home },
    // Its own process group, so that everything it starts can be found, and killed, by the group id.
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  running = bash.pid;
  let transcript = "";
  bash.stdout.setEncoding("utf8").on("data", (chunk: string) => (transcript += chunk));
  bash.stderr.setEncoding("utf8").on("data", (chunk: string) => (transcript += chunk));
  const code = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => killGroup(bash.pid!), PASTE_MS - 10_000);
    bash.once("close", (exitCode) => {
      clearTimeout(timer);
      resolve(exitCode);
    });
  });
  const leftRunning = groupIsAlive(bash.pid!);
  if (!leftRunning) running = undefined;
  const serverLog = await readFile(join(clone, "registry.log"), "utf8").catch(() => "(no registry.log)");
  return { code, transcript, leftRunning, serverLog };
}

/** Nothing failed loudly, the script ended, and it left no server behind. */
async function expectCleanRun(paste: Paste): Promise<void> {
  const context = `transcript:\n${paste.transcript}\nregistry.log:\n${paste.serverLog}`;
  expect(paste.code, context).toBe(0);
  expect(paste.transcript, context).not.toMatch(/\berror\b/i);
  expect(paste.transcript, context).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m);
  expect(paste.serverLog, context).not.toMatch(/"level":"(error|fatal)"|npm error|^\s+at .+:\d+:\d+\)?$/m);
  expect(paste.serverLog, context).toContain('"msg":"shutting down"');
  expect(paste.leftRunning, context).toBe(false);
  expect(await portIsFree(PORT), `port ${PORT} is still in use after the walkthrough stopped its server`).toBe(true);
}

function publisherDid(transcript: string): string {
  const did = /^did:key:z6Mk[1-9A-HJ-NP-Za-km-z]+$/m.exec(transcript)?.[0];
  if (did === undefined) throw new Error(`the walkthrough printed no did:key line:\n${transcript}`);
  return did;
}

/** The one-line JSON documents curl printed, in order. */
function jsonLines(transcript: string): Record<string, unknown>[] {
  return transcript
    .split("\n")
    .filter((line) => line.startsWith('{"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** contentHash of a directory of files (no subdirectories), as docs/cli.md defines it, computed here independently. */
async function directoryHash(directory: string): Promise<string> {
  const names = (await readdir(directory)).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const hash = createHash("sha256");
  for (const name of names) {
    const bytes = await readFile(join(directory, name));
    hash.update(`${name}\0${bytes.length}\0`).update(bytes);
  }
  return `sha256:${hash.digest("hex")}`;
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

function groupIsAlive(groupId: number): boolean {
  try {
    process.kill(-groupId, 0);
    return true;
  } catch {
    return false;
  }
}

function killGroup(groupId: number): void {
  try {
    process.kill(-groupId, "SIGKILL");
  } catch {
    // Already gone.
  }
}
