import { applyDecorators, INestApplication, Type } from '@nestjs/common';
import { ApiProperty, ApiResponse, DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { ERROR_REASONS, ErrorCode, HTTP_STATUS, wireCode } from './errors';

/** `{ code, message, reason }` (docs/api.md#errors); the typed client's GatehouseError reads `reason` from here. */
export class ErrorBody {
  @ApiProperty({ enum: [...new Set(Object.values(ErrorCode).map(wireCode))], example: 'INVALID_ARGUMENT' })
  code: string;

  @ApiProperty({ example: 'invalid request parameters' })
  message: string;

  @ApiProperty({ enum: Object.keys(ERROR_REASONS), enumName: 'ErrorReason', example: 'invalid_argument' })
  reason: string;
}

const ERROR_DESCRIPTIONS: Record<ErrorCode, string> = {
  [ErrorCode.INVALID_ARGUMENT]: 'INVALID_ARGUMENT: malformed request or parameters',
  [ErrorCode.FAILED_PRECONDITION]: 'FAILED_PRECONDITION: the resource is not in a state that allows it',
  [ErrorCode.UNAUTHENTICATED]: 'UNAUTHENTICATED (with WWW-Authenticate)',
  [ErrorCode.PERMISSION_DENIED]: 'PERMISSION_DENIED: insufficient permissions',
  [ErrorCode.NOT_FOUND]: 'NOT_FOUND',
  [ErrorCode.PAYLOAD_TOO_LARGE]: 'INVALID_ARGUMENT: request body too large',
  [ErrorCode.RESOURCE_EXHAUSTED]: 'RESOURCE_EXHAUSTED: too many requests (with Retry-After)',
  [ErrorCode.INTERNAL]: 'INTERNAL',
  [ErrorCode.UNAVAILABLE]: 'UNAVAILABLE: a dependency (database, provider) cannot answer',
};

/** The codes by the status they are answered with (HTTP_STATUS, the one status table). */
function byStatus<T>(entries: ReadonlyArray<readonly [ErrorCode, T]>): Map<number, T[]> {
  const statuses = new Map<number, T[]>();
  for (const [code, value] of entries) {
    const status = HTTP_STATUS[code];
    statuses.set(status, [...(statuses.get(status) ?? []), value]);
  }
  return statuses;
}

/** Documents the error answers of a route by their codes, all with the `{code, message}` body. */
export function ApiErrors(...codes: ErrorCode[]): MethodDecorator & ClassDecorator {
  const statuses = byStatus(codes.map((code) => [code, ERROR_DESCRIPTIONS[code]] as const));
  return applyDecorators(
    ...[...statuses].map(([status, descriptions]) =>
      ApiResponse({ status, type: ErrorBody, description: descriptions.join('; ') }),
    ),
  );
}

/**
 * Documents an OAuth endpoint's error answers (RFC 6749 section 5.2's body, `type`), by code, each with the OAuth
 * `error` names it is answered with.
 */
export function ApiOAuthErrors(type: Type, errors: Partial<Record<ErrorCode, string>>): MethodDecorator {
  const statuses = byStatus(Object.entries(errors) as Array<[ErrorCode, string]>);
  return applyDecorators(
    ...[...statuses].map(([status, descriptions]) =>
      ApiResponse({ status, type, description: descriptions.join(', ') }),
    ),
  );
}

export const BEARER_SCHEME = 'bearer';
export const API_KEY_SCHEME = 'apiKey';
/** An API key as an OAuth client (POST /oauth/token): client_id its id, client_secret the whole key. */
export const API_KEY_CLIENT_SCHEME = 'apiKeyClient';
/** A registered resource server's client credentials, HTTP Basic (the revocation feed, introspection). */
export const RESOURCE_SERVER_SCHEME = 'resourceServer';

/** Also the source of the typed client (`npm run client:generate`, docs/client.md). */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Gatehouse')
    .setDescription('Personal API keys, API-key-to-JWT exchange and validated monitoring integrations.')
    .setVersion('1')
    .addBearerAuth(
      { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Session or access token' },
      BEARER_SCHEME,
    )
    .addApiKey(
      { type: 'apiKey', in: 'header', name: 'Authorization', description: 'The literal `ApiKey ` followed by the key' },
      API_KEY_SCHEME,
    )
    .addBasicAuth(
      {
        type: 'http',
        scheme: 'basic',
        description:
          'An API key as an OAuth client: its id and the whole key (or client_id and client_secret in the form)',
      },
      API_KEY_CLIENT_SCHEME,
    )
    .addBasicAuth(
      {
        type: 'http',
        scheme: 'basic',
        description: "A resource server's client_id and client_secret (or, on introspection, in the form)",
      },
      RESOURCE_SERVER_SCHEME,
    )
    .build();
  return SwaggerModule.createDocument(app, config);
}

export function setupOpenApi(app: INestApplication): void {
  const document = buildOpenApiDocument(app);
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'openapi.json', raw: ['json'] });
}
