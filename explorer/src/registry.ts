import { createConnectTransport } from "@connectrpc/connect-web";
import { createRegistryClient } from "../../src/sdk/index.js";

/**
 * The registry this page came from, over Connect with JSON (readable in a network panel): the
 * transport connect-query's hooks use, and the SDK client whose verifiers check the log.
 */
export const transport = createConnectTransport({ baseUrl: window.location.origin, useBinaryFormat: false });

export const registryClient = createRegistryClient({ baseUrl: window.location.origin });

/**
 * The log's verifier key, written into the page by the server that serves it. Pinning it here means
 * a checkpoint the page checks must be signed by the key the page arrived with.
 */
export function pinnedLogKey(): string | undefined {
  const content = document.querySelector('meta[name="registry-log-key"]')?.getAttribute("content") ?? "";
  return content === "" || content.startsWith("%") ? undefined : content;
}

/**
 * The verified history of a DID (the SDK's history verifier with the pinned key), as one query:
 * the timeline and the verification share it when they ask for the same DID.
 */
export function historyQuery(did: string) {
  const logKey = pinnedLogKey();
  return {
    queryKey: ["history", did, logKey],
    queryFn: () => registryClient.history(did, logKey === undefined ? {} : { logKey }),
    retry: false,
  } as const;
}
