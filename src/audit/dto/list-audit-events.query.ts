import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  Validate,
  ValidationArguments,
  ValidatorConstraint,
  ValidatorConstraintInterface,
} from 'class-validator';
import { toInteger } from '../../common/pagination';
import { AUDIT_ACTIONS, AuditAction } from '../audit-event.entity';
import { parseInstant } from '../instants';
import { UUID } from '../../common/uuid';

export const DEFAULT_AUDIT_PAGE_SIZE = 50;
export const MAX_AUDIT_PAGE_SIZE = 200;

/** Any UUID, any letter case, as path ids (src/common/validation.pipe.ts); handed on lower-cased. */
const lowerCase = ({ value }: { value: unknown }): unknown => (typeof value === 'string' ? value.toLowerCase() : value);

/** An ISO 8601 date-time with a zone designator (src/audit/instants.ts). */
@ValidatorConstraint({ name: 'isoInstant' })
class IsoInstant implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'string' && parseInstant(value) !== null;
  }
}

/** `since` is not after `until` (an equal pair is a valid, empty range). */
@ValidatorConstraint({ name: 'sinceNotAfterUntil' })
class SinceNotAfterUntil implements ValidatorConstraintInterface {
  validate(until: unknown, args: ValidationArguments): boolean {
    const { since } = args.object as Partial<AuditEventFiltersQuery>;
    if (typeof since !== 'string' || typeof until !== 'string') return true;
    const [from, to] = [parseInstant(since), parseInstant(until)];
    return from === null || to === null || from <= to;
  }
}

const INSTANT_DESCRIPTION =
  'ISO 8601 date-time with seconds and a zone designator, e.g. 2026-11-21T15:08:12Z or 2026-11-21T16:08:12.868+01:00';

/**
 * The filters of the audit log, its list and its export alike (docs/api.md#audit-events): every parameter optional, all
 * given ones must hold.
 */
export class AuditEventFiltersQuery {
  @ApiPropertyOptional({ enum: AUDIT_ACTIONS, description: 'Only events of this action' })
  @IsOptional()
  @IsIn(AUDIT_ACTIONS)
  action?: AuditAction;

  @ApiPropertyOptional({ format: 'uuid', description: 'Only events this user did' })
  @IsOptional()
  @Transform(lowerCase)
  @IsString()
  @Matches(UUID)
  actor_user_id?: string;

  @ApiPropertyOptional({
    maxLength: 320,
    description:
      'Only events the user with this e-mail address (any case) did; with actor_user_id, both must name the same user',
    example: 'dev@acme.test',
  })
  @IsOptional()
  @IsString()
  @MaxLength(320)
  @Matches(/^[^\s@]+@[^\s@]+$/)
  actor_email?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'Only events on this object (an API key, an integration)' })
  @IsOptional()
  @Transform(lowerCase)
  @IsString()
  @Matches(UUID)
  target_id?: string;

  @ApiPropertyOptional({ format: 'date-time', description: `Events at or after this instant. ${INSTANT_DESCRIPTION}` })
  @IsOptional()
  @IsString()
  @Validate(IsoInstant)
  since?: string;

  @ApiPropertyOptional({
    format: 'date-time',
    description: `Events before this instant (not at it); not earlier than since. ${INSTANT_DESCRIPTION}`,
  })
  @IsOptional()
  @IsString()
  @Validate(IsoInstant)
  @Validate(SinceNotAfterUntil)
  until?: string;
}

/** docs/api.md#audit-events: every parameter optional, any other parameter 400. */
export class ListAuditEventsQuery extends AuditEventFiltersQuery {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: MAX_AUDIT_PAGE_SIZE,
    default: DEFAULT_AUDIT_PAGE_SIZE,
  })
  @IsOptional()
  @Transform(toInteger)
  @IsInt()
  @Min(1)
  @Max(MAX_AUDIT_PAGE_SIZE)
  limit: number = DEFAULT_AUDIT_PAGE_SIZE;

  @ApiPropertyOptional({
    description: 'next_cursor of the previous page, with the same filters (opaque; another value is 400)',
  })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  cursor?: string;
}

/** The formats of GET /v1/audit-events/export. */
export const AUDIT_EXPORT_FORMATS = ['csv', 'json'] as const;
export type AuditExportFormat = (typeof AUDIT_EXPORT_FORMATS)[number];

/**
 * docs/api.md#exporting-audit-events: the list's filters, and the format; the range (until, default now; since, default
 * 31 days before it) is at most MAX_AUDIT_EXPORT_DAYS long.
 */
export class ExportAuditEventsQuery extends AuditEventFiltersQuery {
  @ApiPropertyOptional({ enum: AUDIT_EXPORT_FORMATS, default: 'csv', description: 'csv (RFC 4180) or json (an array)' })
  @IsOptional()
  @IsIn(AUDIT_EXPORT_FORMATS)
  format: AuditExportFormat = 'csv';
}
