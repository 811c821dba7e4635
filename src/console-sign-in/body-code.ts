import type { Request } from 'express';
import { StrictValidationPipe } from '../common/validation.pipe';

const bodyPipe = new StrictValidationPipe();

/**
 * The one-time `code` a console credential carries in its JSON body (a sign-in link's, an invitation's): the body is
 * validated whole against `metatype` first, so a refused body never uses up the code.
 */
export async function bodyCode(request: Request, metatype: new () => { code: string }): Promise<string> {
  const body = (await bodyPipe.transform(request.body, { type: 'body', metatype })) as { code: string };
  return body.code;
}
