import { ArgumentMetadata, Injectable, ParseUUIDPipe, PipeTransform, ValidationPipe } from '@nestjs/common';
import { invalidArgument } from './errors';

/** A JSON object, or a parsed query string (Express 5's parser makes it with a null prototype). */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * class-validator, strictly: unknown properties, wrong types and non-object bodies are all 400
 * INVALID_ARGUMENT / "invalid request parameters". An absent body counts as `{}`.
 */
@Injectable()
export class StrictValidationPipe extends ValidationPipe {
  constructor() {
    super({
      whitelist: true,
      forbidNonWhitelisted: true,
      forbidUnknownValues: true,
      transform: true,
      validateCustomDecorators: false,
      exceptionFactory: () => invalidArgument(),
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'body' || metadata.type === 'query') {
      const input = value === undefined ? {} : value;
      if (!isPlainObject(input)) throw invalidArgument();
      return super.transform(input, metadata);
    }
    return super.transform(value, metadata);
  }
}

/** Path ids: a UUID, any case, handed on lower-cased; anything else is 400 INVALID_ARGUMENT. */
@Injectable()
export class UuidPipe implements PipeTransform<string, Promise<string>> {
  private readonly inner = new ParseUUIDPipe({ exceptionFactory: () => invalidArgument() });

  async transform(value: string, metadata: ArgumentMetadata): Promise<string> {
    const id = await this.inner.transform(value, metadata);
    if (typeof id !== 'string') throw invalidArgument();
    return id.toLowerCase();
  }
}
