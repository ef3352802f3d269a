import { readFileSync } from "node:fs";
import { getOption, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { CHANGE_STREAM_PATH } from "../../src/edge/change-stream.js";
import { KEPT_READS } from "../../src/edge/method-policies.js";
import { reflectionServiceDescriptors } from "../../src/edge/reflection-service.js";
import { AdminService } from "../../gen/auth/v1/admin_service_pb.js";
import { TokenService } from "../../gen/auth/v1/token_service_pb.js";
import { http } from "../../gen/google/api/annotations_pb.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { ChangeFeedService } from "../../gen/registry/v1/change_feed_service_pb.js";
import { RegistryService } from "../../gen/registry/v1/registry_service_pb.js";
import { TransparencyLogService } from "../../gen/registry/v1/transparency_log_service_pb.js";

/**
 * docs/architecture.md's table of every RPC and what serves it, held to the code: the services a
 * registry serves, each method's kind (unary calls take the fast path, streams Connect's adapter),
 * its google.api.http route and whether its answers are kept.
 */

const SERVED: readonly DescService[] = [
  RegistryService,
  ChangeFeedService,
  TransparencyLogService,
  TokenService,
  AdminService,
  Health,
  ...reflectionServiceDescriptors,
];

const KINDS = {
  unary: "unary",
  server_streaming: "server streaming",
  client_streaming: "client streaming",
  bidi_streaming: "bidi streaming",
};

function restOf(method: DescMethod): string {
  if (method === ChangeFeedService.method.watchChanges) return `SSE \`GET ${CHANGE_STREAM_PATH}\``;
  const rule = getOption(method, http);
  const pattern = rule.pattern;
  if (pattern.case === undefined || pattern.case === "custom") return "none";
  return `\`${pattern.case.toUpperCase()} ${pattern.value}\``;
}

function expectedRow(method: DescMethod): string {
  const servedBy = method.methodKind === "unary" ? "fast path" : "adapter";
  const kept = KEPT_READS.some((read) => read.method === method) ? "yes" : "no";
  return `| \`${method.parent.typeName}/${method.name}\` | ${KINDS[method.methodKind]} | ${servedBy} | ${restOf(method)} | ${kept} |`;
}

describe("docs/architecture.md's method table", () => {
  it("lists every method served, with its path, route and kept answers, as the code has them", () => {
    const doc = readFileSync(new URL("../../docs/architecture.md", import.meta.url), "utf8");
    const rows = doc.split("\n").filter((line) => /^\| `[\w.]+\/\w+` \|/.test(line));
    expect(rows).toEqual(SERVED.flatMap((service) => service.methods.map(expectedRow)));
  });
});
