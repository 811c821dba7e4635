import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { createGatehouseClient } from '../../client';
import { datadogKeys, resetFakeDatadog, startWithFakeDatadog } from '../support/monitoring';
import type { FakeDatadog } from '../support/fakes/fake-datadog';
import type { TestApp } from '../support/test-app';
import { clockAdvance } from '../support/clock';

/**
 * docs/client.md's examples, as a reader copies them: every `ts` block is written to a folder beside
 * client/, compiled as CommonJS (tsc's, tsx's and ts-node's default, where top-level await is an error)
 * with strict type checks, and run against a listening server. A change of the client or the API that
 * breaks an example fails here.
 */
const ROOT = resolve(__dirname, '..', '..');
/** A folder of the repository, as tools/ would be, so that `../client` resolves as in the doc (git-ignored). */
const DIR = join(ROOT, '.client-doc-examples');
const OUT = join(ROOT, 'test-artifacts', 'client-doc');

function tsBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]);
}

describe('docs/client.md examples, compiled as CommonJS and run', () => {
  let t: TestApp;
  let fake: FakeDatadog;
  let baseUrl: string;
  let files: string[];
  let diagnostics: string[];

  beforeAll(async () => {
    ({ t, fake } = await startWithFakeDatadog({ MONITORING_VALIDATIONS_PER_MINUTE: '2' }));
    await t.app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    for (const dir of [DIR, OUT]) rmSync(dir, { recursive: true, force: true });
    mkdirSync(DIR, { recursive: true });
    files = tsBlocks(readFileSync(join(ROOT, 'docs', 'client.md'), 'utf8')).map((code, index) => {
      const file = join(DIR, `example-${index + 1}.ts`);
      writeFileSync(file, code);
      return file;
    });
    const program = ts.createProgram(files, {
      module: ts.ModuleKind.CommonJS,
      moduleResolution: ts.ModuleResolutionKind.Node10,
      target: ts.ScriptTarget.ES2022,
      strict: true,
      esModuleInterop: true,
      skipLibCheck: true,
      types: ['node'],
      outDir: OUT,
      rootDir: ROOT,
    });
    const emitted = program.emit();
    diagnostics = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics].map(
      (d) => `${d.file?.fileName ?? ''}: TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
    );
  }, 60_000);
  afterAll(async () => {
    rmSync(DIR, { recursive: true, force: true });
    await t.close();
    await fake.close();
  });

  const compiled = (file: string): string => join(OUT, file.slice(ROOT.length + 1)).replace(/\.ts$/, '.js');

  it('has examples, and each compiles as CommonJS with strict checks', () => {
    expect(files.length).toBeGreaterThanOrEqual(2);
    expect(diagnostics).toEqual([]);
  });

  it('the script runs as written: lists the keys of the API key in GATEHOUSE_API_KEY', async () => {
    const user = await t.user({ org: 'client-doc' });
    await t.createKey(user, 'deploy bot');
    const key = await t.createKey(user, 'docs example', { scopes: ['api_keys:read'] });
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [compiled(files[0])], {
      env: { PATH: process.env.PATH, GATEHOUSE_URL: baseUrl, GATEHOUSE_API_KEY: key.value },
    });
    expect(stderr).toBe('');
    expect(stdout).toBe('2 active keys: docs example, deploy bot\n');
  });

  it('the tooling functions do what they say against the server', async () => {
    const tools = (await import(compiled(files[1]))) as {
      revokeUnusedKeys(client: unknown, days?: number): Promise<number>;
      checkDatadogKeys(client: unknown, apiKey: string, applicationKey: string): Promise<boolean>;
    };
    const user = await t.user({ org: 'client-doc-tools', role: 'admin' });
    const used = await t.createKey(user, 'used');
    await t.exchange(used.value);
    await t.createKey(user, 'never used');
    const gatehouse = createGatehouseClient({ baseUrl, bearer: user.token });
    // Keys made a moment ago are older than 0 days: only the one never used goes.
    await clockAdvance(5);
    expect(await tools.revokeUnusedKeys(gatehouse, 0)).toBe(1);
    expect(await tools.revokeUnusedKeys(gatehouse, 0)).toBe(0);

    const keys = datadogKeys('client-doc');
    resetFakeDatadog(fake, keys);
    const table = jest.spyOn(console, 'table').mockImplementation(() => undefined);
    const logged = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      expect(await tools.checkDatadogKeys(gatehouse, keys.api_key, keys.application_key)).toBe(true);
      expect(table).toHaveBeenCalledTimes(1);
      // The organization's second validation this minute is its last (MONITORING_VALIDATIONS_PER_MINUTE=2); the third
      // is refused with the reason the example branches on.
      expect(await tools.checkDatadogKeys(gatehouse, keys.api_key, keys.application_key)).toBe(true);
      expect(logged).not.toHaveBeenCalled();
      expect(await tools.checkDatadogKeys(gatehouse, keys.api_key, keys.application_key)).toBe(false);
      expect(logged.mock.calls).toEqual([[expect.stringMatching(/^rate limited, retry in \d+ s$/)]]);
    } finally {
      table.mockRestore();
      logged.mockRestore();
    }
  });
});
