import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createExplorer } from "../../src/edge/explorer/explorer-pages.js";
import { loadExplorerFiles } from "../../src/edge/explorer/explorer-files.js";
import { exchangeFromNode } from "../../src/transport/http-exchange.js";

/**
 * A registry run from its sources before anything built the explorer: its pages say how to build
 * it, and leave every other path to the API.
 */

let directory: string;
let server: Server;
let url: string;
const passedOn: string[] = [];

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), "explorer-unbuilt-"));
  const explorer = createExplorer({
    files: await loadExplorerFiles(directory),
    logKey: "example.test/log+00000000+AQ",
    lookup: { entryExists: async () => true, publisherExists: async () => true },
    log: () => {},
  });
  server = createServer((req, res) => {
    const exchange = exchangeFromNode(req, res);
    if (explorer.serve(exchange)) return;
    passedOn.push(exchange.path);
    exchange.respond(404, { "content-type": "text/plain" }, Buffer.from("api\n"));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await rm(directory, { recursive: true, force: true });
});

it("answers a page with 503 and how to build the explorer, never a 500", async () => {
  for (const path of ["/", "/log", "/entries/did:reg:main:skill:x"]) {
    const response = await fetch(url + path);
    expect(response.status, path).toBe(503);
    expect(await response.text()).toContain("The explorer is not built. Run `npm run build`");
  }
  expect((await fetch(`${url}/assets/index-abc.js`)).status).toBe(404);
  await fetch(`${url}/v1/entries/x`);
  expect(passedOn).toEqual(["/v1/entries/x"]);
});
