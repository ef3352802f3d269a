import {
  create,
  createFileRegistry,
  fromBinary,
  toBinary,
  type DescFile,
  type DescService,
  type FileRegistry,
  type MessageInitShape,
} from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectRouter, type ServiceImpl } from "@connectrpc/connect";
import {
  ServerReflection,
  ServerReflectionRequestSchema,
  ServerReflectionResponseSchema,
  type ServerReflectionRequest,
  type ServerReflectionResponse,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";
import {
  ServerReflection as ServerReflectionV1alpha,
  ServerReflectionRequestSchema as ServerReflectionRequestV1alphaSchema,
  ServerReflectionResponseSchema as ServerReflectionResponseV1alphaSchema,
} from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

export interface ReflectionOptions {
  /**
   * The services this server serves besides reflection itself (which is always added), e.g.
   * [RegistryService, TokenService, Health]. Their files and every file they import are what
   * clients can fetch.
   */
  readonly services: readonly DescService[];
}

export interface ReflectionServices {
  /** Full names answered to list_services, reflection's own two included. */
  readonly serviceNames: readonly string[];
  readonly v1: ServiceImpl<typeof ServerReflection>;
  readonly v1alpha: ServiceImpl<typeof ServerReflectionV1alpha>;
}

/** The reflection service descriptors, for callers that keep their own list of served services. */
export const reflectionServiceDescriptors: readonly DescService[] = [ServerReflection, ServerReflectionV1alpha];

type ResponseInit = MessageInitShape<typeof ServerReflectionResponseSchema>;

/**
 * gRPC server reflection, so grpcurl and buf curl can list and call this server without proto
 * files. Both protocol versions are served because older clients (and grpcurl's fallback) still
 * speak v1alpha.
 */
export function createReflectionServices(options: ReflectionOptions): ReflectionServices {
  const served = dedupeByName([...options.services, ...reflectionServiceDescriptors]);
  const serviceNames = served.map((s) => s.typeName);
  const registry = buildRegistry(served);
  // Descriptors never change while the process runs, so each file is serialized once.
  const serialized = new Map<string, Uint8Array>();
  for (const file of registry.files) {
    serialized.set(file.proto.name, toBinary(FileDescriptorProtoSchema, file.proto));
  }

  function fileResponse(file: DescFile): ResponseInit["messageResponse"] {
    // Clients build descriptors offline from what we send, so a file is useless to them without
    // everything it imports; grpc-go sends the same closure, requested file first.
    const fileDescriptorProto = transitiveFiles(file).map((f) => {
      const bytes = serialized.get(f.proto.name);
      if (!bytes) throw new Error(`file ${f.proto.name} missing from the reflection registry`);
      return bytes;
    });
    return { case: "fileDescriptorResponse", value: { fileDescriptorProto } };
  }

  function notFound(errorMessage: string): ResponseInit["messageResponse"] {
    return { case: "errorResponse", value: { errorCode: Code.NotFound, errorMessage } };
  }

  function answer(request: ServerReflectionRequest): ServerReflectionResponse {
    const messageResponse = answerBody(request.messageRequest);
    return create(ServerReflectionResponseSchema, {
      validHost: request.host,
      originalRequest: request,
      messageResponse,
    });
  }

  function answerBody(req: ServerReflectionRequest["messageRequest"]): ResponseInit["messageResponse"] {
    switch (req.case) {
      case "listServices":
        return {
          case: "listServicesResponse",
          value: { service: serviceNames.map((name) => ({ name })) },
        };
      case "fileByFilename": {
        const file = registry.getFile(req.value);
        return file ? fileResponse(file) : notFound(`file not found: ${req.value}`);
      }
      case "fileContainingSymbol": {
        // protoc-style fully-qualified names carry a leading dot; registry names do not.
        const symbol = req.value.replace(/^\./, "");
        const file = fileOfSymbol(registry, symbol);
        return file ? fileResponse(file) : notFound(`symbol not found: ${symbol}`);
      }
      case "fileContainingExtension": {
        const typeName = req.value.containingType.replace(/^\./, "");
        const extendee = registry.getMessage(typeName);
        const extension = extendee && registry.getExtensionFor(extendee, req.value.extensionNumber);
        return extension ? fileResponse(extension.file) : notFound(`extension ${req.value.extensionNumber} of ${typeName} not found`);
      }
      case "allExtensionNumbersOfType": {
        const typeName = req.value.replace(/^\./, "");
        if (!registry.getMessage(typeName)) return notFound(`type not found: ${typeName}`);
        const extensionNumber: number[] = [];
        for (const desc of registry) {
          if (desc.kind === "extension" && desc.extendee.typeName === typeName) {
            extensionNumber.push(desc.number);
          }
        }
        return {
          case: "allExtensionNumbersResponse",
          value: { baseTypeName: typeName, extensionNumber: extensionNumber.sort((a, b) => a - b) },
        };
      }
      default:
        // Answered in-stream rather than thrown so one malformed request does not end a session
        // the client may still be using for other lookups.
        return {
          case: "errorResponse",
          value: { errorCode: Code.InvalidArgument, errorMessage: "message_request is not set" },
        };
    }
  }

  const v1: ServiceImpl<typeof ServerReflection> = {
    // Clients pipeline lookups over one stream and wait for each answer before the next, so every
    // request is answered as soon as it arrives instead of after the client half-closes.
    async *serverReflectionInfo(requests) {
      for await (const request of requests) {
        yield answer(request);
      }
    },
  };

  const v1alpha: ServiceImpl<typeof ServerReflectionV1alpha> = {
    // v1alpha has the same fields and numbers as v1, so translating through the wire format keeps
    // one implementation for both.
    async *serverReflectionInfo(requests) {
      for await (const request of requests) {
        const v1Request = fromBinary(ServerReflectionRequestSchema, toBinary(ServerReflectionRequestV1alphaSchema, request));
        yield fromBinary(ServerReflectionResponseV1alphaSchema, toBinary(ServerReflectionResponseSchema, answer(v1Request)));
      }
    },
  };

  return { serviceNames, v1, v1alpha };
}

/**
 * Registers both reflection versions on the router. `services` are the other services the router
 * serves (include Health if it is registered); returns the names list_services reports.
 */
export function registerReflection(router: ConnectRouter, services: readonly DescService[]): readonly string[] {
  const reflection = createReflectionServices({ services });
  router.service(ServerReflection, reflection.v1);
  router.service(ServerReflectionV1alpha, reflection.v1alpha);
  return reflection.serviceNames;
}

function dedupeByName(services: readonly DescService[]): DescService[] {
  const byName = new Map<string, DescService>();
  for (const service of services) byName.set(service.typeName, service);
  return [...byName.values()];
}

/**
 * Rebuilding the registry from the collected FileDescriptorProtos (rather than reusing the
 * generated DescFiles) fails at startup if the set is not self-contained, which is exactly the
 * check a reflection client would otherwise hit at runtime.
 */
function buildRegistry(services: readonly DescService[]): FileRegistry {
  const ordered: DescFile[] = [];
  const seen = new Set<string>();
  // Post-order, so every file follows its imports, as a FileDescriptorSet must be ordered.
  const visit = (file: DescFile): void => {
    if (seen.has(file.proto.name)) return;
    seen.add(file.proto.name);
    for (const dependency of file.dependencies) visit(dependency);
    ordered.push(file);
  };
  for (const service of services) visit(service.file);
  return createFileRegistry(create(FileDescriptorSetSchema, { file: ordered.map((f) => f.proto) }));
}

function transitiveFiles(root: DescFile): DescFile[] {
  const out: DescFile[] = [];
  const seen = new Set<string>();
  const queue = [root];
  for (let file = queue.shift(); file; file = queue.shift()) {
    if (seen.has(file.proto.name)) continue;
    seen.add(file.proto.name);
    out.push(file);
    queue.push(...file.dependencies);
  }
  return out;
}

/**
 * Services, messages, enums and extensions are registry entries; methods and fields are not, so
 * those are found through their parent. grpcurl asks for a method's name when describing it.
 */
function fileOfSymbol(registry: FileRegistry, symbol: string): DescFile | undefined {
  const direct = registry.get(symbol);
  if (direct) return direct.file;
  const dot = symbol.lastIndexOf(".");
  if (dot < 0) return undefined;
  const parent = registry.get(symbol.slice(0, dot));
  const member = symbol.slice(dot + 1);
  switch (parent?.kind) {
    case "service":
      return parent.methods.some((m) => m.name === member) ? parent.file : undefined;
    case "message":
      return parent.fields.some((f) => f.name === member) || parent.oneofs.some((o) => o.name === member) ? parent.file : undefined;
    default:
      return undefined;
  }
}
