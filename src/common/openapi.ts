import { applyDecorators, INestApplication } from '@nestjs/common';
import { ApiProperty, ApiResponse, DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { ErrorCode, wireCode } from './errors';

/** `{ code, message }` (docs/api.md#errors). */
export class ErrorBody {
  @ApiProperty({ enum: [...new Set(Object.values(ErrorCode).map(wireCode))], example: 'INVALID_ARGUMENT' })
  code: string;

  @ApiProperty({ example: 'invalid request parameters' })
  message: string;
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'INVALID_ARGUMENT: malformed request or parameters',
  401: 'UNAUTHENTICATED (with WWW-Authenticate)',
  403: 'PERMISSION_DENIED: insufficient permissions',
  404: 'NOT_FOUND',
  413: 'INVALID_ARGUMENT: request body too large',
  429: 'RESOURCE_EXHAUSTED: too many requests (with Retry-After)',
  500: 'INTERNAL',
  503: 'UNAVAILABLE: a dependency (database, provider) cannot answer',
};

/** Documents the error answers of a route, all with the `{code, message}` body. */
export function ApiErrors(...statuses: number[]): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ...statuses.map((status) => ApiResponse({ status, type: ErrorBody, description: ERROR_DESCRIPTIONS[status] })),
  );
}

export const BEARER_SCHEME = 'bearer';
export const API_KEY_SCHEME = 'apiKey';
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
      { type: 'http', scheme: 'basic', description: "A resource server's client_id and client_secret" },
      RESOURCE_SERVER_SCHEME,
    )
    .build();
  return SwaggerModule.createDocument(app, config);
}

export function setupOpenApi(app: INestApplication): void {
  const document = buildOpenApiDocument(app);
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'openapi.json', raw: ['json'] });
}
