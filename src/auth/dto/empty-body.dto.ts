import { Injectable, PipeTransform } from '@nestjs/common';
import { invalidArgument } from '../../common/errors';

/** POST /v1/token takes no parameters: an absent body or `{}`; any property is a 400. */
@Injectable()
export class EmptyBodyPipe implements PipeTransform<unknown, Record<string, never>> {
  transform(value: unknown): Record<string, never> {
    if (value === undefined) return {};
    if (typeof value !== 'object' || value === null || Array.isArray(value) || Object.keys(value).length > 0) {
      throw invalidArgument();
    }
    return {};
  }
}
