import {
  ArgumentMetadata,
  Body,
  Injectable,
  ParseUUIDPipe,
  PipeTransform,
  Query,
  Type,
  ValidationPipe,
} from '@nestjs/common';
import { getMetadataStorage } from 'class-validator';
import { invalidArgument } from './errors';

/** A JSON object, or a parsed query string (Express 5's parser makes it with a null prototype). */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** Read once per class. */
const declared = new WeakMap<object, ReadonlySet<string>>();
function declaredProperties(metatype: Type): ReadonlySet<string> {
  let names = declared.get(metatype);
  if (names === undefined) {
    const metadata = getMetadataStorage().getTargetValidationMetadatas(metatype, '', true, false);
    names = new Set(metadata.map((entry) => entry.propertyName));
    declared.set(metatype, names);
  }
  return names;
}

/**
 * Strict: unknown properties, wrong types and non-object bodies are 400 (docs/adr/0026-request-body-bounds.md). Bodies
 * and queries name it (`@ValidBody()`, `@ValidQuery()`): as a global pipe, Nest would run it on every parameter,
 * `@Caller()` too, for 9 promises a request (docs/performance.md#promises-on-node-20).
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
      const { metatype } = metadata;
      if (metatype !== undefined && this.toValidate(metadata)) {
        const known = declaredProperties(metatype);
        for (const name of Object.keys(input)) if (!known.has(name)) throw invalidArgument();
      }
      try {
        return await super.transform(input, metadata);
      } catch (error) {
        // class-transformer and class-validator recurse: a value they cannot walk is the client's fault.
        if (error instanceof RangeError) throw invalidArgument();
        throw error;
      }
    }
    return super.transform(value, metadata);
  }
}

const strict = new StrictValidationPipe();

/** The request body, checked strictly against the parameter's class (StrictValidationPipe). */
export const ValidBody = (): ParameterDecorator => Body(strict);

/** The query string, checked strictly against the parameter's class (StrictValidationPipe). */
export const ValidQuery = (): ParameterDecorator => Query(strict);

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
