/**
 * gRPC resolve load, run as its own process so its CPU is not the orchestrator's: a @grpc/grpc-js
 * client whose codecs come from the protobuf-es descriptors (no proto-loader), keeping
 * `concurrency` ResolveEntry calls in flight for the warmup and then the measured duration.
 *
 * Config is JSON in BENCH_GRPC_CONFIG; the result is one JSON line on stdout.
 */
import * as grpc from "@grpc/grpc-js";
import { create } from "@bufbuild/protobuf";
import { grpcJsClientConstructor } from "../test/support/grpc-js-client.js";
import { RegistryService, ResolveEntryRequestSchema } from "../gen/registry/v1/registry_service_pb.js";
import { cpuPressureMicros, cpuSeconds, cpuTimes, postgresCpuSince, postgresCpuSnapshot, pressurePercent } from "./process-sampler.js";
import { percentileOfSorted } from "./stats.js";

export interface GrpcLoadConfig {
  /** host:port of the registry. */
  readonly address: string;
  readonly dids: readonly string[];
  readonly concurrency: number;
  readonly warmupMs: number;
  readonly durationMs: number;
  /** The server's pid, to report its CPU over exactly the measured window. */
  readonly serverPid: number;
  /** The benchmark's database, to count only its Postgres backends. */
  readonly database: string;
}

export interface GrpcLoadResult {
  readonly requests: number;
  readonly seconds: number;
  readonly requestsPerSecond: number;
  readonly latencyP50Ms: number;
  readonly latencyP99Ms: number;
  readonly errors: Record<string, number>;
  readonly serverCpuPercent: number;
  /** The part of the server's CPU spent in the kernel. */
  readonly serverKernelPercent: number;
  readonly postgresCpuPercent: number;
  readonly generatorCpuPercent: number;
  readonly cpuPressurePercent: number;
}

async function run(config: GrpcLoadConfig): Promise<GrpcLoadResult> {
  const Client = grpcJsClientConstructor(RegistryService);
  const client = new Client(config.address, grpc.credentials.createInsecure()) as grpc.Client &
    Record<string, (request: unknown, callback: (error: grpc.ServiceError | null, response: any) => void) => void>;
  await new Promise<void>((resolve, reject) =>
    client.waitForReady(Date.now() + 10_000, (error) => (error ? reject(error) : resolve())),
  );
  const requests = config.dids.map((did) => create(ResolveEntryRequestSchema, { did }));
  const call = (request: unknown) =>
    new Promise<{ error: grpc.ServiceError | null; response: any }>((resolve) =>
      client.ResolveEntry!(request, (error, response) => resolve({ error, response })),
    );

  const measureFrom = performance.now() + config.warmupMs;
  const measureUntil = measureFrom + config.durationMs;
  let latencies = new Float64Array(1 << 16);
  let count = 0;
  const errors: Record<string, number> = {};
  let next = 0;
  let server0 = 0;
  let kernel0 = 0;
  let postgres0 = new Map<number, number>();
  let self0: NodeJS.CpuUsage | undefined;
  let pressure0: number | undefined;
  const markStart = () => {
    if (self0 !== undefined) return;
    pressure0 = cpuPressureMicros();
    server0 = cpuSeconds(config.serverPid) ?? 0;
    kernel0 = cpuTimes(config.serverPid)?.system ?? 0;
    postgres0 = postgresCpuSnapshot(config.database);
    self0 = process.cpuUsage();
  };
  const markStartTimer = setTimeout(markStart, config.warmupMs);

  async function worker(): Promise<void> {
    for (;;) {
      const started = performance.now();
      if (started >= measureUntil) return;
      const request = requests[next++ % requests.length]!;
      const { error, response } = await call(request);
      const ended = performance.now();
      if (started < measureFrom || ended > measureUntil) continue;
      if (error !== null) {
        const code = grpc.status[error.code] ?? String(error.code);
        errors[code] = (errors[code] ?? 0) + 1;
        continue;
      }
      if (response?.entry?.entryDid === undefined) {
        errors.EMPTY_RESPONSE = (errors.EMPTY_RESPONSE ?? 0) + 1;
        continue;
      }
      if (count === latencies.length) {
        const grown = new Float64Array(latencies.length * 2);
        grown.set(latencies);
        latencies = grown;
      }
      latencies[count++] = ended - started;
    }
  }
  await Promise.all(Array.from({ length: config.concurrency }, () => worker()));
  clearTimeout(markStartTimer);
  markStart();
  const seconds = config.durationMs / 1000;
  const self = process.cpuUsage(self0);
  const serverCpu = ((cpuSeconds(config.serverPid) ?? server0) - server0) / seconds;
  const kernelCpu = ((cpuTimes(config.serverPid)?.system ?? kernel0) - kernel0) / seconds;
  const postgresCpu = postgresCpuSince(postgres0, config.database) / seconds;
  const cpuPressure = pressurePercent(pressure0, cpuPressureMicros(), seconds);
  client.close();
  const sorted = latencies.subarray(0, count).sort();
  return {
    requests: count,
    seconds,
    requestsPerSecond: count / seconds,
    latencyP50Ms: percentileOfSorted(sorted, 50),
    latencyP99Ms: percentileOfSorted(sorted, 99),
    errors,
    serverCpuPercent: 100 * serverCpu,
    serverKernelPercent: 100 * kernelCpu,
    postgresCpuPercent: 100 * postgresCpu,
    generatorCpuPercent: (100 * (self.user + self.system)) / 1e6 / seconds,
    cpuPressurePercent: cpuPressure,
  };
}

const configText = process.env.BENCH_GRPC_CONFIG;
if (configText === undefined) {
  process.stderr.write("grpc-load: BENCH_GRPC_CONFIG is not set\n");
  process.exit(2);
}
const result = await run(JSON.parse(configText) as GrpcLoadConfig);
process.stdout.write(`${JSON.stringify(result)}\n`);
