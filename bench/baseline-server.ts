/**
 * The floor a REST resolve is measured against: a bare node:http server that answers every GET
 * with the same JSON bytes a real resolve returned, and does nothing else.
 *
 *   node bin/run-ts.js bench/baseline-server.ts <body.json> <port> [host]
 */
import http from "node:http";
import { readFileSync } from "node:fs";

const [bodyFile, portText, host = "127.0.0.1"] = process.argv.slice(2);
if (bodyFile === undefined || portText === undefined) {
  process.stderr.write("usage: baseline-server.ts <body.json> <port> [host]\n");
  process.exit(2);
}
const body = readFileSync(bodyFile);
const headers = { "content-type": "application/json", "content-length": String(body.length) };

// Same keep-alive timeout as the registry's HTTP/1 server.
const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  res.writeHead(200, headers);
  res.end(req.method === "HEAD" ? undefined : body);
});
server.listen(Number(portText), host, () => {
  process.stderr.write(`baseline listening on http://${host}:${portText} (${body.length} bytes)\n`);
});
const stop = () => {
  server.close();
  server.closeAllConnections();
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
