import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import type { Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { createRequestPipeline } from "../../src/edge/request-pipeline.js";
import { createRestTranscoder } from "../../src/edge/rest-transcoder.js";
import { unaryMethodsByPath, type ServedService } from "../../src/edge/served-services.js";
import { createUnaryInvoker } from "../../src/transport/unary-invoker.js";
import { toConnectError } from "../../src/edge/error-mapping.js";
import { createRegistryMessageCodec } from "../../src/edge/rpc/message-codec.js";

/**
 * The registry's protocol edge (request pipeline, unary invoker, REST transcoder, Connect adapter)
 * around service implementations a test supplies, served by plain node servers: HTTP/1.1 on one
 * port, h2c on another. For tests of the edge's own behaviour (cancellation, deadlines) that
 * need an implementation that waits or watches its signal, which the real registry has no reason
 * to have. The real registry's edge is this same code, tested through startTestRegistry.
 */
export interface EdgeTestServer {
  /** http://127.0.0.1:<port> of the HTTP/1.1 server. */
  readonly http1Url: string;
  /** http://127.0.0.1:<port> of the h2c server. */
  readonly http2Url: string;
  readonly shutdown: AbortController;
  close(): Promise<void>;
}

export async function startEdgeTestServer(
  services: readonly ServedService[],
  options: { maxBodyBytes?: number; interceptors?: Interceptor[] } = {},
): Promise<EdgeTestServer> {
  const shutdown = new AbortController();
  const maxBodyBytes = options.maxBodyBytes ?? 64 * 1024;
  const log = () => {};
  const interceptors = options.interceptors ?? [];
  const invoke = createUnaryInvoker({ interceptors, shutdownSignal: shutdown.signal, onUnexpectedError: log });
  const adapter = connectNodeAdapter({
    routes: (router) => {
      for (const { service, impl } of services) router.service(service, impl as never);
    },
    interceptors,
    readMaxBytes: maxBodyBytes,
    shutdownSignal: shutdown.signal,
  });
  const handlers = createRequestPipeline({
    corsOrigins: ["*"],
    rpc: { invoke, codec: createRegistryMessageCodec([]), maxBodyBytes, mapError: (error) => toConnectError(error, log) },
    unaryMethods: unaryMethodsByPath(services),
    adapterPaths: new Set(services.flatMap(({ service }) => service.methods.map((m) => `/${service.typeName}/${m.name}`))),
    adapter,
    rest: createRestTranscoder({ services, invoke, maxBodyBytes, log }),
    isReady: async () => true,
    log,
  });
  const h1 = http.createServer(handlers.http1);
  const h2 = http2.createServer();
  h2.on("stream", handlers.http2);
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  const listen = (server: http.Server | http2.Http2Server) =>
    new Promise<string>((resolve) =>
      server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
    );
  const [http1Url, http2Url] = await Promise.all([listen(h1), listen(h2)]);
  return {
    http1Url,
    http2Url,
    shutdown,
    async close() {
      shutdown.abort();
      h1.closeAllConnections();
      for (const session of sessions) session.destroy();
      await Promise.all([new Promise((resolve) => h1.close(resolve)), new Promise((resolve) => h2.close(resolve))]);
    },
  };
}
