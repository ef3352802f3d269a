import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createExplorer } from "../../src/edge/explorer/explorer-pages.js";
import { loadExplorerFiles } from "../../src/edge/explorer/explorer-files.js";
import { exchangeFromNode } from "../../src/transport/http-exchange.js";
import { temporaryDirectory } from "../support/child-processes.js";

/**
 * The explorer as a registry run from its sources serves it before anything built it (an empty
 * build directory), over HTTP: its pages say how to build it, and every other path is left to the
 * API. No lookup is reached without a build, so they answer yes.
 */

let directory: { path: string; remove(): Promise<void> } | undefined;
let server: Server | undefined;
let url: string;
const passedOn: string[] = [];

beforeAll(async () => {
  directory = await temporaryDirectory("explorer-unbuilt-");
  const explorer = createExplorer({
    files: await loadExplorerFiles(directory.path),
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
  const listening = server;
  await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
});

afterAll(async () => {
  const open = server;
  if (open !== undefined) await new Promise((resolve) => open.close(resolve));
  await directory?.remove();
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
