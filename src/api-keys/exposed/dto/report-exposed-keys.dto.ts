import { ApiProperty } from '@nestjs/swagger';
import { Validate, ValidatorConstraint, ValidatorConstraintInterface } from 'class-validator';

/** Entries of one report (docs/api.md#post-v1api-keysexposed). */
export const MAX_REPORTED_KEYS = 100;
/** Characters (Unicode code points) of one entry: far more than a key has, so a scanner may send what it found. */
export const MAX_REPORTED_KEY_LENGTH = 512;

/** 1..100 strings of at most 512 characters each; anything else is 400 like every malformed body. */
@ValidatorConstraint({ name: 'reportedKeys' })
export class ReportedKeysConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return (
      Array.isArray(value) &&
      value.length >= 1 &&
      value.length <= MAX_REPORTED_KEYS &&
      value.every((entry) => typeof entry === 'string' && [...entry].length <= MAX_REPORTED_KEY_LENGTH)
    );
  }
}

export class ReportExposedKeysDto {
  @ApiProperty({
    type: 'array',
    items: { type: 'string', maxLength: MAX_REPORTED_KEY_LENGTH },
    minItems: 1,
    maxItems: MAX_REPORTED_KEYS,
    description:
      'Values found where they should not be: API keys of this deployment or anything else. Every one that is an ACTIVE key, with its right secret, is revoked at once.',
    example: ['dev.65b2632078a54cf9bbfb3853c300d04e.L3SLelSQ4Gxric4Ttve03Ea0w6SNt0keMMDtIiAVmk4.6257b7da'],
  })
  @Validate(ReportedKeysConstraint)
  keys: string[];
}
