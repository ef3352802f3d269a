import type { DescMethodUnary, DescService } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import type { HandlerContext } from "@connectrpc/connect";

/** A unary method and the function that implements it. */
export interface UnaryMethod {
  readonly service: DescService;
  readonly method: DescMethodUnary;
  readonly impl: (request: never, context: HandlerContext) => unknown;
}

/** Whether `target` is marked NO_SIDE_EFFECTS: the same request is always the same read. */
export function hasNoSideEffects(target: UnaryMethod): boolean {
  return target.method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS;
}
