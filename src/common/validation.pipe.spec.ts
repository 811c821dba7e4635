import { Type } from 'class-transformer';
import { IsOptional, IsString, ValidateNested } from 'class-validator';
import { AppError } from './errors';
import { StrictValidationPipe } from './validation.pipe';

class Tree {
  @IsOptional()
  @ValidateNested()
  @Type(() => Tree)
  child?: Tree;
}

class Named {
  @IsString()
  name!: string;
}

const body = (metatype: new () => object) => ({ type: 'body' as const, metatype, data: '' });

describe('StrictValidationPipe', () => {
  const pipe = new StrictValidationPipe();

  it('refuses an unknown property before class-transformer walks it, however deep it is', async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i += 1) deep = { a: deep };
    await expect(pipe.transform({ name: 'x', extra: deep }, body(Named))).rejects.toBeInstanceOf(AppError);
  });

  it('answers a value too deep to walk with 400, not a RangeError (a 500)', async () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 100_000; i += 1) deep = { child: deep };
    const refusal = await pipe.transform(deep, body(Tree)).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(AppError);
    expect((refusal as AppError).code).toBe('INVALID_ARGUMENT');
  });

  it('still transforms a known, valid body', async () => {
    await expect(pipe.transform({ name: 'x' }, body(Named))).resolves.toEqual(
      Object.assign(new Named(), { name: 'x' }),
    );
  });
});
