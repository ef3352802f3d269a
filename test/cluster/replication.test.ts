import { afterAll, beforeAll, expect, it } from "vitest";
import type { TestPublisher } from "../support/registry-fixture.js";
import { registryClient } from "../support/protocol-clients.js";
import { describeCluster, discoverTag, entryPath, eventually, httpJson, startPublisher, uniqueName } from "./cluster.js";

/** How long a write may take to reach the standby and so every read path. */
const REPLICATION_BOUND_MS = 10_000;

describeCluster("writes, reads and cursors across replicas", (target) => {
  const [replicaA, replicaB] = target.replicaUrls;
  let publisher: TestPublisher;
  let token: string;
  // Through nginx: gRPC on its h2c port, Connect on its HTTP/1.1 one.
  const grpc = registryClient("grpc", `http://${target.nginxGrpcAddress}`);
  const connect = registryClient("connect", target.nginxUrl);

  beforeAll(async () => {
    ({ publisher, token } = await startPublisher(target));
  });
  afterAll(() => {
    grpc.close();
    connect.close();
  });

  const resolvedOn = (baseUrl: string, did: string) =>
    eventually(`${did} on ${baseUrl}`, REPLICATION_BOUND_MS, async () => {
      const answer = await httpJson("GET", `${baseUrl}${entryPath(did)}`);
      return answer.status === 200 ? answer.body : undefined;
    });

  it("an entry created on one replica resolves on both, and through nginx on gRPC, Connect and REST", async () => {
    const entry = await publisher.entry(uniqueName("written-on-a"), "1.0.0");
    const created = await httpJson("POST", `${replicaA}/v1/entries`, { body: entry, token });
    expect(created.status).toBe(201);

    for (const replica of [replicaA, replicaB]) {
      expect(await resolvedOn(replica, entry.entryDid)).toMatchObject({ entryDid: entry.entryDid, signature: entry.signature });
    }
    const overGrpc = await grpc.resolve(entry.entryDid);
    expect(overGrpc).toMatchObject({ code: "ok", body: { entryDid: entry.entryDid, signature: entry.signature } });
    const overConnect = await connect.resolve(entry.entryDid);
    expect(overConnect).toMatchObject({ code: "ok", body: { entryDid: entry.entryDid, signature: entry.signature } });

    const overRest = await httpJson("GET", `${target.nginxUrl}${entryPath(entry.entryDid)}`);
    expect(overRest.status).toBe(200);
    // nginx's $request_id (32 hex digits, not the registry's own UUIDs), believed from a trusted
    // proxy and returned by the replica that answered.
    expect(overRest.headers["x-request-id"]).toMatch(/^[0-9a-f]{32}$/);
  });

  it("an entry created over gRPC through nginx's h2c resolves on both replicas", async () => {
    const entry = await publisher.entry(uniqueName("written-over-grpc"), "1.0.0");
    const created = await grpc.create(entry, token);
    expect(created).toMatchObject({ code: "ok", body: { entryDid: entry.entryDid } });

    for (const replica of [replicaA, replicaB]) {
      expect(await resolvedOn(replica, entry.entryDid)).toMatchObject({ entryDid: entry.entryDid });
    }
  });

  it("a discovery walk continues on the other replica with the cursor this one gave", async () => {
    const tag = uniqueName("walk");
    const published: string[] = [];
    for (let index = 0; index < 5; index++) {
      const entry = await publisher.entry(uniqueName(`walk-${index}`), "1.0.0", { tags: [tag] });
      const created = await httpJson("POST", `${index % 2 === 0 ? replicaA : replicaB}/v1/entries`, { body: entry, token });
      expect(created.status).toBe(201);
      published.push(entry.entryDid);
    }

    // Discovery reads the standby: wait until it shows all five.
    const first = await eventually("all five in discovery", REPLICATION_BOUND_MS, async () => {
      const page = await discoverTag(replicaA, tag, 2);
      expect(page.status).toBe(200);
      return page.body.total === 5 ? page.body : undefined;
    });
    const second = await discoverTag(replicaB, tag, 2, first.nextCursor);
    expect(second.status).toBe(200);
    const third = await discoverTag(replicaA, tag, 2, second.body.nextCursor);
    expect(third.status).toBe(200);

    const pages = [first, second.body, third.body];
    expect(pages.map((page) => page.entries.length)).toEqual([2, 2, 1]);
    expect(third.body.nextCursor).toBeUndefined();
    const walked = pages.flatMap((page) => page.entries.map((entry: { entryDid: string }) => entry.entryDid));
    expect(walked.sort()).toEqual([...published].sort());
  });
});
