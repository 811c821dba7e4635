import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  IsIn,
  IsObject,
  IsString,
  Validate,
  ValidateIf,
  ValidateNested,
  ValidatorConstraint,
  ValidatorConstraintInterface,
} from 'class-validator';
import type { IntegrationType } from '../integration.entity';
import { MonitoringCredentialsDto, MonitoringCredentialsPatchDto } from './monitoring-credentials.dto';

export const MAX_NAME_LENGTH = 255;
const present = (_object: object, value: unknown): boolean => value !== undefined;

/** 1-255 Unicode characters (an emoji is one), well-formed, without NUL (PostgreSQL cannot store it). */
@ValidatorConstraint({ name: 'integrationName' })
export class IntegrationNameConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    if (typeof value !== 'string' || !value.isWellFormed() || value.includes('\u0000')) return false;
    const length = [...value].length;
    return length >= 1 && length <= MAX_NAME_LENGTH;
  }
}

export class CreateIntegrationDto {
  @ApiProperty({ enum: ['monitoring'] })
  @IsIn(['monitoring'])
  type: IntegrationType;

  @ApiProperty({ minLength: 1, maxLength: MAX_NAME_LENGTH })
  @IsString()
  @Validate(IntegrationNameConstraint)
  name: string;

  @ApiProperty({ type: MonitoringCredentialsDto })
  @IsObject()
  @ValidateNested()
  @Type(() => MonitoringCredentialsDto)
  config: MonitoringCredentialsDto;
}

export class UpdateIntegrationDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: MAX_NAME_LENGTH })
  @ValidateIf(present)
  @IsString()
  @Validate(IntegrationNameConstraint)
  name?: string;

  @ApiPropertyOptional({ type: MonitoringCredentialsPatchDto, description: 'Merged with the stored values' })
  @ValidateIf(present)
  @IsObject()
  @ValidateNested()
  @Type(() => MonitoringCredentialsPatchDto)
  config?: MonitoringCredentialsPatchDto;
}
