import type { DescService } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { UnaryMethod } from "../transport/unary-method.js";

/** A served service and its implementation, as registered on every protocol. */
export interface ServedService {
  readonly service: DescService;
  /** Method implementations by local name (e.g. "resolveEntry"). */
  readonly impl: Readonly<Record<string, unknown>>;
}

/** Pairs a service with its implementation, checked against each other once, here. */
export function servedService<T extends DescService>(service: T, impl: Partial<ServiceImpl<T>>): ServedService {
  return { service, impl: impl as Record<string, unknown> };
}

/** The implemented unary methods of the services, by their RPC path ("/pkg.Service/Method"). */
export function unaryMethodsByPath(services: readonly ServedService[]): Map<string, UnaryMethod> {
  const methods = new Map<string, UnaryMethod>();
  for (const { service, impl } of services) {
    for (const method of service.methods) {
      const fn = impl[method.localName];
      if (method.methodKind !== "unary" || typeof fn !== "function") continue;
      methods.set(`/${service.typeName}/${method.name}`, {
        service,
        method: method as UnaryMethod["method"],
        impl: (fn as (...args: unknown[]) => unknown).bind(impl) as UnaryMethod["impl"],
      });
    }
  }
  return methods;
}
