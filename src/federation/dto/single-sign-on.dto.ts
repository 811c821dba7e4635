import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { type Role, ROLES } from '../../identity/roles';
import type { IssuerMetadata } from '../issuer-discovery';
import { MAX_ISSUER_LENGTH } from '../issuer-url';
import {
  TOKEN_ENDPOINT_AUTH_METHODS,
  type TokenEndpointAuthMethod,
  type TrustedIssuer,
} from '../trusted-issuer.entity';

/** Origins one request may allow: a provider spreads its endpoints over a few at most. */
const MAX_ALLOWED_ORIGINS = 10;

/** A list of allowed origins: at most MAX_ALLOWED_ORIGINS strings, each as long as an issuer URL at most. */
const AllowedOrigins = (): PropertyDecorator =>
  applyDecorators(
    IsArray(),
    ArrayMaxSize(MAX_ALLOWED_ORIGINS),
    IsString({ each: true }),
    MaxLength(MAX_ISSUER_LENGTH, { each: true }),
  );

/** The organization's people issuer as its admins see it (docs/api.md#single-sign-on-set-up): never the client secret. */
export class SingleSignOnView {
  @ApiProperty({ format: 'uuid', description: 'The trusted issuer id (`trusted-issuer list` shows it too)' })
  id: string;
  @ApiProperty({ example: 'https://acme.okta.com' })
  issuer: string;
  @ApiProperty({ description: "Gatehouse's client id at the issuer (the ID tokens' audience)" })
  client_id: string;
  @ApiProperty({ enum: TOKEN_ENDPOINT_AUTH_METHODS })
  token_endpoint_auth: TokenEndpointAuthMethod;
  @ApiProperty({ type: [String], description: "The domains a person's e-mail address must be in; none: any" })
  email_domains: string[];
  @ApiProperty({
    enum: ROLES,
    nullable: true,
    type: String,
    description: 'The role of a person of those domains who is no member yet; null: they get no access',
  })
  jit_role: Role | null;
  @ApiProperty({
    type: [String],
    description:
      "Origins besides the issuer's own for its key set and endpoints (PUT …/allowed-origins, or the admin CLI's trusted-issuer set-origins)",
  })
  allowed_origins: string[];
  @ApiProperty({ format: 'date-time' })
  created_at: string;

  static from(entry: TrustedIssuer): SingleSignOnView {
    return {
      id: entry.id,
      issuer: entry.issuer,
      client_id: entry.clientId ?? '',
      token_endpoint_auth: entry.tokenEndpointAuth ?? 'client_secret_basic',
      email_domains: entry.emailDomains,
      jit_role: entry.jitRole,
      allowed_origins: entry.allowedOrigins,
      created_at: entry.createdAt.toISOString(),
    };
  }
}

export class SingleSignOnResponse {
  @ApiProperty({ type: SingleSignOnView, nullable: true, description: 'null: no single sign-on' })
  single_sign_on: SingleSignOnView | null;
}

/** The setting as a change left it (PUT …/allowed-origins). */
export class ChangedSingleSignOnResponse {
  @ApiProperty({ type: SingleSignOnView })
  single_sign_on: SingleSignOnView;
}

export class SavedSingleSignOnResponse {
  @ApiProperty({ type: SingleSignOnView })
  single_sign_on: SingleSignOnView;
  @ApiProperty({
    example: 'https://gatehouse.example.com/v1/console/sso/callback/acme',
    description: 'The redirect URI to register at the identity provider, as its discovery document says now',
  })
  redirect_uri: string;
}

/** PUT /v1/organization/single-sign-on: the whole setting (absent optional fields take their defaults). */
export class SaveSingleSignOnDto {
  @ApiProperty({ maxLength: MAX_ISSUER_LENGTH, example: 'https://acme.okta.com' })
  @IsString()
  @MaxLength(MAX_ISSUER_LENGTH)
  issuer: string;

  @ApiProperty({ maxLength: 255 })
  @IsString()
  @MaxLength(255)
  client_id: string;

  @ApiPropertyOptional({
    maxLength: 1024,
    description: 'Required the first time; absent afterwards: the stored one is kept. Stored encrypted, never shown',
  })
  @IsOptional()
  @IsString()
  @MaxLength(1024)
  client_secret?: string;

  @ApiPropertyOptional({ enum: TOKEN_ENDPOINT_AUTH_METHODS, default: 'client_secret_basic' })
  @IsOptional()
  @IsIn(TOKEN_ENDPOINT_AUTH_METHODS)
  token_endpoint_auth?: TokenEndpointAuthMethod;

  @ApiPropertyOptional({ type: [String], maxItems: 20, default: [] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(20)
  @IsString({ each: true })
  @MaxLength(253, { each: true })
  email_domains?: string[];

  @ApiPropertyOptional({ enum: ROLES, description: 'Needs email_domains' })
  @IsOptional()
  @IsIn(ROLES)
  jit_role?: Role;
  @ApiPropertyOptional({
    type: [String],
    maxItems: MAX_ALLOWED_ORIGINS,
    example: ['https://www.googleapis.com'],
    description:
      "Origins besides the issuer's own for its key set and endpoints, as trusted-issuer add --allow-origin takes " +
      'them. Absent: the stored ones while the issuer is the same, else none',
  })
  @IsOptional()
  @AllowedOrigins()
  allowed_origins?: string[];
}

/** PUT /v1/organization/single-sign-on/allowed-origins: the whole list (empty: the issuer's own origin only). */
export class SetAllowedOriginsDto {
  @ApiProperty({
    type: [String],
    maxItems: MAX_ALLOWED_ORIGINS,
    example: ['https://www.googleapis.com'],
    description: '`https://host[:port]` each, held to the rules of the issuer URL (trusted-issuer set-origins)',
  })
  @AllowedOrigins()
  allowed_origins: string[];
}

/** POST /v1/organization/single-sign-on/test. */
export class TestSingleSignOnDto {
  @ApiProperty({ maxLength: MAX_ISSUER_LENGTH, example: 'https://acme.okta.com' })
  @IsString()
  @MaxLength(MAX_ISSUER_LENGTH)
  issuer: string;

  @ApiPropertyOptional({ enum: TOKEN_ENDPOINT_AUTH_METHODS, default: 'client_secret_basic' })
  @IsOptional()
  @IsIn(TOKEN_ENDPOINT_AUTH_METHODS)
  token_endpoint_auth?: TokenEndpointAuthMethod;

  @ApiPropertyOptional({
    type: [String],
    maxItems: MAX_ALLOWED_ORIGINS,
    description:
      "The allowed origins to test with (as PUT takes them); absent: the stored ones when it is the organization's issuer",
  })
  @IsOptional()
  @AllowedOrigins()
  allowed_origins?: string[];
}

/** What the issuer's discovery document says, as single sign-on would use it. */
export class DiscoveryView {
  @ApiProperty()
  issuer: string;
  @ApiProperty({ description: 'Where the document was found' })
  document_url: string;
  @ApiProperty()
  authorization_endpoint: string;
  @ApiProperty()
  token_endpoint: string;
  @ApiProperty()
  jwks_uri: string;
  @ApiProperty({ type: [String] })
  token_endpoint_auth_methods: string[];
  @ApiProperty({ type: [String], nullable: true, description: 'null: the document does not say' })
  id_token_signing_algs: string[] | null;
  @ApiProperty({ description: 'authorization_response_iss_parameter_supported (RFC 9207): decides the redirect URI' })
  iss_parameter_supported: boolean;
  @ApiProperty({ description: 'The redirect URI to register at the identity provider' })
  redirect_uri: string;

  static from(metadata: IssuerMetadata, redirectUri: string): DiscoveryView {
    return {
      issuer: metadata.issuer,
      document_url: metadata.documentUrl,
      authorization_endpoint: metadata.authorizationEndpoint ?? '',
      token_endpoint: metadata.tokenEndpoint ?? '',
      jwks_uri: metadata.jwksUri,
      token_endpoint_auth_methods: metadata.tokenEndpointAuthMethods,
      id_token_signing_algs: metadata.idTokenSigningAlgs ?? null,
      iss_parameter_supported: metadata.issParameterSupported,
      redirect_uri: redirectUri,
    };
  }
}

export class DiscoveryResponse {
  @ApiProperty({ type: DiscoveryView })
  discovery: DiscoveryView;
}
