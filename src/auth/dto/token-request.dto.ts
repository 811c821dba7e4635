import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { plainToInstance } from 'class-transformer';
import {
  IsInt,
  IsString,
  Max,
  MaxLength,
  Min,
  Validate,
  ValidateIf,
  validateSync,
  ValidatorConstraint,
  ValidatorConstraintInterface,
} from 'class-validator';
import { isUnreadable } from '../../common/body-reader';
import { invalidArgument } from '../../common/errors';
import { isScopeString } from '../../resource-servers/scopes';
import { MAX_ACCESS_TOKEN_LIFETIME, MIN_ACCESS_TOKEN_LIFETIME } from '../../identity/organization.entity';
import type { TokenNarrowing } from '../token.service';
import { MAX_AUDIENCE_LENGTH } from '../../resource-servers/audience';

/**
 * An OAuth `scope` (RFC 6749 section 3.3): distinct scope-tokens separated by single spaces. Which names a token may
 * get (the key's permissions, or the resource server's declared scopes) is the exchange's rule.
 */
@ValidatorConstraint({ name: 'scope' })
export class ScopeConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'string' && isScopeString(value);
  }
}

/** POST /v1/token's optional narrowing (docs/api.md#post-v1token): absent, `{}`, or these fields. */
export class TokenRequestDto {
  @ApiPropertyOptional({
    description:
      "Permission names separated by single spaces, each among the key's scopes: the token gets exactly those. " +
      "Absent: all the key's scopes. With a `resource` that declares scopes: names among those (docs/mcp.md).",
    example: 'api_keys:read integrations:read',
  })
  @ValidateIf((_dto: TokenRequestDto, value: unknown) => value !== undefined)
  @IsString()
  @Validate(ScopeConstraint)
  scope?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: MIN_ACCESS_TOKEN_LIFETIME,
    maximum: MAX_ACCESS_TOKEN_LIFETIME,
    description:
      "The token's lifetime in seconds, at most the organization's access-token lifetime and the time left " +
      'before the key expires',
  })
  @ValidateIf((_dto: TokenRequestDto, value: unknown) => value !== undefined)
  @IsInt()
  @Min(MIN_ACCESS_TOKEN_LIFETIME)
  @Max(MAX_ACCESS_TOKEN_LIFETIME)
  expires_in?: number;

  @ApiPropertyOptional({
    description:
      "A registered resource server's audience (RFC 8707): the token's `aud`, accepted there and nowhere else. " +
      'Absent: the default audience (Gatehouse itself). Unknown: 400 `unknown resource`.',
    example: 'https://api.example.com',
  })
  @ValidateIf((_dto: TokenRequestDto, value: unknown) => value !== undefined)
  @IsString()
  @MaxLength(MAX_AUDIENCE_LENGTH)
  resource?: string;
}

const NO_NARROWING: TokenNarrowing = Object.freeze({});

/**
 * POST /v1/token's body as a TokenNarrowing: a body of another type or malformed JSON, held by configureHttp until the
 * key had passed its guard, is 400 here.
 */
export const TokenRequest = createParamDecorator((_data: unknown, context: ExecutionContext): TokenNarrowing => {
  const request = context.switchToHttp().getRequest<Request>();
  if (isUnreadable(request)) throw invalidArgument();
  // No body at all: no narrowing.
  return request.body === undefined ? NO_NARROWING : tokenNarrowing(request.body);
});

function tokenNarrowing(value: unknown): TokenNarrowing {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidArgument();
  if (isEmpty(value)) return NO_NARROWING;
  const dto = plainToInstance(TokenRequestDto, value);
  const errors = validateSync(dto, { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true });
  if (errors.length > 0) throw invalidArgument();
  return { scope: dto.scope, expiresIn: dto.expires_in, resource: dto.resource };
}

function isEmpty(value: object): boolean {
  for (const _key in value) return false;
  return true;
}
