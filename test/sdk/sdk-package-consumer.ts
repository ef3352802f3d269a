/**
 * A project outside the repository that uses the packed SDK (package-install.embedded.test.ts writes these
 * files next to its node_modules). Kept as text: the repository's own typecheck cannot resolve
 * `@open-registry/sdk`, which only the scratch project installs.
 */

/** The steps both programs take: publish, read back, prove from the log with a pinned key, fail cleanly. */
const walk = `
import {
  createRegistryClient,
  decodePrivateKey,
  keyPairFromSeed,
  parseLogKey,
  RegistryClientError,
  verifyEntrySignature,
  type Entry,
  type EntryInput,
  type WebTransportKind,
} from "@open-registry/sdk";

export interface WalkInput {
  readonly baseUrl: string;
  readonly seed: string;
  readonly rootToken: string;
  readonly logKey: string;
  readonly name: string;
  readonly transport: WebTransportKind;
}

/** Retries \`attempt\` for up to 10 s: the log integrates about every second. */
async function eventually<T>(attempt: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

export async function walk(input: WalkInput) {
  const seed = decodePrivateKey(input.seed);
  if (!(seed instanceof Uint8Array)) throw new Error(\`seed: \${seed.error}\`);
  const key = await keyPairFromSeed(seed);
  parseLogKey(input.logKey); // refuses a malformed pinned key before anything is sent
  const client = createRegistryClient({ baseUrl: input.baseUrl, transport: input.transport, auth: { rootToken: input.rootToken } });
  try {
    const fields: EntryInput = {
      entryDid: \`did:reg:main:skill:\${input.name}@1.0.0\`,
      entryType: "skill",
      version: "1.0.0",
      publisherDid: key.did,
      publishedAt: new Date(Math.floor(Date.now() / 1000) * 1000).toISOString(),
      description: "published from the packed SDK",
      tags: ["packed"],
      contentHash: \`sha256:\${"ab".repeat(32)}\`,
    };
    const stored: Entry = await client.publish(fields, { key });
    const resolved = await client.resolve(\`did:reg:main:skill:\${input.name}\`);
    const proof = await eventually(() => client.proveEntry(stored.entryDid, { logKey: input.logKey }));
    const history = await client.history(stored.entryDid, { logKey: input.logKey });
    // publish signs the payload type it names on the stored entry.
    const signed = { ...fields, payloadType: stored.payloadType };
    let refused: { code: string; fields: string[] } | undefined;
    try {
      await client.resolve("not-a-did");
    } catch (error) {
      if (!(error instanceof RegistryClientError)) throw error;
      refused = { code: error.code, fields: error.violations.map((violation) => violation.field) };
    }
    return {
      stored: { entryDid: stored.entryDid, status: stored.status, sequence: String(stored.sequence) },
      resolvedVersion: resolved.version,
      signatureValid: await verifyEntrySignature(signed, stored.signature),
      tamperedValid: await verifyEntrySignature({ ...signed, description: "tampered" }, stored.signature),
      proof: { pinned: proof.pinned, kind: proof.record.kind, origin: proof.checkpoint.origin },
      historyKinds: history.records.map((record) => record.kind),
      refused,
    };
  } finally {
    client.close();
  }
}

/** Never called: each line must fail to type-check, so the declarations are not \`any\`. */
export function misuses(): void {
  // @ts-expect-error: the transports are a closed set
  createRegistryClient({ baseUrl: "http://127.0.0.1", transport: "carrier-pigeon" });
  // @ts-expect-error: baseUrl is required
  createRegistryClient({});
  // @ts-expect-error: resolve takes a DID string
  void createRegistryClient({ baseUrl: "http://127.0.0.1" }).resolve(42);
}
`;

/** The Node program: the walk over Connect and over plain gRPC, and a raw generated service. */
const nodeMain = `
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { createRegistryClient, type NodeTransportKind } from "@open-registry/sdk";
import { TransparencyLogService } from "@open-registry/sdk/gen/registry/v1/transparency_log_service_pb.js";
import { walk } from "./walk.js";

const input = JSON.parse(process.env.WALK_INPUT ?? "{}") as { baseUrl: string; seed: string; rootToken: string; logKey: string; name: string };
const connect = await walk({ ...input, transport: "connect" });

// The Node entry alone speaks gRPC over HTTP/2.
const grpcKind: NodeTransportKind = "grpc";
const grpcClient = createRegistryClient({ baseUrl: input.baseUrl, transport: grpcKind });
const overGrpc = await grpcClient.resolve(connect.stored.entryDid);
grpcClient.close();

// The generated descriptors, for a caller that wants the raw service.
const raw = createClient(TransparencyLogService, createGrpcTransport({ baseUrl: input.baseUrl }));
const { verifierKey } = await raw.getLogKey({});

const proto = fileURLToPath(import.meta.resolve("@open-registry/sdk/proto/registry/v1/registry_service.proto"));
console.log(JSON.stringify({ connect, grpcVersion: overGrpc.version, rawVerifierKey: verifierKey, protoShipped: existsSync(proto) }));
`;

/** The browser program: the walk, its answer left on the page for the test to read. */
const browserMain = `
import { walk, type WalkInput } from "./walk.js";

const input = JSON.parse(decodeURIComponent(location.hash.slice(1))) as WalkInput;
walk(input).then(
  (result) => {
    document.body.dataset.result = JSON.stringify(result);
  },
  (error: unknown) => {
    document.body.dataset.error = String(error instanceof Error ? (error.stack ?? error.message) : error);
  },
);
`;

/** What the browser bundle size is measured on: createRegistryClient alone. */
const clientOnly = `
import { createRegistryClient } from "@open-registry/sdk";
(globalThis as { createRegistryClient?: unknown }).createRegistryClient = createRegistryClient;
`;

/** Strict settings every consumer shares; declarations are checked too (skipLibCheck off). */
const strict = { strict: true, skipLibCheck: false, target: "ES2022", noEmitOnError: true };

/** The scratch project's files, by path, given where the repository's own @types live. */
export function consumerFiles(typeRoots: string): Record<string, string> {
  const nodeConfig = {
    // DOM for the fetch types (HeadersInit) that @connectrpc/connect's declarations name.
    compilerOptions: {
      ...strict,
      module: "NodeNext",
      moduleResolution: "NodeNext",
      lib: ["ES2023", "DOM"],
      types: ["node"],
      typeRoots: [typeRoots],
      outDir: "out",
    },
    files: ["walk.ts", "node-main.ts"],
  };
  // The browser program sees no Node types: the browser entry's declarations must not need them.
  const browserConfig = {
    compilerOptions: { ...strict, module: "ESNext", moduleResolution: "Bundler", lib: ["ES2023", "DOM"], types: [], noEmit: true },
    files: ["walk.ts", "browser-main.ts", "client-only.ts"],
  };
  return {
    "walk.ts": walk,
    "node-main.ts": nodeMain,
    "browser-main.ts": browserMain,
    "client-only.ts": clientOnly,
    "tsconfig.node.json": JSON.stringify(nodeConfig, null, 2),
    "tsconfig.browser.json": JSON.stringify(browserConfig, null, 2),
  };
}
