import http from "node:http";
import type { AddressInfo } from "node:net";
import type { RegistryMetrics } from "./metrics.js";

export interface MetricsServer {
  /** Base URL, e.g. http://127.0.0.1:9464. */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * The admin port (METRICS_PORT): GET /metrics and nothing else. Kept off the public port so that
 * scrapes share neither its rate limits nor its exposure (a load balancer never routes here).
 */
export async function startMetricsServer(metrics: RegistryMetrics, port: number, host: string): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?", 1)[0];
    if (path !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found: the metrics are at /metrics\n");
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
      return;
    }
    metrics.render().then(
      (text) => res.writeHead(200, { "content-type": metrics.contentType }).end(req.method === "HEAD" ? undefined : text),
      () => res.writeHead(500, { "content-type": "text/plain" }).end("metrics collection failed\n"),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const hostText = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${hostText}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Prometheus keeps its scrape connection open between scrapes.
        server.closeAllConnections();
      }),
  };
}
