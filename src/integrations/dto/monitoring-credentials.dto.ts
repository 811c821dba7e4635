import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsString, MaxLength, MinLength, ValidateIf } from 'class-validator';
import { MONITORING_SITES, normalizeSite, type MonitoringSite } from '../monitoring-sites';

/** docs/api.md#notification-integration-object: each value non-empty and at most 256 characters. */
export const MAX_CREDENTIAL_LENGTH = 256;

const present = (_object: object, value: unknown): boolean => value !== undefined;
const siteTransform = ({ value }: { value: unknown }): unknown => normalizeSite(value);

/** Credentials input on create and validate: all three required. */
export class MonitoringCredentialsDto {
  @ApiProperty({ minLength: 1, maxLength: MAX_CREDENTIAL_LENGTH, description: 'Provider API key' })
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_CREDENTIAL_LENGTH)
  api_key: string;

  @ApiProperty({ minLength: 1, maxLength: MAX_CREDENTIAL_LENGTH, description: 'Provider application key' })
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_CREDENTIAL_LENGTH)
  application_key: string;

  /** Lower-cased and trimmed, then one of the fixed sites (monitoring-sites.ts); anything else is 400. */
  @ApiProperty({ enum: MONITORING_SITES, description: 'Lower-cased and trimmed before the check' })
  @Transform(siteTransform)
  @IsString()
  @IsIn(MONITORING_SITES)
  site: MonitoringSite;
}

/** PATCH: any of the three; an absent one keeps its stored value, null is not "absent". */
export class MonitoringCredentialsPatchDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: MAX_CREDENTIAL_LENGTH })
  @ValidateIf(present)
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_CREDENTIAL_LENGTH)
  api_key?: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: MAX_CREDENTIAL_LENGTH })
  @ValidateIf(present)
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_CREDENTIAL_LENGTH)
  application_key?: string;

  @ApiPropertyOptional({ enum: MONITORING_SITES })
  @ValidateIf(present)
  @Transform(siteTransform)
  @IsString()
  @IsIn(MONITORING_SITES)
  site?: MonitoringSite;
}
