import * as grpc from "@grpc/grpc-js";
import { fromBinary, toBinary, type DescService } from "@bufbuild/protobuf";

/**
 * A @grpc/grpc-js client constructor for a protobuf-es service, with the codecs taken from the
 * generated descriptors: the real grpc-js client stack, without proto-loader or .proto files.
 * Unary methods only, which is all the registry's clients need.
 */
export function grpcJsClientConstructor(service: DescService): grpc.ServiceClientConstructor {
  const definition: Record<string, grpc.MethodDefinition<any, any>> = {};
  for (const method of service.methods) {
    definition[method.name] = {
      path: `/${service.typeName}/${method.name}`,
      requestStream: false,
      responseStream: false,
      requestSerialize: (value: any) => Buffer.from(toBinary(method.input, value)),
      requestDeserialize: (bytes: Buffer) => fromBinary(method.input, bytes),
      responseSerialize: (value: any) => Buffer.from(toBinary(method.output, value)),
      responseDeserialize: (bytes: Buffer) => fromBinary(method.output, bytes),
    };
  }
  return grpc.makeGenericClientConstructor(definition, service.typeName);
}
