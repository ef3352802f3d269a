import type { DescService } from "@bufbuild/protobuf";
import { AdminService } from "../../../gen/auth/v1/admin_service_pb.js";
import { TokenService } from "../../../gen/auth/v1/token_service_pb.js";
import { ChangeFeedService } from "../../../gen/registry/v1/change_feed_service_pb.js";
import { RegistryService } from "../../../gen/registry/v1/registry_service_pb.js";
import { TransparencyLogService } from "../../../gen/registry/v1/transparency_log_service_pb.js";
import { ERROR_DETAIL_TYPES, routesFromServices, type RestRoute } from "../rest-transcoder.js";
import { createOpenApiDocument, openApiText } from "./openapi-document.js";

/**
 * docs/openapi.json: the document a server of role "all" serves at /openapi.json, built from the
 * same route table without starting one. test/edge/openapi.test.ts checks that a running server
 * serves exactly this text, so this file's list of services cannot quietly differ from app.ts's.
 */

/**
 * The routes of role "all" with the admin API on (as it is by default on an embedded database):
 * every service, every method taken as implemented.
 */
export function roleAllRoutes(): RestRoute[] {
  return routesFromServices(
    [RegistryService, ChangeFeedService, TransparencyLogService, TokenService, AdminService].map((service: DescService) => ({
      service,
      impl: Object.fromEntries(service.methods.map((method) => [method.localName, () => undefined])),
    })),
  );
}

/** The committed text: two-space JSON with a final newline, byte for byte what the server serves. */
export function committedOpenApiText(): string {
  const document = createOpenApiDocument({ routes: roleAllRoutes(), errorDetailTypes: ERROR_DETAIL_TYPES });
  return openApiText(document);
}
