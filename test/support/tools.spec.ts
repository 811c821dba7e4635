import { findBinary, withTool } from './tools';

/** How `npm test` treats a program it cannot find (test/support/tools.ts): skipped with one line, failed under CI. */
describe('tests that drive an installed program', () => {
  const run = Object.assign(jest.fn(), { skip: jest.fn() }) as unknown as jest.It;
  let written: string[];
  let ci: string | undefined;

  beforeEach(() => {
    written = [];
    jest.spyOn(process.stderr, 'write').mockImplementation((text) => written.push(String(text)) > 0);
    ci = process.env.CI;
    delete process.env.CI;
  });
  afterEach(() => {
    jest.restoreAllMocks();
    if (ci === undefined) delete process.env.CI;
    else process.env.CI = ci;
  });

  it('finds the first candidate that runs, and none when none does', () => {
    expect(findBinary(['/nonexistent/nginx', process.execPath], ['--version'])).toBe(process.execPath);
    expect(findBinary(['/nonexistent/nginx', '/nonexistent/usr/sbin/nginx'], ['-v'])).toBeUndefined();
  });

  it('present: the tests run, and nothing is said', () => {
    expect(withTool(run, true, 'nginx', 'apt-get install nginx-light')).toBe(run);
    expect(written).toEqual([]);
  });

  it('absent: skipped, with one line that says what to install', () => {
    expect(withTool(run, false, 'nginx', 'apt-get install nginx-light')).toBe(run.skip);
    expect(written).toEqual(['nginx not installed: its tests are SKIPPED (apt-get install nginx-light)\n']);
  });

  it('absent under CI: the tests run, and fail for want of it', () => {
    process.env.CI = 'true';
    expect(withTool(run, false, 'nginx', 'apt-get install nginx-light')).toBe(run);
    expect(written).toEqual([]);
  });
});
