import { expect, it } from "vitest";
import { clientAddress, describeCluster, entryPath, httpJson, uniqueName } from "./cluster.js";

describeCluster("rate limits shared by the replicas through Redis", (target) => {
  // An entry no one published: a resolve of it is a read like any other, answered 404 when allowed.
  const missing = `did:reg:main:skill:${uniqueName("never-published")}@1.0.0`;

  it("a client alternating between the replicas gets about one burst in all, not one per replica", async () => {
    const from = clientAddress();
    const requests = target.rateLimitBurst * 3;
    const allowed = [0, 0];
    const refused = [0, 0];
    const started = performance.now();
    for (let index = 0; index < requests; index++) {
      const replica = index % 2;
      const answer = await httpJson("GET", `${target.replicaUrls[replica]}${entryPath(missing)}`, { from });
      expect([404, 429]).toContain(answer.status);
      if (answer.status === 404) allowed[replica]!++;
      else refused[replica]!++;
    }
    const elapsedSeconds = (performance.now() - started) / 1000;

    const allowedInAll = allowed[0]! + allowed[1]!;
    // The bucket refills at the rate while the requests run: at most one more per 1/rps seconds,
    // and one for a refill falling just inside the window.
    const refilled = Math.floor(elapsedSeconds * target.rateLimitRps) + 1;
    expect(allowedInAll).toBeGreaterThanOrEqual(target.rateLimitBurst);
    expect(allowedInAll).toBeLessThanOrEqual(target.rateLimitBurst + refilled);
    // Per-replica buckets would have allowed a burst on each; this must stay well under two.
    expect(allowedInAll).toBeLessThan(2 * target.rateLimitBurst);
    // Both replicas took part on each side of the limit.
    expect(Math.min(...allowed)).toBeGreaterThan(0);
    expect(Math.min(...refused)).toBeGreaterThan(0);
  });

  it("nginx passes the client's address on: its requests share the client's bucket, another client's do not", async () => {
    const from = clientAddress();
    for (let index = 0; index < target.rateLimitBurst; index++) {
      await httpJson("GET", `${target.replicaUrls[index % 2]}${entryPath(missing)}`, { from });
    }
    // The bucket is empty; a token may come back meanwhile (one a second), so of three requests
    // at least two are refused.
    const throughNginx = [];
    for (let index = 0; index < 3; index++) {
      throughNginx.push(await httpJson("GET", `${target.nginxUrl}${entryPath(missing)}`, { from }));
    }
    const refusedThroughNginx = throughNginx.filter((answer) => answer.status === 429);
    expect(refusedThroughNginx.length).toBeGreaterThanOrEqual(2);
    expect(refusedThroughNginx[0]!.body).toMatchObject({ code: "resource_exhausted" });
    const otherClient = await httpJson("GET", `${target.nginxUrl}${entryPath(missing)}`, { from: clientAddress() });
    expect(otherClient.status).toBe(404);
  });
});
