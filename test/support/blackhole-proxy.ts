import net from "node:net";

/**
 * A TCP proxy that can play a network partition. While "blackholed" it forwards nothing in either
 * direction yet keeps every socket open and sends no reset or FIN: bytes wait in the sockets'
 * buffers, as unacknowledged segments would wait for retransmission, and flow again once healed.
 * New connections are accepted (the proxy's own kernel completes the handshake) but reach the
 * target only after healing, so a client sees a connection that never answers.
 *
 * Keepalive probes are answered by this machine's kernel, so this partition is one that only
 * application-level timeouts and heartbeats can detect; that is the harder case.
 */
export interface BlackholeProxy {
  /** host:port clients should connect to instead of the target. */
  readonly host: string;
  readonly port: number;
  /** Stops forwarding; sockets stay open. */
  blackhole(): void;
  /** Forwards again, including what was held back. */
  heal(): void;
  readonly blackholed: boolean;
  close(): Promise<void>;
}

interface Link {
  readonly client: net.Socket;
  upstream?: net.Socket;
  /** A side closed during the partition: the other learns of it only when the partition heals. */
  closing: boolean;
}

export async function startBlackholeProxy(target: { host: string; port: number }): Promise<BlackholeProxy> {
  const links = new Set<Link>();
  let blackholed = false;

  const destroyBoth = (link: Link) => {
    link.client.destroy();
    link.upstream?.destroy();
    links.delete(link);
  };

  const onClosed = (link: Link) => {
    if (blackholed) link.closing = true;
    else destroyBoth(link);
  };

  const flow = (link: Link) => {
    if (link.closing) {
      destroyBoth(link);
      return;
    }
    if (link.upstream === undefined) {
      const upstream = net.connect(target.port, target.host);
      link.upstream = upstream;
      upstream.setNoDelay(true);
      upstream.on("error", () => onClosed(link));
      upstream.on("close", () => onClosed(link));
    }
    link.client.pipe(link.upstream);
    link.upstream.pipe(link.client);
  };

  const hold = (link: Link) => {
    if (link.upstream === undefined) {
      link.client.pause();
      return;
    }
    link.client.unpipe(link.upstream);
    link.upstream.unpipe(link.client);
    link.client.pause();
    link.upstream.pause();
  };

  const server = net.createServer((client) => {
    const link: Link = { client, closing: false };
    links.add(link);
    client.setNoDelay(true);
    client.on("error", () => onClosed(link));
    client.on("close", () => onClosed(link));
    if (blackholed) hold(link);
    else flow(link);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;

  return {
    host: "127.0.0.1",
    port,
    get blackholed() {
      return blackholed;
    },
    blackhole() {
      if (blackholed) return;
      blackholed = true;
      for (const link of links) hold(link);
    },
    heal() {
      if (!blackholed) return;
      blackholed = false;
      for (const link of [...links]) flow(link);
    },
    async close() {
      blackholed = false;
      for (const link of [...links]) destroyBoth(link);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** `url` with its host and port replaced by the proxy's. */
export function throughProxy(url: string, proxy: BlackholeProxy): string {
  const proxied = new URL(url);
  proxied.hostname = proxy.host;
  proxied.port = String(proxy.port);
  return proxied.toString();
}
