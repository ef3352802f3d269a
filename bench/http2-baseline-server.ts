/**
 * The floor a gRPC resolve is measured against: a bare node:http2 server on the stream API (no
 * compatibility layer) that answers every request, once its body has arrived, with the same bytes
 * a real gRPC resolve returned and `grpc-status: 0` in trailers, and does nothing else.
 *
 *   node bin/run-ts.js bench/http2-baseline-server.ts <response.bin> <port> [host]
 */
import http2 from "node:http2";
import { readFileSync } from "node:fs";

const [bodyFile, portText, host = "127.0.0.1"] = process.argv.slice(2);
if (bodyFile === undefined || portText === undefined) {
  process.stderr.write("usage: http2-baseline-server.ts <response.bin> <port> [host]\n");
  process.exit(2);
}
const body = readFileSync(bodyFile);

const server = http2.createServer();
server.on("stream", (stream) => {
  stream.on("error", () => stream.destroy());
  stream.on("data", () => {});
  stream.once("end", () => {
    if (stream.destroyed) return;
    stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
    stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
    stream.end(body);
  });
});
server.listen(Number(portText), host, () => {
  process.stderr.write(`http2 baseline listening on http://${host}:${portText} (${body.length} bytes)\n`);
});
const stop = () => {
  server.close();
  process.exit(0);
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
