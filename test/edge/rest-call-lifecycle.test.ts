import { getEventListeners } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRegistry } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createRestTranscoder, servedService } from "../../src/edge/rest-transcoder.js";
import { RegistryService } from "../../gen/registry/v1/registry_service_pb.js";

// The transcoder under test runs a minimal implementation of the service; what is checked is the
// transcoder's own handling of each call, through real HTTP requests.
const shutdown = new AbortController();
let server: Server;
let url: string;

beforeAll(async () => {
  const transcoder = createRestTranscoder({
    services: [
      servedService(RegistryService, {
        resolveEntry: (request) => {
          if (request.did.endsWith("missing")) throw new ConnectError("no entry", Code.NotFound);
          return { entry: { entryDid: request.did, version: "1.0.0" } };
        },
      }),
    ],
    interceptors: [],
    registry: createRegistry(),
    maxBodyBytes: 1024,
    shutdownSignal: shutdown.signal,
  });
  server = createServer((req, res) => void transcoder.handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

it("leaves nothing listening on the shutdown signal once calls finish, failed ones included", async () => {
  for (let round = 0; round < 100; round++) {
    const ok = await fetch(`${url}/v1/entries/did:reg:main:skill:a${round}`);
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { entryDid: string }).entryDid).toBe(`did:reg:main:skill:a${round}`);
    const missing = await fetch(`${url}/v1/entries/did:reg:main:skill:missing`);
    expect(missing.status).toBe(404);
    await missing.json();
  }
  expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(0);
});
